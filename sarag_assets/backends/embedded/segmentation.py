"""Sentences classified by role and kind, grouped into issue/answer units: the conversation's shape that
the dialogue graph and the pseudo-documents share (prepared once per conversation, cached).

**Sentences.** Every turn is split into sentences; each is cleaned for display (URLs, @mentions and
tweet signatures removed) and classified: filler (greetings, thanks, sign-offs, "one moment please",
"anything else?"), the user's problem statements and questions, confirmations ("that worked" /
"still broken"), reports of what the user already tried, corrections ("actually it's 5.1.3"), the
agent's instructions, requests for information, causes, outcomes ("your seat has been changed") and
other statements.

**Units (graph nodes).** A unit starts at a user turn that expresses an issue or a question and takes
the following agent turns as its answer. User turns merge into the current unit while the agent has
not really answered yet (consecutive turns, turns after a greeting or "one moment please"). After an
answer, a user turn opens a new unit when it shifts topic ("another issue", "unrelated"; a weak cue
such as "btw" or "also," only when the agent was not asking for something), abandons the earlier
question ("never mind"), corrects or narrows the issue, asks a question, states a new problem with
enough new words that is not just the answer to the agent's request for information, or makes a
request after the agent's "anything else?". Everything else (answers to the agent's questions, "ok",
feedback such as "still broken", chatter the agent only acknowledges) continues the current unit.
Greeting-only turns are never units. Node ``issue`` is the unit's user sentences without filler and
positive confirmations; ``answer`` its agent sentences without filler (the agent's questions are
dropped when it also said something else), "" when no agent turn followed. ``turn_start`` is the
unit's first user turn, ``turn_end`` the turn before the next unit starts (the last unit runs to the
end). Every conversation gets at least one node (a conversation where no turn states an issue: one
unit from the first user turn; with no user turn: one unit with an empty issue and the agent's words).

Speed: one `analyze` pass (the backend's own when the display text is the text, `analysis.analyzed`)
and a few regular expressions per sentence, shared by both functions through a memo keyed by the
conversation's content; the embedder is called once,
and only for conversations with two or more units whose edges need a similarity (about one in seven);
`dialogue_graph_texts` lists those texts without encoding them, so that a batch's texts can be encoded
in one call first (the embedded backend's `prepare`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from sarag_assets.backends.embedded.analysis import analyzed
from sarag_assets.backends.embedded.memo import TextBoundedMemo, content_key
from sarag_assets.backends.embedded.cues import (
    cause_clause,
    confirmation,
    instruction_score,
    problem_score,
)
from sarag_assets.backends.embedded.phrasing import (
    _ABANDON,
    _AGENT_ASKS,
    _AGENT_OUTCOME,
    _ATTEMPT,
    _CLARIFY,
    _DIGIT,
    _FAILED,
    _GENERIC,
    _IDENTITY,
    _LEAD,
    _MID_QUESTION,
    _NARROW,
    _PLACEHOLDER,
    _QUESTION_START,
    _SHIFT,
    _SUGGEST_Q,
    _TAG_QUESTION,
    _VALUE_CORRECTION,
    _WEAK_SHIFT,
    MAX_SENTENCES_PER_TURN,
    _content,
    _content_set,
    _display,
    _is_filler,
    _query,
)
from sarag_assets.backends.embedded.statements import requested_slots
from sarag_assets.backends.embedded.versions import correction_cue
from sarag_assets.core.structuring.interface import ConversationInput
from sarag_assets.core.writing import QUESTION_MARKS

# ---------------------------------------------------------------------------------------------------
# sentences and units


_SIGN_OFF = re.compile(
    r"^\W*(?:[-–—]+\s*)?(?:[A-Z][\w.'-]*\s*){1,3}(?:[,(|/-]|\bfrom\b|\bat\b)\s*(?:the\s+)?(?:[A-Z&][\w&.'-]*\s*){0,4}"
    r"(?i:support|team|desk|care|service|services|help\s*desk)?\W*\)?\W*$|^\W*(?i:the\s+)?(?:[A-Z&][\w&.'-]*\s+){0,4}(?i:support|team|desk|care)(?i:\s+team)?\W*$"
)
_POLITE_IMPERATIVE = re.compile(r"^\W*(?:could|can|would|will)\s+you\s+(?:please\s+|kindly\s+|just\s+|also\s+)*(?:try\s+(?:to\s+)?)?(?P<verb>[a-z-]+)\b", re.I)
# verbs of "could you ...?" that ask for information rather than give a step
_INFO_VERBS = frozenset(
    """tell give provide share confirm send let check verify describe clarify specify explain see look find read remember say
    help hold wait advise answer know think recall guess be please kindly also just elaborate dm message email call want like
    need prefer wish mind have do""".split()
)
_AGENT_LEAD = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|alright|so|now|great|thanks?(?:\s+you)?)\W+)*(?:let'?s\s+(?:start|begin)\s+with\s+the\s+basics|let'?s\s+try\s+something\s+(?:simple|else|quick)|"
    r"(?:try|do)\s+this|to\s+(?:begin|start)(?:\s+with)?|first(?:\s+of\s+all)?|firstly|for\s+starters|as\s+a\s+first\s+step|start\s+by|in\s+the\s+meantime|"
    r"meanwhile|(?:the\s+)?next\s+step\s+is\s+to|next|then|after\s+that|also|finally|lastly|go\s+ahead\s+and|(?:please\s+)?make\s+sure\s+(?:to|that\s+you)|"
    r"making\s+sure\s+to|if\s+(?:that|it)\s+(?:doesn'?t|does\s+not|didn'?t)\s+(?:work|help))\s*[:,-]?\s+",
    re.I,
)
_INFO_QUESTION = re.compile(
    r"^\W*(?:do|does|did|are|is|was|were|have|has|had|which|what|what'?s|when|where|who|whose|why|how\s+(?:long|many|often|much|old)|"
    r"any\s+(?:error|code|message|chance))\b",
    re.I,
)
_TICKET = re.compile(r"\b(?:ticket|case|reference|ref|incident)\b[^.]{0,20}#?\s*\w*\d", re.I)


def _agent_core(text: str) -> str:
    """An agent sentence without lead-ins ("Let's start with the basics: please ...", "To begin, ...")."""
    out = text
    for _ in range(3):
        new = _AGENT_LEAD.sub("", out)
        if new == out:
            break
        out = new
    return out


@dataclass
class _Sent:
    turn: int
    role: str
    text: str  # display text
    query: str  # query-ready text ("" when unusable as a query)
    content: int  # content words in the query text
    filler: bool = False
    question: bool = False
    polarity: int = 0  # confirmation: +1 solved, -1 not solved
    problem: float = 0.0  # user: problem statement score
    instr: float = 0.0  # agent: instruction score
    cause: str | None = None
    correction: bool = False
    narrow: bool = False
    attempt: bool = False
    request: bool = False  # agent asks for information
    outcome: bool = False  # agent states an action taken/offered or a verdict
    shift: int = 0  # 2: an explicit new topic ("another issue", "unrelated"), 1: a weak cue ("also,", "btw")
    clarify: bool = False
    abandon: bool = False
    echo: int = 0  # content words (stems) that recur in other sentences of the conversation
    order: int = 0  # position in the conversation

    @property
    def issue_like(self) -> bool:
        """A user sentence that states a problem, a request or a question."""
        return (
            not self.filler
            and self.polarity <= 0
            and self.content >= 2
            and (self.problem >= 0.45 or self.question or self.correction or self.narrow)
        )



def _classify(turn: int, role: str, raw: str) -> _Sent:
    text = raw.strip()
    filler = _is_filler(text) or (role == "agent" and len(text.split()) <= 2 and len(_content(text)) <= 1 and not _DIGIT.search(text))
    q = "" if filler else _query(text)
    s = _Sent(turn=turn, role=role, text=text, query=q, content=len(_content(q)), filler=filler)
    if filler and role == "user" and _CLARIFY.search(text):
        filler = s.filler = False  # "How do I do that?": no content words, but a real question
        s.query = _query(text)
    if filler:
        q = _LEAD.sub("", _PLACEHOLDER.sub(" ", text).strip())
    stripped = text.rstrip()
    s.question = stripped.endswith(QUESTION_MARKS) or bool(_QUESTION_START.match(q) and len(q.split()) >= 3) or bool(_MID_QUESTION.search(q) and role == "user")
    s.polarity = confirmation(text, role)[0]
    if role == "user":
        if s.polarity == 0 and _FAILED.search(text):
            s.polarity = -1
        s.problem = problem_score(text)
        if s.problem < 0.5 and (_NEG_OR_PROBLEM.search(text) or _NEED.search(text)) and len(_content(text)) >= 2:
            s.problem = 0.5  # a malfunction or a need our own cues see, whatever the shared score says
        s.correction = (correction_cue(text) or bool(_VALUE_CORRECTION.search(text))) and not re.match(r"^\W*(?:actually|sorry),?\s+(?:it|that|this)\s+(?:worked|works|fixed|helped|did)", text, re.I)
        s.narrow = bool(_NARROW.search(text))
        s.attempt = bool(_ATTEMPT.search(text)) and s.polarity <= 0
        s.shift = 2 if _SHIFT.search(text) else 1 if _WEAK_SHIFT.search(text) else 0
        s.clarify = bool(_CLARIFY.search(text))
        s.question = s.question or (s.clarify and (s.content >= 2 or stripped.endswith("?")))
        s.abandon = bool(_ABANDON.search(text))
    else:
        core = _agent_core(text)
        s.instr = max(instruction_score(text), instruction_score(core) if core != text else 0.0)
        if re.match(r"(?:right|left|double|long)[- ]?(?:click|tap|press)\b", core, re.I):
            s.instr = max(s.instr, 0.8)
        if _SUGGEST_Q.match(text) and stripped.endswith("?"):
            s.instr = max(s.instr, 0.6)  # "Have you tried clearing the cache?": a suggested step
        m = _POLITE_IMPERATIVE.match(core)
        if m and m.group("verb").lower() not in _INFO_VERBS and not re.match(r"\s*(?:me|us)\b", core[m.end():], re.I):
            s.instr = max(s.instr, 0.65)  # "Could you swap the cable for a Cat6 one?": a step, politely
        if stripped.endswith("?") and _INFO_QUESTION.match(core) and not _SUGGEST_Q.match(text):
            s.instr = 0.0  # "Do you get an error code?", "Which version are you on?": asks, does not instruct
        if stripped.endswith(":") and len(_content(core)) <= 3:
            s.instr = min(s.instr, 0.3)  # "Here's what fixes it:", "Follow these steps:": a header
        if _SIGN_OFF.match(text) and len(text.split()) <= 8 and s.instr < 0.5:
            s.filler = True
        c = cause_clause(text)
        s.cause = c[0] if c else None
        s.outcome = bool(_AGENT_OUTCOME.search(text)) or s.polarity != 0
        asks = stripped.endswith("?") and not _TAG_QUESTION.search(stripped)
        polite = bool(re.search(r"\b(?:please|may\s+i|could\s+you|can\s+you|would\s+you|kindly)\b", text, re.I))
        s.request = s.instr < 0.5 and (asks or (polite and bool(requested_slots(text))))
        if not s.request and s.instr < 0.5:
            m = _AGENT_ASKS.search(text)
            s.request = bool(m) and (asks or len(_content(text[: m.start()])) <= 2)
    if s.filler:
        s.query, s.content = "", 0
    return s


@dataclass
class _Unit:
    start: int
    user_turns: list[int] = field(default_factory=list)
    agent_turns: list[int] = field(default_factory=list)
    end: int = 0
    opening: list[int] = field(default_factory=list)  # the consecutive user turns that opened it
    cue: str | None = None  # why it opened: first | shift | correction | narrow | question | issue | abandon


@dataclass
class _Prepared:
    conv: ConversationInput
    sents: list[_Sent]
    by_turn: dict[int, list[_Sent]]
    units: list[_Unit]
    analysis: Any  # Analysis


def _agent_asked(sents: Sequence[_Sent]) -> bool:
    """The agent turn ends by asking the user for something (its last substantive sentence)."""
    subst = [s for s in sents if not s.filler and s.content >= 2]
    return bool(subst) and subst[-1].request


_ANYTHING_ELSE = re.compile(r"\b(?:anything\s+else|something\s+else|any\s+other\s+(?:questions?|concerns?|issues?)|further\s+(?:questions?|assistance))\b", re.I)


def _agent_closed(turn_text: str) -> bool:
    """The agent offers to help with anything else: what the user says next is a new request."""
    return bool(_ANYTHING_ELSE.search(turn_text))


def _substantive_agent(sents: Sequence[_Sent]) -> bool:
    """The agent turn answers something: an instruction, a cause, an outcome or an informative
    statement (a request for information, with its hint "it's on the status page", does not)."""
    return any(
        not s.filler and not _TICKET.search(s.text) and (s.instr >= 0.5 or s.cause or s.outcome or (not s.request and s.content >= 3))
        for s in sents
    )


def _segment(turns: list[tuple[str, str]], by_turn: dict[int, list[_Sent]]) -> list[_Unit]:
    units: list[_Unit] = []
    cur: _Unit | None = None
    agent_asked = agent_closed = False
    n = len(turns)
    for ti, (role, _text) in enumerate(turns):
        sents = by_turn.get(ti, [])
        if role == "agent":
            if cur is not None:
                cur.agent_turns.append(ti)
                cur.end = ti
            agent_asked = _agent_asked(sents)
            agent_closed = _agent_closed(_text)
            continue
        subst = [s for s in sents if not s.filler and (s.content >= 1 or s.clarify)]
        if cur is None:
            cur = first_unit(ti, subst)
            if cur is not None:
                units.append(cur)
            continue
        answered = any(_substantive_agent(by_turn.get(a, [])) for a in cur.agent_turns)
        if not answered:  # the agent has not really answered yet: the user goes on
            cur.user_turns.append(ti)
            cur.end = ti
            if cur.opening and cur.opening[-1] == ti - 1:
                cur.opening.append(ti)
            continue
        cue = _opens_unit(subst, agent_asked, agent_closed, _next_agent_substantive(turns, by_turn, ti))
        if cue is not None:
            cur = _Unit(start=ti, user_turns=[ti], end=ti, opening=[ti], cue=cue)
            units.append(cur)
        else:
            cur.user_turns.append(ti)
            cur.end = ti
    return contiguous(units, n)


def contiguous(units: list[_Unit], n_turns: int) -> list[_Unit]:
    """The units as contiguous ranges: each runs until the turn before the next one starts."""
    for a, b in zip(units, units[1:]):
        a.end = b.start - 1
    if units:
        units[-1].end = n_turns - 1
    return units


def first_unit(ti: int, subst: Sequence[_Sent]) -> _Unit | None:
    """The first unit, opened by user turn `ti` when it states something (not a bare "hello")."""
    if any(s.issue_like or s.content >= 3 for s in subst):
        return _Unit(start=ti, user_turns=[ti], end=ti, opening=[ti], cue="first")
    return None


def _next_agent_substantive(turns: list[tuple[str, str]], by_turn: dict[int, list[_Sent]], ti: int) -> bool | None:
    """Whether the agent's next turn(s) after user turn `ti` say something substantive (None: no agent
    turn follows)."""
    seen = False
    for j in range(ti + 1, len(turns)):
        if turns[j][0] == "agent":
            seen = True
            if _substantive_agent(by_turn.get(j, [])):
                return True
        elif seen:
            break
    return False if seen else None


def _opens_unit(subst: list[_Sent], agent_asked: bool, agent_closed: bool, agent_replies: bool | None) -> str | None:
    """Why a user turn after an agent turn opens a new unit, or None when it continues the current one."""
    if not subst:
        return None
    issue = [s for s in subst if s.issue_like]
    questions = [s for s in issue if s.question and s.content >= 2] + [s for s in subst if s.clarify and s.question and s.polarity <= 0]
    strong = [s for s in issue if s.problem >= 0.6 and len(_content_set(s.text) - _GENERIC) >= 4 and not s.attempt]
    if any(s.abandon for s in subst) and (issue or any(s.content >= 3 for s in subst)):
        return "abandon"
    if any(s.shift == 2 or (s.shift and not agent_asked) for s in subst) and (issue or any(s.content >= 3 for s in subst)):
        if agent_replies is False and not questions:
            return None  # chatter the agent only acknowledges
        return "shift"
    if any((s.correction or s.narrow) and s.content >= 1 and s.polarity <= 0 and not _IDENTITY.search(s.text) for s in subst):
        return "correction" if any(s.correction for s in subst) else "narrow"
    if questions:
        return "question"
    if strong and not agent_asked and agent_replies is not False:
        return "issue"
    if agent_closed and any(s.content >= 2 and s.problem >= 0.4 for s in issue):
        return "issue"  # after "anything else I can help with?": a new request
    return None


# ---------------------------------------------------------------------------------------------------
# preparation (shared by both functions, cached)

_CACHE: "TextBoundedMemo[_Prepared]" = TextBoundedMemo()  # pseudo_documents, then dialogue_graphs


def _key(conv: ConversationInput) -> str:
    return content_key(conv.dialogue_id, *(part for t in conv.turns for part in (t.role, t.text or "")))


def _prepare(conv: ConversationInput) -> _Prepared:
    key = _key(conv)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    turns = [(t.role, _display(t.text)) for t in conv.turns]
    analysis = analyzed(turns)  # the backend's steps have usually analysed this text already
    sents: list[_Sent] = []
    by_turn: dict[int, list[_Sent]] = {}
    for s in analysis.sentences:
        if s.index >= MAX_SENTENCES_PER_TURN:
            continue
        c = _classify(s.turn, s.role, s.text)
        sents.append(c)
        by_turn.setdefault(s.turn, []).append(c)
    stems = [_content_set(c.text) - _GENERIC for c in sents]
    df: dict[str, int] = {}
    for st in stems:
        for w in st:
            df[w] = df.get(w, 0) + 1
    for k, (c, st) in enumerate(zip(sents, stems)):
        c.order = k
        c.echo = sum(1 for w in st if df[w] > 1)
    units = _segment(turns, by_turn)
    prepared = _Prepared(conv=conv, sents=sents, by_turn=by_turn, units=units, analysis=analysis)
    return _CACHE.put(key, prepared, sum(len(t.text or "") for t in conv.turns))



_ENTITY_SIGNALS = ("error_code", "error_message", "version", "os", "browser", "model", "plan", "product")

_NEG_OR_PROBLEM = re.compile(
    r"\b(?:not|no|never|can'?t|cannot|won'?t|doesn'?t|didn'?t|isn'?t|aren'?t|unable|error|fail\w*|crash\w*|freez\w*|stuck|broken|"
    r"drop\w*|slow|missing|lost|wrong|stopped|keeps)\b",
    re.I,
)
_FEEDBACK_WORDS = frozenset("already same still tried done nothing change changed luck".split())
_NEED = re.compile(
    r"\b(?:i\s+(?:want|need|would\s+like|'d\s+like|wanted|was\s+wondering)|(?:can|could|may)\s+i|how\s+(?:do|can|should)\s+i|"
    r"please\s+(?:help|check|change|cancel|send|update|fix)|help\s+me)\b",
    re.I,
)
