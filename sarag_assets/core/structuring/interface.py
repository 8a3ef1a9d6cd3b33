"""The structuring interface: Pydantic models in and out of every step, and the backend protocol.

Both backends (embedded, LLM) implement `StructuringBackend` with the same models, and every record
they produce carries `backend` (e.g. "embedded/0.1" or "llm/<model>") so nobody mistakes one for the
other. No Dagster imports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)

CanonicalType = Literal["int", "string", "float", "boolean", "date", "datetime"]
CANONICAL_TYPES: tuple[str, ...] = ("int", "string", "float", "boolean", "date", "datetime")
Operation = Literal["KEEP", "EXPAND", "ADD", "MERGE", "DELETE"]


class ConversationTurn(BaseModel):
    speaker: str  # anonymized (user1, agent1, ...)
    role: Literal["user", "agent"]
    text: str  # already redacted
    accepted: bool = False  # the source marks it as the accepted answer


class ConversationInput(BaseModel):
    dialogue_id: str
    turns: list[ConversationTurn]

    def transcript(self) -> str:
        return "\n".join(f"[{i}] {t.speaker} ({t.role}{', the accepted answer' if t.accepted else ''}): {t.text}"
                         for i, t in enumerate(self.turns))


class ColumnConstraints(BaseModel):
    """Machine-checkable constraints; the structural gate enforces them."""

    allowed_values: list[str] | None = Field(None, description="closed set of values, if any")
    pattern: str | None = Field(None, description="regular expression a string value must fully match")
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None


class CandidateColumn(BaseModel):
    """A column as proposed, before normalization (name and type may be free-form)."""

    name: str
    type: str
    meaning: str = Field(description="what the column holds, one sentence")
    constraints: ColumnConstraints = Field(default_factory=ColumnConstraints)
    note: str = Field("", description="short note: where in the conversation the value comes from")
    example_value: str | None = Field(None, description="the value in this conversation, verbatim if present")


class ColumnScore(BaseModel):
    relevance: float = Field(ge=0, le=1, description="how central the column is to the conversation's problem")
    answerability: float = Field(ge=0, le=1, description="how well the conversation supplies a value")
    overall: float = Field(ge=0, le=1)
    justification: str = Field(description="one line")


class ScoredColumn(BaseModel):
    """A normalized candidate column with its scores against one conversation."""

    name: str  # snake_case
    type: CanonicalType
    meaning: str
    constraints: ColumnConstraints = Field(default_factory=ColumnConstraints)
    note: str = ""
    example_value: str | None = None
    score: ColumnScore
    signal: str | None = Field(None, description="embedded backend: the detector that proposed it")


class CandidateSchema(BaseModel):
    """What one conversation proposes: normalized, scored candidate columns."""

    dialogue_id: str
    problem: str = Field(description="the conversation's problem in one sentence")
    columns: list[ScoredColumn]
    backend: str = ""


class MetadataColumn(BaseModel):
    """One column of the governed metadata M*."""

    name: str
    type: CanonicalType
    meaning: str
    constraints: ColumnConstraints = Field(default_factory=ColumnConstraints)
    aliases: list[str] = Field(default_factory=list, description="names merged into or expanded from this one")
    support: int = Field(0, description="conversations whose candidates mapped to this column")
    mean_score: float = 0.0
    signal: str | None = None
    added_in_version: int = 0


class GovernedMetadata(BaseModel):
    version: int = 0
    capacity: int = 20
    min_support: int = Field(2, description="conversations that must propose a new concept before it is added")
    columns: list[MetadataColumn] = Field(default_factory=list)
    # Candidates seen but not (yet) admitted, with their support; not part of M* itself.
    pending: list[MetadataColumn] = Field(default_factory=list)

    def column(self, name: str) -> MetadataColumn | None:
        return next((c for c in self.columns if c.name == name), None)


class GovernanceOperation(BaseModel):
    operation: Operation
    columns: list[str] = Field(description="the column(s) acted on; for EXPAND/MERGE: [old..., new]")
    candidate: str | None = None
    scores: ColumnScore | None = None
    reason: str


class GovernanceDecision(BaseModel):
    """Operations one conversation's candidates cause against the current metadata."""

    operations: list[GovernanceOperation]
    backend: str = ""


class ExtractedValue(BaseModel):
    column: str
    value: str | None = Field(None, description="null when the conversation does not say")
    evidence: str | None = Field(None, description="the conversation text the value comes from")


class ExtractedRow(BaseModel):
    dialogue_id: str
    values: list[ExtractedValue]
    backend: str = ""


class ValueJudgement(BaseModel):
    column: str
    supported: bool = Field(description="the value is stated or directly implied by the conversation")
    reason: str


