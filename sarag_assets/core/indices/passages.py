"""A conversation's own words, cut into passages the embedding model reads whole. No Dagster imports.

The text channels search what the people wrote, not a derived view: dense search over passages, BM25 over
the whole text. all-MiniLM-L6-v2 reads 256 word pieces and silently cuts the rest, so one vector per
conversation stands for its opening only. A passage is a window of consecutive turns that the model
reads whole (`fits`, and at most `max_chars`); consecutive windows share their boundary turn, so a
question closing one window is read with the answer opening the next. A turn too long for the model on
its own is cut at sentence ends, then at spaces, then anywhere (scripts without spaces), into pieces that
fit. Nothing here knows a language: the budget is the model's own tokenizer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

MAX_PASSAGE_CHARS = 1_200  # ~256 word pieces of English; `fits` decides for other scripts
# after . ! ? and a space, after a full-width 。！？ (no space follows in Chinese or Japanese), at line breaks
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Passage:
    index: int  # 0, 1, ... within the conversation
    turn_start: int  # positions in the conversation's turn list, inclusive
    turn_end: int
    text: str


def _pieces(text: str, fits: Callable[[str], bool], max_chars: int) -> list[str]:
    """``text`` as it is if it fits, else cut into consecutive pieces that each fit."""
    text = text.strip()
    if not text:
        return []
    if len(text) <= max_chars and fits(text):
        return [text]
    for splitter in (_SENTENCE_END, _SPACES):
        parts = [p.strip() for p in splitter.split(text) if p and p.strip()]
        if len(parts) > 1:
            out: list[str] = []
            current = ""
            for part in parts:
                joined = f"{current} {part}".strip()
                if current and not (len(joined) <= max_chars and fits(joined)):
                    out.extend(_pieces(current, fits, max_chars))
                    current = part
                else:
                    current = joined
            out.extend(_pieces(current, fits, max_chars))
            return out
    return _unbroken_pieces(text, fits, max_chars)


def _unbroken_pieces(text: str, fits: Callable[[str], bool], max_chars: int) -> list[str]:
    """A run without spaces (a script without them, a pasted blob) in consecutive pieces that fit: each the
    longest prefix of at most ``max_chars`` that the model reads whole, found by halving. Iterative: a
    record can hold megabytes."""
    out = []
    start = 0
    while start < len(text):
        size = min(max_chars, len(text) - start)
        while size > 1 and not fits(text[start:start + size]):
            size //= 2
        out.append(text[start:start + size])
        start += size
    return out


def conversation_passages(turns: Sequence[str], fits: Callable[[str], bool] | None = None,
                          max_chars: int = MAX_PASSAGE_CHARS) -> list[Passage]:
    """The passages of one conversation (turn texts in order). Every turn is in at least one passage;
    a conversation with no text has none."""
    fits = fits or (lambda _text: True)
    units: list[tuple[int, str]] = [(i, piece) for i, turn in enumerate(turns)
                                    for piece in _pieces(turn or "", fits, max_chars)]
    passages: list[Passage] = []
    start = 0
    while start < len(units):
        end = start + 1
        text = units[start][1]
        while end < len(units):
            candidate = text + "\n" + units[end][1]
            if len(candidate) > max_chars or not fits(candidate):
                break
            text = candidate
            end += 1
        passages.append(Passage(len(passages), units[start][0], units[end - 1][0], text))
        if end >= len(units):
            break
        # share the boundary unit when it fits with the next one (else that window would be the unit alone,
        # already read), and always move on
        shared = units[end - 1][1] + "\n" + units[end][1]
        start = end - 1 if end - 1 > start and len(shared) <= max_chars and fits(shared) else end
    return passages
