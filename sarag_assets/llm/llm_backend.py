"""The LLM structuring backend: every `StructuringBackend` step as one structured call over
`StructuredLLM` (instructor over the openai client, any OpenAI-compatible endpoint). No Dagster imports.

Calls per conversation (what the pipeline spends, cache misses only; cache hits cost no request):

- `candidate_schema(conv)`: **1** call that proposes, normalizes and scores together, followed by a
  deterministic local pass (`normalize.py`: snake_case + synonym names, canonical types, dedupe);
- `extract_row(conv, M*)`: **1** call (none when M* has no columns);
- `judge_row(conv, M*, row)`: **1** call (none when the row has no non-null value);
- `decide_governance(M*, candidates)`: **1** call (none when there are no candidates). The pipeline
  (`core.structuring.evolve_metadata`) calls it only for a conversation whose candidates bring a name
  not already in M* (as a column name or alias); otherwise it records the KEEPs itself.

So 3 calls per conversation, plus 1 for governance while the metadata is still evolving. Each call
may cost more HTTP requests on transport retries or validation re-asks (counted in `CallStats`).
`propose_columns`, `normalize_columns` and `score_columns` also work on their own (1 call each, none
for an empty list) but the pipeline uses `candidate_schema` instead of chaining them.

Prompt hygiene: the instructions (`prompts.py`) hold no conversation text; the conversation, and the
metadata, candidates and rows that accompany it, travel only as delimited data in the user message
(`StructuredLLM.complete(user_data=...)`; JSON inside the block for structured parts).

Validation beyond the JSON schema happens in the internal response models below, so instructor re-asks
with a useful error: scores within 0..1, non-empty names and meanings, types that map to a canonical
type, constraint patterns that compile, minimum <= maximum, scores/judgements for every column asked
about, governance operations that `core.governance.apply_decision` would accept (simulated in order:
names that exist at that point, no duplicate columns, same-type merges, never above capacity).
Harmless deviations are repaired rather than re-asked: column names are matched case- and
spelling-insensitively, values for columns not in M* are dropped, missing row values become null,
numbers given for string fields are turned into strings.

Errors: `LLMCallFailed` (after the call layer's retries) propagates unchanged; the caller records the
conversation as failed and goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, Field, field_validator, model_validator

from sarag_assets.llm import prompts
from sarag_assets.llm.client import CallStats, LLMSettings, StructuredLLM
from sarag_assets.llm.interface import (
    CANONICAL_TYPES,
    CandidateColumn,
    CandidateSchema,
    ColumnConstraints,
    ColumnScore,
    ConversationInput,
    DialogueGraph,
    ExtractedRow,
    ExtractedValue,
    GovernanceDecision,
    GovernanceOperation,
    GovernedMetadata,
    GraphEdge,
    GraphNode,
    MetadataColumn,
    Operation,
    PseudoDocuments,
    RowJudgement,
    ScoredColumn,
    ValueJudgement,
)
from sarag_assets.llm.normalize import canonical_name, canonical_type, dedupe_scored, normalize_candidates, snake_case

if TYPE_CHECKING:
    from sarag_assets.llm.cache import CallCache

__all__ = ["LLMBackend"]

_TYPES_TEXT = ", ".join(CANONICAL_TYPES)
_NULL_WORDS = frozenset({"", "null", "none", "n/a", "na", "unknown", "not mentioned", "not stated", "not specified", "-"})

M = TypeVar("M", bound=BaseModel)


# ---------------------------------------------------------------------------------------------------
# small coercions shared by the response models


def _text_or_none(value: Any) -> Any:
    """Scalars and lists the model may send for a string field, as a string; null-words as None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        parts = [str(_text_or_none(v)) for v in value if _text_or_none(v) is not None]
        value = ", ".join(parts)
    if isinstance(value, str):
        text = value.strip()
        return None if text.lower() in _NULL_WORDS else text
    return value  # anything else: let the field's own validation complain


def _required_text(value: Any, what: str) -> str:
    text = str(value or "").strip()
    if not text:
        raise ValueError(f"{what} must not be empty")
    return text


class _NameIndex:
    """Resolves names the model writes to the names it was given: exact, then canonical form
    (case, spacing, punctuation, known synonyms), then a listed alias."""

    def __init__(self, names: Iterable[str], aliases: Mapping[str, Iterable[str]] | None = None):
        self.names: tuple[str, ...] = tuple(dict.fromkeys(names))
        self._lookup: dict[str, str] = {}
        for name in self.names:
            self._lookup.setdefault(name, name)
        for name in self.names:
            self._lookup.setdefault(canonical_name(name), name)
            self._lookup.setdefault(snake_case(name), name)
        for name, alias_list in (aliases or {}).items():
            for alias in alias_list:
                self._lookup.setdefault(alias, name)
                self._lookup.setdefault(canonical_name(alias), name)

    def resolve(self, name: str) -> str | None:
        text = str(name).strip()
        return self._lookup.get(text) or self._lookup.get(canonical_name(text)) or self._lookup.get(snake_case(text))

    def listing(self) -> str:
        return ", ".join(self.names) if self.names else "(none)"


