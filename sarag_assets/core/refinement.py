"""Structured Dialogue Refinement (SDR), embedded: pseudo-documents and dialogue graphs. No Dagster,
no network, deterministic.

    pseudo_documents(conv, backend_name="embedded/1") -> PseudoDocuments
    dialogue_graph(conv, backend_name="embedded/1") -> DialogueGraph

Both work on an anonymized, redacted `ConversationInput` (user1/agent1, [EMAIL], [NAME], ...) and are
built from general English cues and structure only (``sarag_assets.core.signals``: sentence splitting,
problem/instruction/confirmation/cause/correction scores, entity detectors with corrections applied),
plus, for the graph, one batch of sentence embeddings per conversation (only when it has two or more
units). Nothing here knows a dataset's vocabulary.

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

**Edges** (source = the later unit, target = an earlier one; at most one per unit, first rule wins):

1. the unit opened with a topic shift or "never mind" -> none;
2. a correction or narrowing cue ("actually", "I meant", "sorry, it's", "X, not Y", "to be precise",
   "more specifically", "it only happens when"), not about an identifier -> ``refines`` the most
   similar earlier unit (embedding similarity of the issues);
3. a clarifying question about the previous answer ("how do I ...?", "where is ...?", "what do you
   mean ...?", "what if ...?", "does that apply ...?") that refers back to it (a pronoun, a shared
   content word, or embedding similarity with that answer >= ELABORATE_SIM) -> ``elaborates`` it;
4. a short elliptical follow-up question ("And for PayPal?", "What about the app?") -> ``elaborates``
   the previous unit;
5. the agent's answer continues its earlier instructions ("Next, ...", "After that, ...", "If that
   doesn't work, ...") -> ``elaborates`` the previous unit;
6. the user reports that the suggested step failed and states a new symptom -> ``refines`` it;
7. the unit restates an earlier issue: embedding similarity >= REFINE_SIM, or >= REFINE_SIM_WITH_DETAIL
   with a new detail (a token with a digit, a capitalized name, a detected entity) -> ``refines`` it;
8. otherwise unconnected (a topic shift or a second issue).

**Pseudo-documents.** Issue-centric queries (what the user needed), best first: the best problem
statement of the first unit (problem score, question bonus, words the rest of the conversation takes
up, small talk penalized); "<product> <symptom>" and "<error code> on <product> <version>" built from
the detected entities (user-stated, corrections applied, denied values dropped); the opening statement
of every later unit; further problem sentences and questions; the first unit's keywords with the
details the user gave in answer to the agent's questions (identifiers left out); the environment
(product, version, OS, plan). 1..8 (3+ when the conversation says enough), each <= 24 words, distinct,
without greetings, thanks, placeholders or chatter. Solution-centric queries (what resolved it or was
tried): the steps of the fix the user confirmed (or reported doing themselves, else the agent's last
concrete instructions), the stated cause, the agent's actions and verdicts ("I've issued a refund",
"we cannot accept the return after 90 days"), the other instructions, the informative answers to the
user's questions, and what was tried and failed, marked "tried: <step> (did not help)" (up to two
slots kept for them); 1..8 (2+ when there is anything to say). Neither is ever empty: the solution side
falls back to the agent's most substantive turn (the user's last turn if the agent never spoke), the
issue side to the user's longest sentences or turn (any turn if the user never spoke).

Speed: one `signals.analyze` pass and a few regular expressions per sentence, shared by both
functions through a small LRU cache keyed by the conversation's content; the embedder is called once,
and only for conversations with two or more units whose edges need a similarity (about one in seven);
`dialogue_graph_texts` lists those texts without encoding them, so that a batch's texts can be encoded
in one call first (the embedded backend's `prepare`).
"""

from __future__ import annotations

import hashlib
import html
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from sarag_assets.core import signals
from sarag_assets.llm.interface import ConversationInput, DialogueGraph, GraphEdge, GraphNode, PseudoDocuments

__all__ = [
    "pseudo_documents",
    "dialogue_graph",
    "MAX_ISSUE_QUERIES",
    "MAX_SOLUTION_QUERIES",
    "REFINE_SIM",
    "REFINE_SIM_WITH_DETAIL",
    "ELABORATE_SIM",
]

MAX_ISSUE_QUERIES = 8
MAX_SOLUTION_QUERIES = 8
MAX_QUERY_WORDS = 24
MAX_NODE_CHARS = 2000
MAX_SENTENCES_PER_TURN = 40  # very long posts (logs, pasted configs): the rest is not read

# embedding thresholds (cosine, all-MiniLM-L6-v2)
REFINE_SIM = 0.75  # a restatement of an earlier issue
REFINE_SIM_WITH_DETAIL = 0.55  # the same issue with a new detail
ELABORATE_SIM = 0.40  # a clarifying question about the previous answer

# ---------------------------------------------------------------------------------------------------
# text cleaning

_DIGIT = re.compile(r"\d")
_URL = re.compile(r"(?:https?://|www\.)\S+", re.I)
_MENTION = re.compile(r"\[MENTION\]|(?<![\w.])@\w+")
_SIGNATURE = re.compile(r"\s*\^\s*(?:\[[A-Z_]+\]|[A-Za-z]{1,4}\b)")
_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]{1,20}\]|\b(?:user|agent)\d+\b")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_LEAD = re.compile(
    r"^(?:\s|[-*•>:,;.!]|\d{1,2}[.)]\s"
    r"|(?:hi|hello|hey|hai|hiya|dear|greetings)(?:\s+(?:there|team|all|guys|everyone|folks|support|again))?\s*(?:[,!.:]+|-(?=\s))"
    r"|(?:hi|hello|hey|hai|hiya)\s+(?=[a-z])"
    r"|(?:yes|yeah|yep|no|nope|ok|okay|so|well|oh|ah|alright|right|sure|great|hmm|um|also|and|but|plus|then|ps|p\.s\.|"
    r"btw|fyi|update|edit|question|quick\s+question|problem|issue|one\s+more\s+thing|by\s+the\s+way|while\s+i\s+have\s+you|"
    r"thanks|thank\s+you|sorry|please)\s*(?:[,!.:]+|-(?=\s))"
    r"|(?:oh,?\s+and\s+)?(?:(?:strange|weird|annoying|quick|big|small|serious|odd|new|another|one\s+more|a\s+second|a\s+different|different|"
    r"unrelated|separate)\s+)?(?:issue|problem|question|bug|thing)\s*[:-]"
    r"|(?:and|but|so|also|then|plus|please|kindly|just|basically|honestly|literally|suddenly)\s+)+",
    re.I,
)
_TRAIL = re.compile(
    r"(?:[\s,;:-]+(?:thanks?(?:\s+(?:you|again))?(?:\s+(?:so|very)\s+much)?(?:\s+in\s+advance)?|tia|please(?:\s+(?:advise|help))?|"
    r"any\s+(?:ideas|help|suggestions|thoughts)|cheers|regards|lol|haha|:\)|:\()\W*)+$",
    re.I,
)
_PARENTHETICAL_NAME = re.compile(r"\((?:name'?s|i'?m|this\s+is|it'?s)\s+[^)]{1,30}\)", re.I)
_CLAUSE_CUT = re.compile(r",\s|;\s|\s-{1,2}\s|:\s|\s(?:and|but|because|so|which|while|although|though)\s", re.I)


def _display(text: str) -> str:
    """A turn's text for nodes and sentence splitting: HTML entities decoded, URLs, @mentions and tweet
    signatures removed, runs of spaces collapsed (line breaks kept). Redaction placeholders stay."""
    t = html.unescape(text or "").replace("’", "'").replace("‘", "'")
    t = _URL.sub(" ", t)
    t = _SIGNATURE.sub(" ", t)
    t = _MENTION.sub(" ", t)
    t = _SPACES.sub(" ", t)
    t = re.sub(r" *\n *", "\n", t)
    return t.strip()


def _no_symbols(text: str) -> str:
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith(("So", "Cn", "Co", "Cs")))


