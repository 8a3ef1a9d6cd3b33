"""Metadata governance: evolving M* one conversation's candidates at a time. No Dagster imports.

`decide` is the embedded backend's rule for choosing operations; `apply_decision` applies any
backend's operations (the LLM backend decides differently but is applied the same way) and refuses
operations that would break M* (unknown columns, over capacity). The rule:

- KEEP: a candidate that names an existing column (by name, alias, or a near-identical definition of
  the same type) adds support to it.
- EXPAND: a candidate that specializes a young existing column of the same type (its name contains
  all of the column's name words, e.g. `error_code` -> `installation_error_code`) and scores higher
  renames it; the old name stays as an alias, so existing values carry over.
- ADD: a new concept waits in `pending` until `metadata.min_support` conversations proposed it; it is then
  admitted if there is room. The support requirement is what "improves coverage" means here: one
  conversation's idiosyncrasy never becomes a column.
- DELETE (+ ADD): at capacity, a pending concept whose utility (support x mean score) exceeds the
  weakest column's replaces it.
- MERGE: two columns of the same type whose definitions are near-identical become one (the one with
  more support survives; the other becomes an alias), which keeps M* compact.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from functools import lru_cache

import numpy as np

from sarag_assets.core import warehouse
from sarag_assets.core.structuring.interface import (
    CandidateSchema,
    GovernanceDecision,
    GovernanceOperation,
    GovernedMetadata,
    MetadataColumn,
    ScoredColumn,
)

MIN_OVERALL = 0.35  # candidates scoring below this against their own conversation are ignored
SAME_CONCEPT = 0.88  # cosine of "name: meaning" embeddings above which two columns are one concept
EXPAND_MAX_SUPPORT = 2  # only a young column is renamed to a more specific name
MAX_PENDING = 200  # the pending pool keeps its strongest concepts only


def fingerprint(metadata: GovernedMetadata) -> str:
    """Changes only when the column set or a column's definition changes (not support counts)."""
    definition = sorted(
        (c.name, c.type, c.meaning, c.constraints.model_dump_json()) for c in metadata.columns
    )
    return hashlib.sha256(json.dumps(definition).encode()).hexdigest()[:16]


def _words(name: str) -> set[str]:
    return set(w for w in re.split(r"[_\W]+", name.lower()) if w)


def _describe(name: str, meaning: str) -> str:
    return f"{name.replace('_', ' ')}: {meaning}"


@lru_cache(maxsize=100_000)
def _vector(name: str, meaning: str) -> np.ndarray:
    from sarag_assets.core.encoding.embedder import default_embedder

    return default_embedder().encode_one(_describe(name, meaning))


def _similarity(a: tuple[str, str], b: tuple[str, str]) -> float:
    return float(np.dot(_vector(*a), _vector(*b)))


def _utility(column: MetadataColumn) -> float:
    return column.support * column.mean_score


def _find_same(columns: list[MetadataColumn], candidate: ScoredColumn) -> MetadataColumn | None:
    for column in columns:
        if candidate.name == column.name or candidate.name in column.aliases:
            return column
    same_type = [c for c in columns if c.type == candidate.type]
    if not same_type:
        return None
    target = _vector(candidate.name, candidate.meaning)
    sims = np.stack([_vector(c.name, c.meaning) for c in same_type]) @ target
    best = int(np.argmax(sims))
    return same_type[best] if sims[best] >= SAME_CONCEPT else None


