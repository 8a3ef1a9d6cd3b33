"""One query's ranking: the channels side by side, one vote per view, and the hits. No Dagster.

`Ranker.retrieve(query, k)` asks each channel that is on (`query.channels`) for its ``depth`` best
conversations and fuses them into one ranking (`query.fusion`), the conversation's own text first.
Channels reading the same thing are one view, and each view is one vote, weighed as the home's own
conversations measured it (`query.fusion`, `query.calibration`): without a measurement the two text views
vote and structure does not. Within the table view, a row holding mentioned values is lifted by
``trust² x share`` standard deviations (the share of the mentioned values it holds); ``trust`` is how
completely the table holds the named values (rows holding each over the conversations mentioning it,
`Channels.table_trust`), and its square is the net good of lifting the holders: they rise above the
conversations not naming the values (right), and above the share ``1 - trust`` of those naming them
whose rows missed them (wrong): ``t - t(1 - t) = t²``. Ties are broken by dialogue id, so the same home
and query always give the same ranking.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

import numpy as np

from sarag_assets.core.indices.store import (
    CONVERSATION_PASSAGES,
    CONVERSATION_TEXTS,
    ISSUE_DOCUMENTS,
    SOLUTION_DOCUMENTS,
    TABLE_ROWS,
)
from sarag_assets.query.channels import CHANNELS, Channels, alpha_fuse
from sarag_assets.query.fusion import ViewScores, combine, view_scores
from sarag_assets.query.understanding import Query, QueryError, understand

DEFAULT_ALPHA = 0.5


@dataclass(frozen=True)
class SearchSettings:
    channels: frozenset[str] = frozenset(CHANNELS)
    alpha: float = DEFAULT_ALPHA  # issue side weight in the SDR fusion
    depth: int = 50  # candidates asked of each channel; the ranking is made at this depth whatever k is

    def __post_init__(self):
        unknown = set(self.channels) - set(CHANNELS)
        if unknown:
            raise ValueError(f"unknown channels {sorted(unknown)}; known: {', '.join(CHANNELS)}")
        if not self.channels:
            raise ValueError("at least one channel must be on")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be within [0, 1], got {self.alpha}")

    @staticmethod
    def only(*channels: str, **kwargs) -> "SearchSettings":
        return SearchSettings(channels=frozenset(channels), **kwargs)

    def without(self, *channels: str) -> "SearchSettings":
        return replace(self, channels=frozenset(set(self.channels) - set(channels)))


@dataclass
class SearchHit:
    dialogue_id: str
    score: float
    rank: int
    channels: dict[str, dict[str, float]]  # channel -> {"rank", "score"}
    matched_columns: list[dict[str, Any]]  # [{column, value, turn, matched}]
    row: dict[str, str]  # the conversation's non-null table cells

    def as_dict(self) -> dict[str, Any]:
        return {"dialogue_id": self.dialogue_id, "score": round(self.score, 6), "rank": self.rank,
                "channels": self.channels, "matched_columns": self.matched_columns, "row": self.row}


@dataclass
class Ranking:
    """One query's ranking at one depth: each channel's list (``sdr`` and ``table_match`` as fused), the
    dense lists as searched (``issue``, ``solution`` apart), each view's scores, the fused ones, and the
    query vector (for a deeper ranking to reuse)."""

    ranked: dict[str, list[tuple[str, float]]]
    lists: dict[str, list[tuple[str, float]]]
    views: ViewScores
    fused: dict[str, float]
    vector: np.ndarray


@dataclass
class SearchResult:
    query: Query
    hits: list[SearchHit]
    query_vector: np.ndarray
    published_state: str | None = None  # the id of the published state the hits come from

    def ids(self) -> list[str]:
        return [h.dialogue_id for h in self.hits]


class Ranker:
    """Ranks one opened state's conversations: the channels on a shared pool of threads, fused with the
    weights the home measured. ``embed(parsed)`` gives the query vector."""

    def __init__(self, channels: Channels, weights: Mapping[str, float], embed: Callable[[Query], np.ndarray],
                 pool: ThreadPoolExecutor):
        self.channels = channels
        self.weights = weights
        self.embed = embed
        self.pool = pool

    def rank(self, parsed: Query, settings: SearchSettings, depth: int, vector: np.ndarray | None = None) -> Ranking:
        """Each channel's ``depth`` best conversations, each view's scores (the table lifted by the match)
        and the fused ones."""
        on, channels = settings.channels, self.channels
        jobs = {}
        # BM25 needs no vector: it runs on the other core while the query is embedded
        for name, table in (("conversation_text", CONVERSATION_TEXTS), ("full_text", TABLE_ROWS)):
            if name in on:
                jobs[name] = self.pool.submit(channels.search_text, table, parsed.full_text(), depth)
        vector = self.embed(parsed) if vector is None else vector
        if "cluster_route" in on:  # the longest job that needs the vector: on another thread
            jobs["cluster_route"] = self.pool.submit(channels.route, parsed, vector, depth)
        dense = [(name, table) for name, table in (("passages", CONVERSATION_PASSAGES), ("table_row", TABLE_ROWS),
                                                     ("issue", ISSUE_DOCUMENTS), ("solution", SOLUTION_DOCUMENTS))
                 if name in on]
        for name, table in dense:  # to be read first, or searched by LanceDB (too big to hold): side by side
            if not channels.dense.in_memory(table):
                jobs[name] = self.pool.submit(channels.search_dense, table, vector, depth)
        lists = {}
        for name, table in dense:  # in memory: ~2 ms each at 100k rows, here rather than wait for the GIL
            if name not in jobs:
                lists[name] = channels.search_dense(table, vector, depth)
        lists.update({name: job.result() for name, job in jobs.items()})
        ranked: dict[str, list[tuple[str, float]]] = {
            name: lists[name] for name in ("passages", "conversation_text", "table_row", "full_text",
                                           "cluster_route")
            if name in lists}
        if "issue" in lists or "solution" in lists:
            ranked["sdr"] = alpha_fuse(lists.get("issue", []), lists.get("solution", []), settings.alpha,
                                       "issue" in lists, "solution" in lists)
        views = view_scores(ranked)
        if "table_match" in on and parsed.entities:
            shares = channels.entity_shares(parsed)
            scores, floor = views.get("table", ({}, 0.0))
            ranked["table_match"] = shares.top(depth, scores, channels.row_position)
            if scores:
                views["table"] = (shares.lift(scores, channels.table_trust(parsed) ** 2, channels.row_position,
                                              joining=[d for d, _ in ranked["table_match"]]), floor)
            elif ranked["table_match"]:  # the table match alone: its own order
                views["table"] = ({d: -float(i) for i, (d, _) in enumerate(ranked["table_match"])}, -float(depth))
        return Ranking(ranked, lists, views, combine(views, self.weights), vector)

    def retrieve(self, query, k: int, settings: SearchSettings, published_state: str | None = None) -> SearchResult:
        """The ``k`` best conversations for the query, each with its channels' ranks and scores."""
        if not isinstance(k, int) or k < 1:
            raise QueryError(f"k must be a positive integer, got {k!r}")
        parsed = understand(query, self.channels.tables.lexicon)
        # The ranking is made at the settings' depth whatever k is: a channel's z-scores depend on how long
        # its list is, so deeper lists for a larger k would reorder the top. A k beyond what that depth
        # found is filled from deeper lists, after it, so a longer list always starts with the shorter one.
        ranking = self.rank(parsed, settings, settings.depth)
        fused = ranking.fused
        order = sorted(fused, key=lambda d: (-fused[d], d))[:k]
        scores = dict(fused)
        if len(order) < k:
            deeper = self.rank(parsed, settings, max(5 * k, 2 * settings.depth), ranking.vector)
            seen, last = set(order), fused[order[-1]] if order else math.inf
            for d in sorted(deeper.fused, key=lambda d: (-deeper.fused[d], d)):
                if len(order) == k:
                    break
                if d not in seen:  # never above the ranking it extends
                    order.append(d)
                    last = scores[d] = min(deeper.fused[d], last)
            ranking = deeper  # the same lists, longer: the hits' channel ranks
        hits = _hits(parsed, order, scores, ranking, self.channels.tables.rows)
        return SearchResult(parsed, hits, ranking.vector, published_state)


def _hits(parsed: Query, order: list[str], scores: Mapping[str, float], ranking: Ranking,
          rows: Mapping[str, dict[str, str]]) -> list[SearchHit]:
    """The hits in ``order``, each with the channels that returned it (rank, score) and the values the
    query named that its row holds."""
    ranked, lists = ranking.ranked, ranking.lists
    per_channel = {name: {d: (i + 1, s) for i, (d, s) in enumerate(hits)} for name, hits in ranked.items()}
    for side in ("issue", "solution"):
        if side in lists:
            per_channel[side] = {d: (i + 1, s) for i, (d, s) in enumerate(lists[side])}
    per_channel.pop("sdr", None)
    hits = []
    for rank, dialogue_id in enumerate(order, start=1):
        found = {name: {"rank": r, "score": round(float(s), 6)}
                 for name, by_id in per_channel.items() if (hit := by_id.get(dialogue_id)) for r, s in [hit]}
        row = rows.get(dialogue_id, {})
        matched = [e.as_dict() for e in parsed.entities if row.get(e.column) == e.value]
        hits.append(SearchHit(dialogue_id, float(scores[dialogue_id]), rank, found, matched, dict(row)))
    return hits