def _mostly_upper(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 6 and sum(c.isupper() for c in letters) / len(letters) > 0.7


def _shorten(text: str, max_words: int = MAX_QUERY_WORDS) -> str:
    words = text.split()
    if len(words) <= max_words:
        return text
    head = " ".join(words[:max_words])
    cuts = [m.start() for m in _CLAUSE_CUT.finditer(head) if len(head[: m.start()].split()) >= max(6, max_words // 3)]
    return head[: cuts[-1]] if cuts else head


def _query(text: str, max_words: int = MAX_QUERY_WORDS) -> str:
    """A sentence as a query: no placeholders, symbols, greetings or thanks around it; all-caps text
    lowered (codes kept); at most `max_words` words, cut at a clause boundary."""
    t = re.sub(r"(?:\s+(?:at|to|on|via|is|are|by|from|with|me|us))?\s*:?\s*(?:" + _PLACEHOLDER.pattern + ")", " ", text or "")
    t = _PARENTHETICAL_NAME.sub(" ", t)
    t = _no_symbols(t)
    t = re.sub(r"\((?:\s|[,.;:])*\)", " ", t)  # "( )" left by a removed placeholder
    t = re.sub(r"\s+", " ", t).strip()
    t = re.sub(r"\s+([,.;:!?])", r"\1", t)
    t = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", t)
    for _ in range(3):
        t = _LEAD.sub("", t).strip()
        t = _TRAIL.sub("", t).strip()
        t = _drop_filler_clauses(t)
    if _mostly_upper(t):
        t = " ".join(w if _DIGIT.search(w) else w.lower() for w in t.split())
    t = _shorten(t, max_words)
    t = t.strip(" ,;:-")
    t = re.sub(r"[.!]+$", "", t).strip()
    t = re.sub(r"\?+$", "?", t)
    if t and t[0].islower() and not re.match(r"[a-z]+[A-Z0-9]", t):  # "iPhone" stays
        t = t[0].upper() + t[1:]
    return t


_CLAUSE_SPLIT = re.compile(r"(?<=[,;:!])\s+|\s+-{1,2}\s+|(?<=\.)\s+")


def _drop_filler_clauses(text: str) -> str:
    """Leading and trailing clauses that are only pleasantries ("Sorry to keep you waiting, your seat
    is 5D" -> "your seat is 5D")."""
    if not re.search(r"[,;:!.]\s|\s-", text):
        return text
    parts = [p for p in _CLAUSE_SPLIT.split(text) if p]
    if len(parts) < 2:
        return text
    i, j = 0, len(parts)
    while i < j - 1 and _is_filler(parts[i]):
        i += 1
    while j - 1 > i and _is_filler(parts[j - 1]):
        j -= 1
    if (i, j) == (0, len(parts)):
        return text
    out = " ".join(parts[i:j]).strip(" ,;:-")
    return out[0].upper() + out[1:] if out and text[:1].isupper() else out


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’._+-]*[A-Za-z0-9]|[A-Za-z0-9]")
_STOP = frozenset(
    """a an the and or nor but if then so of to in on at by for with from as into onto about over under up down out off
    is am are was were be been being do does did doing have has had having will would can could shall should may might
    must i me my mine myself we us our ours you your yours he him his she her it its they them their this that these
    those there here what which who whom whose when where why how all any some each every both either neither just
    also only very really still already again too please thanks thank hi hello hey ok okay yeah yes sure now than
    because while since until after before during get got gets getting one let lets i'm i've i'd i'll it's that's
    there's let's you're we're they're im ive dont pls plz thx u ur hai much many more most lot lots bit kind sort
    way thing things something anything everything someone anyone everyone like well oh ah um hmm guys team
    suddenly basically honestly literally usually always sometimes maybe perhaps probably actually currently
    today yesterday tomorrow tonight time times thankyou dude bro mate ideas idea above seems seem think feel guess
    wow lol hmm says say""".split()
)
_NEGATION = frozenset(
    "not no never cannot can't cant won't wont don't doesn't didn't isn't aren't wasn't weren't haven't hasn't couldn't "
    "shouldn't wouldn't nothing nobody unable".replace("'", "'").split()
)
_GENERIC = frozenset(
    """need want know help fix work works working worked use using used make made go going see try tried check
    change changed set get give take call tell ask asked say said look find thing issue problem question help
    please thanks issue error""".split()
)


def _tokens(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text or "")]


def _content(text: str) -> list[str]:
    """Content words: not stop words, not negations, not bare short numbers."""
    out = []
    for w in _tokens(text):
        if w in _STOP or w in _NEGATION:
            continue
        if w.isdigit() and len(w) <= 2:
            continue
        out.append(w)
    return out


def _content_set(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _content(text))


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf) and not _DIGIT.search(w):
            return w[: -len(suf)]
    return w


def _keyphrase(text: str, drop: frozenset[str] = frozenset(), max_words: int = 10) -> str:
    """The content words of `text` in order (negations kept), as a short keyword query."""
    out: list[str] = []
    for raw in _WORD.findall(_PLACEHOLDER.sub(" ", text or "")):
        w = raw.lower().replace("’", "'")
        if w in drop or (w in _STOP and w not in _NEGATION):
            continue
        if not out and w in _NEGATION and w not in ("no", "never", "cannot", "unable"):
            continue
        out.append(raw if re.search(r"[A-Z].*\d|\d.*[A-Z]|^[A-Z]", raw) else w)
        if len(out) >= max_words:
            break
    return " ".join(out)


# ---------------------------------------------------------------------------------------------------
# cues (general English)