def decide(
    metadata: GovernedMetadata, candidates: CandidateSchema, *, backend_name: str
) -> GovernanceDecision:
    """The embedded rule. It simulates the operations on a copy so later candidates of the same
    conversation see the effect of earlier ones; `apply_decision` then applies them for real."""
    ops: list[GovernanceOperation] = []
    columns = [_working_copy(c) for c in metadata.columns]
    pending = [_working_copy(c) for c in metadata.pending]
    ordered = sorted(candidates.columns, key=lambda c: (-c.score.overall, c.name))
    for cand in ordered:
        if cand.score.overall < MIN_OVERALL:
            continue
        same = _find_same(columns, cand)
        if same is not None:
            ops.append(GovernanceOperation(
                operation="KEEP", columns=[same.name], candidate=cand.name, scores=cand.score,
                reason=f"candidate {cand.name!r} is the existing column {same.name!r}",
            ))
            _bump(same, cand)
            continue
        general = next(
            (c for c in columns if c.type == cand.type and _words(c.name) < _words(cand.name)), None
        )
        if general is not None:
            if general.support <= EXPAND_MAX_SUPPORT and cand.score.overall > general.mean_score:
                ops.append(GovernanceOperation(
                    operation="EXPAND", columns=[general.name, cand.name], candidate=cand.name, scores=cand.score,
                    reason=f"{cand.name!r} is a more specific name for the young column {general.name!r} "
                    f"(support {general.support}) and scores higher",
                ))
                general.aliases.append(general.name)
                general.name, general.meaning = cand.name, cand.meaning
            else:
                ops.append(GovernanceOperation(
                    operation="KEEP", columns=[general.name], candidate=cand.name, scores=cand.score,
                    reason=f"{cand.name!r} specializes {general.name!r}, which already covers it",
                ))
            _bump(general, cand)
            continue
        waiting = _find_same(pending, cand)
        if waiting is None:
            waiting = MetadataColumn(
                name=cand.name, type=cand.type, meaning=cand.meaning, constraints=cand.constraints,
                signal=cand.signal, support=0, mean_score=0.0,
            )
            pending.append(waiting)
        _bump(waiting, cand)
        if waiting.support < metadata.min_support:
            continue
        if len(columns) < metadata.capacity:
            ops.append(GovernanceOperation(
                operation="ADD", columns=[waiting.name], candidate=cand.name, scores=cand.score,
                reason=f"new concept proposed by {waiting.support} conversations (mean score "
                f"{waiting.mean_score:.2f}); capacity {len(columns) + 1}/{metadata.capacity}",
            ))
            columns.append(waiting)
            pending.remove(waiting)
            continue
        weakest = min(columns, key=lambda c: (_utility(c), c.name))
        if _utility(waiting) > _utility(weakest):
            ops.append(GovernanceOperation(
                operation="DELETE", columns=[weakest.name], candidate=cand.name, scores=cand.score,
                reason=f"at capacity: {weakest.name!r} (utility {_utility(weakest):.2f}) is weaker than "
                f"{waiting.name!r} (utility {_utility(waiting):.2f})",
            ))
            ops.append(GovernanceOperation(
                operation="ADD", columns=[waiting.name], candidate=cand.name, scores=cand.score,
                reason=f"replaces {weakest.name!r}",
            ))
            columns.remove(weakest)
            columns.append(waiting)
            pending.remove(waiting)
    ops.extend(_merges(columns))
    return GovernanceDecision(operations=ops, backend=backend_name)


def _working_copy(column: MetadataColumn) -> MetadataColumn:
    """A copy the rules may change: its scalars and its aliases are its own; its constraints are shared,
    since governance never changes a constraint. (A deep copy per column and conversation was 23 s of a
    2,500-conversation build's `governed_metadata`.)"""
    return column.model_copy(update={"aliases": list(column.aliases)})


def _bump(column: MetadataColumn, cand: ScoredColumn) -> None:
    column.mean_score = (column.mean_score * column.support + cand.score.overall) / (column.support + 1)
    column.support += 1


def _merges(columns: list[MetadataColumn]) -> list[GovernanceOperation]:
    ops = []
    merged: set[str] = set()
    for i, a in enumerate(columns):
        for b in columns[i + 1:]:
            if a.name in merged or b.name in merged or a.type != b.type:
                continue
            sim = _similarity((a.name, a.meaning), (b.name, b.meaning))
            if sim >= SAME_CONCEPT:
                keep, drop = (a, b) if (a.support, b.name) >= (b.support, a.name) else (b, a)
                ops.append(GovernanceOperation(
                    operation="MERGE", columns=[drop.name, keep.name],
                    reason=f"{drop.name!r} and {keep.name!r} define the same concept (similarity {sim:.2f})",
                ))
                merged.add(drop.name)
    return ops


class RejectedOperation(ValueError):
    pass


def apply_decision(
    metadata: GovernedMetadata, decision: GovernanceDecision, candidates: CandidateSchema
) -> tuple[GovernedMetadata, list[tuple[GovernanceOperation, str | None]]]:
    """Apply operations in order; returns the new metadata and each operation with its rejection reason.

    Candidates no operation mentions wait in `pending` (their support grows there). The version
    number increases only when the fingerprint changes.
    """
    new = metadata.model_copy(update={"columns": [_working_copy(c) for c in metadata.columns],
                                       "pending": [_working_copy(c) for c in metadata.pending]})
    by_candidate = {c.name: c for c in candidates.columns}
    results: list[tuple[GovernanceOperation, str | None]] = []
    for op in decision.operations:
        try:
            _apply_one(new, op, by_candidate.get(op.candidate) if op.candidate else None)
            results.append((op, None))
        except RejectedOperation as exc:
            results.append((op, str(exc)))
    mentioned = {op.candidate for op, rejected in results if rejected is None and op.candidate}
    for cand in candidates.columns:
        if cand.name in mentioned or cand.score.overall < MIN_OVERALL:
            continue
        waiting = _find_same(new.pending, cand)
        if waiting is None:
            waiting = MetadataColumn(
                name=cand.name, type=cand.type, meaning=cand.meaning, constraints=cand.constraints,
                signal=cand.signal,
            )
            new.pending.append(waiting)
        _bump(waiting, cand)
    if len(new.pending) > MAX_PENDING:
        new.pending = sorted(new.pending, key=lambda c: (-_utility(c), c.name))[:MAX_PENDING]
    if fingerprint(new) != fingerprint(metadata):
        new.version = metadata.version + 1
        old_names = {c.name for c in metadata.columns}
        for column in new.columns:
            if column.name not in old_names and not (set(column.aliases) & old_names):
                column.added_in_version = new.version
    return new, results


