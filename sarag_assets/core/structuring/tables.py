"""Structuring stage logic: candidate schemas, metadata evolution, validated rows. No Dagster imports.

Each function takes frames and a backend and returns frames (fixed column order, see warehouse.py)
plus a list of failures; a conversation whose backend call fails is reported, not written, and is
retried by the next materialization because nothing was stored for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Iterator

import polars as pl

from sarag_assets.core.structuring import governance
from sarag_assets.core.structuring.gates import semantic_gate, structural_gate, value_span
from sarag_assets.core.structuring.interface import (
    CandidateColumn,
    CandidateSchema,
    ColumnConstraints,
    ColumnScore,
    ConversationInput,
    ConversationTurn,
    ExtractedRow,
    GovernanceDecision,
    GovernanceOperation,
    GovernedMetadata,
    MetadataColumn,
    ScoredColumn,
    StructuringBackend,
    per_conversation,
    prepare_batch,
)
from sarag_assets.core.structuring.unit_names import RULES, UnitStatistics, entity_cell
from sarag_assets.core.warehouse import conform, empty_frame, polars_schema


@dataclass
class Failure:
    dialogue_id: str
    content_hash: str
    stage: str
    reason: str


@dataclass
class StageResult:
    frame: pl.DataFrame
    failures: list[Failure] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)


def conversations_from_raw(raw: pl.DataFrame) -> list[tuple[ConversationInput, str]]:
    """(conversation, content hash) per dialogue of a raw_dialogues frame, in dialogue id order."""
    out = []
    if raw.height == 0:
        return out
    ordered = raw.sort("dialogue_id", "turn_index")
    for (dialogue_id,), turns in ordered.group_by("dialogue_id", maintain_order=True):
        conversation = ConversationInput(
            dialogue_id=dialogue_id,
            turns=[
                ConversationTurn(speaker=r["speaker"], role=r["role"], text=r["text"], accepted=bool(r.get("accepted")))
                for r in turns.iter_rows(named=True)
            ],
        )
        out.append((conversation, turns["content_hash"][0]))
    return out


def failure_frame(batch_key: str, failures: list[Failure], backend: str) -> pl.DataFrame:
    """The structuring_failures rows of one batch and stage."""
    now = datetime.now(timezone.utc)
    return pl.DataFrame(
        [{"batch_key": batch_key, "dialogue_id": f.dialogue_id, "content_hash": f.content_hash, "stage": f.stage,
          "reason": f.reason, "backend": backend, "failed_at": now} for f in failures],
        schema=polars_schema("structuring_failures"),
    )


def failure_reason(exc: Exception) -> str:
    return getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"


# Conversations a backend prepares at once (the embedded backend: one batched model call for all their
# texts). Below the embedded backend's analysis cache (256), so what preparing computed is reused.
PREPARE_CHUNK = 200


def candidate_schema_rows(
    batch_key: str, conversations: list[tuple[ConversationInput, str]], backend: StructuringBackend
) -> StageResult:
    """One row per candidate column of every conversation; the backend prepares PREPARE_CHUNK
    conversations at a time (`prepare_batch`), then proposes per conversation."""
    rows, failures = [], []
    for start in range(0, len(conversations), PREPARE_CHUNK):
        chunk = conversations[start : start + PREPARE_CHUNK]
        prepare_batch(backend, "candidate_schema", [conversation for conversation, _ in chunk])
        rows.extend(_candidate_rows(batch_key, chunk, backend, failures))
    _entity_candidates(rows, conversations, backend)
    frame = conform("candidate_schemas", pl.DataFrame(rows, infer_schema_length=None)) if rows else None
    return StageResult(frame if frame is not None else empty_frame("candidate_schemas"), failures,
                       {"conversations": len(conversations), "candidate_columns": len(rows)})


def _candidate_rows(
    batch_key: str, conversations: list[tuple[ConversationInput, str]], backend: StructuringBackend,
    failures: list[Failure],
) -> list[dict]:
    rows = []
    schemas = per_conversation(backend, lambda item: backend.candidate_schema(item[0]), conversations)
    for (conversation, content_hash), schema in zip(conversations, schemas):
        if isinstance(schema, Exception):  # a backend failure is recorded per conversation; the batch goes on
            failures.append(Failure(conversation.dialogue_id, content_hash, "candidate_schema", failure_reason(schema)))
            continue
        for column in schema.columns:
            rows.append({
                "batch_key": batch_key,
                "dialogue_id": conversation.dialogue_id,
                "content_hash": content_hash,
                "column_name": column.name,
                "column_type": column.type,
                "meaning": column.meaning,
                "constraints": column.constraints.model_dump_json(exclude_none=True),
                "note": column.note,
                "example_value": column.example_value,
                "relevance": column.score.relevance,
                "answerability": column.score.answerability,
                "overall": column.score.overall,
                "justification": column.score.justification,
                "signal": column.signal,
                "problem": schema.problem,
                "backend": schema.backend or backend.name,
            })
    return rows


def _entity_candidates(rows: list[dict], conversations: list[tuple[ConversationInput, str]],
                       backend: StructuringBackend) -> None:
    """The entity column's candidate where the backend proposed it without a value: the batch's unit name
    for what the conversation is about (`unit_names.entity_cell`, as the validated rows read it) becomes
    its example value, and the backend scores the column again with it. A corpus whose names no detector
    reads (no capitals: lower-case chat, Chinese) so gets its entity column where the batch vouches for
    the names; the candidates that have a value are left as they are."""
    empty = [r for r in rows if r["signal"] == ENTITY_SIGNAL and not r["example_value"]]
    if not empty or len(conversations) < RULES.min_conversations:
        return  # too small a batch for the unit names: no statistics to count
    proposed = {r["dialogue_id"]: r["example_value"] for r in rows
                if r["signal"] == ENTITY_SIGNAL and r["example_value"]}
    units = UnitStatistics([[t.text for t in conversation.turns] for conversation, _ in conversations],
                           proposals=[proposed.get(conversation.dialogue_id) for conversation, _ in conversations])
    by_id = {conversation.dialogue_id: conversation for conversation, _ in conversations}
    for row in empty:
        conversation = by_id[row["dialogue_id"]]
        turns = [(t.role, t.text) for t in conversation.turns]
        unit = entity_cell(turns, units, None)
        if unit is None:
            continue
        column = CandidateColumn(
            name=row["column_name"], type=row["column_type"], meaning=row["meaning"],
            constraints=ColumnConstraints.model_validate_json(row["constraints"] or "{}"),
            note=row["note"], example_value=unit.value)
        try:
            score = backend.score_columns(conversation, [column])[0]
        except Exception:  # noqa: BLE001 - the backend's own candidate stands
            continue
        row.update(example_value=unit.value,
                   note=f"turn {unit.turn}, the batch's unit names; detector {row['signal']} found none",
                   relevance=score.relevance, answerability=score.answerability, overall=score.overall,
                   justification=score.justification)


def candidates_from_rows(rows: pl.DataFrame) -> Iterator[tuple[tuple[str, str, str], CandidateSchema]]:
    """Each conversation's CandidateSchema, rebuilt from its stored candidate rows (in the frame's order),
    with its (dialogue_id, content_hash, batch_key)."""
    for (dialogue_id, content_hash), group in rows.group_by("dialogue_id", "content_hash", maintain_order=True):
        columns = [
            ScoredColumn(
                name=r["column_name"], type=r["column_type"], meaning=r["meaning"],
                constraints=ColumnConstraints.model_validate_json(r["constraints"] or "{}"),
                note=r["note"] or "", example_value=r["example_value"], signal=r["signal"],
                score=ColumnScore(relevance=r["relevance"], answerability=r["answerability"], overall=r["overall"],
                                  justification=r["justification"] or ""),
            )
            for r in group.iter_rows(named=True)
        ]
        yield (dialogue_id, content_hash, group["batch_key"][0]), CandidateSchema(
            dialogue_id=dialogue_id, problem=group["problem"][0] or "", columns=columns, backend=group["backend"][0])


@dataclass
class Evolution:
    metadata: GovernedMetadata
    operations: list[dict]
    versions: list[GovernedMetadata]  # every new version, in order
    failures: list[Failure]
    governed: list[tuple[str, str, str]]  # (dialogue_id, content_hash, batch_key) of each conversation governed

    @property
    def processed(self) -> int:
        return len(self.governed)


def evolve_metadata(
    metadata: GovernedMetadata,
    unseen: pl.DataFrame | Iterable[pl.DataFrame],
    backend: StructuringBackend,
    *,
    next_seq: int = 0,
) -> Evolution:
    """Apply governance for every not-yet-seen conversation's candidates, in the frames' order. `unseen` is
    one frame of candidate rows or frames of whole conversations (warehouse.ungoverned_candidates), consumed
    one at a time."""
    operations, versions, failures, governed = [], [], [], []
    seq = next_seq
    for frame in [unseen] if isinstance(unseen, pl.DataFrame) else unseen:
        for key, candidates in candidates_from_rows(frame):
            known = {c.name for c in metadata.columns} | {a for c in metadata.columns for a in c.aliases}
            if all(c.name in known for c in candidates.columns):
                # Nothing new: the KEEPs are certain, so no backend call is needed.
                decision = GovernanceDecision(operations=[
                    GovernanceOperation(operation="KEEP", columns=[_resolve(metadata, c.name)], candidate=c.name,
                                        scores=c.score, reason="candidate names an existing column")
                    for c in candidates.columns if c.score.overall >= governance.MIN_OVERALL
                ], backend="rule")
            else:
                try:
                    decision = backend.decide_governance(metadata, candidates)
                except Exception as exc:
                    failures.append(Failure(candidates.dialogue_id, key[1], "governance", failure_reason(exc)))
                    continue
            new, results = governance.apply_decision(metadata, decision, candidates)
            now = datetime.now(timezone.utc)
            for op, rejected in results:
                if op.operation == "KEEP" and rejected is None:
                    continue  # KEEPs only add support; logging each would drown the real changes
                seq += 1
                operations.append({
                    "seq": seq,
                    "version": new.version,
                    "dialogue_id": candidates.dialogue_id,
                    "operation": op.operation,
                    "columns": ", ".join(op.columns),
                    "candidate": op.candidate,
                    "relevance": op.scores.relevance if op.scores else None,
                    "answerability": op.scores.answerability if op.scores else None,
                    "overall": op.scores.overall if op.scores else None,
                    "reason": op.reason,
                    "rejected_reason": rejected,
                    "backend": decision.backend,
                    "applied_at": now,
                })
            if new.version != metadata.version:
                versions.append(new)
            metadata = new
            governed.append(key)
    return Evolution(metadata, operations, versions, failures, governed)


def install_fixed_metadata(current: GovernedMetadata, *, latest_version: int, next_seq: int = 0) -> Evolution:
    """The `sarag_no_governance` ablation: M* becomes the fixed schema (governance.FIXED_SCHEMA).

    Candidates are neither read nor consumed (a later switch back to governed governs them). The fixed
    schema is still versioned: installing it over another M* is a new version (after `latest_version`,
    the newest version ever recorded), logged as DELETEs of the columns it drops and ADDs of its own.
    Installing it again over itself changes nothing.
    """
    fixed = GovernedMetadata(
        version=current.version, capacity=current.capacity, min_support=current.min_support,
        columns=governance.fixed_columns(), pending=[],
    )
    if governance.is_fixed(current):
        return Evolution(current.model_copy(update={"pending": []}), [], [], [], [])
    fixed.version = max(latest_version, current.version) + 1
    for column in fixed.columns:
        column.added_in_version = fixed.version
    now = datetime.now(timezone.utc)
    fixed_names = {c.name for c in fixed.columns}
    operations = []
    reason = "fixed schema installed (SARAG_GOVERNANCE=fixed): M* is not evolved from the conversations"
    changes = [("DELETE", c.name) for c in current.columns] + [("ADD", c.name) for c in fixed.columns]
    for seq, (operation, name) in enumerate(changes, start=next_seq + 1):
        operations.append({
            "seq": seq, "version": fixed.version, "dialogue_id": None, "operation": operation, "columns": name,
            "candidate": None, "relevance": None, "answerability": None, "overall": None,
            "reason": reason if operation == "ADD" or name not in fixed_names else reason + " (redefined)",
            "rejected_reason": None, "backend": governance.FIXED_BACKEND, "applied_at": now,
        })
    return Evolution(fixed, operations, [fixed], [], [])


def resume_governed(last_governed: GovernedMetadata | None, *, latest_version: int,
                    capacity: int, min_support: int) -> GovernedMetadata:
    """Where governance picks up after the fixed schema was installed: the last evolved M* (or an empty
    one), renumbered after the newest recorded version so that versions only grow."""
    base = last_governed if last_governed is not None else GovernedMetadata()
    return base.model_copy(update={"version": latest_version, "capacity": capacity, "min_support": min_support},
                           deep=True)


def govern(
    latest: GovernedMetadata,
    unseen: pl.DataFrame,
    backend: StructuringBackend,
    *,
    governance_mode: str = "governed",
    latest_version: int | None = None,
    last_governed: GovernedMetadata | None = None,
    next_seq: int = 0,
) -> Evolution:
    """One governed_metadata step in either mode.

    `latest` is the current M* (the newest saved state), `latest_version` the newest version recorded
    (defaults to latest.version), `last_governed` the newest saved state that is not the fixed schema
    (needed only when switching back from fixed to governed).
    """
    latest_version = latest.version if latest_version is None else latest_version
    if governance_mode == "fixed":
        return install_fixed_metadata(latest, latest_version=latest_version, next_seq=next_seq)
    if governance_mode != "governed":
        raise ValueError(f"unknown governance mode {governance_mode!r}")
    if not governance.is_fixed(latest):
        return evolve_metadata(latest, unseen, backend, next_seq=next_seq)
    start = resume_governed(last_governed, latest_version=latest_version, capacity=latest.capacity,
                            min_support=latest.min_support)
    evolution = evolve_metadata(start, unseen, backend, next_seq=next_seq)
    if not evolution.versions:  # the resumed M* is itself a new version after the fixed one
        evolution.metadata = evolution.metadata.model_copy(update={"version": latest_version + 1})
        evolution.versions = [evolution.metadata]
    return evolution


def _resolve(metadata: GovernedMetadata, name: str) -> str:
    for column in metadata.columns:
        if name == column.name or name in column.aliases:
            return column.name
    return name


def carry_over_map(current: GovernedMetadata, old_column_names: set[str]) -> dict[str, str]:
    """current column -> the old column whose values it inherits (same name, or renamed/merged from it)."""
    mapping = {}
    for column in current.columns:
        for name in [column.name, *column.aliases]:
            if name in old_column_names:
                mapping[column.name] = name
                break
    return mapping


def validated_row_records(
    batch_key: str,
    conversations: list[tuple[ConversationInput, str]],
    metadata: GovernedMetadata,
    existing: pl.DataFrame,
    backend: StructuringBackend,
    *,
    gates: bool = True,
) -> StageResult:
    """Rows of every conversation against the current M*, extracting only what is not stored yet.

    `existing` holds this batch's stored rows. For a conversation already extracted under an older
    version, values of columns that were renamed or merged carry over; only columns it has never
    been asked for are extracted. Every value goes through both gates again (they are cheap).

    With `gates=False` (the `sarag_no_gates` ablation) every extracted value is kept as extracted, the
    backend's judge is not asked, and both gate results are recorded as skipped (passed = null, reason
    GATES_SKIPPED). Rows stored while the gates were off are extracted again once they are back on, so
    that the judge sees every value.
    """
    records, failures = [], []
    extracted_cells = carried_cells = 0
    stored = {}
    if existing.height:
        for (dialogue_id, content_hash), group in existing.group_by("dialogue_id", "content_hash"):
            stored[(dialogue_id, content_hash)] = {r["column_name"]: r for r in group.iter_rows(named=True)}
    plans = []  # per conversation: (stored rows, carried columns, columns to extract)
    for conversation, content_hash in conversations:
        old = stored.get((conversation.dialogue_id, content_hash), {})
        if gates and any(r["semantic_reason"] == GATES_SKIPPED for r in old.values()):
            old = {}  # extracted without the judge: extract and judge again
        carried = carry_over_map(metadata, set(old))
        plans.append((old, carried, [c for c in metadata.columns if c.name not in carried]))

    def extract(item):
        (conversation, _), (_, _, needed) = item
        if not needed:
            return None
        subset = metadata.model_copy(update={"columns": needed, "pending": []})
        row: ExtractedRow = backend.extract_row(conversation, subset)
        return row, (_judge(backend, conversation, subset, row) if gates else {})

    items = list(zip(conversations, plans))
    extracted: list = []
    for start in range(0, len(items), PREPARE_CHUNK):
        chunk = items[start : start + PREPARE_CHUNK]
        wanted = {c.name for _, (_, _, needed) in chunk for c in needed}  # a metadata change: its new columns
        prepare_batch(backend, "extract_row", [conversation for (conversation, _), (_, _, needed) in chunk if needed],
                      metadata.model_copy(update={"columns": [c for c in metadata.columns if c.name in wanted],
                                                  "pending": []}))
        extracted.extend(per_conversation(backend, extract, chunk))
    # the names this batch uses as units, for the entity column's cells (`unit_names`), with what the
    # backend took each conversation to be about
    entity = {c.name for c in metadata.columns if c.signal == ENTITY_SIGNAL}
    units = UnitStatistics([[t.text for t in conversation.turns] for conversation, _ in conversations],
                           proposals=[_proposal(outcome, entity, old, carried)
                                      for (old, carried, _), outcome in zip(plans, extracted)])
    for (conversation, content_hash), (old, carried, needed), outcome in zip(conversations, plans, extracted):
        values: dict[str, tuple[str | None, str | None, str]] = {}  # column -> (raw value, evidence, backend)
        if isinstance(outcome, Exception):
            failures.append(Failure(conversation.dialogue_id, content_hash, "extract_row", failure_reason(outcome)))
            records.extend(old.values())  # keep what was stored (under its older version) rather than lose it
            continue
        if needed:
            row, judged = outcome
            by_column = {v.column: v for v in row.values}
            for column in needed:
                v = by_column.get(column.name)
                values[column.name] = (v.value if v else None, v.evidence if v else None, row.backend or backend.name)
                if column.signal == ENTITY_SIGNAL:
                    values[column.name] = _entity_value(conversation, units, *values[column.name])
            extracted_cells += len(needed)
        else:
            judged = {}
        for name, old_name in carried.items():
            r = old[old_name]
            values[name] = (r["raw_value"], r["evidence"], r["backend"])
            if r["semantic_passed"] is False:
                judged[name] = (False, r["semantic_reason"])
            carried_cells += 1
        for column in metadata.columns:
            raw_value, evidence, made_by = values[column.name]
            records.append(_gate(batch_key, conversation, content_hash, column, raw_value, evidence, made_by,
                                 judged.get(column.name), metadata.version, gates=gates))
    frame = conform("validated_rows", pl.DataFrame(records, infer_schema_length=None)) if records else empty_frame(
        "validated_rows")
    return StageResult(frame, failures, {"extracted_cells": extracted_cells, "carried_cells": carried_cells})


# the signal of the column holding what a conversation is about (the embedded backend's product detector;
# the governed column keeps the signal of the candidates it came from)
ENTITY_SIGNAL = "product"


def _proposal(outcome, entity_columns: set[str], old: dict, carried: dict) -> str | None:
    """The entity column's value as read for this conversation: extracted now, or carried from the stored
    row (None for a failed extraction or none at all)."""
    kept = next((old[carried[name]]["raw_value"] for name in entity_columns if name in carried), None)
    if kept or outcome is None or isinstance(outcome, Exception):
        return kept
    row, _ = outcome
    return next((v.value for v in row.values if v.column in entity_columns and v.value), None)


def _entity_value(conversation: ConversationInput, units: UnitStatistics, value, evidence, made_by):
    """The entity cell as the batch's unit names read it (`unit_names.entity_cell`), the backend's value
    counting as evidence; the backend's value unchanged when the batch is too small to count or no unit
    name qualifies (a frequent product's name is no unit name, and is still the product where nothing
    more specific is named)."""
    if not units.usable:
        return value, evidence, made_by
    turns = [(t.role, t.text) for t in conversation.turns]
    unit = entity_cell(turns, units, value)
    if unit is None:
        return value, evidence, made_by
    return unit.value, turns[unit.turn][1], made_by


def _judge(backend, conversation, metadata, row) -> dict[str, tuple[bool, str]]:
    """The backend's own judgement of each non-null value (the LLM judge, or the embedded gate)."""
    if not any(v.value not in (None, "") for v in row.values):
        return {}
    judgement = backend.judge_row(conversation, metadata, row)
    return {j.column: (j.supported, j.reason) for j in judgement.judgements}


