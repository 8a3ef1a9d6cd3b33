"""The dialogue graph (DialogueGraph): issue-solution units as nodes, and edges for how a later unit
relates to an earlier one (refines, elaborates), from the thread's structure, roles and embeddings.

**Units.** The first unit opens at the asker's first turn that states something. After a helper has
replied, every asker turn opens a new unit, except an acknowledgement (nothing but fillers and "that
worked"); consecutive asker turns stay together. A substantive answer by a *different* helper than the
one(s) who already answered in the unit opens a unit of its own (forums have several helpers); its issue
is the one it answers. A two-turn exchange is one unit.

**Edges** (source = the later unit, target = an earlier one; at most one per unit, first rule wins):

1. another helper's answer -> ``elaborates`` the unit it adds to;
2. the unit opened with a topic shift or "never mind" -> none;
3. the English cue rules: a correction or narrowing ("actually", "X, not Y", "it only happens when")
   ``refines`` the most similar earlier issue; a clarifying question about the previous answer, a short
   elliptical follow-up ("And for PayPal?") or the helper continuing its instructions ("Next, ...")
   ``elaborates`` it; a failure report with a new symptom ``refines`` it; a restatement (embedding
   similarity >= REFINE_SIM, or >= REFINE_SIM_WITH_DETAIL with a new detail) ``refines`` it;
4. structure, in any language: the asker replies to a helper's question (the previous unit has no
   substantive answer) -> ``refines`` (the asker clarifies); the asker asks a question related to the
   previous unit (embedding similarity with its issue or answer >= ELABORATE_SIM) -> ``elaborates``;
   the asker reports back, briefly (<= SHORT_REPORT_WORDS words) or on the same subject (similarity >=
   SAME_SUBJECT_SIM) -> ``refines``;
5. otherwise unconnected (a second issue).

A text the model cannot read (most of its word pieces unknown to the vocabulary: Thai, most Han
characters) has no similarity to anything, so the rules that need one give way to the structural ones.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from sarag_assets.backends.embedded.phrasing import (
    _ANAPHOR,
    _CONTINUE,
    _FOLLOW_UP,
    _GENERIC,
    _PLACEHOLDER,
    ELABORATE_SIM,
    MAX_NODE_CHARS,
    REFINE_SIM,
    REFINE_SIM_WITH_DETAIL,
    _content,
    _content_set,
    _details,
    _display,
)
from sarag_assets.backends.embedded.segmentation import (
    _ENTITY_SIGNALS,
    _agent_asked,
    _agent_closed,
    _next_agent_substantive,
    _opens_unit,
    _prepare,
    _Prepared,
    _substantive_agent,
    _Unit,
    contiguous,
    first_unit,
)
from sarag_assets.core.structuring.interface import (
    ConversationInput,
    DialogueGraph,
    GraphEdge,
    GraphNode,
)
from sarag_assets.core.writing import CJK_SENTENCE_END

# ---------------------------------------------------------------------------------------------------
# dialogue graph


def _join(parts: list[str], limit: int = MAX_NODE_CHARS) -> str:
    text = " ".join(p for p in parts if p).strip()
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"(?<=[" + CJK_SENTENCE_END + r"]) ", "", text)  # Chinese and Japanese put no space between sentences
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0] + " ..."
    return text


def _unit_issue(p: _Prepared, u: _Unit) -> str:
    parts = []
    for ti in u.user_turns:
        for s in p.by_turn.get(ti, []):
            if s.filler or s.polarity > 0 and not (s.correction or s.question):
                continue
            parts.append(s.text)
    if not parts and u.user_turns:
        parts = [_display(p.conv.turns[u.user_turns[0]].text)]
    return _join(parts)


def _issues(p: _Prepared, units: list[_Unit]) -> list[str]:
    """Each unit's issue; a unit opened by another helper answers the issue of the unit before it."""
    out: list[str] = []
    for u in units:
        out.append(out[-1] if u.cue == "helper" and out else _unit_issue(p, u))
    return out


def _unit_answer(p: _Prepared, u: _Unit) -> str:
    if not u.agent_turns:
        return ""
    main, asks, any_text = [], [], []
    for ti in u.agent_turns:
        for s in p.by_turn.get(ti, []):
            any_text.append(s.text)
            if s.filler:
                continue
            (asks if s.request else main).append(s.text)
    return _join(main or asks or any_text)