def _column(metadata: GovernedMetadata, name: str) -> MetadataColumn:
    found = metadata.column(name)
    if found is None:
        raise RejectedOperation(f"no column named {name!r} in M*")
    return found


def _apply_one(m: GovernedMetadata, op: GovernanceOperation, cand: ScoredColumn | None) -> None:
    if not op.columns:
        raise RejectedOperation("operation names no column")
    if op.operation == "KEEP":
        column = _column(m, op.columns[0])
        if cand is not None:
            _bump(column, cand)
    elif op.operation == "EXPAND":
        if len(op.columns) != 2:
            raise RejectedOperation("EXPAND needs [existing, new name]")
        column = _column(m, op.columns[0])
        new_name = op.columns[1]
        if m.column(new_name) is not None:
            raise RejectedOperation(f"{new_name!r} already exists")
        column.aliases.append(column.name)
        column.name = new_name
        if cand is not None:
            column.meaning = cand.meaning
            _bump(column, cand)
    elif op.operation == "ADD":
        name = op.columns[0]
        if m.column(name) is not None:
            raise RejectedOperation(f"{name!r} already exists")
        if len(m.columns) >= m.capacity:
            raise RejectedOperation(f"capacity {m.capacity} reached")
        waiting = next((p for p in m.pending if p.name == name), None)
        if waiting is not None:
            m.pending.remove(waiting)
            column = waiting
        elif cand is not None:
            column = MetadataColumn(
                name=name, type=cand.type, meaning=cand.meaning, constraints=cand.constraints, signal=cand.signal
            )
        else:
            raise RejectedOperation(f"ADD of {name!r} names neither a pending concept nor a candidate")
        if cand is not None:
            _bump(column, cand)
        m.columns.append(column)
    elif op.operation == "DELETE":
        column = _column(m, op.columns[0])
        m.columns.remove(column)
        m.pending.append(column)  # it may come back with more support
    elif op.operation == "MERGE":
        if len(op.columns) < 2:
            raise RejectedOperation("MERGE needs [merged..., surviving]")
        keep = _column(m, op.columns[-1])
        for name in op.columns[:-1]:
            drop = _column(m, name)
            if drop is keep:
                continue
            if drop.type != keep.type:
                raise RejectedOperation(f"cannot merge {drop.type} {name!r} into {keep.type} {keep.name!r}")
            keep.aliases.extend([drop.name, *drop.aliases])
            keep.mean_score = (_utility(keep) + _utility(drop)) / max(keep.support + drop.support, 1)
            keep.support += drop.support
            m.columns.remove(drop)


# --- the fixed schema (ablation `sarag_no_governance`, SARAG_GOVERNANCE=fixed) -------------------------
#
# What a support team would write down before looking at any conversation: the generic facts of a support
# case, named plainly, typed, no constraints beyond the type (nobody has seen the values yet). It is not
# derived from the corpus or from the generator; it stands in for "no governance" so that the evaluation
# can say what evolving M* from the conversations is worth.
FIXED_SCHEMA: tuple[tuple[str, str, str], ...] = (
    ("product", "string", "the product, device or service the customer needs help with"),
    ("version", "string", "the version of the software, firmware or app the customer is running"),
    ("error_code", "string", "the error code or status code the customer reports"),
    ("problem", "string", "the customer's problem, in their words"),
    ("resolution", "string", "what the support agent advised or did to solve the problem"),
    ("resolved", "boolean", "whether the problem was solved by the end of the conversation"),
)
FIXED_BACKEND = "fixed-schema"


def fixed_columns() -> list[MetadataColumn]:
    return [MetadataColumn(name=name, type=type_, meaning=meaning) for name, type_, meaning in FIXED_SCHEMA]


def is_fixed(metadata: GovernedMetadata) -> bool:
    """Whether `metadata` is the fixed schema (same column definitions), not an evolved M*."""
    return bool(metadata.columns) and fingerprint(metadata) == fingerprint(GovernedMetadata(columns=fixed_columns()))


def relative_min_support(floor: int, share: float, corpus_size: int) -> int:
    """Conversations that must propose a concept before it becomes a column: `share` of the corpus, never
    fewer than `floor` (a 60-conversation set needs 2 or 3, a 100,000-conversation one thousands)."""
    return max(floor, math.ceil(share * max(corpus_size, 0)))


def current_metadata(con, capacity: int, min_support: int) -> GovernedMetadata:
    """The newest saved M* (empty before the first governance run), with this run's capacity and support."""
    warehouse.ensure_schema(con)
    state = warehouse.latest_governance_state(con)
    metadata = GovernedMetadata.model_validate_json(state[1]) if state else GovernedMetadata()
    return metadata.model_copy(update={"capacity": capacity, "min_support": min_support})


def last_governed(con) -> GovernedMetadata | None:
    """The newest saved M* that is not the fixed schema (where governance resumes after SARAG_GOVERNANCE=fixed)."""
    for state_json in warehouse.governance_states(con):
        metadata = GovernedMetadata.model_validate_json(state_json)
        if not is_fixed(metadata):
            return metadata
    return None