# ---------------------------------------------------------------------------------------------------
# internal response models (what the model answers; converted to the interface models afterwards)


class ConstraintsAnswer(ColumnConstraints):
    """Constraints every value of the column must meet; null where none holds."""

    @field_validator("allowed_values", mode="before")
    @classmethod
    def _allowed_as_text(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            value = [value]
        cleaned = [str(_text_or_none(v)) for v in value if _text_or_none(v) is not None]
        return list(dict.fromkeys(cleaned)) or None

    @field_validator("pattern", mode="before")
    @classmethod
    def _pattern_compiles(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        try:
            re.compile(str(value))
        except re.error as exc:
            raise ValueError(f"pattern {value!r} is not a valid regular expression ({exc}); fix it or use null") from None
        return str(value)

    @model_validator(mode="after")
    def _limits_consistent(self) -> "ConstraintsAnswer":
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise ValueError(f"minimum {self.minimum} is greater than maximum {self.maximum}")
        if self.max_length is not None and self.max_length < 1:
            raise ValueError("max_length must be at least 1 (or null)")
        return self

    def plain(self) -> ColumnConstraints:
        return ColumnConstraints(**self.model_dump())


class ScoreAnswer(BaseModel):
    """Scores of one column against this conversation, each 0..1."""

    relevance: float = Field(ge=0, le=1, description="0..1: how central the column is to the conversation's problem")
    answerability: float = Field(ge=0, le=1, description="0..1: how well the conversation supplies a value")
    overall: float = Field(ge=0, le=1, description="0..1: how much the column is worth in the corpus table")
    justification: str = Field("", description="one short line")

    @field_validator("justification", mode="before")
    @classmethod
    def _justification_text(cls, value: Any) -> Any:
        return "" if value is None else str(value).strip()

    def plain(self) -> ColumnScore:
        return ColumnScore(**self.model_dump())


class ProposedColumn(BaseModel):
    """A candidate column for the table."""

    name: str = Field(description="lower snake_case column name")
    type: str = Field(description=f"one of {_TYPES_TEXT}")
    meaning: str = Field(description="what the column holds, one sentence")
    constraints: ConstraintsAnswer = Field(default_factory=ConstraintsAnswer)
    note: str = Field("", description="where in the conversation the value comes from (turn numbers)")
    example_value: str | None = Field(None, description="this conversation's value, verbatim where possible; null if absent")

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> str:
        return _required_text(value, "column name")

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> str:
        return _required_text(value, "column type")

    @field_validator("meaning", mode="before")
    @classmethod
    def _meaning(cls, value: Any) -> str:
        return _required_text(value, "column meaning")

    @field_validator("constraints", mode="before")
    @classmethod
    def _constraints(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("note", mode="before")
    @classmethod
    def _note(cls, value: Any) -> Any:
        return "" if value is None else _text_or_none(value) or ""

    @field_validator("example_value", mode="before")
    @classmethod
    def _example(cls, value: Any) -> Any:
        return _text_or_none(value)

    def candidate(self) -> CandidateColumn:
        return CandidateColumn(
            name=self.name,
            type=self.type,
            meaning=self.meaning,
            constraints=self.constraints.plain(),
            note=self.note,
            example_value=self.example_value,
        )


class NormalizedColumn(ProposedColumn):
    """A candidate column with a lower snake_case name and a canonical type."""

    @model_validator(mode="after")
    def _normalized(self) -> "NormalizedColumn":
        name = canonical_name(self.name)
        if not name:
            raise ValueError(f"column name {self.name!r} has no letters or digits; use a lower snake_case name")
        kind = canonical_type(self.type)
        if kind is None:
            raise ValueError(f"column {name!r}: type {self.type!r} is not one of {_TYPES_TEXT}")
        self.name, self.type = name, kind
        return self


class ScoredColumnAnswer(NormalizedColumn):
    """A candidate column with a lower snake_case name, a canonical type and its scores."""

    score: ScoreAnswer

    def scored(self) -> ScoredColumn:
        return ScoredColumn(
            name=self.name,
            type=self.type,  # canonical (validated)
            meaning=self.meaning,
            constraints=self.constraints.plain(),
            note=self.note,
            example_value=self.example_value,
            score=self.score.plain(),
        )


class CandidateSchemaAnswer(BaseModel):
    """The conversation's problem and its candidate columns, each normalized and scored."""

    problem: str = Field(description="the conversation's problem in one sentence")
    columns: list[ScoredColumnAnswer]

    @field_validator("problem", mode="before")
    @classmethod
    def _problem(cls, value: Any) -> str:
        return _required_text(value, "problem")


class ProposedColumns(BaseModel):
    """The candidate columns proposed for this conversation."""

    columns: list[ProposedColumn]


class NormalizedColumns(BaseModel):
    """The candidate columns, normalized."""

    columns: list[NormalizedColumn]


# -- answers checked against what was asked (bound to the call's names by `_bound`) -----------------


class ColumnScoreAnswer(BaseModel):
    column: str = Field(description="the column's name, exactly as given")
    relevance: float = Field(ge=0, le=1, description="0..1: how central the column is to the conversation's problem")
    answerability: float = Field(ge=0, le=1, description="0..1: how well the conversation supplies a value")
    overall: float = Field(ge=0, le=1, description="0..1: how much the column is worth in the corpus table")
    justification: str = Field("", description="one short line")

    @field_validator("justification", mode="before")
    @classmethod
    def _justification_text(cls, value: Any) -> Any:
        return "" if value is None else str(value).strip()

    def plain(self) -> ColumnScore:
        return ColumnScore(**self.model_dump(exclude={"column"}))


class ColumnScores(BaseModel):
    """One score per listed column."""

    expected: ClassVar[_NameIndex | None] = None
    scores: list[ColumnScoreAnswer]

    @model_validator(mode="after")
    def _every_column_once(self) -> "ColumnScores":
        index = type(self).expected
        if index is None:
            return self
        seen: dict[str, ColumnScoreAnswer] = {}
        for item in self.scores:
            name = index.resolve(item.column)
            if name is not None and name not in seen:
                seen[name] = item.model_copy(update={"column": name})
        missing = [n for n in index.names if n not in seen]
        if missing:
            raise ValueError(f"no score for column(s) {', '.join(missing)}; score every listed column exactly once: {index.listing()}")
        self.scores = [seen[n] for n in index.names]
        return self


class RowValueAnswer(BaseModel):
    column: str = Field(description="the column's name, exactly as given")
    value: str | None = Field(None, description="the value this conversation gives, in the column's type; null if it does not say")
    evidence: str | None = Field(None, description="shortest verbatim excerpt supporting the value; null when value is null")

    @field_validator("value", "evidence", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return _text_or_none(value)


class RowValues(BaseModel):
    """This conversation's value for each table column."""

    expected: ClassVar[_NameIndex | None] = None
    values: list[RowValueAnswer]

    @model_validator(mode="after")
    def _metadata_columns_only(self) -> "RowValues":
        index = type(self).expected
        if index is None:
            return self
        kept: dict[str, RowValueAnswer] = {}
        for item in self.values:
            name = index.resolve(item.column)
            if name is None:
                continue  # not a metadata column: dropped
            if name not in kept or (kept[name].value is None and item.value is not None):
                kept[name] = item.model_copy(update={"column": name})
        self.values = [kept[n] for n in index.names if n in kept]
        return self


class ValueJudgementAnswer(BaseModel):
    column: str = Field(description="the column's name, exactly as given")
    supported: bool = Field(description="true only if the conversation states or directly implies the value")
    reason: str = Field("", description="one line, citing the turn")

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> Any:
        return "" if value is None else str(value).strip()


class ValueJudgements(BaseModel):
    """Whether each extracted value is supported by the conversation."""

    expected: ClassVar[_NameIndex | None] = None
    judgements: list[ValueJudgementAnswer]

    @model_validator(mode="after")
    def _every_value_once(self) -> "ValueJudgements":
        index = type(self).expected
        if index is None:
            return self
        seen: dict[str, ValueJudgementAnswer] = {}
        for item in self.judgements:
            name = index.resolve(item.column)
            if name is not None and name not in seen:
                seen[name] = item.model_copy(update={"column": name})
        missing = [n for n in index.names if n not in seen]
        if missing:
            raise ValueError(f"no judgement for column(s) {', '.join(missing)}; judge every listed column exactly once: {index.listing()}")
        self.judgements = [seen[n] for n in index.names]
        return self


class OperationAnswer(BaseModel):
    operation: Operation
    columns: list[str] = Field(description="KEEP/ADD/DELETE: [name]; EXPAND: [existing, new]; MERGE: [merged..., surviving]")
    candidate: str | None = Field(None, description="the candidate that causes this operation, or null")
    reason: str = Field(description="one short line")

    @field_validator("operation", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("columns", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            value = [str(v).strip() for v in value if v is not None and str(v).strip()]
        return value

    @field_validator("candidate", mode="before")
    @classmethod
    def _candidate(cls, value: Any) -> Any:
        return _text_or_none(value)

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> Any:
        return "" if value is None else str(value).strip()


class GovernanceOperations(BaseModel):
    """The operations this conversation's candidates cause on the metadata."""

    # bound per call: (name, type) of the current columns, their aliases, the candidates and the
    # pending concepts; the capacity
    existing: ClassVar[tuple[tuple[str, str], ...] | None] = None
    aliases: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = ()
    candidates: ClassVar[tuple[tuple[str, str], ...]] = ()
    pending: ClassVar[tuple[tuple[str, str], ...]] = ()
    capacity: ClassVar[int] = 0
    operations: list[OperationAnswer]

    @model_validator(mode="after")
    def _valid_in_order(self) -> "GovernanceOperations":
        cls = type(self)
        if cls.existing is None:
            return self
        self.operations = _check_operations(
            self.operations,
            existing=cls.existing,
            aliases=dict(cls.aliases),
            candidates=cls.candidates,
            pending=cls.pending,
            capacity=cls.capacity,
        )
        return self


def _check_operations(
    operations: list[OperationAnswer],
    *,
    existing: tuple[tuple[str, str], ...],
    aliases: Mapping[str, Iterable[str]],
    candidates: tuple[tuple[str, str], ...],
    pending: tuple[tuple[str, str], ...],
    capacity: int,
) -> list[OperationAnswer]:
    """Simulate the operations in order, as `core.governance.apply_decision` applies them, and return
    them with names resolved to the spelling given; raise ValueError listing every operation that
    would be rejected (unknown names, a missing column, a duplicate, a type clash, over capacity).
    KEEPs that no candidate causes are dropped; a DELETE of several columns becomes one per column."""
    current: dict[str, str] = dict(existing)  # name -> type, as the operations change it
    old_index = _NameIndex(current, aliases)
    cand_types = dict(candidates)
    cand_index = _NameIndex(cand_types)
    new_types = {**dict(pending), **cand_types}  # what an ADD may bring in
    new_index = _NameIndex(new_types)
    limit = max(capacity, len(current))  # an M* already over capacity may shrink or stay, never grow
    errors: list[str] = []
    cleaned: list[OperationAnswer] = []
    used: dict[str, int] = {}

    def column_now(name: str) -> str | None:
        """The current column `name` means (renames by earlier operations included)."""
        if name in current:
            return name
        resolved = _NameIndex(current).resolve(name) or old_index.resolve(name)
        return resolved if resolved in current else None

    def listing() -> str:
        return ", ".join(current) or "(none)"

    for i, op in enumerate(operations):
        where = f"operations[{i}] {op.operation} {op.columns}"
        cols = list(op.columns)
        candidate = None
        if op.candidate is not None:
            candidate = cand_index.resolve(op.candidate)
            if candidate is None:
                errors.append(f"{where}: {op.candidate!r} is not a candidate ({cand_index.listing()})")
                continue
        if not cols:
            errors.append(f"{where}: columns must not be empty")
            continue
        out: list[OperationAnswer] = []
        if op.operation == "KEEP":
            if len(cols) != 1 or column_now(cols[0]) is None:
                errors.append(f"{where}: KEEP takes exactly one current column ({listing()})")
                continue
            if candidate is None:
                continue  # restating an untouched column: nothing to record
            out.append(op.model_copy(update={"columns": [column_now(cols[0])]}))
        elif op.operation == "EXPAND":
            if len(cols) != 2:
                errors.append(f"{where}: columns must be [existing, new]")
                continue
            old = column_now(cols[0])
            if old is None:
                errors.append(f"{where}: {cols[0]!r} is not a current column ({listing()})")
                continue
            new = cand_index.resolve(cols[1]) or snake_case(cols[1])
            if not new or new in current:
                errors.append(f"{where}: the new name {cols[1]!r} must be a lower snake_case name not already a column")
                continue
            current[new] = current.pop(old)
            out.append(op.model_copy(update={"columns": [old, new]}))
        elif op.operation == "ADD":
            name = new_index.resolve(cols[0]) if len(cols) == 1 else None
            if name is None:
                errors.append(f"{where}: ADD takes exactly one candidate name ({cand_index.listing()})")
                continue
            if column_now(name) is not None:
                errors.append(f"{where}: {name!r} is already the column {column_now(name)!r}; use KEEP")
                continue
            if len(current) >= limit:
                errors.append(
                    f"{where}: the table already has {len(current)} columns (capacity {limit}); "
                    f"free a slot first with an earlier MERGE or DELETE, or leave the candidate out"
                )
                continue
            current[name] = new_types[name]
            if candidate is None and name in cand_types:
                candidate = name
            out.append(op.model_copy(update={"columns": [name]}))
        elif op.operation == "DELETE":
            names = [column_now(c) for c in cols]
            if None in names:
                errors.append(f"{where}: unknown column(s) {', '.join(c for c, n in zip(cols, names) if n is None)} ({listing()})")
                continue
            for name in dict.fromkeys(names):
                current.pop(name)
                out.append(op.model_copy(update={"columns": [name]}))
        else:  # MERGE
            names = [column_now(c) for c in cols]
            if len(cols) < 2 or None in names:
                errors.append(
                    f"{where}: MERGE takes [merged..., surviving], all current columns ({listing()}); "
                    f"to fold a candidate into a column use KEEP"
                )
                continue
            survivor = names[-1]
            merged = [n for n in dict.fromkeys(names[:-1]) if n != survivor]
            clash = [n for n in merged if current[n] != current[survivor]]
            if clash:
                errors.append(f"{where}: cannot merge {', '.join(clash)} into {survivor!r} (different types)")
                continue
            for name in merged:
                current.pop(name)
            out.append(op.model_copy(update={"columns": [*merged, survivor]}))
        if candidate is not None and op.operation in ("KEEP", "EXPAND", "ADD"):
            if candidate in used:
                errors.append(f"{where}: candidate {candidate!r} is already used by operations[{used[candidate]}]; use each candidate in at most one KEEP, EXPAND or ADD")
                continue
            used[candidate] = i
        cleaned.extend(o.model_copy(update={"candidate": candidate}) for o in out)
    if errors:
        raise ValueError("; ".join(errors))
    return cleaned


def _bound(model: type[M], **context: Any) -> type[M]:
    """`model` with its ClassVars set for one call (same class name, so the same tool/schema title)."""
    return type(model.__name__, (model,), {**context, "__module__": __name__, "__doc__": model.__doc__})


def _index(names: Iterable[str], aliases: Iterable[tuple[str, tuple[str, ...]]] = ()) -> _NameIndex:
    return _NameIndex(names, dict(aliases))


# One bound class per distinct set of names (M* changes rarely, so these are reused across calls).
@lru_cache(maxsize=256)
def _scores_model(names: tuple[str, ...]) -> type[ColumnScores]:
    return _bound(ColumnScores, expected=_index(names))


@lru_cache(maxsize=256)
def _row_model(names: tuple[str, ...], aliases: tuple[tuple[str, tuple[str, ...]], ...]) -> type[RowValues]:
    return _bound(RowValues, expected=_index(names, aliases))


@lru_cache(maxsize=256)
def _judgement_model(names: tuple[str, ...]) -> type[ValueJudgements]:
    return _bound(ValueJudgements, expected=_index(names))


@lru_cache(maxsize=256)
def _governance_model(
    existing: tuple[tuple[str, str], ...],
    aliases: tuple[tuple[str, tuple[str, ...]], ...],
    candidates: tuple[tuple[str, str], ...],
    pending: tuple[tuple[str, str], ...],
    capacity: int,
) -> type[GovernanceOperations]:
    return _bound(
        GovernanceOperations, existing=existing, aliases=aliases, candidates=candidates, pending=pending, capacity=capacity
    )


# ---------------------------------------------------------------------------------------------------
# data blocks (everything the model works on, sent as delimited data)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _constraints_data(constraints: ColumnConstraints) -> dict[str, Any]:
    return {k: v for k, v in constraints.model_dump().items() if v is not None}


def _column_data(column: MetadataColumn | CandidateColumn | ScoredColumn) -> dict[str, Any]:
    data: dict[str, Any] = {"name": column.name, "type": column.type, "meaning": column.meaning}
    if constraints := _constraints_data(column.constraints):
        data["constraints"] = constraints
    return data


def _conversation_data(conversation: ConversationInput) -> str:
    return f"## conversation\n{conversation.transcript()}"


def _with_json(conversation: ConversationInput, title: str, payload: Any) -> str:
    return f"{_conversation_data(conversation)}\n\n## {title} (JSON)\n{_json(payload)}"


def _aliases(metadata: GovernedMetadata) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((c.name, tuple(c.aliases)) for c in metadata.columns if c.aliases)


MAX_PENDING_SHOWN = 30  # pending concepts shown to the governance call (M* may hold hundreds)


def _relevant_pending(metadata: GovernedMetadata, candidates: CandidateSchema) -> list[MetadataColumn]:
    """The pending concepts the model should see: those a candidate names (by canonical name) first,
    then the strongest others (support x mean score), at most MAX_PENDING_SHOWN, in a stable order."""
    if not metadata.pending:
        return []
    wanted = {canonical_name(c.name) for c in candidates.columns}
    named = [p for p in metadata.pending if canonical_name(p.name) in wanted]
    others = sorted(
        (p for p in metadata.pending if canonical_name(p.name) not in wanted),
        key=lambda p: (-p.support * p.mean_score, p.name),
    )
    return (named + others)[:MAX_PENDING_SHOWN]


# ---------------------------------------------------------------------------------------------------
# the backend


class LLMBackend:
    """`StructuringBackend` over one OpenAI-compatible endpoint. Thread-safe (no state besides the
    shared `StructuredLLM`, whose stats and cache lock themselves)."""

    def __init__(self, llm: StructuredLLM):
        self.llm = llm
        self.name = f"llm/{llm.settings.model}"

    @classmethod
    def from_settings(cls, settings: LLMSettings, *, cache: "CallCache | None" = None, stats: CallStats | None = None) -> "LLMBackend":
        return cls(StructuredLLM(settings, cache, stats))

    @property
    def stats(self) -> CallStats:
        return self.llm.stats

    def close(self) -> None:
        self.llm.close()

    def __repr__(self) -> str:
        return f"LLMBackend({self.name!r}, mode={self.llm.settings.mode!r})"

    def _complete(self, system: str, user_data: str, response_model: type[M], task: str, data_tag: str = "conversation") -> M:
        return self.llm.complete(system=system, user_data=user_data, response_model=response_model, task=task, data_tag=data_tag)

    # -- candidate columns ---------------------------------------------------------------------------

    def candidate_schema(self, conversation: ConversationInput) -> CandidateSchema:
        """One call: propose, normalize and score; then the local normalization pass."""
        answer = self._complete(
            prompts.CANDIDATE_SCHEMA,
            _conversation_data(conversation),
            CandidateSchemaAnswer,
            f"candidate_schema[{conversation.dialogue_id}]",
        )
        columns = dedupe_scored(c.scored() for c in answer.columns)
        return CandidateSchema(dialogue_id=conversation.dialogue_id, problem=answer.problem, columns=columns, backend=self.name)

    def propose_columns(self, conversation: ConversationInput) -> list[CandidateColumn]:
        answer = self._complete(
            prompts.PROPOSE_COLUMNS,
            _conversation_data(conversation),
            ProposedColumns,
            f"propose_columns[{conversation.dialogue_id}]",
        )
        return [c.candidate() for c in answer.columns]

    def normalize_columns(self, columns: list[CandidateColumn]) -> list[CandidateColumn]:
        if not columns:
            return []
        payload = [
            {**_column_data(c), "type": c.type, "note": c.note, "example_value": c.example_value} for c in columns
        ]
        answer = self._complete(
            prompts.NORMALIZE_COLUMNS, _json(payload), NormalizedColumns, "normalize_columns", data_tag="candidates"
        )
        return normalize_candidates(c.candidate() for c in answer.columns)

    def score_columns(self, conversation: ConversationInput, columns: list[CandidateColumn]) -> list[ColumnScore]:
        """One score per input column, in input order (columns sharing a name share a score)."""
        if not columns:
            return []
        names = tuple(dict.fromkeys(c.name for c in columns))
        answer = self._complete(
            prompts.SCORE_COLUMNS,
            _with_json(conversation, "candidate columns", [_column_data(c) for c in columns]),
            _scores_model(names),
            f"score_columns[{conversation.dialogue_id}]",
        )
        by_name = {s.column: s.plain() for s in answer.scores}
        return [by_name[c.name] for c in columns]

    # -- governance ----------------------------------------------------------------------------------

    def decide_governance(self, metadata: GovernedMetadata, candidates: CandidateSchema) -> GovernanceDecision:
        """One call (none when there are no candidates). The operations come back checked against
        M* in order, the way `core.governance.apply_decision` applies them, each carrying its
        candidate's scores."""
        if not candidates.columns:
            return GovernanceDecision(operations=[], backend=self.name)
        pending = _relevant_pending(metadata, candidates)
        payload = {
            "capacity": metadata.capacity,
            "min_support": metadata.min_support,
            "current_column_count": len(metadata.columns),
            "current_columns": [
                {**_column_data(c), "aliases": c.aliases, "support": c.support, "mean_score": round(c.mean_score, 3)}
                for c in metadata.columns
            ],
            "pending_concepts": [
                {**_column_data(c), "support": c.support, "mean_score": round(c.mean_score, 3)} for c in pending
            ],
            "conversation_problem": candidates.problem,
            "candidates": [
                {
                    **_column_data(c),
                    "example_value": c.example_value,
                    "relevance": c.score.relevance,
                    "answerability": c.score.answerability,
                    "overall": c.score.overall,
                }
                for c in candidates.columns
            ],
        }
        model = _governance_model(
            tuple((c.name, c.type) for c in metadata.columns),
            _aliases(metadata),
            tuple((c.name, c.type) for c in candidates.columns),
            tuple((c.name, c.type) for c in pending),
            metadata.capacity,
        )
        answer = self._complete(
            prompts.GOVERNANCE, _json(payload), model, f"decide_governance[{candidates.dialogue_id}]", data_tag="governance_data"
        )
        scores = {c.name: c.score for c in candidates.columns}
        operations = [
            GovernanceOperation(
                operation=op.operation,
                columns=op.columns,
                candidate=op.candidate,
                scores=scores.get(op.candidate) if op.candidate else None,
                reason=op.reason,
            )
            for op in answer.operations
        ]
        return GovernanceDecision(operations=operations, backend=self.name)

    # -- rows ----------------------------------------------------------------------------------------

    def extract_row(self, conversation: ConversationInput, metadata: GovernedMetadata) -> ExtractedRow:
        """One value per metadata column, in M* order; null where the conversation does not say."""
        names = [c.name for c in metadata.columns]
        found: dict[str, RowValueAnswer] = {}
        if names:
            answer = self._complete(
                prompts.EXTRACT_ROW,
                _with_json(conversation, "table columns", [_column_data(c) for c in metadata.columns]),
                _row_model(tuple(names), _aliases(metadata)),
                f"extract_row[{conversation.dialogue_id}]",
            )
            found = {v.column: v for v in answer.values}
        values = []
        for name in names:
            item = found.get(name)
            value = item.value if item is not None else None
            evidence = item.evidence if item is not None and value is not None else None
            values.append(ExtractedValue(column=name, value=value, evidence=evidence))
        return ExtractedRow(dialogue_id=conversation.dialogue_id, values=values, backend=self.name)

    def judge_row(self, conversation: ConversationInput, metadata: GovernedMetadata, row: ExtractedRow) -> RowJudgement:
        """One judgement per non-null value of `row`, in row order (null values need none)."""
        to_judge = list({v.column: v for v in row.values if (v.value or "").strip()}.values())
        judgements: list[ValueJudgement] = []
        if to_judge:
            payload = []
            for v in to_judge:
                column = metadata.column(v.column)
                item: dict[str, Any] = {"column": v.column}
                if column is not None:
                    item.update(type=column.type, meaning=column.meaning)
                item.update(value=v.value, evidence=v.evidence)
                payload.append(item)
            answer = self._complete(
                prompts.JUDGE_ROW,
                _with_json(conversation, "extracted row", payload),
                _judgement_model(tuple(v.column for v in to_judge)),
                f"judge_row[{row.dialogue_id}]",
            )
            judgements = [ValueJudgement(column=j.column, supported=j.supported, reason=j.reason) for j in answer.judgements]
        return RowJudgement(dialogue_id=row.dialogue_id, judgements=judgements, backend=self.name)

    # -- refinement (SDR): pseudo-documents and dialogue graphs -------------------------------------

    def pseudo_documents(self, conversation: ConversationInput) -> PseudoDocuments:
        """One call: issue-centric and solution-centric predicted queries (none for a conversation
        without turns). Both lists come back non-empty, stripped, deduplicated, at most 8 each."""
        if not conversation.turns:
            return PseudoDocuments(
                dialogue_id=conversation.dialogue_id, issue_queries=[_EMPTY], solution_queries=[_EMPTY], backend=self.name
            )
        answer = self._complete(
            prompts.PSEUDO_DOCUMENTS,
            _conversation_data(conversation),
            PseudoDocumentsAnswer,
            f"pseudo_documents[{conversation.dialogue_id}]",
        )
        return PseudoDocuments(
            dialogue_id=conversation.dialogue_id,
            issue_queries=answer.issue_queries,
            solution_queries=answer.solution_queries,
            backend=self.name,
        )

    def dialogue_graph(self, conversation: ConversationInput) -> DialogueGraph:
        """One call: issue-solution units and refines/elaborates edges, checked (unique node ids,
        edges between existing nodes from a later to an earlier unit, turn ranges inside the
        conversation, at least one node; violations are re-asked) and renumbered n0, n1, ... in
        conversation order. A conversation without turns gets one empty node and no call."""
        if not conversation.turns:
            node = GraphNode(node_id="n0", issue="", answer="", turn_start=0, turn_end=0)
            return DialogueGraph(dialogue_id=conversation.dialogue_id, nodes=[node], edges=[], backend=self.name)
        answer = self._complete(
            prompts.DIALOGUE_GRAPH,
            _conversation_data(conversation),
            _graph_model(len(conversation.turns)),
            f"dialogue_graph[{conversation.dialogue_id}]",
        )
        return answer.graph(conversation.dialogue_id, self.name)


# ---------------------------------------------------------------------------------------------------
# refinement response models (SDR)

_EMPTY = "empty conversation"
MAX_QUERIES = 8
_REDACTION = re.compile(r"\[(?:[A-Z][A-Z_]{1,20})\]|\b(?:user|agent)\d+\b")


def _queries(value: Any, what: str) -> list[str]:
    """A list of query strings: a lone string is a one-item list; redaction placeholders and speaker
    labels are removed; empty and repeated (case-insensitively) queries dropped; at most 8 kept."""
    if value is None:
        value = []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list of strings")
    out: dict[str, str] = {}
    for item in value:
        text = _text_or_none(item)
        if not isinstance(text, str):
            continue
        text = re.sub(r"\s+", " ", _REDACTION.sub(" ", text)).strip(" ,;:-")
        if text and text.lower() not in out:
            out[text.lower()] = text
    if not out:
        raise ValueError(f"{what} must hold at least one non-empty query")
    return list(out.values())[:MAX_QUERIES]


class PseudoDocumentsAnswer(BaseModel):
    """Predicted queries from both sides of this conversation."""

    issue_queries: list[str] = Field(
        description="3 to 8 short, distinct queries a user with this problem would type (what they needed)"
    )
    solution_queries: list[str] = Field(
        description="2 to 8 short, distinct queries this conversation's resolution answers (what fixed it, the cause, "
        "what was tried and failed as 'tried: <step> (did not help)')"
    )

    @field_validator("issue_queries", mode="before")
    @classmethod
    def _issue(cls, value: Any) -> list[str]:
        return _queries(value, "issue_queries")

    @field_validator("solution_queries", mode="before")
    @classmethod
    def _solution(cls, value: Any) -> list[str]:
        return _queries(value, "solution_queries")


class GraphNodeAnswer(BaseModel):
    node_id: str = Field(description="n0, n1, ... in conversation order")
    issue: str = Field(description="the user's issue in this unit")
    answer: str = Field("", description="the helper's answer to it; empty when nobody answered")
    turn_start: int = Field(description="first turn number of the unit")
    turn_end: int = Field(description="last turn number of the unit (inclusive)")

    @field_validator("node_id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> str:
        return _required_text(value, "node_id")

    @field_validator("issue", mode="before")
    @classmethod
    def _issue(cls, value: Any) -> str:
        return _required_text(value, "issue")

    @field_validator("answer", mode="before")
    @classmethod
    def _answer(cls, value: Any) -> str:
        return _text_or_none(value) or ""


class GraphEdgeAnswer(BaseModel):
    source: str = Field(description="node_id of the later unit")
    target: str = Field(description="node_id of the earlier unit it refines or elaborates")
    relation: Literal["refines", "elaborates"] = Field(
        description="refines: the user narrowed or corrected the earlier issue; elaborates: the helper expanded the earlier solution"
    )
    reason: str = Field("", description="one short line")

    @field_validator("source", "target", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> str:
        return _required_text(value, "edge endpoint")

    @field_validator("relation", mode="before")
    @classmethod
    def _relation(cls, value: Any) -> Any:
        if isinstance(value, str):
            v = value.strip().lower()
            return {"refine": "refines", "refined": "refines", "elaborate": "elaborates", "elaborated": "elaborates"}.get(v, v)
        return value

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> Any:
        return "" if value is None else str(value).strip()


class DialogueGraphAnswer(BaseModel):
    """The conversation's issue-solution units (nodes) and how later units relate to earlier ones."""

    n_turns: ClassVar[int | None] = None  # bound per call: the conversation's number of turns
    nodes: list[GraphNodeAnswer]
    edges: list[GraphEdgeAnswer] = Field(default_factory=list)

    @field_validator("edges", mode="before")
    @classmethod
    def _edges(cls, value: Any) -> Any:
        return [] if value is None else value

    @model_validator(mode="after")
    def _consistent(self) -> "DialogueGraphAnswer":
        n = type(self).n_turns
        errors: list[str] = []
        if not self.nodes:
            errors.append("nodes must hold at least one unit")
        seen: dict[str, GraphNodeAnswer] = {}
        for node in self.nodes:
            if node.node_id in seen:
                errors.append(f"node_id {node.node_id!r} is used twice; node ids must be unique")
            seen[node.node_id] = node
            if node.turn_start > node.turn_end:
                errors.append(f"node {node.node_id}: turn_start {node.turn_start} is after turn_end {node.turn_end}")
            if n is not None and not (0 <= node.turn_start < n and 0 <= node.turn_end < n):
                errors.append(f"node {node.node_id}: turns {node.turn_start}..{node.turn_end} are outside the conversation (turns 0..{n - 1})")
        position = {nid: k for k, nid in enumerate(self._order())}
        listing = ", ".join(seen) or "(none)"
        for i, edge in enumerate(self.edges):
            where = f"edges[{i}] {edge.source} -{edge.relation}-> {edge.target}"
            missing = [x for x in (edge.source, edge.target) if x not in seen]
            if missing:
                errors.append(f"{where}: no node {', '.join(repr(m) for m in missing)} (nodes: {listing})")
            elif edge.source == edge.target:
                errors.append(f"{where}: an edge connects two different units")
            elif position[edge.source] <= position[edge.target]:
                errors.append(f"{where}: the source must be the later unit and the target an earlier one")
        if errors:
            raise ValueError("; ".join(errors))
        return self

    def _order(self) -> list[str]:
        """Node ids in conversation order (by turn_start, then as listed)."""
        ranked = sorted(enumerate(self.nodes), key=lambda item: (item[1].turn_start, item[0]))
        return list(dict.fromkeys(node.node_id for _, node in ranked))

    def graph(self, dialogue_id: str, backend: str) -> DialogueGraph:
        """The interface model, ids renumbered n0, n1, ... in conversation order; repeated edges dropped."""
        by_id = {node.node_id: node for node in self.nodes}
        new_id = {old: f"n{k}" for k, old in enumerate(self._order())}
        nodes = [
            GraphNode(node_id=new_id[old], issue=by_id[old].issue, answer=by_id[old].answer,
                      turn_start=by_id[old].turn_start, turn_end=by_id[old].turn_end)
            for old in new_id
        ]
        edges: dict[tuple[str, str, str], GraphEdge] = {}
        for e in self.edges:
            key = (new_id[e.source], new_id[e.target], e.relation)
            edges.setdefault(key, GraphEdge(source=key[0], target=key[1], relation=e.relation, reason=e.reason))
        return DialogueGraph(dialogue_id=dialogue_id, nodes=nodes, edges=list(edges.values()), backend=backend)


@lru_cache(maxsize=256)
def _graph_model(n_turns: int) -> type[DialogueGraphAnswer]:
    return _bound(DialogueGraphAnswer, n_turns=n_turns)
