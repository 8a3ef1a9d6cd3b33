"""The table match: the rows holding the values a query names, and how far each is lifted. No Dagster.

A row's share is the weighted part of the query's named values it holds (`entity_shares`); within the
table view of the ranking (`query.fusion`) a row is lifted by ``trust² x share`` deviations
(`RowShares.lift`, trust from `channels.Channels.table_trust`).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


def entity_shares(entities: Sequence, positions_of, idf, row_ids: Sequence[str]) -> "RowShares":
    """Per row, the share of the query's mentioned values it holds. A value counts with its idf times the
    confidence of its reading (`value_match`); a value
    found in several columns (a version the table keeps twice) counts once, by its best reading. In
    arrays: at 100,000 rows a mentioned value can be held by thousands of them. ``positions_of(entity)``:
    the sorted table positions (in ``row_ids``) of the rows holding it; ``idf(rows holding it)``."""
    groups: dict[str, list] = {}
    for entity in entities:
        groups.setdefault(entity.surface, []).append(entity)
    total = 0.0
    positions, gains = [], []
    for group in groups.values():
        # a loose reading (a near-miss spelling, a part of a name) counts as far as it is sure
        held = [(rows, idf(len(rows)) * getattr(entity, "confidence", 1.0))
                for entity, rows in zip(group, map(positions_of, group)) if len(rows)]
        if not held:
            continue
        rows, gain = _best_per_row(held)
        positions.append(rows)
        gains.append(gain)
        total += float(gain.max())
    if total <= 0:
        return RowShares(row_ids, np.zeros(0, np.int64), np.zeros(0))
    rows = np.concatenate(positions)
    gain = np.concatenate(gains)
    order = np.argsort(rows, kind="stable")
    rows, gain = rows[order], gain[order]
    first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    return RowShares(row_ids, rows[first], np.add.reduceat(gain, first) / total)


def _best_per_row(readings: Sequence[tuple[np.ndarray, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows (ascending) and, per row, the largest amount of the readings ``(rows, amount)`` holding it."""
    rows = np.concatenate([r for r, _ in readings])
    amount = np.concatenate([np.full(len(r), a) for r, a in readings])
    order = np.lexsort((-amount, rows))  # by row, its best reading first
    rows, amount = rows[order], amount[order]
    first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    return rows[first], amount[first]


class RowShares:
    """The rows holding mentioned values (table positions, ascending) and each one's share."""

    def __init__(self, row_ids: Sequence[str], positions: np.ndarray, shares: np.ndarray):
        self.row_ids = row_ids
        self.positions = positions
        self.shares = shares

    def __len__(self) -> int:
        return len(self.positions)

    def _at(self, positions: np.ndarray) -> np.ndarray:
        """The shares of rows at ``positions`` (0 for rows holding none)."""
        if not len(self.positions):
            return np.zeros(len(positions))
        i = np.minimum(np.searchsorted(self.positions, positions), len(self.positions) - 1)
        return np.where(self.positions[i] == positions, self.shares[i], 0.0)

    def as_dict(self) -> dict[str, float]:
        return {self.row_ids[p]: float(s) for p, s in zip(self.positions.tolist(), self.shares.tolist())}

    def top(self, depth: int, fused: Mapping[str, float], position: Mapping[str, int]) -> list[tuple[str, float]]:
        """The ``depth`` rows of highest share above 0; ties by the other channels' fused score, then id (the
        table positions are in id order)."""
        if not len(self.positions):
            return []
        tie = np.full(len(self.positions), -np.inf)  # fused scores can be negative (z-scores)
        known = [(position[d], f) for d, f in fused.items() if d in position]
        if known:
            at = np.array([p for p, _ in known], dtype=np.int64)
            i = np.minimum(np.searchsorted(self.positions, at), len(self.positions) - 1)
            hit = self.positions[i] == at
            tie[i[hit]] = np.array([f for _, f in known])[hit]
        order = np.lexsort((self.positions, -tie, -np.round(self.shares, 9)))
        order = order[self.shares[order] > 0][:depth]
        return [(self.row_ids[p], float(s)) for p, s in zip(self.positions[order].tolist(),
                                                             self.shares[order].tolist())]

    def lift(self, fused: Mapping[str, float], factor: float, position: Mapping[str, int],
             joining: Sequence[str] = ()) -> dict[str, float]:
        """``score + factor x share`` for every fused row; the ``joining`` rows (the match's best) that no
        channel returned join at the lowest fused score, lifted the same way."""
        out = dict(fused)
        if not len(self.positions) or factor <= 0:
            return out
        floor = min(fused.values(), default=0.0)
        ids = list(fused)
        at = np.array([position.get(d, -1) for d in ids], dtype=np.int64)
        for d, x in zip(ids, self._at(at).tolist()):
            out[d] = fused[d] + factor * float(x)
        new = [d for d in joining if d not in fused]
        if new:
            at = np.array([position[d] for d in new], dtype=np.int64)
            for d, x in zip(new, self._at(at).tolist()):
                out[d] = floor + factor * float(x)
        return out