GATES_SKIPPED = "skipped: gates off (SARAG_GATES=off)"


def _gate(batch_key, conversation, content_hash, column: MetadataColumn, raw_value, evidence, made_by, judged,
          version, *, gates: bool = True) -> dict:
    record = {
        "batch_key": batch_key,
        "dialogue_id": conversation.dialogue_id,
        "content_hash": content_hash,
        "column_name": column.name,
        "value": None,
        "raw_value": raw_value,
        "evidence": evidence,
        "semantic_passed": None,
        "semantic_reason": None,
        "structural_passed": None,
        "structural_reason": None,
        "metadata_version": version,
        "backend": made_by,
        "span_turn": None,
        "span_start": None,
        "span_end": None,
    }
    if raw_value is None or str(raw_value).strip() == "":
        return record
    span = value_span(str(raw_value), conversation, evidence) if column.type == "string" else None
    if span is not None:
        record["span_turn"], record["span_start"], record["span_end"] = span
    if not gates:
        record["semantic_reason"] = record["structural_reason"] = GATES_SKIPPED
        record["value"] = str(raw_value).strip()
        return record
    ok, reason = semantic_gate(str(raw_value), column, conversation, evidence)
    if ok and column.signal == ENTITY_SIGNAL and span is None:
        # what a conversation is about is one span of it: a value no turn holds as written names nothing
        ok, reason = False, "no span: the conversation does not hold the value as written"
    if ok and judged is not None and not judged[0]:
        ok, reason = False, f"judge: {judged[1]}"
    record["semantic_passed"], record["semantic_reason"] = ok, reason
    s_ok, s_reason = structural_gate(str(raw_value), column)
    record["structural_passed"], record["structural_reason"] = s_ok, s_reason
    if ok and s_ok:
        record["value"] = str(raw_value).strip()
    return record


