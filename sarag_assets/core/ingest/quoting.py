"""A reply's quotation of earlier turns left out. No Dagster.

E-mail replies carry the message they answer ("> ..." lines, or the old message under "On Mon, ...
wrote:" / "-----Original Message-----"), and forum posts quote earlier posts. The quoted words are
already in the conversation as the turn that said them; repeated inside the reply they are read as
the replier's own, so an asker's reply quoting the helper's steps lends them to the asker, and every
quote counts the same words twice for search. A passage (lines between blank lines, "> "-marked lines
apart from unmarked ones) is a quotation when the words of each of its lines occur in that order in one
earlier turn of the conversation, and it is either marked "> " or at least `MIN_QUOTED_WORDS` words
long: a short phrase said again ("still not working") stays. The header right above a quotation goes
with it, in whatever language it is written: contiguous lines ending in an attribution ("...:"), or
holding a rule of dashes or underscores, or three "key: value" lines or more. Nothing else of the turn
changes, and a turn that is nothing but a quotation stays whole.
"""

from __future__ import annotations

import re

MIN_QUOTED_WORDS = 8
MAX_HEADER_LINES = 6

_QUOTE_MARKS = re.compile(r"^(\s*>)+\s?")
_WORD = re.compile(r"\w+")
_KEY_VALUE = re.compile(r"^[^\s:][^:]{0,24}:\s+\S")
_RULE = re.compile(r"[-_=]{3,}")


def _words(text: str) -> str:
    """The words of ``text``, lower case, one space apart and padded, so that "in" is found as a word."""
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


def _bare(line: str) -> str:
    return _QUOTE_MARKS.sub("", line).strip()


def _rule(line: str) -> bool:
    return bool(_RULE.search(line)) and len(line.split()) <= 4


def _header_line(line: str) -> bool:
    return line.endswith(":") or _rule(line)


def without_quotations(texts: list[str]) -> list[str]:
    """Each turn's text without the passages that quote an earlier turn (see the module docstring)."""
    earlier = _Earlier()
    out: list[str] = []
    for text in texts:
        out.append(_unquoted(text, earlier) if earlier.turns else text)
        earlier.add(text)
    return out


class _Earlier:
    """The words of the earlier turns, with their word triples: a line holding a triple no earlier turn
    has is no quotation, which settles most lines without searching the text (long threads stay linear)."""

    def __init__(self):
        self.turns: list[str] = []
        self.triples: set[tuple[str, ...]] = set()

    def add(self, text: str) -> None:
        words = _words(text)
        self.turns.append(words)
        tokens = words.split()
        self.triples.update(zip(tokens, tokens[1:], tokens[2:]))

    def hold(self, words: str) -> bool:
        tokens = words.split()
        if any(t not in self.triples for t in zip(tokens, tokens[1:], tokens[2:])):
            return False
        return any(words in turn for turn in self.turns)


def _passages(lines: list[str]) -> list[tuple[int, int]]:
    """Line ranges separated by blank lines and by the change between "> "-marked and unmarked lines."""
    out: list[tuple[int, int]] = []
    start, marked = None, False
    for k, line in enumerate(lines):
        if not line.strip():
            if start is not None:
                out.append((start, k))
                start = None
            continue
        is_marked = bool(_QUOTE_MARKS.match(line))
        if start is None:
            start, marked = k, is_marked
        elif is_marked != marked:
            out.append((start, k))
            start, marked = k, is_marked
    if start is not None:
        out.append((start, len(lines)))
    return out


def _header_start(lines: list[str], start: int) -> int:
    """Where the header of a quotation starting at ``start`` begins: the contiguous lines above it
    (blank lines between them and the quotation allowed) when they end in an attribution ("...:"),
    hold a rule, or are three "key: value" lines or more; else the quotation itself."""
    k = start
    while k > 0 and not _bare(lines[k - 1]):
        k -= 1
    h = k
    while h > 0 and k - h < MAX_HEADER_LINES:
        line = _bare(lines[h - 1])
        if not line or not (_header_line(line) or _KEY_VALUE.match(line)):
            break
        h -= 1
    block = [_bare(line) for line in lines[h:k]]
    if block and (block[-1].endswith(":") or any(_rule(line) for line in block)
                  or sum(bool(_KEY_VALUE.match(line)) for line in block) >= 3):
        return h
    return start


def _unquoted(text: str, earlier: _Earlier) -> str:
    lines = text.split("\n")
    drop = [False] * len(lines)
    for start, end in _passages(lines):
        body = start
        while body < end and _header_line(_bare(lines[body])):  # "Lena said:" heading its quotation
            body += 1
        content = [w for w in (_words(lines[k]) for k in range(body, end)) if w.strip()]
        # lines marked "> " say they quote; unmarked ones must be long enough not to be words said again
        enough = bool(_QUOTE_MARKS.match(lines[start])) or sum(len(w.split()) for w in content) >= MIN_QUOTED_WORDS
        if content and enough and all(earlier.hold(w) for w in content):
            for k in range(_header_start(lines, start), end):
                drop[k] = True
    kept = "\n".join(line for line, gone in zip(lines, drop) if not gone).strip()
    return kept if kept else text
