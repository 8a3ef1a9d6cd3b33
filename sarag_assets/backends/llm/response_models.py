"""The internal response models of the structuring calls: what the model answers, validated beyond the
JSON schema (names checked against what was asked, types canonical, scores in range), so that instructor
re-asks with the reason when an answer is wrong. Converted to the interface models afterwards."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator

from sarag_assets.backends.normalize import canonical_name, canonical_type, snake_case, unreserved
from sarag_assets.core.structuring.interface import (
    CANONICAL_TYPES,
    CandidateColumn,
    ColumnConstraints,
    ColumnScore,
    Operation,
    ScoredColumn,
)

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


def _line(value: Any) -> Any:
    return "" if value is None else str(value).strip()


def _note(value: Any) -> Any:
    return "" if value is None else _text_or_none(value) or ""


def _required(what: str) -> BeforeValidator:
    return BeforeValidator(lambda value: _required_text(value, what))


Line = Annotated[str, BeforeValidator(_line)]  # one line of free text; null becomes ""
Note = Annotated[str, BeforeValidator(_note)]
Text = Annotated[str | None, BeforeValidator(_text_or_none)]  # a scalar or list as text; null-words as None
A = TypeVar("A", bound=BaseModel)


def _each_listed_column_once(index: "_NameIndex", items: list[A], noun: str, verb: str) -> list[A]:
    """The first answer for each listed column, named as listed and in the listed order; a column with no
    answer is an error the model is re-asked with."""
    seen: dict[str, A] = {}
    for item in items:
        name = index.resolve(item.column)
        if name is not None and name not in seen:
            seen[name] = item.model_copy(update={"column": name})
    missing = [n for n in index.names if n not in seen]
    if missing:
        raise ValueError(f"no {noun} for column(s) {', '.join(missing)}; {verb} every listed column exactly once: {index.listing()}")
    return [seen[n] for n in index.names]


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
    justification: Line = Field("", description="one short line")


    def plain(self) -> ColumnScore:
        return ColumnScore(**self.model_dump())


class ProposedColumn(BaseModel):
    """A candidate column for the table."""

    name: Annotated[str, _required("column name")] = Field(description="lower snake_case column name")
    type: Annotated[str, _required("column type")] = Field(description=f"one of {_TYPES_TEXT}")
    meaning: Annotated[str, _required("column meaning")] = Field(description="what the column holds, one sentence")
    constraints: ConstraintsAnswer = Field(default_factory=ConstraintsAnswer)
    note: Note = Field("", description="where in the conversation the value comes from (turn numbers)")
    example_value: Text = Field(None, description="this conversation's value, verbatim where possible; null if absent")




    @field_validator("constraints", mode="before")
    @classmethod
    def _constraints(cls, value: Any) -> Any:
        return {} if value is None else value



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

    problem: Annotated[str, _required("problem")] = Field(description="the conversation's problem in one sentence")
    columns: list[ScoredColumnAnswer]



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
    justification: Line = Field("", description="one short line")


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
        self.scores = _each_listed_column_once(index, self.scores, "score", "score")
        return self


class RowValueAnswer(BaseModel):
    column: str = Field(description="the column's name, exactly as given")
    value: Text = Field(None, description="the value this conversation gives, in the column's type; null if it does not say")
    evidence: Text = Field(None, description="shortest verbatim excerpt supporting the value; null when value is null")



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
    reason: Line = Field("", description="one line, citing the turn")



class ValueJudgements(BaseModel):
    """Whether each extracted value is supported by the conversation."""

    expected: ClassVar[_NameIndex | None] = None
    judgements: list[ValueJudgementAnswer]

    @model_validator(mode="after")
    def _every_value_once(self) -> "ValueJudgements":
        index = type(self).expected
        if index is None:
            return self
        self.judgements = _each_listed_column_once(index, self.judgements, "judgement", "judge")
        return self


class OperationAnswer(BaseModel):
    operation: Operation
    columns: list[str] = Field(description="KEEP/ADD/DELETE: [name]; EXPAND: [existing, new]; MERGE: [merged..., surviving]")
    candidate: Text = Field(None, description="the candidate that causes this operation, or null")
    reason: Line = Field(description="one short line")

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
            new = cand_index.resolve(cols[1]) or unreserved(snake_case(cols[1]))
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