def metadata_version_row(metadata: GovernedMetadata, backend: str) -> dict:
    return {
        "version": metadata.version,
        "fingerprint": governance.fingerprint(metadata),
        "n_columns": len(metadata.columns),
        "columns_json": json.dumps([c.model_dump() for c in metadata.columns]),
        "backend": backend,
        "created_at": datetime.now(timezone.utc),
    }


def validated_row_outcomes(stored: pl.DataFrame, n_failed: int, *, gates: bool = True) -> list:
    """The validated_rows check outcomes (core.quality.validated_row_rules); with the gates off the
    gate checks report that the gates are off instead of blocking on values nobody gated."""
    from sarag_assets.core.checks import RuleOutcome, validated_row_rules

    outcomes = validated_row_rules(stored, n_failed)
    if gates:
        return outcomes
    kept = stored.filter(pl.col("value").is_not_null())
    ungated = kept.filter(pl.col("semantic_reason") == GATES_SKIPPED).height
    extracted = stored.filter(pl.col("raw_value").is_not_null() & (pl.col("raw_value").str.strip_chars() != "")).height
    replaced = {
        "values_pass_both_gates": RuleOutcome(
            "values_pass_both_gates", True,
            "gates are off (SARAG_GATES=off): values were kept without the semantic and structural gates",
            {"gates": "off", "non_null_values": kept.height, "ungated_values": ungated}),
        "gate_rates": RuleOutcome(
            "gate_rates", True, "gates are off (SARAG_GATES=off): no value was gated",
            {"gates": "off", "extracted_values": extracted, "ungated_values": ungated}),
    }
    return [replaced.get(o.name, o) for o in outcomes]