_FILLER_PARTS = re.compile(
    r"\b(?:hi|hello|hey|hai|hiya|greetings|good\s+(?:morning|afternoon|evening|day)|dear\s+\w+|to\s+whom\s+it\s+may\s+concern|"
    r"thanks?(?:\s+you)?(?:\s+(?:so|very)\s+much)?(?:\s+(?:again|a\s+lot|in\s+advance))?"
    r"(?:\s+for\s+(?:contacting|reaching\s+out|reaching|getting\s+in\s+touch|your\s+(?:patience|help|time|understanding|message|"
    r"business|reply|response|assistance|support|cooperation|feedback|loyalty|confirmation|details|info(?:rmation)?)|waiting|"
    r"holding|the\s+(?:help|info(?:rmation)?|details|update|reply|quick\s+\w+|assistance|support)|letting\s+(?:me|us)\s+know|"
    r"choosing\s+\w+|(?:all\s+)?(?:the|your)\s+(?:help|assistance)|that|this|everything|understanding|trying(?:\s+to\s+help)?|"
    r"checking|confirming|asking|sharing\s+(?:this|that)?|(?:the|this|that)?\s*info))?|much\s+appreciated|appreciate\s+(?:it|that|your\s+\w+)|"
    r"(?:have|enjoy)\s+an?\s+(?:great|nice|good|wonderful|safe|lovely|fantastic|pleasant|amazing|blessed)\s+(?:\w+\s+)?"
    r"(?:day|night|evening|weekend|flight|trip|one|time|afternoon|morning|holiday|week)(?:\s+ahead)?|"
    r"you'?re\s+(?:very\s+|most\s+)?welcome|you\s+are\s+welcome|(?:it'?s\s+)?(?:my|our)\s+pleasure|no\s+problem(?:\s+at\s+all)?|"
    r"not\s+a\s+problem|no\s+worries(?:\s+at\s+all)?|(?:happy|glad)\s+to\s+(?:help|assist|hear(?:\s+(?:that|it))?)|"
    r"glad\s+(?:i|we)\s+could\s+(?:help|assist)|(?:it\s+)?(?:was\s+)?(?:great|nice|a\s+pleasure)\s+(?:assisting|helping|talking\s+to|"
    r"chatting\s+with)\s+you|(?:is|will|would)\s+there\s+be\s+anything\s+else|(?:is\s+there\s+)?anything\s+else(?:\s+(?:that\s+)?"
    r"(?:i|we)\s+(?:can|could|may|might)\s+(?:help|assist|do)(?:\s+you)?(?:\s+with)?(?:\s+today)?)?|"
    r"(?:how|what)\s+(?:can|may|could)\s+i\s+(?:help|assist|do\s+for)\s*(?:you)?(?:\s+(?:today|with))?|"
    r"(?:what|how)\s+can\s+(?:i|we)\s+do\s+for\s+you(?:\s+today)?|"
    r"(?:one|a)\s+(?:moment|minute|second|sec)(?:\s+please)?|please\s+(?:hold|wait|bear\s+with\s+me)(?:\s+(?:on|a\s+moment))?|"
    r"(?:please\s+)?allow\s+me\s+(?:a\s+)?(?:moment|minute|second|some\s+time)|bear\s+with\s+(?:me|us)|"
    r"let\s+me\s+(?:check|look|see|verify|pull\s+up|have\s+a\s+look|take\s+a\s+look|look\s+into)(?:\s+(?:that|this|it|into\s+(?:it|this|that)))?(?:\s+for\s+you)?|"
    r"give\s+me\s+a\s+(?:moment|minute|second|sec)|(?:sorry|apologies)\s+(?:to\s+keep\s+you\s+waiting|for\s+(?:the|your)\s+(?:wait|delay|waiting))|"
    r"sorry\s+(?:to\s+hear(?:\s+(?:that|about\s+(?:that|this|it)))?|about\s+(?:that|this)|for\s+(?:the|any|this|that)\s+(?:inconvenience|trouble|hassle|difficulty|frustration|confusion))|"
    r"(?:i\s+)?apologi[sz]e\s+for\s+(?:the|any|this)\s+(?:inconvenience|trouble|hassle|delay|difficulty|frustration|confusion)|"
    r"(?:we\s+)?(?:are|'re)\s+(?:always\s+)?(?:here|happy)\s+to\s+help|(?:i'?ll|i\s+will|i'?d|we'?d|we'?ll)\s+be\s+(?:happy|glad)\s+to\s+(?:help|assist)(?:\s+you)?(?:\s+with\s+that)?|"
    r"(?:my\s+name\s+is|this\s+is)\s+\S+(?:\s+(?:from|with|here))?|you'?ve\s+(?:reached|been\s+connected\s+to)\s+[\w\s]{0,30}|welcome\s+to\s+[\w\s]{0,30}|"
    r"(?:please\s+)?(?:read|see)\s+(?:the\s+)?above|take\s+care|good\s*bye|bye|dear|"
    r"(?:ok(?:ay)?,?\s+)?i\s+think\s+i\s+(?:know|see|understand)\s+what'?s\s+(?:going\s+on|happening|wrong)|"
    r"(?:it'?s|this\s+is)\s+(?:fairly\s+|pretty\s+|quite\s+|very\s+)?common(?:\s+with\s+this\s+(?:setup|model|device|plan))?|"
    r"we\s+see\s+this\s+(?:a\s+lot|often|quite\s+often)|i'?ve\s+seen\s+this\s+(?:a\s+few\s+times|quite\s+a\s+bit|a\s+lot|before)(?:\s+lately)?|"
    r"annoying,?\s+i\s+know|that'?s\s+the\s+whole\s+story|that\s+explains\s+it|that'?s\s+why\s+it\s+(?:started|happens|happened)|"
    r"luckily,?\s+it'?s\s+(?:easy|simple|quick)\s+to\s+fix|it'?s\s+not\s+something\s+you\s+did|(?:i\s+)?hope\s+(?:this|that)\s+helps|"
    r"thanks?\s+(?:you\s+)?for\s+the\s+detailed\s+(?:post|message|description|report|info(?:rmation)?)|(?:thank\s+you,?\s+|thanks,?\s+)?that\s+helps|"
    r"totally\s+understand|take\s+your\s+time|no\s+(?:rush|hurry)|ha,?\s+i\s+hear\s+that\s+a\s+lot|"
    r"(?:this|it)\s+(?:looks|seems|sounds)\s+like\s+a\s+known\s+(?:issue|problem|bug)|(?:talk|speak)\s+(?:to\s+you\s+)?soon|"
    r"\S+\s+here\s+from\s+[\w\s&]{1,30}|let'?s\s+(?:investigate|look\s+into|figure\s+out|sort\s+out|work\s+on)\s+(?:this|it)(?:\s+out)?(?:\s+together)?|see\s+you|cheers|(?:best|kind|warm|warmest)\s+regards|regards|sincerely|"
    r"(?:i\s+)?understand(?:ed)?|i\s+see|got\s+it|sure(?:\s+thing)?|surely|certainly|of\s+course|absolutely|perfect|great|awesome|excellent|"
    r"(?:a|my|our|it'?s\s+a|it\s+was\s+a)\s+pleasure(?:\s+to\s+(?:help|assist|serve)(?:\s+you)?)?|sorry\s+to\s+see\s+(?:this|that)|"
    r"(?:apologies|sorry)(?:\s+again)?\s+for\s+(?:the|any|this|all\s+the)\s+(?:difficulty|difficulties|trouble|inconvenience|hassle|frustration|confusion|delay|wait)(?:\s+(?:you'?ve|you\s+have)\s+(?:had|experienced|faced))?|"
    r"i\s+(?:understand|appreciate|know|can\s+see)\s+(?:this|that|how|it)\s+(?:is|must\s+be|can\s+be|has\s+been)\s+(?:\w+\s+)?(?:frustrating|annoying|inconvenient|difficult|stressful|upsetting)|"
    r"(?:thanks?|thank\s+you)\s+(?:to\s+you\s+)?(?:too|as\s+well)(?:\s+for\s+\w+)?|appreciate\s+your\s+\w+|(?:and\s+)?get\s+back\s+to\s+you|"
    r"wonderful|fantastic|alright|okay|ok|yes|yeah|yep|no|nope|nothing\s+else|that'?s\s+(?:all|it)(?:\s+for\s+(?:now|today))?|"
    r"(?:please\s+)?(?:do\s+)?keep\s+(?:us|me)\s+posted|(?:for|if\s+you\s+have|with)\s+any\s+(?:further|other|more)\s+(?:concerns?|questions?|issues?|queries|query)|"
    r"(?:please\s+)?(?:do\s+)?let\s+(?:us|me)\s+know\s+if\s+(?:you\s+(?:have|need)|there'?s)\s+anything(?:\s+else)?|"
    r"(?:feel\s+free\s+to\s+)?(?:reach\s+out|contact\s+us)(?:\s+(?:again|anytime|any\s+time))?(?:\s+if\s+you\s+(?:have|need)\s+(?:any(?:thing)?|further)\s*\w*)?|"
    r"(?:i|we)\s+(?:can|could|will|'ll)\s+(?:definitely\s+|certainly\s+|surely\s+)?help\s+(?:you\s+)?(?:out\s+)?(?:with\s+(?:that|this))?|"
    r"(?:i'?m|i\s+am)\s+(?:happy|glad)\s+to\s+(?:help|assist)|(?:i'?ll|i\s+will)\s+be\s+able\s+to\s+(?:help|do\s+that)(?:\s+for\s+you)?|please|kindly|team|support|guys|folks|everyone|all)\b",
    re.I,
)
_HOLD = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|alright|sure|great|perfect|thanks?(?:\s+you)?)\W+)*(?:(?:please\s+)?allow\s+me|(?:one|a)\s+(?:moment|minute|second|sec)|"
    r"(?:please\s+)?(?:hold|wait)\s+(?:on|a\s+(?:moment|minute|second|sec)|while)|let\s+me\s+(?:check|look|see|verify|pull|have\s+a\s+look|take\s+a\s+look|confirm)|"
    r"give\s+me\s+a\s+(?:moment|minute|second|sec)|bear\s+with\s+(?:me|us)|(?:i'?ll|i\s+will|i\s+am\s+going\s+to)\s+(?:check|look\s+into|verify)\s+(?:that|this|it|the\s+details))",
    re.I,
)

