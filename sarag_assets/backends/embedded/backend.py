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

Batches: ``prepare("candidate_schema" | "dialogue_graph", conversations)`` encodes every text those
calls will need in one batched model call (the stage functions call it per chunk of conversations), so
the per-conversation calls are served from the embedder's text-hash cache; small per-conversation model
calls cost several times more per text than one large one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from sarag_assets.backends.embedded.analysis import analyzed
from sarag_assets.backends.embedded.columns import (
    _CORE_MEANINGS,
    _FREE_TEXT_MIN,
    _GENERIC_WORDS,
    _OPTIONAL_CONCEPTS,
    _ROLE_AGENT,
    _ROLE_USER,
    _SIGNAL_DESCRIPTIONS,
    _STRONG,
    BACKEND_NAME,
    CORE_CONCEPTS,
    MAX_PROPOSALS,
    _constraints,
    _differs_in_digit,
    _edit_distance_le1,
    _fits_constraints,
    _fits_type,
    _head_and_qualifier,
    _how,
    _id_variant,
    _Match,
    _meaning,
    _note,
    _signal_of,
    _words_of,
)
from sarag_assets.backends.embedded.cues import _GREETING_ONLY
from sarag_assets.backends.embedded.extraction_reads import extraction_texts, reads_free_text, reads_gist
from sarag_assets.backends.embedded.findings import Analysis, Finding
from sarag_assets.backends.embedded.gist import GIST_SIGNALS, apply_gist, gist_texts
from sarag_assets.backends.embedded.memo import TextBoundedMemo, content_key
from sarag_assets.backends.embedded.text import (
    _STOP,
    SIGNALS,
    _strip_lead,
    is_placeholder_only,
)
from sarag_assets.backends.normalize import canonical_name, canonical_type
from sarag_assets.core.structuring.interface import (
    CandidateColumn,
    CandidateSchema,
    ColumnConstraints,
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

    @staticmethod
    def _problem_text(an: Analysis) -> str:
        if an.problem_text:
            return an.problem_text
        users = [t for r, t in an.turns if r == "user" and t.strip()]
        return (users[0] if users else " ".join(t for _, t in an.turns))[:600] or "support conversation"

    # --- propose -------------------------------------------------------------------------------------

    def _proposals(self, an: Analysis) -> list[tuple[CandidateColumn, Finding | None, str]]:
        """(column, finding, signal) for the core concepts and the detected entities."""
        out: list[tuple[CandidateColumn, Finding | None, str]] = []
        used_values: set[str] = set()
        for concept in CORE_CONCEPTS:
            f = an.best(an.by_signal(concept))
            col_type, meaning = _CORE_MEANINGS[concept]
            if f is not None:
                used_values.add(f.value.lower())
                col = CandidateColumn(
                    name=concept, type=col_type, meaning=meaning, constraints=_constraints(f, col_type), note=_note(f), example_value=f.value
                )
            else:
                dummy = Finding(concept, concept, "", col_type, 0.0, 0, "user", "")
                col = CandidateColumn(
                    name=concept,
                    type=col_type,
                    meaning=meaning,
                    constraints=_constraints(dummy, col_type),
                    note=f"not stated in this conversation, detector {concept} ({_how(dummy)})",
                    example_value=None,
                )
            out.append((col, f, concept))
        for concept, (col_type, meaning) in _OPTIONAL_CONCEPTS.items():
            f = an.best(an.by_signal(concept))
            if f is not None:
                if f.type == "string":
                    used_values.add(f.value.lower())
                out.append(
                    (CandidateColumn(name=concept, type=col_type, meaning=meaning, constraints=_constraints(f, col_type), note=_note(f), example_value=f.value), f, concept)
                )
        by_name: dict[str, list[Finding]] = {}
        for f in an.findings:
            if f.usable and f.signal not in CORE_CONCEPTS and f.signal not in _OPTIONAL_CONCEPTS and f.strength >= _STRONG:
                by_name.setdefault(canonical_name(f.name), []).append(f)
        entities = []
        for name, fs in by_name.items():
            if name in CORE_CONCEPTS:
                continue
            f = an.best(fs)
            entities.append((name, f))
        entities.sort(key=lambda x: (-round(x[1].strength, 1), x[1].turn, x[0]))
        for name, f in entities:
            if len(out) >= MAX_PROPOSALS:
                break
            typed = f.type in ("int", "float", "date", "datetime")
            if not typed and f.value.lower() in used_values:
                continue  # the same text already fills another column ("my router is X" and product X)
            used_values.add(f.value.lower())
            col_type = f.type if f.type in ("int", "float", "date", "boolean", "datetime") else "string"
            col = CandidateColumn(
                name=name, type=col_type, meaning=_meaning(f), constraints=_constraints(f, col_type), note=_note(f), example_value=f.value
            )
            out.append((col, f, f.signal))
        return out

    def propose_columns(self, conversation: ConversationInput) -> list[CandidateColumn]:
        return [c for c, _, _ in self._proposals(self.analysis(conversation))]

    # --- normalize -----------------------------------------------------------------------------------

    def normalize_columns(self, columns: list[CandidateColumn]) -> list[CandidateColumn]:
        return self._merge_similar(self._merge_lexical(columns))

    def _merge_lexical(self, columns: list[CandidateColumn]) -> list[CandidateColumn]:
        """Canonical names and types, then same-name / one-edit / id-variant twins merged (no model call)."""
        cols: list[CandidateColumn] = []
        for c in columns:
            cols.append(
                c.model_copy(update={"name": canonical_name(c.name), "type": canonical_type(c.type) or "string"})
            )
        kept: list[CandidateColumn] = []
        for c in cols:
            twin = next((k for k in kept if k.name == c.name), None)
            if twin is None:
                twin = next(
                    (
                        k
                        for k in kept
                        if min(len(k.name), len(c.name)) >= 5
                        and (_edit_distance_le1(k.name, c.name) or _id_variant(k.name, c.name))
                        and not _differs_in_digit(k.name, c.name)
                        and k.type == c.type
                    ),
                    None,
                )
            if twin is not None:
                self._merge_into(kept, twin, c)
            else:
                kept.append(c)
        return kept

    def _merge_similar(self, kept: list[CandidateColumn]) -> list[CandidateColumn]:
        """Columns whose "name: meaning" embeddings are near-duplicates merged (one model call)."""
        if len(kept) > 1:
            texts = [self._desc(c) for c in kept]
            vecs = self._encode(texts)
            sims = vecs @ vecs.T
            drop: set[int] = set()
            for i in range(len(kept)):
                if i in drop:
                    continue
                for j in range(i + 1, len(kept)):
                    if j in drop or kept[i].type != kept[j].type:
                        continue
                    if round(float(sims[i, j]), 4) < 0.9:
                        continue
                    hi, qi = _head_and_qualifier(kept[i].name)
                    hj, qj = _head_and_qualifier(kept[j].name)
                    if hi == hj and qi and qj and qi != qj:
                        continue  # app_version vs firmware_version: two things
                    if kept[i].name in CORE_CONCEPTS and kept[j].name in CORE_CONCEPTS:
                        continue
                    ei, ej = kept[i].example_value, kept[j].example_value
                    if ei is not None and ej is not None and ei.strip().lower() != ej.strip().lower():
                        continue  # two different values in one conversation: two columns
                    self._merge_into(kept, kept[i], kept[j])
                    drop.add(j)
            kept = [c for k, c in enumerate(kept) if k not in drop]
        return kept

    @staticmethod
    def _merge_into(kept: list[CandidateColumn], target: CandidateColumn, other: CandidateColumn) -> None:
        idx = kept.index(target)
        update = {}
        if target.example_value is None and other.example_value is not None:
            update["example_value"] = other.example_value
            update["note"] = other.note
        if other.name != target.name and other.name not in target.note:
            update["note"] = (update.get("note", target.note) + f"; merged {other.name}").strip("; ")
        if update:
            kept[idx] = target.model_copy(update=update)

    # --- matching columns to findings ----------------------------------------------------------------

    def _desc(self, col) -> str:
        return f"{_words_of(col.name)}: {col.meaning}"

    def _signal_for(self, col, desc_vec: np.ndarray | None) -> tuple[str | None, float]:
        """Which detector a column corresponds to: its own, its name, else embedding similarity."""
        s = _signal_of(col)
        if s in SIGNALS:
            return s, 1.0
        n = canonical_name(col.name)
        lexical = (
            (r"^(?:problem|issue|symptom|complaint)$|_(?:problem|issue|symptom)$", "problem"),
            (r"^(?:resolution|solution|fix)$|_(?:resolution|solution|fix|steps)$", "resolution"),
            (r"^(?:resolved|solved|fixed)$|^(?:is|was)_(?:resolved|solved|fixed)", "resolved"),
            (r"(?:^|_)cause$", "root_cause"),
            (r"^(?:attempted|tried)_(?:steps|fixes|solutions|actions)$|^(?:steps|things)_tried$|^troubleshooting_(?:steps|done)$", "attempted_steps"),
            (r"^(?:is_|was_)?escalat(?:ed|ion)$", "escalated"),
            (r"(?:^|_)(?:version|ver)$|(?:^|_)build(?:_number)?$", "version"),
            (r"^os(?:_version)?$", "os"),
            (r"(?:^|_)browser$", "browser"),
            (r"(?:^|_)error_code$|(?:^|_)status_code$", "error_code"),
            (r"(?:^|_)error_message$", "error_message"),
            (r"(?:^|_)model$", "model"),
            (r"(?:^|_)(?:date|day)$", "date"),
            (r"(?:^|_)(?:amount|price|cost|fee|refund|charge|total|balance)$", "amount"),
            (r"(?:^|_)(?:number|id|no|reference|ref|code)$|^username$", "identifier"),
            (r"(?:^|_)(?:plan|subscription|tier|membership|membership_level)$", "plan"),
            (r"^(?:product|device|service|app|application)$", "product"),
        )
        for pat, s in lexical:
            if re.search(pat, n):
                return s, 0.9
        if desc_vec is None:
            return None, 0.0
        names = list(_SIGNAL_DESCRIPTIONS)
        vecs = self._encode([_SIGNAL_DESCRIPTIONS[k] for k in names])
        sims = vecs @ desc_vec
        k = int(np.argmax(sims))
        if float(sims[k]) >= 0.55:
            return names[k], round(float(sims[k]), 3)
        return None, 0.0

    def _match(self, col, an: Analysis, desc_vec: np.ndarray | None = None) -> _Match:
        name = canonical_name(col.name)
        aliases = {canonical_name(a) for a in (getattr(col, "aliases", None) or [])}
        col_type = canonical_type(col.type) or "string"
        constraints = getattr(col, "constraints", None) or ColumnConstraints()

        def usable(fs: list[Finding]) -> list[Finding]:
            good = []
            for f in fs:
                if f.strength < _STRONG:
                    continue
                v = _fits_type(f.value, col_type)
                if v is None or _fits_constraints(v, constraints) is None:
                    continue
                good.append(f)
            return good

        # 1. the same name (or an alias) in this conversation
        same = usable([f for f in an.findings if f.usable and canonical_name(f.name) in ({name} | aliases)])
        if same:
            return _Match(an.best(same), 1.0, "same name")
        signal, conf = self._signal_for(col, desc_vec)
        if signal is not None:
            fs = usable(an.by_signal(signal))
            if signal in CORE_CONCEPTS or signal in _OPTIONAL_CONCEPTS or signal in ("os", "browser"):
                if fs:
                    return _Match(an.best(fs), conf, f"detector {signal}")
            else:
                head, qual = _head_and_qualifier(name)
                compatible = []
                for f in fs:
                    fh, fq = _head_and_qualifier(canonical_name(f.name))
                    if fq == "target" and qual != "target" and not re.search(r"target|fix|latest|recommend|new|update", name):
                        continue  # the version to install is not the version the user runs
                    generic = canonical_name(f.name) in (signal, "version", "error_code", "model", "date", "amount", "error_message")
                    if not qual or generic or fq == qual or (set(qual.split("_")) & set(fq.split("_"))):
                        if signal in ("identifier", "answer", "statement", "key_value", "plan") and not generic:
                            # identifiers must name the same thing ("order" vs "ticket")
                            if not (set(name.split("_")) & set(canonical_name(f.name).split("_")) - {"number", "id", "no", "code"}):
                                continue
                        compatible.append(f)
                if compatible:
                    return _Match(an.best(compatible), conf * 0.95, f"detector {signal}")
        # 2. a key/statement/answer whose words name the column
        words = set(name.split("_")) - {"number", "id", "the", "of", "user", "customer"}
        if words:
            named = [
                f
                for f in an.findings
                if f.usable and f.signal in ("key_value", "statement", "answer", "identifier", "plan")
                and len(words & set(canonical_name(f.name).split("_"))) >= max(1, (len(words) + 1) // 2)
            ]
            named = usable(named)
            if named:
                return _Match(an.best(named), 0.8, "matching key words")
        return _Match(None, 0.0, "no finding")

    def _free_text(self, col, an: Analysis, desc_vec: np.ndarray) -> tuple[str, str, float] | None:
        """The sentence of the right role most similar to the column's meaning, if similar enough."""
        text = f"{col.name} {col.meaning}"
        agent, user = bool(_ROLE_AGENT.search(text)), bool(_ROLE_USER.search(text))
        roles = {"agent"} if agent and not user else {"user"} if user and not agent else {"user", "agent"}
        stems = {w[:5] for w in re.findall(r"[a-z]{4,}", text.lower().replace("_", " ")) if w not in _STOP and w not in _GENERIC_WORDS}
        cands = [
            s
            for s in an.sentences
            if s.role in roles
            and stems & {w[:5] for w in re.findall(r"[a-z]{4,}", s.text.lower())}
            and len(s.text.split()) >= 4
            and not is_placeholder_only(s.text)
            and not _GREETING_ONLY.match(_strip_lead(s.text).strip())
        ]
        if not cands:
            return None
        vecs = self._encode([_strip_lead(s.text).strip() for s in cands])
        sims = vecs @ desc_vec
        k = int(np.argmax(sims))
        best = round(float(sims[k]), 4)
        if best < _FREE_TEXT_MIN:
            return None
        s = cands[k]
        return _strip_lead(s.text).strip(), s.text, best

    # --- score ---------------------------------------------------------------------------------------

    def _score(self, an: Analysis, cols: list, problem_vec: np.ndarray, desc_vecs: np.ndarray) -> list[ColumnScore]:
        scores = []
        problem_turns = set(an.problem_turns)
        conv_text = "\n".join(t for _, t in an.turns).lower()
        for col, dv in zip(cols, desc_vecs):
            m = self._match(col, an, dv)
            raw = round(float(dv @ problem_vec), 4)
            rel = min(1.0, max(0.0, (raw - 0.05) / 0.45))
            in_problem = m.finding is not None and m.finding.turn in problem_turns
            rel = 0.7 * rel + 0.3 * (1.0 if in_problem else 0.0)
            name = canonical_name(col.name)
            floor = {"problem": 0.9}.get(name, 0.6 if name in CORE_CONCEPTS else 0.0)
            rel = max(rel, floor)
            if m.finding is not None:
                ans = m.finding.strength * m.confidence
                source = f"{m.finding.signal} found '{_short(m.finding.value)}' in {m.finding.where()}"
            else:
                ans = 0.1
                source = "no value found"
                ex = getattr(col, "example_value", None)
                if ex and len(ex) >= 3 and ex.lower() in conv_text:
                    ans, source = 0.5, f"its example value '{_short(ex)}' occurs in the text"
            ans = round(min(1.0, max(0.0, ans)), 3)
            rel = round(rel, 3)
            overall = round(0.4 * rel + 0.6 * ans, 3)
            just = f"relevance {rel:.2f} (cosine {raw:.2f} to the problem{'; value in the problem turns' if in_problem else ''}); answerability {ans:.2f}: {source}"
            scores.append(ColumnScore(relevance=rel, answerability=ans, overall=overall, justification=just))
        return scores

    def score_columns(self, conversation: ConversationInput, columns: list[CandidateColumn]) -> list[ColumnScore]:
        if not columns:
            return []
        an = self.analysis(conversation)
        vecs = self._encode([self._problem_text(an)] + [self._desc(c) for c in columns])
        return self._score(an, columns, vecs[0], vecs[1:])

    def candidate_schema(self, conversation: ConversationInput) -> CandidateSchema:
        an = self.analysis(conversation)
        proposed = self._proposals(an)
        normalized = self.normalize_columns([c for c, _, _ in proposed])
        vecs = self._encode([self._problem_text(an)] + [self._desc(c) for c in normalized])
        scores = self._score(an, normalized, vecs[0], vecs[1:])
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
        problem = an.problem.value if an.problem is not None else self._problem_text(an)
        return CandidateSchema(
            dialogue_id=conversation.dialogue_id, problem=" ".join((problem or "").split())[:300], columns=columns, backend=self.name
        )

    def _candidate_schema_texts(self, conversation: ConversationInput) -> list[str]:
        """Every text `candidate_schema` may encode for this conversation: the gist's, the problem and the
        "name: meaning" of each column left after the lexical merge."""
        an = self.analysis(conversation, gist=False)
        kept = self._merge_lexical([c for c, _, _ in self._proposals(an)])
        return gist_texts(an) + [self._problem_text(an)] + [self._desc(c) for c in kept]

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
        """The meaning's vector of each column that no detector signal names (`_signal_for` compares it)."""
        need = [c for c in cols if _signal_of(c) not in SIGNALS]
        return dict(zip((c.name for c in need), self._encode([self._desc(c) for c in need]))) if need else {}

    def _signals(self, desc_vecs: dict[str, np.ndarray]):
        return lambda col: self._signal_for(col, desc_vecs.get(col.name))[0]

    def _extract_one(self, col: MetadataColumn, an: Analysis, desc_vec: np.ndarray | None) -> ExtractedValue:
        m = self._match(col, an, desc_vec)
        col_type = canonical_type(col.type) or "string"
        if m.finding is not None:
            v = _fits_type(m.finding.value, col_type)
            v = _fits_constraints(v, col.constraints) if v is not None else None
            if v is not None and v.strip():  # an empty string is no value: null
                return ExtractedValue(column=col.name, value=v, evidence=m.finding.evidence)
        signal = _signal_of(col)
        if col_type == "string" and desc_vec is not None and signal not in SIGNALS:
            mapped, _ = self._signal_for(col, desc_vec)
            if mapped is None:
                ft = self._free_text(col, an, desc_vec)
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


def _short(v: str, n: int = 40) -> str:
    v = " ".join(v.split())
    return v if len(v) <= n else v[: n - 1] + "…"
