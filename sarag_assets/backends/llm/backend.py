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
from typing import TYPE_CHECKING, Any

from sarag_assets.backends.llm import prompts
from sarag_assets.backends.llm.client import CallStats, LLMSettings, StructuredLLM
from sarag_assets.backends.llm.refinement_models import (
    _EMPTY,
    PseudoDocumentsAnswer,
    _graph_model,
)
from sarag_assets.backends.llm.response_models import (
    CandidateSchemaAnswer,
    M,
    NormalizedColumns,
    ProposedColumns,
    RowValueAnswer,
    _governance_model,
    _judgement_model,
    _row_model,
    _scores_model,
)
from sarag_assets.backends.normalize import (
    canonical_name,
    dedupe_scored,
    normalize_candidates,
)
from sarag_assets.core.structuring.interface import (
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
    GraphNode,
    MetadataColumn,
    PseudoDocuments,
    RowJudgement,
    ScoredColumn,
    ValueJudgement,
)

if TYPE_CHECKING:
    from sarag_assets.backends.llm.cache import CallCache


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
        self.concurrency = llm.settings.concurrency  # conversations worked on at once (see per_conversation)

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
