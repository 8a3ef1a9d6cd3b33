"""How well an induced table matches a corpus's ground truth (synthetic benchmarks). No Dagster imports.

The table's columns are not named like the truth's fields, so each truth field is first aligned to
the column that agrees with it best, then cells are scored:

- A column aligns with a field when, on conversations that state the field, it holds a value that
  matches the truth often (agreement) and often enough (coverage); each column aligns with at most
  one field, assigned greedily by coverage x the mean of agreement and exact agreement.
- Matching a cell: scalar fields (product, version, codes, ids, amounts, dates, booleans) match
  when the normalized value equals the truth or one contains the other (so "Netwave AX3000 router"
  matches "Netwave AX3000"); numbers compare numerically. Free-text fields (symptom, root cause,
  resolution) are paraphrased in conversations, so a value matches when its embedding is closer to
  its own conversation's truth than to all but 2 of the field's other distinct truth values, and
  the cosine is at least 0.4: it must identify the right issue, not just sound support-like.
- Cell accuracy counts every non-null value in an aligned column of a conversation whose truth
  has that field (non-null); values where the field does not apply are reported as unverifiable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

FREE_TEXT_FIELDS = ("symptom", "root_cause", "resolution_steps")
SCALAR_FIELDS = (
    "product", "model", "version", "os_or_plan", "error_code", "error_message", "fix_version", "resolved",
    "opened_date", "order_number", "carrier", "payment_method", "amount", "account_number", "account_email",
)
MIN_ALIGNMENT = 0.2  # agreement x coverage below this: the field is not covered by any column


def _norm(value) -> str:
    return re.sub(r"[^a-z0-9.@+-]+", " ", str(value).lower()).strip()


def _compact(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text)


def exact_match(value: str, truth) -> bool:
    """Equal after normalization (case, punctuation, hyphens and spaces inside codes)."""
    if truth is None or value is None or isinstance(truth, (bool, int, float)):
        return scalar_match(value, truth)
    return _compact(_norm(value)) == _compact(_norm(truth)) != ""


def scalar_match(value: str, truth) -> bool:
    if truth is None or value is None:
        return False
    if isinstance(truth, bool):
        return _norm(value) in (("true", "yes") if truth else ("false", "no"))
    if isinstance(truth, (int, float)):
        try:
            return abs(float(str(value).replace(",", "").lstrip("$€£")) - float(truth)) < 1e-6
        except ValueError:
            return False
    v, t = _norm(value), _norm(truth)
    if not v or not t:
        return False
    if v == t or _compact(v) == _compact(t):  # "HC31" is "HC-31"
        return True
    shorter, longer = sorted((v, t), key=len)
    return len(shorter) >= 3 and re.search(rf"(?<![a-z0-9.]){re.escape(shorter)}(?![a-z0-9])", longer) is not None


def _truth_text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return "; ".join(str(v) for v in value) if value else None
    return str(value)


@dataclass
class FieldAlignment:
    field: str
    column: str | None
    agreement: float  # share of the column's non-null values that match, where the field is stated
    coverage: float  # share of conversations stating the field where the column has a value
    verifiable_cells: int = 0
    correct_cells: int = 0


@dataclass
class TruthReport:
    alignments: list[FieldAlignment]
    unverifiable_cells: int = 0
    per_column: dict[str, tuple[int, int]] = field(default_factory=dict)  # column -> (correct, verifiable)

    @property
    def covered_fields(self) -> list[str]:
        return [a.field for a in self.alignments if a.column is not None]

    @property
    def cell_accuracy(self) -> float:
        correct = sum(a.correct_cells for a in self.alignments)
        total = sum(a.verifiable_cells for a in self.alignments)
        return correct / total if total else 0.0

    def as_markdown(self) -> str:
        lines = ["| truth field | column | agreement | coverage | correct / verifiable |", "|---|---|---|---|---|"]
        for a in self.alignments:
            lines.append(
                f"| {a.field} | {a.column or '—'} | {a.agreement:.2f} | {a.coverage:.2f} | "
                f"{a.correct_cells} / {a.verifiable_cells} |"
            )
        return "\n".join(lines)


def align_table_to_truth(rows: dict[str, dict[str, str | None]], truth: list[dict], embed=None) -> TruthReport:
    """`rows`: dialogue id -> {column: value or None}; `truth`: latent records with `mentioned` flags.

    `embed(texts) -> unit vectors` is needed for free-text fields (the default embedder if None).
    """
    truth_by_id = {t["dialogue_id"]: t for t in truth if t["dialogue_id"] in rows}
    columns = sorted({c for r in rows.values() for c in r})
    fields = [f for f in SCALAR_FIELDS + FREE_TEXT_FIELDS if any(t.get(f) not in (None, []) for t in truth_by_id.values())]
    matchers = {f: _free_text_matcher(f, truth_by_id, rows, columns, embed) if f in FREE_TEXT_FIELDS else None
                for f in fields}

    def matches(f, dialogue_id, value) -> bool:
        truth_value = truth_by_id[dialogue_id].get(f)
        if matchers[f] is not None:
            return matchers[f](dialogue_id, value)
        return scalar_match(value, truth_value)

    candidates = []
    for f in fields:
        stated = [d for d, t in truth_by_id.items()
                  if t.get(f) not in (None, []) and t.get("mentioned", {}).get(f, True)]
        if not stated:
            continue
        for c in columns:
            values = [(d, rows[d].get(c)) for d in stated if rows[d].get(c) not in (None, "")]
            if not values:
                continue
            agreement = sum(matches(f, d, v) for d, v in values) / len(values)
            coverage = len(values) / len(stated)
            # Exact agreement weighs in so that an error-code column aligns with error_code, not with the
            # error message that merely contains the code.
            exact = agreement if f in FREE_TEXT_FIELDS else sum(
                exact_match(v, truth_by_id[d].get(f)) for d, v in values) / len(values)
            candidates.append(((agreement + exact) / 2 * coverage, agreement, coverage, f, c))
    candidates.sort(key=lambda x: (-x[0], x[3], x[4]))
    used_fields, used_columns, chosen = set(), set(), {}
    for score, agreement, coverage, f, c in candidates:
        if score < MIN_ALIGNMENT or f in used_fields or c in used_columns:
            continue
        used_fields.add(f)
        used_columns.add(c)
        chosen[f] = FieldAlignment(f, c, agreement, coverage)
    report = TruthReport([chosen.get(f, FieldAlignment(f, None, 0.0, 0.0)) for f in fields])
    for alignment in report.alignments:
        if alignment.column is None:
            continue
        for d, t in truth_by_id.items():
            value = rows[d].get(alignment.column)
            if value in (None, ""):
                continue
            if t.get(alignment.field) in (None, []):
                report.unverifiable_cells += 1
                continue
            alignment.verifiable_cells += 1
            alignment.correct_cells += int(matches(alignment.field, d, value))
        report.per_column[alignment.column] = (alignment.correct_cells, alignment.verifiable_cells)
    return report


def _free_text_matcher(f, truth_by_id, rows, columns, embed):
    if embed is None:
        from sarag_assets.core.encoding.embedder import default_embedder

        embed = default_embedder().encode
    distinct = sorted({_truth_text(t.get(f)) for t in truth_by_id.values() if _truth_text(t.get(f))})
    if not distinct:
        return lambda d, v: False
    index = {text: i for i, text in enumerate(distinct)}
    truth_vectors = embed(distinct)
    values = sorted({str(r.get(c)) for r in rows.values() for c in columns if r.get(c) not in (None, "")})
    value_vectors = dict(zip(values, embed(values))) if values else {}

    def match(dialogue_id, value) -> bool:
        own = _truth_text(truth_by_id[dialogue_id].get(f))
        if own is None or str(value) not in value_vectors:
            return False
        sims = truth_vectors @ value_vectors[str(value)]
        own_sim = sims[index[own]]
        return bool(own_sim >= 0.4 and int(np.sum(sims > own_sim)) <= 2)

    return match