class RowJudgement(BaseModel):
    dialogue_id: str
    judgements: list[ValueJudgement]
    backend: str = ""


class PseudoDocuments(BaseModel):
    """SDR: predicted queries from both sides of a conversation, concatenated into two pseudo-documents."""

    dialogue_id: str
    issue_queries: list[str] = Field(description="queries a user with this problem would ask (what they needed)")
    solution_queries: list[str] = Field(description="queries this conversation's resolution answers (what fixed it or was tried)")
    backend: str = ""

    def issue_document(self) -> str:
        return "\n".join(self.issue_queries)

    def solution_document(self) -> str:
        return "\n".join(self.solution_queries)


class GraphNode(BaseModel):
    """An issue-solution unit: a user-side issue expression and the helper's answer to it."""

    node_id: str = Field(description="n0, n1, ... in conversation order")
    issue: str = Field(description="the user's issue text for this unit")
    answer: str = Field("", description="the helper's answer to it; empty when unanswered (abandoned)")
    turn_start: int
    turn_end: int


class GraphEdge(BaseModel):
    """`source` (the later unit) refines or elaborates `target` (an earlier unit)."""

    source: str
    target: str
    relation: Literal["refines", "elaborates"] = Field(
        description="refines: the user narrowed or corrected the earlier issue; "
        "elaborates: the helper expanded the earlier solution (often after a 'how do I ...?')"
    )
    reason: str = Field(description="one short line")


class DialogueGraph(BaseModel):
    dialogue_id: str
    nodes: list[GraphNode]
    edges: list[GraphEdge] = Field(default_factory=list)
    backend: str = ""


class StructuringBackend(Protocol):
    """The per-conversation steps. A backend may also offer `prepare(step, conversations, metadata)`: work the
    next `step` calls for those conversations share, done at once (the embedded backend encodes all
    their texts in one batched model call). It is optional and never changes results; call it through
    `prepare_batch`."""

    name: str

    def propose_columns(self, conversation: ConversationInput) -> list[CandidateColumn]: ...

    def normalize_columns(self, columns: list[CandidateColumn]) -> list[CandidateColumn]: ...

    def score_columns(
        self, conversation: ConversationInput, columns: list[CandidateColumn]
    ) -> list[ColumnScore]: ...

    def candidate_schema(self, conversation: ConversationInput) -> CandidateSchema:
        """Propose, normalize and score in as few steps as the backend can do well."""
        ...

    def decide_governance(
        self, metadata: GovernedMetadata, candidates: CandidateSchema
    ) -> GovernanceDecision: ...

    def extract_row(self, conversation: ConversationInput, metadata: GovernedMetadata) -> ExtractedRow: ...

    def judge_row(
        self, conversation: ConversationInput, metadata: GovernedMetadata, row: ExtractedRow
    ) -> RowJudgement: ...

    def pseudo_documents(self, conversation: ConversationInput) -> PseudoDocuments: ...

    def dialogue_graph(self, conversation: ConversationInput) -> DialogueGraph: ...


W = TypeVar("W")
R = TypeVar("R")


def per_conversation(backend: StructuringBackend, work: Callable[[W], R], items: Sequence[W]) -> list[R | Exception]:
    """`work(item)` for every item, in order: its result, or the exception it raised. A backend whose
    `concurrency` is above 1 (the LLM backend: requests it may have in flight) gets that many items
    worked on at once, so one slow or failing conversation does not hold up the others; the default is
    one at a time (the embedded backend is bound by the CPU, which its batched model calls already use)."""
    def attempt(item: W) -> R | Exception:
        try:
            return work(item)
        except Exception as exc:  # noqa: BLE001 - returned, and reported per conversation by the caller
            return exc

    workers = min(max(1, int(getattr(backend, "concurrency", 1) or 1)), len(items))
    if workers <= 1:
        return [attempt(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sarag-conversation") as pool:
        return list(pool.map(attempt, items))


def prepare_batch(backend: StructuringBackend, step: str, conversations: Sequence[ConversationInput],
                  metadata: GovernedMetadata | None = None) -> None:
    """Let `backend` prepare the next `step` calls for `conversations` at once, if it can (see
    `StructuringBackend`; `metadata`: the columns extract_row calls will extract). Preparing is only an
    optimization: if it fails, the per-conversation calls run unprepared, and any error recurs there and
    is reported per conversation as before."""
    hook = getattr(backend, "prepare", None)
    if hook is None or not conversations:
        return
    try:
        hook(step, conversations, metadata)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        log.warning("backend %s could not prepare %s for %d conversations: %s", getattr(backend, "name", "?"),
                    step, len(conversations), exc)