_SHIFT = re.compile(
    r"\b(?:one\s+more\s+(?:thing|question|issue|problem)|another\s+(?:question|issue|problem|thing|matter|topic)|"
    r"(?:a\s+)?(?:separate|different|unrelated|second|other)\s+(?:issue|question|problem|topic|matter|note|thing)|unrelated|"
    r"while\s+i\s+(?:have|got)\s+you|on\s+(?:a|an)\s+(?:different|other|unrelated|separate|another)\s+note|"
    r"(?:i\s+)?(?:also|too)\s+(?:have|had|need|got)\s+(?:a|another)\s+(?:question|issue|problem)|(?:a|my)\s+new\s+(?:question|issue|problem))",
    re.I,
)
_WEAK_SHIFT = re.compile(r"\b(?:by\s+the\s+way|btw|something\s+else)\b|^\W*(?:also\s*,|oh,?\s+and\b|and\s+also\b)", re.I)
_FAILED = re.compile(
    r"\b(?:no\s+(?:change|luck|difference|improvement|dice)|(?:didn'?t|did\s+not|doesn'?t|does\s+not)\s+(?:work|help|change|fix|do\s+anything)|"
    r"same\s+(?:thing|problem|issue|result|error|here)|still\s+(?:the\s+same|not|broken|happening|doesn'?t|won'?t|no\b|nothing)|"
    r"nothing\s+(?:changed|happened|worked|helped))\b",
    re.I,
)
_VALUE_CORRECTION = re.compile(
    r"(?:\b[\w.-]*\d[\w.-]*|\b[A-Z][\w.-]+(?:\s+[\w.-]+){0,3}),?\s+not\s+(?:the\s+|a\s+|an\s+)?(?:[\w.-]*\d|[A-Z])|"
    r"\b(?:checked\s+again|double[- ]checked|i\s+mis(?:read|typed|spoke)|let\s+me\s+correct)\b"
)
_IDENTITY = re.compile(
    r"\b(?:(?:account|order|booking|confirmation|reference|ticket|case|member(?:ship)?|customer|tracking|phone|mobile)\s*(?:number|no\.?|id|#)|"
    r"(?:e-?mail|phone|name|username|user\s+name)(?:\s+address)?\s+is|my\s+name)\b",
    re.I,
)
_ABANDON = re.compile(r"\b(?:never\s*mind|forget\s+(?:it|that|about\s+(?:it|that))|scratch\s+that|doesn'?t\s+matter)\b", re.I)
_NARROW = re.compile(
    r"\b(?:to\s+be\s+(?:more\s+)?(?:precise|specific|exact|clear)|more\s+specifically|specifically,|in\s+particular|"
    r"to\s+clarify|just\s+to\s+clarify|i\s+should\s+(?:have\s+)?(?:mention(?:ed)?|add(?:ed)?|say|said|clarif(?:y|ied))|"
    r"forgot\s+to\s+(?:mention|say|add)|i\s+(?:meant|mean)\b|what\s+i\s+mean(?:t)?\s+(?:is|was)|"
    r"(?:it|this)\s+only\s+(?:happens|occurs|fails|breaks|crashes)|only\s+(?:happens|occurs)\s+(?:when|if|on|with|after)|"
    r"sorry,?\s+(?:it'?s|it\s+is|i\s+meant|that\s+should\s+be|not)|correction\b|let\s+me\s+rephrase|in\s+other\s+words)",
    re.I,
)
_CLARIFY = re.compile(
    r"\b(?:how\s+(?:do|can|would|should|will|could|exactly)\s+(?:i|we|you)\b|how\s+to\b|how\s+exactly|"
    r"where\s+(?:is|are|do|does|can|could|would|should|exactly|in|on|would\s+i)\b|where'?s\b|"
    r"what\s+do\s+you\s+mean|what\s+does\s+(?:that|this|it|\S+(?:\s+\S+)?)\s+mean|what\s+(?:is|are)\s+(?:that|this|those|these|it)\b|"
    r"what'?s\s+(?:that|this)\b|(?:can|could|would)\s+you\s+(?:please\s+)?(?:explain|elaborate|clarify|show|walk\s+me|guide\s+me|"
    r"tell\s+me\s+(?:how|where|what|more)|be\s+more\s+specific|send\s+(?:me\s+)?(?:the\s+)?(?:link|steps|instructions))|"
    r"which\s+(?:one|ones|option|setting|settings|button|menu|tab|file|folder|version|page|link|screen|app|cable|port)\b|"
    r"what\s+(?:next|now|then|else\s+should)\b|then\s+what|(?:and\s+)?(?:what|how)\s+(?:about|after)\s+that|^\W*and\s+then\b|"
    r"what\s+if\b|what\s+about\b|does\s+(?:that|this|it)\s+(?:mean|apply|work|include|cover|also|still)|"
    r"(?:is|are|would|will)\s+(?:that|this|it|those|these)\s+(?:the\s+same|also|still|apply|true|for|included|covered|enough)|"
    r"(?:does|do|will|would)\s+(?:the\s+)?same\s+\w+\s+appl|same\s+(?:policy|rule|thing|for)\b|"
    r"i\s+(?:don'?t|do\s+not|can'?t|cannot|couldn'?t)\s+(?:see|find|understand|locate|follow)\b|(?:not|n't)\s+sure\s+(?:how|where|what|which)\b|"
    r"step\s+by\s+step|(?:give|send|provide|tell)\s+me\s+more\s+details?|more\s+details?\s+(?:on|about)|in\s+more\s+detail|^\W*(?:how|where|why|meaning|huh|sorry)\W*\?\s*$)",
    re.I,
)
_FOLLOW_UP = re.compile(r"^\W*(?:and|so|but|also|what\s+about|how\s+about|and\s+what\s+about|what\s+if|same\s+for|and\s+for|or)\b", re.I)
_ANAPHOR = re.compile(r"\b(?:that|this|it|those|these|there|them|one|same|the\s+(?:step|steps|link|setting|option|menu|page|button|file|instructions?))\b", re.I)
_CONTINUE = re.compile(
    r"^\W*(?:next|after\s+that|afterwards|then|once\s+(?:that'?s|that\s+is|it'?s|you'?ve|you\s+have)\s+(?:done|finished|complete[d]?|\w+ed)|"
    r"now\s+(?:that|you|go|open|click|tap|select|try)|(?:the\s+)?next\s+step|step\s+\d+|also|additionally|in\s+addition|"
    r"another\s+thing(?:\s+to\s+try)?|(?:if|in\s+case)\s+(?:that|it|this)\s+(?:doesn'?t|does\s+not|didn'?t|did\s+not|still|won'?t)|"
    r"if\s+(?:the\s+)?(?:problem|issue|error)\s+(?:persists|continues|remains)|to\s+do\s+(?:that|this|so)|you\s+can\s+(?:find|do)\s+(?:that|this|it))\b",
    re.I,
)
_QUESTION_START = re.compile(
    r"^\W*(?:how|what|where|when|why|which|who|whom|whose|can|could|would|will|is|are|am|do|does|did|should|shall|may|might|"
    r"have|has|was|were|any\s+(?:idea|way|chance|update))\b(?!\s*,)",
    re.I,
)
_MID_QUESTION = re.compile(
    r"(?:^|[,;]\s*|\b(?:so|then|but|and)\s+)(?:does|do|is|are|can|will|would|should|could|did)\s+(?:it|this|that|they|i|you|these|those|the\s+\w+)\s+\w+",
    re.I,
)
_ATTEMPT = re.compile(
    r"\b(?:(?:i|we)(?:'ve|\s+have|\s+had)?\s+(?:already\s+|also\s+|even\s+)?(?:tried|restarted|rebooted|reinstalled|re-?installed|reset|cleared|"
    r"updated|checked|uninstalled|disabled|enabled|unplugged|replugged|replaced|changed|deleted|removed|power[- ]cycled|"
    r"turned\s+(?:it\s+)?(?:off|on)|re-?paired|un-?paired|logged\s+(?:out|in)|signed\s+(?:out|in)|followed|did\s+(?:that|this|all))|"
    r"(?:what|things?)\s+(?:i|we)(?:'ve|\s+have)?\s+(?:already\s+)?tried|already\s+(?:tried|did|done)|(?:tried|did|done)\s+(?:that|this|it)\s+already|"
    r"^\W*(?:already\s+)?tried\s+(?:restart|reboot|reinstall|re-install|reset|clear|updat|uninstall|disabl|enabl|unplug|replac|chang|delet|remov|turn|power|logg|sign|switch|using|another|a\s+different|everything|all))",
    re.I,
)
_AGENT_ASKS = re.compile(
    r"\b(?:(?:could|can|would|will)\s+you\s+(?:please\s+)?(?:tell|give|provide|share|confirm|send|let\s+(?:me|us)\s+know|verify|check|"
    r"describe|clarify|specify|explain)|may\s+i\s+(?:please\s+)?(?:have|know|ask|get|see|confirm)|"
    r"(?:please\s+)?(?:provide|share|send|confirm|tell\s+(?:me|us)|let\s+(?:me|us)\s+know)\b|what(?:'s|\s+is|\s+are|\s+was)\s+(?:your|the)|"
    r"do\s+you\s+(?:have|know|remember|see|get)|are\s+you\s+(?:using|on|seeing|getting|able)|is\s+(?:this|it|that)\s+(?:on|with|for|happening|the)|"
    r"which\s+\w+|when\s+did|how\s+long|since\s+when|did\s+(?:this|it|you)|have\s+you\s+(?:received|noticed|seen|checked))",
    re.I,
)
_SUGGEST_Q = re.compile(
    r"^\W*(?:(?:have|did)\s+you\s+(?:already\s+)?tried|(?:can|could|would)\s+you\s+(?:please\s+)?(?:try|attempt)|"
    r"(?:why\s+not|how\s+about|what\s+about)\s+(?:try(?:ing)?\s+)?|have\s+you\s+(?:considered|thought\s+about))\s+",
    re.I,
)
_TAG_QUESTION = re.compile(
    r",\s*(?:is\s+that\s+(?:ok(?:ay)?|alright|fine|correct|right|good)(?:\s+(?:for|with)\s+you)?|would\s+(?:that|you)\s+\w+(?:\s+\w+){0,4}|does\s+that\s+\w+(?:\s+\w+){0,3}|"
    r"right|ok(?:ay)?|correct|should\s+i\s+\w+(?:\s+\w+){0,6}|shall\s+i\s+\w+(?:\s+\w+){0,6}|can\s+i\s+\w+(?:\s+\w+){0,6})\s*\?\s*$",
    re.I,
)
_AGENT_OUTCOME = re.compile(
    r"\b(?:(?:has|have)\s+been\s+(?:successfully\s+)?\w+ed|(?:i|we)(?:'ve|\s+have)\s+(?:now\s+|just\s+|already\s+|successfully\s+)?\w+ed|"
    r"(?:i|we)\s+(?:can|will|'ll|could|am\s+going\s+to|are\s+going\s+to)\s+(?:\w+\s+)?(?:escalate|refund|replace|send|ship|issue|credit|"
    r"cancel|reset|waive|rebook|extend|transfer|forward|report|raise|open)|"
    r"let\s+me\s+(?:pass|escalate|forward|transfer|refer|raise|report)|(?:pass|passing|escalat\w*|forward\w*|transfer\w*|refer\w*)\s+(?:this|it|you|your\s+\w+)\s+(?:on\s+)?to|"
    r"(?:unfortunately|i'?m\s+afraid)|(?:we|i)\s+(?:can'?t|cannot|are\s+unable|won'?t\s+be\s+able|are\s+not\s+able)|not\s+eligible|"
    r"(?:is|are)\s+(?:not\s+)?(?:eligible|covered|included|available|valid))\b",
    re.I,
)


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