def _units_fallback(p: _Prepared) -> list[_Unit]:
    """No turn stated an issue: one unit from the first user turn with text (else the first turn)."""
    turns = p.conv.turns
    start = next((i for i, t in enumerate(turns) if t.role == "user" and (t.text or "").strip()), None)
    if start is None:  # the user never said anything: the agent's turns are all there is
        u = _Unit(start=0, user_turns=[], end=max(len(turns) - 1, 0), opening=[], cue="first")
        u.agent_turns = [i for i, t in enumerate(turns) if t.role == "agent"]
        return [u]
    u = _Unit(start=start, user_turns=[start], end=len(turns) - 1, opening=[start], cue="first")
    u.agent_turns = [i for i in range(start, len(turns)) if turns[i].role == "agent"]
    return [u]


def _graph_units(p: _Prepared) -> list[_Unit]:
    """The conversation's units (see the module docstring), from its classified sentences."""
    conv = p.conv
    turns = [(t.role, t.text) for t in conv.turns]
    units: list[_Unit] = []
    cur: _Unit | None = None
    helper_replied = agent_asked = agent_closed = False
    for ti, (role, text) in enumerate(turns):
        sents = p.by_turn.get(ti, [])
        if role != "user":
            if cur is not None:
                if _substantive_agent(sents) and _another_helper(p, cur, ti):
                    cur = _Unit(start=ti, user_turns=[], agent_turns=[ti], end=ti, opening=[], cue="helper")
                    units.append(cur)
                else:
                    cur.agent_turns.append(ti)
                    cur.end = ti
            agent_asked, agent_closed = _agent_asked(sents), _agent_closed(text)
            helper_replied = cur is not None
            continue
        subst = [s for s in sents if not s.filler and (s.content >= 1 or s.clarify)]
        if cur is None:
            cur = first_unit(ti, subst)
            if cur is not None:
                units.append(cur)
            continue
        if not helper_replied or not subst or all(s.polarity > 0 and not s.question for s in subst):
            cur.user_turns.append(ti)  # the asker goes on, or acknowledges
            if cur.opening and cur.opening[-1] == ti - 1 and not helper_replied:
                cur.opening.append(ti)
            cur.end = ti
            continue
        helper_replied = False
        cue = _opens_unit(subst, agent_asked, agent_closed, _next_agent_substantive(turns, p.by_turn, ti)) or "reply"
        cur = _Unit(start=ti, user_turns=[ti], end=ti, opening=[ti], cue=cue)
        units.append(cur)
    return contiguous(units, len(turns))


def _another_helper(p: _Prepared, unit: _Unit, ti: int) -> bool:
    """Turn `ti` is an answer by a helper other than those who already answered in `unit`."""
    turns = p.conv.turns
    answered_by = {turns[a].speaker for a in unit.agent_turns if _substantive_agent(p.by_turn.get(a, []))}
    return bool(answered_by) and turns[ti].speaker not in answered_by


def _entities_in(p: _Prepared, turns: set[int]) -> set[str]:
    out = set()
    for f in p.analysis.findings:
        if f.usable and f.turn in turns and f.signal in _ENTITY_SIGNALS:
            out.add(f.value.lower())
    return out




EMBED_CHARS = 300  # the start of a unit's issue or answer is what its embedding is made of
SHORT_REPORT_WORDS = 12  # "still the same", "2.2.1+cpu", "läuft wieder": a report back, not a new issue
# more than half the word pieces unknown: the model reads the text as a run of [UNK] (Thai, most Han
# characters for all-MiniLM-L6-v2), so every such text embeds alike
UNREADABLE_SHARE = 0.5
SAME_SUBJECT_SIM = 0.25  # a longer report back still shares the subject; unrelated texts score near 0 with this model


