"""The embedded structuring backend: deterministic, offline, built from real signals. No Dagster.

It does the jobs an LLM backend does, from what the detectors of this package find (regular patterns,
"key: value" and "my X is Y" statements, answers to the agent's questions), from roles and turn structure,
and from sentence embeddings (all-MiniLM-L6-v2): the problem, resolution and resolved cells come from
`gist` (centrality and MMR over the asker's sentences; the answer the asker accepts). It never pretends to
be an LLM: every record it produces carries ``backend = "embedded/1"``.

How each step works:

- ``propose_columns``: the general support concepts (problem, resolution, resolved, root_cause,
  product; attempted_steps and escalated when stated) plus one column per entity the detectors found
  (named from the conversation's own words: "firmware 1.2.4" -> ``firmware_version``, "Order ID:
  3348917502" -> ``order_id``, "may I have your booking confirmation number?" -> ``n76f34`` fills
  ``booking_confirmation_number``), at most 15, each with a type, a one-sentence meaning, constraints
  the detector knows, where the value came from ("user turn 2, detector version (pattern)") and the
  value verbatim.
- ``normalize_columns``: snake_case ASCII names (<= 40 chars), canonical types, a small general synonym
  map, then duplicates dropped: the same name, names one edit apart (or ``x_id`` / ``x_number``), or
  "name: meaning" embeddings with cosine >= 0.9 (same type; never two columns holding different values
  of one conversation, nor two qualifiers of one head such as app_version and firmware_version).
- ``score_columns``: relevance = cosine between the embedding of "name: meaning" and the conversation's
  problem statement (its first substantive user turns), rescaled from [0.05, 0.50] to [0, 1], mixed
  0.7/0.3 with whether the value sits in those problem turns; the core concepts have a floor (problem
  0.9; resolution, resolved, root_cause, product 0.6). Answerability = the detector's strength for the
  value that fills the column (a strong keyed pattern ~0.9, a bare shape ~0.6, a heuristic lower),
  0.1 when nothing fills it. overall = 0.4 * relevance + 0.6 * answerability: a column the
  conversations cannot fill is worth little however relevant it sounds. The value is represented in
  relevance by position rather than by its own embedding, so one model call per conversation suffices.
- ``extract_row``: per column, the column's detector when known (``signal``), else the column is
  matched to the conversation's findings by name, synonyms and embedding similarity; free-text string
  columns with no finding take the best sentence of the right speaker role (among those sharing a
  word stem with the column's name or meaning) by similarity to the meaning (cosine >= 0.5).
  Corrections win, denied values ("not 2.1") never count, values that do not fit the column's type or
  constraints are not used: precision over recall. Strings are verbatim, numbers as written (without
  currency symbols or thousands separators), booleans "true"/"false", dates ISO; ``evidence`` is the
  exact sentence or span the value came from.
- ``judge_row``: ``sarag_assets.core.structuring.gates.semantic_gate`` on every non-null value.
- ``decide_governance``: ``sarag_assets.core.structuring.governance.decide``.

The steps' parts: ``proposals`` (propose, normalize), ``matching`` (a column's finding or sentence),
``column_scores`` (score); this class holds the model and the per-process memo, and calls them.

Batches: ``prepare("candidate_schema" | "dialogue_graph", conversations)`` encodes every text those
calls will need in one batched model call (the stage functions call it per chunk of conversations), so
the per-conversation calls are served from the embedder's text-hash cache; small per-conversation model
calls cost several times more per text than one large one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from sarag_assets.backends.embedded.analysis import analyzed
from sarag_assets.backends.embedded.column_scores import problem_text, score
from sarag_assets.backends.embedded.columns import (
    _SIGNAL_DESCRIPTIONS,
    BACKEND_NAME,
    _fits_constraints,
    _fits_type,
    _signal_of,
)
from sarag_assets.backends.embedded.extraction_reads import extraction_texts, reads_free_text, reads_gist
from sarag_assets.backends.embedded.findings import Analysis
from sarag_assets.backends.embedded.gist import GIST_SIGNALS, apply_gist, gist_texts
from sarag_assets.backends.embedded.matching import describe, free_text, match, signal_for
from sarag_assets.backends.embedded.memo import TextBoundedMemo, content_key
from sarag_assets.backends.embedded.proposals import merge_lexical, merge_similar, proposals
from sarag_assets.backends.embedded.text import SIGNALS
from sarag_assets.backends.normalize import canonical_type
from sarag_assets.core.structuring.interface import (
    CandidateColumn,
    CandidateSchema,
    ColumnScore,
    ConversationInput,
    ExtractedRow,
    ExtractedValue,
    GovernanceDecision,
    GovernedMetadata,
    MetadataColumn,
    RowJudgement,
    ScoredColumn,
    ValueJudgement,
)


_ANALYSES: "TextBoundedMemo[Analysis]" = TextBoundedMemo()


class EmbeddedBackend:
    """The default structuring backend: deterministic, offline (see the module docstring)."""

    name = BACKEND_NAME

    def __init__(self, embedder=None):
        self._embedder = embedder

    # --- plumbing -----------------------------------------------------------------------------------

    @property
    def embedder(self):
        if self._embedder is None:
            from sarag_assets.core.encoding.embedder import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    def _encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embedder.encode(texts), dtype=np.float32)

    def analysis(self, conversation: ConversationInput, *, gist: bool = True) -> Analysis:
        """The detectors' findings (memoized by content for the whole process, see `memo`), with the gist's
        problem and resolution unless `gist=False` (the detectors alone, no model call)."""
        accepted = tuple(i for i, t in enumerate(conversation.turns) if t.accepted)  # the gist reads them
        key = content_key(self.embedder.model_name, conversation.dialogue_id, *map(str, accepted),  # one per model
                          *(part for t in conversation.turns for part in (t.role, t.speaker, t.text)))
        an = _ANALYSES.get(key)
        if an is None:
            # the detectors' shared output, copied: the gist replaces this copy's findings
            an = replace(analyzed([(t.role, t.text) for t in conversation.turns]),
                         speakers=[t.speaker for t in conversation.turns], accepted=accepted)
            an = _ANALYSES.put(key, an, sum(len(t.text) for t in conversation.turns))
        if gist and not an.gist_applied:  # two threads may both apply it: the same findings, set last
            apply_gist(an, self._encode)
        return an

    # --- propose -------------------------------------------------------------------------------------

    def propose_columns(self, conversation: ConversationInput) -> list[CandidateColumn]:
        return [c for c, _, _ in proposals(self.analysis(conversation))]

    # --- normalize -----------------------------------------------------------------------------------

    def normalize_columns(self, columns: list[CandidateColumn]) -> list[CandidateColumn]:
        return merge_similar(merge_lexical(columns), self._encode)

    # --- score ---------------------------------------------------------------------------------------

    def score_columns(self, conversation: ConversationInput, columns: list[CandidateColumn]) -> list[ColumnScore]:
        if not columns:
            return []
        an = self.analysis(conversation)
        vecs = self._encode([problem_text(an)] + [describe(c) for c in columns])
        return score(an, columns, vecs[0], vecs[1:], self._encode)

    def candidate_schema(self, conversation: ConversationInput) -> CandidateSchema:
        an = self.analysis(conversation)
        proposed = proposals(an)
        normalized = self.normalize_columns([c for c, _, _ in proposed])
        vecs = self._encode([problem_text(an)] + [describe(c) for c in normalized])
        scores = score(an, normalized, vecs[0], vecs[1:], self._encode)
        columns = [
            ScoredColumn(
                name=c.name,
                type=c.type,
                meaning=c.meaning,
                constraints=c.constraints,
                note=c.note,
                example_value=c.example_value,
                score=s,
                signal=_signal_of(c),
            )
            for c, s in zip(normalized, scores)
        ]
        problem = an.problem.value if an.problem is not None else problem_text(an)
        return CandidateSchema(
            dialogue_id=conversation.dialogue_id, problem=" ".join((problem or "").split())[:300], columns=columns, backend=self.name
        )

    def _candidate_schema_texts(self, conversation: ConversationInput) -> list[str]:
        """Every text `candidate_schema` may encode for this conversation: the gist's, the problem and the
        "name: meaning" of each column left after the lexical merge."""
        an = self.analysis(conversation, gist=False)
        kept = merge_lexical([c for c, _, _ in proposals(an)])
        return gist_texts(an) + [problem_text(an)] + [describe(c) for c in kept]

    def prepare(self, step: str, conversations: Sequence[ConversationInput],
                metadata: GovernedMetadata | None = None) -> None:
        """Bring into memory in one batched call every vector the next `step` calls need: encoded for
        candidate_schema and dialogue_graph (same results up to float noise), read from the home's cache for
        extract_row (only what the columns of `metadata` may read). A conversation failing here fails in its call."""
        if not conversations or step not in ("candidate_schema", "dialogue_graph", "extract_row"):
            return
        if step == "candidate_schema":
            texts_of, texts = self._candidate_schema_texts, list(_SIGNAL_DESCRIPTIONS.values())
        elif step == "dialogue_graph":
            from sarag_assets.backends.embedded.graph import dialogue_graph_texts

            texts_of, texts = dialogue_graph_texts, []
        else:
            gist = sentences = True
            if metadata is not None:
                descs = self._desc_vectors(metadata.columns)
                gist = reads_gist(metadata.columns, self._signals(descs))
                sentences = reads_free_text(metadata.columns, set(descs), self._signals(descs))
            texts = []
            texts_of = lambda c: extraction_texts(self.analysis(c, gist=False), gist=gist, sentences=sentences)  # noqa: E731
        for conversation in conversations:
            try:
                texts.extend(texts_of(conversation))
            except Exception:  # noqa: BLE001 - the conversation's own call reports it
                continue
        if texts and step != "extract_row":
            self._encode(list(dict.fromkeys(texts)))
        elif texts and hasattr(self.embedder, "preload"):
            self.embedder.preload(texts)

    # --- governance ----------------------------------------------------------------------------------

    def decide_governance(self, metadata: GovernedMetadata, candidates: CandidateSchema) -> GovernanceDecision:
        from sarag_assets.core.structuring.governance import decide

        decision = decide(metadata, candidates, backend_name=self.name)
        if isinstance(decision, GovernanceDecision) and not decision.backend:
            decision = decision.model_copy(update={"backend": self.name})
        return decision

    # --- extract -------------------------------------------------------------------------------------

    def extract_row(self, conversation: ConversationInput, metadata: GovernedMetadata) -> ExtractedRow:
        cols = list(metadata.columns)
        desc_vecs = self._desc_vectors(cols)
        an = self.analysis(conversation, gist=False)
        # the gist (problem, resolution, resolved) only for columns that read it: a metadata change that
        # adds other columns extracts them without it, as they would be extracted with it
        if reads_gist(cols, self._signals(desc_vecs), [f.name for f in an.findings if f.signal in GIST_SIGNALS]):
            an = self.analysis(conversation)
        values = [self._extract_one(col, an, desc_vecs.get(col.name)) for col in cols]
        return ExtractedRow(dialogue_id=conversation.dialogue_id, values=values, backend=self.name)

    def _desc_vectors(self, cols) -> dict[str, np.ndarray]:
        """The meaning's vector of each column that no detector signal names (`signal_for` compares it)."""
        need = [c for c in cols if _signal_of(c) not in SIGNALS]
        return dict(zip((c.name for c in need), self._encode([describe(c) for c in need]))) if need else {}

    def _signals(self, desc_vecs: dict[str, np.ndarray]):
        return lambda col: signal_for(col, desc_vecs.get(col.name), self._encode)[0]

    def _extract_one(self, col: MetadataColumn, an: Analysis, desc_vec: np.ndarray | None) -> ExtractedValue:
        m = match(col, an, desc_vec, self._encode)
        col_type = canonical_type(col.type) or "string"
        if m.finding is not None:
            v = _fits_type(m.finding.value, col_type)
            v = _fits_constraints(v, col.constraints) if v is not None else None
            if v is not None and v.strip():  # an empty string is no value: null
                return ExtractedValue(column=col.name, value=v, evidence=m.finding.evidence)
        signal = _signal_of(col)
        if col_type == "string" and desc_vec is not None and signal not in SIGNALS:
            mapped, _ = signal_for(col, desc_vec, self._encode)
            if mapped is None:
                ft = free_text(col, an, desc_vec, self._encode)
                if ft is not None:
                    value, evidence, _ = ft
                    v = _fits_constraints(value, col.constraints)
                    if v is not None and v.strip():
                        return ExtractedValue(column=col.name, value=v, evidence=evidence)
        return ExtractedValue(column=col.name, value=None, evidence=None)

    # --- judge ---------------------------------------------------------------------------------------

    def judge_row(self, conversation: ConversationInput, metadata: GovernedMetadata, row: ExtractedRow) -> RowJudgement:
        from sarag_assets.core.structuring.gates import semantic_gate

        judgements = []
        for ev in row.values:
            if ev.value is None:
                continue
            col = metadata.column(ev.column)
            if col is None:
                judgements.append(ValueJudgement(column=ev.column, supported=False, reason="column is not in the metadata"))
                continue
            ok, reason = semantic_gate(ev.value, col, conversation, evidence=ev.evidence)
            judgements.append(ValueJudgement(column=ev.column, supported=bool(ok), reason=str(reason)))
        return RowJudgement(dialogue_id=conversation.dialogue_id, judgements=judgements, backend=self.name)

    def pseudo_documents(self, conversation: ConversationInput):
        from sarag_assets.backends.embedded.pseudo_documents import pseudo_documents

        return pseudo_documents(conversation, backend_name=self.name)

    def dialogue_graph(self, conversation: ConversationInput):
        from sarag_assets.backends.embedded.graph import dialogue_graph

        return dialogue_graph(conversation, backend_name=self.name, embedder=self.embedder)