def _is_filler(text: str) -> bool:
    """Nothing but greetings, thanks, sign-offs, acknowledgements and hold messages (a leftover word,
    such as a name after "Sorry to hear that", does not count)."""
    plain = _PLACEHOLDER.sub(" ", text)
    if _HOLD.search(plain) and not _DIGIT.search(plain) and len(plain.split()) <= 18 and signals.instruction_score(plain) < 0.5:
        return True
    pieces, matched, pos = [], 0, 0
    for m in _FILLER_PARTS.finditer(plain):
        pieces.append(plain[pos : m.start()])
        matched += len(m.group().split())
        pos = m.end()
    if not matched:
        return not _content(plain)
    pieces.append(plain[pos:])
    rest = " ".join(pieces)
    rest = re.sub(r"\b(?:you|me|us|for|with|that|this|it|so|very|much|a|the|and|to|today|now|again|there|here|too|as|well|i|we|in|on|here|sir|madam|mr|mrs|ms)\b", " ", rest, flags=re.I)
    left = len(_content(rest))
    return left == 0 or (left == 1 and matched >= 3 and not _DIGIT.search(rest))


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
    s.question = stripped.endswith("?") or bool(_QUESTION_START.match(q) and len(q.split()) >= 3) or bool(_MID_QUESTION.search(q) and role == "user")
    s.polarity = signals.confirmation(text, role)[0]
    if role == "user":
        if s.polarity == 0 and _FAILED.search(text):
            s.polarity = -1
        s.problem = signals.problem_score(text)
        if s.problem < 0.5 and (_NEG_OR_PROBLEM.search(text) or _NEED.search(text)) and len(_content(text)) >= 2:
            s.problem = 0.5  # a malfunction or a need our own cues see, whatever the shared score says
        s.correction = (signals.correction_cue(text) or bool(_VALUE_CORRECTION.search(text))) and not re.match(r"^\W*(?:actually|sorry),?\s+(?:it|that|this)\s+(?:worked|works|fixed|helped|did)", text, re.I)
        s.narrow = bool(_NARROW.search(text))
        s.attempt = bool(_ATTEMPT.search(text)) and s.polarity <= 0
        s.shift = 2 if _SHIFT.search(text) else 1 if _WEAK_SHIFT.search(text) else 0
        s.clarify = bool(_CLARIFY.search(text))
        s.question = s.question or (s.clarify and (s.content >= 2 or stripped.endswith("?")))
        s.abandon = bool(_ABANDON.search(text))
    else:
        core = _agent_core(text)
        s.instr = max(signals.instruction_score(text), signals.instruction_score(core) if core != text else 0.0)
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
        c = signals.cause_clause(text)
        s.cause = c[0] if c else None
        s.outcome = bool(_AGENT_OUTCOME.search(text)) or s.polarity != 0
        asks = stripped.endswith("?") and not _TAG_QUESTION.search(stripped)
        polite = bool(re.search(r"\b(?:please|may\s+i|could\s+you|can\s+you|would\s+you|kindly)\b", text, re.I))
        s.request = s.instr < 0.5 and (asks or (polite and bool(signals.requested_slots(text))))
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
    analysis: Any  # signals.Analysis


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
    prev_role: str | None = None
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
            prev_role = "agent"
            continue
        subst = [s for s in sents if not s.filler and (s.content >= 1 or s.clarify)]
        if cur is None:
            if any(s.issue_like or s.content >= 3 for s in subst):
                cur = _Unit(start=ti, user_turns=[ti], end=ti, opening=[ti], cue="first")
                units.append(cur)
            prev_role = "user"
            continue
        answered = any(_substantive_agent(by_turn.get(a, [])) for a in cur.agent_turns)
        if not answered:  # the agent has not really answered yet: the user goes on
            cur.user_turns.append(ti)
            cur.end = ti
            if cur.opening and cur.opening[-1] == ti - 1:
                cur.opening.append(ti)
            prev_role = "user"
            continue
        cue = _opens_unit(subst, agent_asked, agent_closed, _next_agent_substantive(turns, by_turn, ti))
        if cue is not None:
            cur = _Unit(start=ti, user_turns=[ti], end=ti, opening=[ti], cue=cue)
            units.append(cur)
        else:
            cur.user_turns.append(ti)
            cur.end = ti
        prev_role = "user"
    # contiguous ranges: a unit runs until the turn before the next one starts
    for a, b in zip(units, units[1:]):
        a.end = b.start - 1
    if units:
        units[-1].end = n - 1
    return units


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

_CACHE: "OrderedDict[str, _Prepared]" = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 256