class _Sims:
    """Cosine similarities between units' issues (and a unit's issue and the previous answer), from
    one embedding batch holding only the texts some edge rule will look at."""

    def __init__(self, issue_vecs: dict[int, np.ndarray], answer_vecs: dict[int, np.ndarray]):
        self.iv, self.av = issue_vecs, answer_vecs

    @classmethod
    def build(cls, p: _Prepared, units: list[_Unit], issues: list[str], answers: list[str], embedder: Any | None) -> "_Sims":
        """A text the model cannot read (`readable`) gets no vector: its cosines are None, and the rules
        that need them give way to those of structure."""
        ii, aa = cls.wanted(p, units, answers)
        if not ii and not aa:
            return cls({}, {})
        embedder = embedder or _default_embedder()
        texts = cls.texts(ii, aa, issues, answers)
        vecs, read = _embed(texts, embedder), readable(texts, embedder)
        return cls({k: v for k, v, r in zip(ii, vecs[: len(ii)], read) if r},
                   {k: v for k, v, r in zip(aa, vecs[len(ii):], read[len(ii):]) if r})

    @staticmethod
    def texts(ii: list[int], aa: list[int], issues: list[str], answers: list[str]) -> list[str]:
        return [issues[k][:EMBED_CHARS] for k in ii] + [answers[k][:EMBED_CHARS] for k in aa]

    @staticmethod
    def wanted(p: _Prepared, units: list[_Unit], answers: list[str]) -> tuple[list[int], list[int]]:
        """(units whose issue, units whose answer) some edge rule may compare: all of them, once there
        are two units."""
        if len(units) < 2:
            return [], []
        return list(range(len(units))), [k for k in range(len(units) - 1) if answers[k]]

    def ii(self, j: int, i: int) -> float | None:
        if j in self.iv and i in self.iv:
            return round(float(self.iv[j] @ self.iv[i]), 3)
        return None

    def ia(self, j: int, i: int) -> float | None:
        if j in self.iv and i in self.av:
            return round(float(self.iv[j] @ self.av[i]), 3)
        return None


def _edge_for(j: int, units: list[_Unit], issues: list[str], answers: list[str], sims: _Sims, p: _Prepared) -> tuple[int, str, str] | None:
    """(target index, relation, reason) for unit j, or None."""
    u = units[j]
    prev = j - 1
    opening = [s for ti in u.opening for s in p.by_turn.get(ti, []) if not s.filler]

    def most_similar_issue() -> int:
        scored = [(sims.ii(j, i), i) for i in range(j)]
        if any(v is None for v, _ in scored):
            return prev
        return max(scored)[1]

    if u.cue == "helper":
        return prev, "elaborates", "another helper adds to the earlier answer"
    if u.cue in ("shift", "abandon"):
        return None
    if u.cue in ("correction", "narrow"):
        target = most_similar_issue()
        cue = next((s for s in opening if s.correction or s.narrow), None)
        what = "corrects" if u.cue == "correction" else "narrows"
        return target, "refines", f"the user {what} the earlier issue" + (f" ({_quote(cue.text)})" if cue else "")
    if answers[prev]:
        clar = next((s for s in opening if s.clarify and (s.question or s.content <= 6)), None)
        if clar is not None:
            refers = bool(_ANAPHOR.search(clar.text))
            shared = (_content_set(clar.text) - _GENERIC) & (_content_set(answers[prev]) - _GENERIC)
            sim = sims.ia(j, prev) or 0.0
            if refers or len(shared) >= 1 or sim >= ELABORATE_SIM:
                return prev, "elaborates", f"the user asks about the previous answer ({_quote(clar.text)}) and the agent expands it"
        follow = next((s for s in opening if s.question and _FOLLOW_UP.match(s.text) and len(_content(s.text)) <= 4), None)
        if follow is not None:
            return prev, "elaborates", f"a follow-up question on the previous answer ({_quote(follow.text)})"
        first_agent = next((s for ti in u.agent_turns for s in p.by_turn.get(ti, []) if not s.filler), None)
        if first_agent is not None and _CONTINUE.search(first_agent.text) and (first_agent.instr >= 0.5 or first_agent.request is False):
            prior_instr = any(s.instr >= 0.5 for ti in units[prev].agent_turns for s in p.by_turn.get(ti, []))
            if prior_instr:
                return prev, "elaborates", f"the agent continues its earlier instructions ({_quote(first_agent.text)})"
    if u.cue == "issue" and any(s.polarity < 0 for s in opening) and any(s.instr >= 0.5 for ti in units[prev].agent_turns for s in p.by_turn.get(ti, [])):
        return prev, "refines", "the problem persists after the suggested step and the user adds a new detail"
    best = most_similar_issue()
    sim = sims.ii(j, best)
    if sim is not None:
        if sim >= REFINE_SIM:
            return best, "refines", f"the user restates the earlier issue (similarity {sim:.2f})"
        if sim >= REFINE_SIM_WITH_DETAIL:
            new = _details(issues[j]) - _details(issues[best])
            new |= _entities_in(p, set(u.user_turns)) - _entities_in(p, set(units[best].user_turns))
            if new:
                return best, "refines", f"the user restates the earlier issue with new detail: {', '.join(sorted(new)[:3])} (similarity {sim:.2f})"
    return _structural_edge(j, units, issues, sims, p)


