"""Reading a query: a string or a whole conversation, with entities carried from earlier turns. No Dagster.

A conversation query is read as a whole (cTBLS): the latest turn is what is asked now, earlier turns say
what "it" / "that one" is. Two things come out of it:

- the text that is embedded: the turns in order, read together (`Query.embedding_text`), so the model
  reads "can I get them back?" in the light of the turns before it; and the text full-text search sees;
- entities: values of the governed table's columns (product, model, version, error code, plan, ...)
  mentioned anywhere in the conversation, found by looking the query's word n-grams up in a lexicon built
  from the table itself (`ValueLexicon`). Nothing here knows a domain: whatever short values the table
  holds are what can be recognized. A value named in any turn counts, so a value named earlier still
  counts in the latest turn ("what fixed it for that model?").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

import numpy as np

from sarag_assets.core.indices.table_values import (
    TableValues,
    tokens,
)
from sarag_assets.core.ingest.markup import plain_text
from sarag_assets.query.value_match import LooseIndex

MAX_QUERY_CHARS = 10_000  # per turn; longer text is cut (embedding and BM25 gain nothing from more)
MAX_TURNS = 50

# About what the embedding model reads (256 word pieces of English); the model cuts the rest, so a longer
# conversation loses its earliest turns here rather than its latest there.
EMBEDDED_CHARS = 1200


class QueryError(ValueError):
    """The query cannot be read (wrong shape, no text)."""


@dataclass(frozen=True)
class QueryTurn:
    speaker: str
    text: str


@dataclass(frozen=True)
class Entity:
    column: str
    value: str  # as stored in the table
    turn: int  # index of the latest query turn it was found in
    df: int  # rows holding it
    surface: str  # the query's words that matched
    confidence: float = 1.0  # 1 for the value's words or letters as written; below for a loose reading

    def as_dict(self) -> dict[str, Any]:
        return {"column": self.column, "value": self.value, "turn": self.turn, "matched": self.surface,
                "confidence": self.confidence}


@dataclass
class Query:
    turns: list[QueryTurn]
    entities: list[Entity] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # on how the query was read, for the reader (none yet)

    @property
    def latest(self) -> str:
        return self.turns[-1].text

    @property
    def is_conversation(self) -> bool:
        return len(self.turns) > 1

    def full_text(self) -> str:
        """Every turn, the latest first: what full-text search sees."""
        return "\n".join(t.text for t in reversed(self.turns))

    def embedding_text(self, max_chars: int = EMBEDDED_CHARS) -> str:
        """The turns in order, one per line, as the query vector's text: the latest turn and as many turns
        before it as fit in ``max_chars`` (the latest alone is cut to it). One text rather than a mean of
        each turn's vector: a follow-up such as "can I get them back?" says little on its own, and the
        model relates it to the turns it follows (on every evaluation set, each dense channel found more
        gold conversations this way; README, *How a query is read*)."""
        kept: list[str] = []
        used = 0
        for turn in reversed(self.turns):
            text = turn.text.strip()
            if not text:
                continue
            if kept and used + len(text) + 1 > max_chars:
                break
            kept.append(text[:max_chars])
            used += len(kept[-1]) + 1
        return "\n".join(reversed(kept))


def unit_vector(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def readable_text(text: str, fits) -> str:
    """``text`` without its earliest lines until the model reads it whole (``fits(text)``; None: as it is).
    The query's character budget (`Query.embedding_text`) can still be too long in scripts of about one
    word piece per character, and the model would cut the end: the latest turn."""
    while fits is not None and "\n" in text and not fits(text):
        text = text.split("\n", 1)[1]
    return text


def normalize(text: str) -> str:
    """Lowercase, accents kept, punctuation between word pieces kept (1.2.3, E-1234), spaces collapsed."""
    return " ".join(tokens(text))


def read_query(query: str | Sequence[Mapping[str, Any]]) -> Query:
    """A string, or a conversation: a list of {speaker, text} turns (role/content also accepted)."""
    if isinstance(query, str):
        raw = [{"speaker": "user", "text": query}]
    elif isinstance(query, Mapping):
        turns = query.get("turns")
        if turns is None and "text" in query:
            turns = [{"speaker": "user", "text": query["text"]}]
        if not isinstance(turns, (list, tuple)):
            raise QueryError("a query object needs 'turns' (a list of {speaker, text}) or 'text'")
        raw = list(turns)
    elif isinstance(query, (list, tuple)):
        raw = list(query)
    else:
        raise QueryError(f"a query is a string or a list of turns, not {type(query).__name__}")
    if not raw:
        raise QueryError("the conversation has no turns")
    if len(raw) > MAX_TURNS:
        raw = raw[-MAX_TURNS:]
    parsed: list[tuple[str, str]] = []
    for i, turn in enumerate(raw):
        if isinstance(turn, str):
            speaker, text = "user", turn
        elif isinstance(turn, Mapping):
            speaker = turn.get("speaker", turn.get("role", "user"))
            text = turn.get("text", turn.get("content"))
        else:
            raise QueryError(f"turn {i} is a {type(turn).__name__}, expected {{speaker, text}}")
        if not isinstance(text, str):
            raise QueryError(f"turn {i} has no text")
        # as the corpus was read at ingest: a pasted HTML ticket is the text its reader saw, in composed form
        parsed.append((str(speaker or "user"), plain_text(text[:MAX_QUERY_CHARS])))
    if not any(text.strip() for _, text in parsed):
        raise QueryError("the query is empty")
    return Query([QueryTurn(speaker, text) for speaker, text in parsed])


class ValueLexicon(TableValues):
    """Short cell values of the governed table (`TableValues`), found as entities in a query's turns."""

    def __init__(self, cells, n_rows: int, *, columns=None, mentions: Mapping[str, int] | None = None):
        """``mentions``: value or word -> conversations mentioning it (the value_mentions asset), which
        the loose readings check a part of a name against."""
        super().__init__(cells, n_rows, columns=columns)
        self.mentions = mentions or {}

    @cached_property
    def loose(self) -> LooseIndex:
        return LooseIndex(self._rows, mentions=self.mentions)

    def find(self, query: Query) -> list[Entity]:
        """Entities in every turn, longest match first (a value inside a longer matched value is not
        matched again), written as stored or with other spacing ("HC31" for "HC-31", `TableValues.matches`);
        then, in the words left, near-miss spellings and distinctive parts of names (`value_match`), each
        with its confidence. One entity per (column, value), from the latest turn naming it, with the
        best confidence any turn gave it."""
        found: dict[tuple[str, str], Entity] = {}

        def add(key, index, surface, confidence=1.0):
            earlier = found.get(key)
            best = max(confidence, earlier.confidence) if earlier else confidence
            found[key] = Entity(key[0], self._stored[key], index, len(self._rows[key]), surface, best)

        for index, turn in enumerate(query.turns):
            toks = tokens(turn.text)
            taken = [False] * len(toks)
            for start, size, gram, keys in self.matches(toks, longest=True):
                taken[start:start + size] = [True] * size
                for key in keys:
                    add(key, index, gram)
            if len(self._rows):
                for m in self.loose.matches(toks, taken):
                    for key in m.keys:
                        add(key, index, m.surface, m.confidence)
        return sorted(found.values(), key=lambda e: (e.column, e.value))


def understand(query: str | Sequence[Mapping[str, Any]], lexicon: ValueLexicon) -> Query:
    """The query read (`read_query`) with the table's values it names (`ValueLexicon.find`)."""
    parsed = read_query(query)
    parsed.entities = lexicon.find(parsed)
    return parsed