def _key(conv: ConversationInput) -> str:
    h = hashlib.sha256(conv.dialogue_id.encode("utf-8", "surrogatepass"))
    for t in conv.turns:
        h.update(b"\x00" + t.role.encode() + b"\x01" + (t.text or "").encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _prepare(conv: ConversationInput) -> _Prepared:
    key = _key(conv)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    turns = [(t.role, _display(t.text)) for t in conv.turns]
    analysis = signals.analyze(turns)
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
    with _CACHE_LOCK:
        _CACHE[key] = prepared
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return prepared


# ---------------------------------------------------------------------------------------------------
# dialogue graph


def _join(parts: list[str], limit: int = MAX_NODE_CHARS) -> str:
    text = " ".join(p for p in parts if p).strip()
    text = re.sub(r"\s+", " ", text)
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


def _entities_in(p: _Prepared, turns: set[int]) -> set[str]:
    out = set()
    for f in p.analysis.findings:
        if f.usable and f.turn in turns and f.signal in _ENTITY_SIGNALS:
            out.add(f.value.lower())
    return out


def _details(text: str) -> set[str]:
    """Tokens that carry a specific detail: with a digit, or capitalized not at the start."""
    out = set()
    for i, w in enumerate(_WORD.findall(_PLACEHOLDER.sub(" ", text))):
        if _DIGIT.search(w) or (i > 0 and w[0].isupper() and w.lower() not in _STOP and len(w) > 1):
            out.add(w.lower())
    return out


EMBED_CHARS = 300  # the start of a unit's issue or answer is what its embedding is made of


class _Sims:
    """Cosine similarities between units' issues (and a unit's issue and the previous answer), from
    one embedding batch holding only the texts some edge rule will look at."""

    def __init__(self, issue_vecs: dict[int, np.ndarray], answer_vecs: dict[int, np.ndarray]):
        self.iv, self.av = issue_vecs, answer_vecs

    @classmethod
    def build(cls, p: _Prepared, units: list[_Unit], issues: list[str], answers: list[str], embedder: Any | None) -> "_Sims":
        ii, aa = cls.wanted(p, units, answers)
        if not ii and not aa:
            return cls({}, {})
        vecs = _embed(cls.texts(ii, aa, issues, answers), embedder)
        return cls(dict(zip(ii, vecs[: len(ii)])), dict(zip(aa, vecs[len(ii) :])))

    @staticmethod
    def texts(ii: list[int], aa: list[int], issues: list[str], answers: list[str]) -> list[str]:
        return [issues[k][:EMBED_CHARS] for k in ii] + [answers[k][:EMBED_CHARS] for k in aa]

    @staticmethod
    def wanted(p: _Prepared, units: list[_Unit], answers: list[str]) -> tuple[list[int], list[int]]:
        """(units whose issue, units whose answer) some edge rule will compare."""
        want_i: set[int] = set()
        want_a: set[int] = set()
        for j in range(1, len(units)):
            cue = units[j].cue
            if cue in ("shift", "abandon"):
                continue
            if cue in ("correction", "narrow"):
                if j >= 2:
                    want_i.update(range(j + 1))  # which earlier issue is corrected
                continue
            want_i.update(range(j + 1))
            opening = [s for ti in units[j].opening for s in p.by_turn.get(ti, [])]
            if answers[j - 1] and any(s.clarify for s in opening):
                want_a.add(j - 1)
        return sorted(want_i), sorted(want_a)

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
    return None


def _quote(text: str, n: int = 60) -> str:
    t = re.sub(r"\s+", " ", _PLACEHOLDER.sub("…", text)).strip()
    return '"' + (t if len(t) <= n else t[: n - 1].rsplit(" ", 1)[0] + " …") + '"'


def _embed(texts: list[str], embedder: Any | None) -> np.ndarray:
    if embedder is None:
        from sarag_assets.core.embedding import default_embedder

        embedder = default_embedder()
    return np.asarray(embedder.encode(texts), dtype=np.float32)


def dialogue_graph_texts(conv: ConversationInput) -> list[str]:
    """The texts `dialogue_graph(conv)` will encode (none for most conversations), without encoding
    them: a batch's texts can then be encoded in one call and served from the embedder's cache."""
    p = _prepare(conv)
    units = p.units or _units_fallback(p)
    issues = [_unit_issue(p, u) for u in units]
    answers = [_unit_answer(p, u) for u in units]
    ii, aa = _Sims.wanted(p, units, answers)
    return _Sims.texts(ii, aa, issues, answers)


def dialogue_graph(conv: ConversationInput, *, backend_name: str, embedder: Any | None = None) -> DialogueGraph:
    """The conversation as issue-solution units (nodes) and refines/elaborates edges (see the module
    docstring). `embedder` (anything with `encode(list[str]) -> array` of L2-normalized rows) defaults
    to the packaged model; it is called once, and only when there are two or more units."""
    p = _prepare(conv)
    units = p.units or _units_fallback(p)
    issues = [_unit_issue(p, u) for u in units]
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


# ---------------------------------------------------------------------------------------------------
# pseudo-documents

_NOT_PRODUCT = ("plan", "identifier", "os", "browser", "answer", "key_value", "error_code", "error_message", "date", "amount")
_ENTITY_SIGNALS = ("error_code", "error_message", "version", "os", "browser", "model", "plan", "product")


class _Picker:
    """Collects distinct queries: a query whose content words are (nearly) covered by one already
    taken is a duplicate."""

    def __init__(self, limit: int):
        self.limit = limit
        self.items: list[str] = []
        self._sets: list[frozenset[str]] = []

    def add(self, text: str | None, *, min_content: int = 2, structured: bool = False) -> bool:
        """Take `text` unless it is empty, has a placeholder, says too little or repeats a query
        already taken; a `structured` query ("<code> on <product> <version>") may reuse the words
        of a sentence taken before, but not repeat another query."""
        if not text or len(self.items) >= self.limit:
            return False
        text = text.strip()
        if _PLACEHOLDER.search(text) or "[" in text and re.search(r"\[[A-Z_]+\]", text):
            return False
        cs = _content_set(text)
        if len(cs) < min_content:
            return False
        for other in self._sets:
            inter = len(cs & other)
            new = len(cs) - inter
            if structured and cs != other and inter / len(cs | other) < 0.7:
                continue
            if new == 0 or inter / len(cs | other) >= 0.7 or (new == 1 and len(cs) >= 8 and inter >= len(cs) * 0.85):
                return False
        self.items.append(text)
        self._sets.append(cs)
        return True

    def full(self) -> bool:
        return len(self.items) >= self.limit


def _entities(p: _Prepared) -> dict[str, str]:
    """The best value per entity kind: the user's word over the agent's, corrections applied."""
    an = p.analysis
    out: dict[str, str] = {}
    for kind in _ENTITY_SIGNALS:
        fs = [f for f in an.by_signal(kind) if f.strength >= 0.5 and not _PLACEHOLDER.search(f.value)]
        if kind not in ("product", "model"):
            fs = [f for f in fs if f.role == "user"]  # the agent naming an OS in a question is not the user's
        if kind == "version":
            fs = [f for f in fs if f.name != "target_version"]
        if kind == "error_message":
            fs = [f for f in fs if len(f.value.split()) <= 10]
        fs = [f for f in fs if not _denied(p, f.value)]
        best = an.best(fs)
        if best is not None:
            out[kind] = _query(best.value, 12)
    return out


def _denied(p: _Prepared, value: str) -> bool:
    """A user correction denies the value ("Actually it's DSL Plus 80, not DSL Basic 25")."""
    v = value.strip().lower()
    if not v:
        return False
    for s in p.sents:
        if s.role == "user" and (s.correction or s.narrow or " not " in s.text.lower()):
            low = s.text.lower()
            if re.search(r"\b(?:not|instead\s+of|rather\s+than|misread\s+it\s+as|wrote)\s+(?:the\s+|a\s+|an\s+|version\s+|plan\s+)?" + re.escape(v), low):
                return True
    return False


def _unit_product(p: _Prepared, u: _Unit) -> str | None:
    """The product named in the unit's user turns (a second issue often names another one)."""
    sents = [(s.turn, s.role, s.text) for ti in u.user_turns for s in p.by_turn.get(ti, []) if not s.filler]
    if not sents:
        return None
    cands = signals.product_candidates(sents, set(u.opening))
    owned = {f.value.lower() for f in p.analysis.findings if f.signal in _NOT_PRODUCT}
    cands = [c for c in cands if not _PLACEHOLDER.search(c[0]) and c[0].lower() not in owned]
    return _query(cands[0][0], 6) or None if cands else None


def _issue_sentences(p: _Prepared, u: _Unit, *, opening_only: bool) -> list[_Sent]:
    turns = u.opening if opening_only else u.user_turns
    out = [s for ti in turns for s in p.by_turn.get(ti, []) if s.role == "user" and s.issue_like and not s.attempt]
    return out


_WRONG_VALUE = re.compile(r"^\W*(?:i|we)\s+(?:misread|mistyped|misspoke|wrote|typed|said)\b", re.I)


def _rank_problem(sents: list[_Sent]) -> list[_Sent]:
    """Best problem statements first: the problem score, a question bonus, words the rest of the
    conversation takes up (a problem statement's words recur, small talk's do not), earlier first."""
    def score(s: _Sent) -> float:
        return (
            s.problem
            + (0.15 if s.question and s.content >= 3 else 0.0)
            + 0.1 * min(s.echo, 3)
            - (0.3 if s.shift == 1 else 0.0)
            - (0.5 if _WRONG_VALUE.match(s.text) else 0.0)
            + min(s.content, 8) * 0.01
        )

    return sorted(sents, key=lambda s: (-round(score(s), 3), s.order))


def _issue_queries(p: _Prepared) -> list[str]:
    pick = _Picker(MAX_ISSUE_QUERIES)
    units = p.units
    ents = _entities(p)
    product = _unit_product(p, units[0]) if units else None
    product = product or ents.get("product") or ents.get("model")
    if product:
        ents["product"] = product
    first = units[0] if units else None
    main: _Sent | None = None
    if first is not None:
        ranked = _rank_problem(_issue_sentences(p, first, opening_only=True)) or _rank_problem(_issue_sentences(p, first, opening_only=False))
        if ranked:
            main = ranked[0]
            pick.add(main.query)
    # "<product> <symptom>", "<error code> on <product> <version>"
    if main is not None:
        drop = frozenset(_tokens(product or ""))
        symptom = _keyphrase(main.query, drop, 8)
        if product and symptom:
            pick.add(f"{product} {symptom}", structured=True)
        if product and first is not None:  # the product with the other symptoms the user stated ("won't print")
            for s in first.opening and [x for ti in first.opening for x in p.by_turn.get(ti, [])] or []:
                if (s is not main and s.role == "user" and not s.filler and s.polarity <= 0 and not s.attempt and s.problem >= 0.45
                        and not s.question and s.echo and s.shift != 1):
                    symptom = _keyphrase(s.query, drop, 8)
                    if symptom and (_NEG_OR_PROBLEM.search(s.text)) and len(symptom.split()) >= 2:
                        pick.add(f"{product} {symptom}", min_content=2, structured=True)
    env = ents.get("version") or ents.get("os") or ents.get("plan") or ents.get("browser")
    code = ents.get("error_code")
    if code:
        where = " ".join(x for x in (product, env) if x)
        pick.add(f"{code} on {where}" if where else f"error {code}", min_content=1, structured=True)
    if ents.get("error_message") and ents.get("error_message") != code:
        pick.add(f"{ents['error_message']}" + (f" {product}" if product else ""))
    # later units' opening statements
    for u in units[1:]:
        ranked = _rank_problem(_issue_sentences(p, u, opening_only=True))
        if ranked:
            pick.add(ranked[0].query)
    # further problem sentences and questions (first unit first), then details stated later
    if first is not None:
        for s in _rank_problem(_issue_sentences(p, first, opening_only=True))[1:]:
            if s.problem >= 0.45 and s.content >= 3 and (s.echo or _details(s.text)) and s.shift != 1:
                pick.add(s.query)
    for u in units:
        unit_sents = [x for ti in u.user_turns + u.agent_turns for x in p.by_turn.get(ti, []) if not x.filler]
        for s in _rank_problem(_issue_sentences(p, u, opening_only=False)):
            if s.turn in u.opening or s.problem < 0.6 or s.content < 3 or _closing_turn(p, s.turn):
                continue
            context = _content_set(" ".join(x.text for x in unit_sents if x is not s)) - _GENERIC
            if (_content_set(s.text) - _GENERIC) & context or _details(s.text):  # on topic, or a specific detail
                pick.add(s.query)
    # the first unit's keywords with the details the user gave later (answers to the agent's questions)
    if main is not None and first is not None:
        details = _detail_words(p, first, main, ents)
        if details:
            pick.add(f"{_keyphrase(main.query, _GENERIC, 8)} {' '.join(details)}")
    # the environment as a query
    env_parts = [x for x in (product, ents.get("version"), ents.get("os"), ents.get("browser"), ents.get("plan")) if x]
    if len(env_parts) >= 2 and main is not None:
        pick.add(" ".join(dict.fromkeys(env_parts)) + " " + _keyphrase(main.query, frozenset(_tokens(" ".join(env_parts))), 5))
    if not pick.items:
        _issue_fallback(p, pick)
    return pick.items


_CLOSING = re.compile(r"\b(?:that'?s\s+(?:all|it|everything)|nothing\s+else|no\s+(?:thanks|thank\s+you|need)|i'?m\s+(?:good|all\s+set)|all\s+good)\b", re.I)


def _closing_turn(p: _Prepared, ti: int) -> bool:
    """The user is wrapping up in this turn (a thank-you for a fix, "that's all")."""
    return any(s.polarity > 0 or _CLOSING.search(s.text) for s in p.by_turn.get(ti, []))


def _answer_turns(p: _Prepared) -> set[int]:
    """User turns that answer the agent's request for information (the user turns right after it)."""
    out: set[int] = set()
    asked = False
    for ti, t in enumerate(p.conv.turns):
        if t.role == "agent":
            asked = any(s.request and not s.filler for s in p.by_turn.get(ti, []))
        elif asked:
            out.add(ti)
    return out


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
_ID_LIKE = re.compile(r"^(?:\d[\d-]{4,}|(?=[\w-]*\d)(?=[\w-]*[a-z])[a-z0-9-]{5,})$", re.I)


def _detail_words(p: _Prepared, u: _Unit, main: _Sent, ents: dict[str, str]) -> list[str]:
    """Content words of the unit's other user sentences (short answers, details), without
    identifiers (order numbers, booking codes) unless they are a detected entity."""
    keep = {v.lower() for v in ents.values()}
    have = {w.lower() for w in _tokens(main.query)}
    out: list[str] = []
    asked = _answer_turns(p)
    for ti in u.user_turns:
        if _closing_turn(p, ti) or ti not in asked:
            continue
        for s in p.by_turn.get(ti, []):
            if s is main or s.filler or s.polarity != 0 or s.attempt or not s.query or s.content > 6 or s.shift == 1:
                continue
            if _PLACEHOLDER.search(s.text) or _IDENTITY.search(s.text) or any(_ID_LIKE.match(w) and w.lower() not in keep for w in _WORD.findall(s.text)):
                continue  # identity details (a name, an order or booking number) are not what the user needed
            if any(_denied(p, f.value) for f in p.analysis.findings if f.turn == ti and f.value.lower() in s.text.lower()):
                continue  # a value the user corrected later
            for w in _keyphrase(s.query, _GENERIC, 6).split():
                lw = w.lower()
                if lw in have or (_ID_LIKE.match(w) and lw not in keep) or lw in _NEGATION:
                    continue
                have.add(lw)
                out.append(w)
                if len(out) >= 6:
                    return out
    return out


NO_ISSUE = "no issue stated"
NO_ANSWER = "no answer given"


def _usable(text: str, max_words: int = 40) -> str:
    """`text` as a query, or "" when nothing with letters or digits is left."""
    q = _query(_display(text), max_words)
    return q if re.search(r"[^\W_]", q) else ""


def _issue_fallback(p: _Prepared, pick: _Picker) -> None:
    """No problem statement: the user's most substantive sentences, else their longest turn that is
    not only a greeting, else what the agent said, else NO_ISSUE."""
    user = [s for s in p.sents if s.role == "user" and not s.filler and s.query]
    for s in sorted(user, key=lambda s: (-s.content, s.turn))[:3]:
        pick.add(s.query, min_content=1)
    if pick.items:
        return
    turns = p.conv.turns
    users = [t for t in turns if t.role == "user" and _usable(t.text) and not _is_filler(_display(t.text))]
    if users:
        pick.items.append(_usable(max(users, key=lambda t: len(t.text)).text))
        return
    agent = [s for s in p.sents if s.role == "agent" and not s.filler and s.query]
    for s in sorted(agent, key=lambda s: (-s.content, s.turn))[:2]:
        pick.add(s.query, min_content=1)
    if not pick.items:
        pick.items.append(NO_ISSUE)


def _step_query(s: _Sent) -> str:
    """An instruction as a query: suggestion questions become imperatives."""
    text = s.text
    m = _SUGGEST_Q.match(text)
    if m and text.rstrip().endswith("?"):
        rest = text[m.end() :].rstrip(" ?")
        rest = re.sub(r"\s+(?:and\s+see\s+if|to\s+see\s+if)\b.*$", "", rest, flags=re.I)
        return _query("try " + rest)
    q = _query(_agent_core(s.text))
    q = re.sub(r"^(?:(?:could|can|would|will)\s+you\s+(?:please\s+|kindly\s+|just\s+)*)", "", q, flags=re.I)
    q = re.sub(r"^(?:(?:you\s+(?:can|could|should|need\s+to|must|may\s+want\s+to|might\s+want\s+to|will\s+need\s+to|have\s+to)|"
               r"i(?:'d|\s+would)\s+(?:recommend|suggest)(?:\s+(?:that\s+)?you)?|(?:please\s+)?try\s+to|make\s+sure\s+(?:to|that\s+you)|"
               r"go\s+ahead\s+and|the\s+(?:fix|solution|workaround)\s+is\s+to)\s+)", "", q, flags=re.I)
    q = re.sub(r"\s+(?:and\s+see\s+if|to\s+see\s+if|and\s+(?:tell|let)\s+(?:me|us)\s+(?:know\s+)?(?:if|whether|how|what))\b.*$", "", q, flags=re.I).rstrip(" ?")
    q = re.sub(r"\s+and\s+let\s+(?:me|us)\s+know\s*$", "", q, flags=re.I)
    if q and q[0].islower():
        q = q[0].upper() + q[1:]
    return q


def _statement_query(s: _Sent, min_words: int = 3) -> str:
    """An agent statement as a query ("" when it says too little, or only gives a ticket number)."""
    text = _TAG_QUESTION.sub("", s.text.rstrip())
    if _TICKET.search(text) or len(_content_set(text) - _GENERIC) < min_words:
        return ""
    return _query(text)


def _failed_after(p: _Prepared, agent_turn: int) -> bool:
    """The user's next turns (until the agent speaks again) say it did not work."""
    turns = p.conv.turns
    for j in range(agent_turn + 1, len(turns)):
        if turns[j].role == "agent":
            if j > agent_turn + 1:
                break
            continue
        if any(s.polarity < 0 for s in p.by_turn.get(j, [])):
            return True
        if any(s.polarity > 0 for s in p.by_turn.get(j, [])):
            return False
    return False


def _solution_queries(p: _Prepared) -> list[str]:
    an = p.analysis
    pick = _Picker(MAX_SOLUTION_QUERIES)
    tried: list[str] = []
    agent = [s for s in p.sents if s.role == "agent" and not s.filler and s.query]
    # 1. the fix: the step the user confirmed worked (or reported doing), else the last instruction
    res = an.best(an.by_signal("resolution"))
    fixed_turn = None
    if res is not None:
        if res.role == "user":
            pick.add(_query(re.sub(r"^\W*(?:i(?:'ve|\s+have|\s+just|\s+finally)?)\s+", "", res.value, flags=re.I)))
        else:
            fixed_turn = res.turn
            for s in agent:
                if s.turn == res.turn and s.instr >= 0.5:
                    pick.add(_step_query(s))
    # 2. the cause
    causes = [s for s in agent if s.cause] + [s for s in p.sents if s.role == "user" and s.cause]
    rc = an.best(an.by_signal("root_cause"))
    if rc is not None and len(_content_set(rc.evidence) - _GENERIC) >= 3:
        pick.add(_query(rc.evidence))
    for s in causes[:1]:
        pick.add(_statement_query(s))
    # 3. the agent's actions and verdicts; 4. other instructions (failed ones are marked)
    failed_turns = {s.turn for s in agent if s.instr >= 0.5 and s.turn != fixed_turn and _failed_after(p, s.turn)}
    for s in agent:
        if s.outcome and s.instr < 0.5 and not s.request and s.content >= 3:
            pick.add(_statement_query(s))
    for s in agent:
        if s.instr >= 0.5 and s.content >= 2:
            q = _step_query(s)
            if s.turn in failed_turns:
                q = re.sub(r"^(?:try|attempt)\s+(?:to\s+)?", "", q, flags=re.I)
                if q:
                    tried.append(f"tried: {q[0].lower() + q[1:]} (did not help)")
            else:
                pick.add(q)
    # 5. informative answers to the user's questions
    for u in p.units:
        cands = [s for ti in u.agent_turns for s in p.by_turn.get(ti, []) if not s.filler and not s.request and s.instr < 0.5 and s.content >= 2]
        if any(s.content >= 3 for s in cands):
            cands = [s for s in cands if s.content >= 3]
        issue_words = _content_set(" ".join(s.text for ti in u.user_turns for s in p.by_turn.get(ti, [])))
        cands.sort(key=lambda s: (-(min(len(_content_set(s.text) & issue_words), 2) + (1 if _DIGIT.search(s.text) else 0)
                                     + (1 if s.outcome else 0) + min(s.content, 8) / 8), s.turn))
        asked = any(x.question for ti in u.opening for x in p.by_turn.get(ti, []) if x.role == "user")
        for s in cands[:2]:
            pick.add(_statement_query(s, 2 if asked else 3))
    # 6. what the user already tried
    for s in p.sents:
        if s.role == "user" and s.attempt and s.content >= 2:
            q = _query(re.sub(r"^\W*(?:i|we)(?:'ve|\s+have|\s+had)?\s+(?:already\s+|also\s+|even\s+)?(?=tried\b)", "", s.text, flags=re.I))
            q = re.sub(r"^(?:i|we)(?:'ve|\s+have|\s+had)?\s+(?:already\s+|also\s+|even\s+)?", "", q, flags=re.I)
            q = re.sub(r"^(?:(?:things|what)\s+(?:i|we)(?:'ve|\s+have)?\s+(?:already\s+)?)?tried\s*:?\s*", "", q, flags=re.I)
            if re.match(r"^(?:that|this|it|those|them|everything|all)\b", q, re.I) or len(_content_set(q) - _GENERIC - _FEEDBACK_WORDS) < 2:
                continue  # "Tried that already, still the same": feedback, not a step
            if q:
                tried.append(f"tried: {q[0].lower() + q[1:]}")
    reserve = min(2, len(dict.fromkeys(tried)))  # failed attempts keep up to two slots
    keep = MAX_SOLUTION_QUERIES - reserve
    if len(pick.items) > keep:
        pick.items, pick._sets = pick.items[:keep], pick._sets[:keep]
    for t in tried:
        pick.add(t)
    if len(pick.items) < 2:
        _solution_fallback(p, pick)
    return pick.items


def _solution_fallback(p: _Prepared, pick: _Picker) -> None:
    """Fewer than two solution queries: add the agent's most substantive other statement; with none
    at all, the agent's most substantive turn, else (the agent never said anything but pleasantries)
    the user's last turn, else NO_ANSWER."""
    turns = p.conv.turns
    if pick.items:
        others = [s for s in p.sents if s.role == "agent" and not s.filler and not s.request and s.content >= 2]
        for s in sorted(others, key=lambda s: (-s.content, s.turn)):
            if pick.add(_statement_query(s)):
                break
        return

    def substance(i: int) -> int:
        return sum(s.content for s in p.by_turn.get(i, []) if not s.filler)

    agent_turns = [i for i, t in enumerate(turns) if t.role == "agent" and substance(i) > 0]
    if agent_turns:
        best = max(agent_turns, key=lambda i: (substance(i), -i))
        sents = [s for s in p.by_turn.get(best, []) if not s.filler and s.query]
        pick.add(_query(" ".join(s.text for s in sents), 40), min_content=1)
        if pick.items:
            return
    for t in reversed(turns):
        if t.role == "user" and _usable(t.text) and not _is_filler(_display(t.text)):
            pick.items.append(_usable(t.text))
            return
    pick.items.append(NO_ANSWER)


def pseudo_documents(conv: ConversationInput, *, backend_name: str) -> PseudoDocuments:
    """Issue-centric and solution-centric predicted queries (see the module docstring). Both lists
    are non-empty for every conversation."""
    p = _prepare(conv)
    return PseudoDocuments(
        dialogue_id=conv.dialogue_id,
        issue_queries=_issue_queries(p),
        solution_queries=_solution_queries(p),
        backend=backend_name,
    )