def _structural_edge(j: int, units: list[_Unit], issues: list[str], sims: _Sims, p: _Prepared) -> tuple[int, str, str] | None:
    """Rule 4: what the asker's turn does after the helper's, from structure and embeddings alone."""
    prev = j - 1
    if not any(_substantive_agent(p.by_turn.get(a, [])) for a in units[prev].agent_turns):
        return prev, "refines", "the user answers the helper's question"
    related = max(sims.ii(j, prev) or 0.0, sims.ia(j, prev) or 0.0)
    asks = any(s.question for ti in units[j].opening for s in p.by_turn.get(ti, []))
    if asks and related >= ELABORATE_SIM:
        return prev, "elaborates", f"the user asks about the previous answer (similarity {related:.2f})"
    words = len(issues[j].split())
    if not asks and (words <= SHORT_REPORT_WORDS or related >= SAME_SUBJECT_SIM):
        return prev, "refines", "the user reports back on the previous answer" + (
            f" (similarity {related:.2f})" if words > SHORT_REPORT_WORDS else "")
    return None


def _quote(text: str, n: int = 60) -> str:
    t = re.sub(r"\s+", " ", _PLACEHOLDER.sub("…", text)).strip()
    return '"' + (t if len(t) <= n else t[: n - 1].rsplit(" ", 1)[0] + " …") + '"'


def _default_embedder():
    from sarag_assets.core.encoding.embedder import default_embedder

    return default_embedder()


def _embed(texts: list[str], embedder: Any) -> np.ndarray:
    return np.asarray(embedder.encode(texts), dtype=np.float32)


def readable(texts: list[str], embedder: Any) -> list[bool]:
    """Whether the model reads each text: at most `UNREADABLE_SHARE` of its word pieces unknown to its
    vocabulary (an embedder that cannot tell reads everything)."""
    shares = getattr(embedder, "unknown_shares", None)
    return [True] * len(texts) if shares is None else [x <= UNREADABLE_SHARE for x in shares(texts)]


def dialogue_graph_texts(conv: ConversationInput) -> list[str]:
    """The texts `dialogue_graph(conv)` will encode (none for most conversations), without encoding
    them: a batch's texts can then be encoded in one call and served from the embedder's cache."""
    p = _prepare(conv)
    units = _graph_units(p) or _units_fallback(p)
    issues = _issues(p, units)
    answers = [_unit_answer(p, u) for u in units]
    ii, aa = _Sims.wanted(p, units, answers)
    return _Sims.texts(ii, aa, issues, answers)


def dialogue_graph(conv: ConversationInput, *, backend_name: str, embedder: Any | None = None) -> DialogueGraph:
    """The conversation as issue-solution units (nodes) and refines/elaborates edges (see the module
    docstring). `embedder` (anything with `encode(list[str]) -> array` of L2-normalized rows) defaults
    to the packaged model; it is called once, and only when there are two or more units."""
    p = _prepare(conv)
    units = _graph_units(p) or _units_fallback(p)
    issues = _issues(p, units)
    answers = [_unit_answer(p, u) for u in units]
    sims = _Sims.build(p, units, issues, answers, embedder)
    nodes = [
        GraphNode(node_id=f"n{k}", issue=issues[k], answer=answers[k], turn_start=u.start, turn_end=max(u.end, u.start))
        for k, u in enumerate(units)
    ]
    edges = []
    for j in range(1, len(units)):
        found = _edge_for(j, units, issues, answers, sims, p)
        if found is not None:
            target, relation, reason = found
            edges.append(GraphEdge(source=f"n{j}", target=f"n{target}", relation=relation, reason=reason))
    return DialogueGraph(dialogue_id=conv.dialogue_id, nodes=nodes, edges=edges, backend=backend_name)
