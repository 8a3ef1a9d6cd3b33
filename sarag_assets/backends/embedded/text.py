"""Text utilities the detectors share: signal names, column-name snaking, sentence splitting and a letter's
frame, word lists, and the Hit a detector returns (name, value, span, strength 0..1)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from sarag_assets.backends.embedded.findings import Sentence
from sarag_assets.backends.normalize import MAX_NAME, snake_case
from sarag_assets.core.writing import CJK_SENTENCE_END, SPACED_SENTENCE_END

# The detectors (signal names) and the general support concepts.
SIGNALS: tuple[str, ...] = (
    "problem",
    "resolution",
    "resolved",
    "root_cause",
    "product",
    "attempted_steps",
    "escalated",
    "version",
    "os",
    "browser",
    "error_code",
    "error_message",
    "model",
    "date",
    "amount",
    "measurement",
    "identifier",
    "plan",
    "key_value",
    "statement",
    "answer",
)

# ---------------------------------------------------------------------------------------------------
# text utilities

_PLACEHOLDER = re.compile(r"\[(?:EMAIL|PHONE|NAME|IP|MENTION|URL)\]|\b(?:user|agent)\d+\b")
_PLACEHOLDER_ONLY = re.compile(r"^(?:\s|[,.;:!?'\"()-]|\[(?:EMAIL|PHONE|NAME|IP|MENTION|URL)\]|\b(?:user|agent)\d+\b)*$")


def is_placeholder_only(text: str) -> bool:
    """True when the text is nothing but redaction placeholders and punctuation (or empty)."""
    return bool(_PLACEHOLDER_ONLY.match(text or ""))


def snake(text: str, max_len: int = MAX_NAME) -> str:
    """A column name from free text (the shared normalizer's snake_case); "column" when nothing is left."""
    return snake_case(text, max_len) or "column"


_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs mr mrs ms dr st no nos approx incl jr sr inc ltd co corp fig ver min max sec dept est "
    "a.m p.m u.s u.k jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
# Chinese and Japanese full stops end a sentence without a space after them (the others with one)
_BOUNDARY = re.compile(r"[" + SPACED_SENTENCE_END + r"]+[\"'”’)\]]*(?=\s)|[" + CJK_SENTENCE_END + r"]+[」』”’）)\]]*|\n+")
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s*$")
_LEADING_NOISE = re.compile(r"^(?:\s|\[MENTION\]|[-*•>]|\d{1,2}[.)](?=\s))+")


def split_sentences(text: str) -> list[tuple[int, int, str]]:
    """Sentences of one turn as (start, end, text), offsets into ``text``; list markers stay attached
    to their item ("1. Flash firmware 5.1.5 ..." is one sentence), abbreviations do not split."""
    if not text:
        return []
    pieces: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end() if m.group()[0] != "\n" else m.start()
        if m.group()[0] == ".":
            before = re.search(r"([A-Za-z][A-Za-z.]*)$", text[start : m.start()])
            word = before.group(1).lower().rstrip(".") if before else ""
            if word in _ABBREVIATIONS or (before and len(before.group(1)) == 1 and before.group(1).isupper()):
                continue
            if _LIST_MARKER.match(text[start : m.end()]):
                continue  # "1." belongs to the item that follows
        if m.group()[0] in ".!?" and re.match(r"\s+[a-z]", text[m.end() :]) and re.search(r"\.\.|[\"'”’]", m.group()):
            continue  # 'hangs at "Syncing..." and never finishes': an ellipsis or a quote, not an end
        pieces.append((start, end))
        start = m.end()
    pieces.append((start, len(text)))
    out = []
    for s, e in pieces:
        seg = text[s:e]
        lead = len(seg) - len(seg.lstrip())
        seg = seg.strip()
        if not seg or _LIST_MARKER.match(seg) or is_placeholder_only(seg):
            continue
        out.append((s + lead, s + lead + len(seg), seg))
    return out


# Half of a cell's 400 characters (gist.PROBLEM_CHARS): a longer run without a sentence end (a transcript,
# an unpunctuated chat, a run-on post) is quoted in pieces, so that a cell can take part of it beside
# another sentence instead of all of it or nothing.
MAX_SENTENCE_CHARS = 200


def sentence_pieces(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """text[start:end] cut at whitespace into the fewest pieces of about equal length within
    MAX_SENTENCE_CHARS (a text without spaces stays whole), as (start, end, piece)."""
    if end - start <= MAX_SENTENCE_CHARS:
        return [(start, end, text[start:end])]
    n = -(-(end - start) // MAX_SENTENCE_CHARS)
    cuts = [start]
    for k in range(1, n):
        target = start + (end - start) * k // n
        left = max(text.rfind(" ", cuts[-1] + 1, target + 1), text.rfind("\n", cuts[-1] + 1, target + 1))
        right = min((i for i in (text.find(" ", target, end), text.find("\n", target, end)) if i > 0), default=-1)
        cut = min((i for i in (left, right) if i > cuts[-1]), key=lambda i: abs(i - target), default=None)
        if cut is not None:
            cuts.append(cut)
    out = []
    for a, b in zip(cuts, cuts[1:] + [end]):
        piece = text[a:b]
        lead = len(piece) - len(piece.lstrip())
        if piece.strip():
            out.append((a + lead, a + lead + len(piece.strip()), piece.strip()))
    return out


def in_pieces(turns: Sequence[tuple[str, str]], sentences: Sequence[Sentence],
              body: Sequence[Sentence]) -> tuple[list[Sentence], list[Sentence]]:
    """`sentences` and `body` (a subset of them) with every sentence longer than MAX_SENTENCE_CHARS in
    pieces, numbered again within each turn so that adjacent pieces stay adjacent. For what a cell quotes:
    the detectors read whole sentences (a question mark at the end of a long question still asks)."""
    pieces: dict[tuple[int, int], list[Sentence]] = {}
    count: dict[int, int] = {}
    out = []
    for s in sentences:
        mine = []
        for a, b, text in sentence_pieces(turns[s.turn][1], s.start, s.end):
            mine.append(Sentence(s.turn, s.role, count.get(s.turn, 0), a, b, text))
            count[s.turn] = count.get(s.turn, 0) + 1
        pieces[(s.turn, s.index)] = mine
        out += mine
    return out, [p for s in body for p in pieces.get((s.turn, s.index), [s])]


def _strip_lead(text: str) -> str:
    """The sentence without leading @mentions, list markers and bullets."""
    return _LEADING_NOISE.sub("", text)


def _mostly_upper(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 6 and sum(c.isupper() for c in letters) / len(letters) > 0.6


_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from as into onto about over under up down
    out off is am are was were be been being do does did have has had will would can could shall should may
    might must not no yes i me my mine we us our you your he him his she her it its they them their this that
    these those there here what which who whom whose when where why how all any some each every both either
    neither just also only very really still already again too please thanks thank hi hello hey ok okay yeah
    sure now then than because while since until after before during s t don doesn didn isn wasn aren weren
    can't won't i'm i've i'd it's that's there's let's one two get got""".split()
)


def _words(text: str) -> list[str]:
    return [w.lower().strip("'’-") for w in _WORD.findall(text)]


def _content_words(text: str) -> list[str]:
    return [w for w in _words(text) if w and w not in _STOP]


# ---------------------------------------------------------------------------------------------------
# hits


@dataclass(frozen=True)
class Hit:
    """One detected value in one piece of text."""

    signal: str  # detector name
    name: str  # column name derived from the text ("firmware_version", "order_id")
    value: str  # the value (verbatim, except dates in ISO form and amounts without symbols)
    start: int  # span of the value in the text
    end: int
    strength: float  # 0..1
    type: str = "string"  # canonical type of the column it would fill
    key: str | None = None  # the words the name came from, when any

    def span_text(self, text: str) -> str:
        return text[self.start : self.end]


def _before(text: str, pos: int, n: int = 40) -> str:
    return text[max(0, pos - n) : pos]


def _after(text: str, pos: int, n: int = 40) -> str:
    return text[pos : pos + n]


_NAME_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
MAX_SIGNATURE_WORDS = 6


def _on_own_line(text: str, s: Sentence, previous: Sentence | None) -> bool:
    return previous is None or "\n" in text[previous.end : s.start]


def _signature_line(text: str) -> bool:
    """A closing line: a valediction ending in a comma ("Kind regards,", "Saludos,") or a short name line
    in title case ("Carla | Customer Support", "The Melodia Support Team")."""
    if text.endswith(","):
        return True
    words = _NAME_WORD.findall(_PLACEHOLDER.sub("Name", text))  # a pseudonym ("agent1") stands for a name
    if not words or len(words) > MAX_SIGNATURE_WORDS or text[-1:] in ".!?:;" or ": " in text:  # "Serial: X1" is data
        return False
    return sum(w[0].isupper() for w in words) * 3 >= 2 * len(words)


def without_letter_frame(turns: Sequence[tuple[str, str]], sentences: Sequence[Sentence]) -> list[Sentence]:
    """The sentences without the frame of a letter-style turn: a short line of its own that ends in a comma
    (the salutation "Hello user1,", the valediction "Kind regards,"), and the closing name lines after the
    last sentence that ends in . ! or ? ("Carla | Customer Support"). A turn on one line, or whose last
    lines follow a colon ("Then run:"), keeps every sentence. Layout, not words: it holds in any language
    that writes letters this way."""
    frame: set[tuple[int, int]] = set()
    by_turn: dict[int, list[Sentence]] = {}
    for s in sentences:
        by_turn.setdefault(s.turn, []).append(s)
    for t, own in by_turn.items():
        text = turns[t][1]
        if len(own) < 2 or "\n" not in text.strip():
            continue
        for i, s in enumerate(own[:-1]):  # "Hello user1," or "Kind regards," on a line of its own
            if (s.text.endswith(",") and len(_NAME_WORD.findall(s.text)) <= MAX_SIGNATURE_WORDS
                    and _on_own_line(text, s, own[i - 1] if i else None) and "\n" in text[s.end : own[i + 1].start]):
                frame.add((t, s.index))
        k = len(own)
        while k > 1 and _on_own_line(text, own[k - 1], own[k - 2]) and _signature_line(own[k - 1].text):
            k -= 1
        if k < len(own) and own[k - 1].text[-1:] in ".!?" and (t, own[k - 1].index) not in frame:
            frame.update((t, s.index) for s in own[k:])
    return [s for s in sentences if (s.turn, s.index) not in frame]
