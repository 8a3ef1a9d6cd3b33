"""The evaluation inputs: QUERIES.jsonl and CORPUS.jsonl, loaded and validated. No Dagster.

QUERIES.jsonl, one query per line (blank lines are skipped)::

    {"query_id": "q1", "turns": [{"speaker": "user", "text": "..."}, ...], "gold": ["dialogue id", ...],
     "nuggets": ["atomic fact", ...]}                # nuggets optional; "text": "..." instead of turns

- ``query_id``: a non-empty string, unique in the file.
- ``turns`` (a non-empty list of ``{"speaker": str, "text": str}`` objects) *or* ``text`` (a non-empty
  string, read as one user turn); giving both, or neither, is an error.
- ``gold``: a non-empty list of distinct, non-empty dialogue ids (a query without gold cannot be scored).
- ``nuggets``: optional; ``null`` or a list of non-empty strings (an empty list counts as no nuggets).
- ``kind``: optional string (e.g. ``single`` / ``followup``), used for per-kind breakdowns. Every other
  field (``pattern``, ``issue_id``, ...) is kept in ``EvalQuery.extra``.

A bad line raises ``QueryFileError`` (a ``ValueError``) whose message names the file, every bad line
number and its problem (all of them, up to ``MAX_REPORTED_PROBLEMS``), e.g.
``queries.jsonl line 3: 'gold' must be a non-empty list of dialogue ids, got a string``.

CORPUS.jsonl is the generic conversation format sarag lands (``{"dialogue_id", "turns": [{"speaker",
"text", "role"?, "ts"?}], "metadata"?}``); ``load_corpus`` reads it with the same kind of line-numbered
errors (``CorpusFileError``) for what an evaluation needs: ids, turn texts. ``corpus_record`` turns a
parsed ``Conversation`` (from ``sarag_assets.core.ingest.parsers``) into one such line, so a corpus converted
from another format keeps the dialogue ids sarag assigns.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from sarag_assets.core.ingest.drafts import READING_KEYS

__all__ = [
    "EvalQuery",
    "CorpusDialogue",
    "EvalFileError",
    "QueryFileError",
    "CorpusFileError",
    "parse_query",
    "read_queries",
    "load_queries",
    "read_corpus",
    "load_corpus",
    "corpus_summary",
    "check_gold",
    "conversation_text",
    "corpus_record",
    "MAX_REPORTED_PROBLEMS",
]

MAX_REPORTED_PROBLEMS = 20  # bad lines listed in one error message (the count of all of them is given too)

_QUERY_KNOWN = ("query_id", "turns", "text", "gold", "nuggets", "kind")


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalQuery:
    query_id: str
    turns: list[dict]  # [{"speaker": str, "text": str, ...}], in order; a "text" query is one user turn
    gold: list[str]  # the dialogue ids that answer it
    nuggets: list[str] | None = None  # atomic facts a good answer contains (None: not given)
    kind: str | None = None  # e.g. "single" / "followup" (None: not given)
    extra: dict[str, Any] = field(default_factory=dict)  # every other field of the line (pattern, ...)

    @property
    def text(self) -> str:
        """All turns joined by newlines: what a text baseline sees of a multi-turn query."""
        return "\n".join(t["text"] for t in self.turns)

    @property
    def last_text(self) -> str:
        return self.turns[-1]["text"]

    @property
    def is_multi_turn(self) -> bool:
        return len(self.turns) > 1


@dataclass(frozen=True)
class CorpusDialogue:
    dialogue_id: str
    turns: list[dict]  # [{"speaker": str, "text": str, ...}] as in the file
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return conversation_text(self.turns)


def conversation_text(turns: Sequence[dict]) -> str:
    """A conversation as raw text: the turns' texts in order, one per line (no speaker labels)."""
    return "\n".join(t["text"] for t in turns if isinstance(t.get("text"), str) and t["text"].strip())


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


class EvalFileError(ValueError):
    """A QUERIES or CORPUS file with bad lines. ``problems`` is [(line number, problem), ...]."""

    what = "file"

    def __init__(self, source: str, problems: list[tuple[int, str]]):
        self.source = source
        self.problems = list(problems)
        shown = [f"{source} line {n}: {p}" if n else f"{source}: {p}" for n, p in problems[:MAX_REPORTED_PROBLEMS]]
        more = len(problems) - len(shown)
        head = f"{source}: {len(problems)} bad line(s) in the {self.what}" if len(problems) > 1 else None
        lines = ([head] if head else []) + shown + ([f"... and {more} more"] if more > 0 else [])
        super().__init__("\n".join(lines))


class QueryFileError(EvalFileError):
    what = "queries file"


class CorpusFileError(EvalFileError):
    what = "corpus file"


class _Bad(Exception):
    pass


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if not value.strip() else "a string"
    if isinstance(value, list):
        return "an empty list" if not value else "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


# --------------------------------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------------------------------


def _turns(value: Any, field_name: str = "turns") -> list[dict]:
    if not isinstance(value, list) or not value:
        raise _Bad(f"'{field_name}' must be a non-empty list of {{\"speaker\", \"text\"}} objects, got {_kind_of(value)}")
    out = []
    for i, t in enumerate(value):
        if not isinstance(t, dict):
            raise _Bad(f"'{field_name}'[{i}] must be an object with \"speaker\" and \"text\", got {_kind_of(t)}")
        if not _nonempty_str(t.get("speaker")):
            raise _Bad(f"'{field_name}'[{i}].speaker must be a non-empty string, got {_kind_of(t.get('speaker'))}")
        if not _nonempty_str(t.get("text")):
            raise _Bad(f"'{field_name}'[{i}].text must be a non-empty string, got {_kind_of(t.get('text'))}")
        out.append(dict(t))
    return out


def parse_query(obj: Any) -> EvalQuery:
    """One decoded QUERIES line as an ``EvalQuery``; raises ``ValueError`` with the problem (no line number)."""
    try:
        return _parse_query(obj)
    except _Bad as exc:
        raise ValueError(str(exc)) from None


def _parse_query(obj: Any) -> EvalQuery:
    if not isinstance(obj, dict):
        raise _Bad(f"a query must be a JSON object, got {_kind_of(obj)}")
    qid = obj.get("query_id")
    if not _nonempty_str(qid):
        raise _Bad(f"'query_id' must be a non-empty string, got {_kind_of(qid) if 'query_id' in obj else 'nothing'}")
    has_turns, has_text = obj.get("turns") is not None, obj.get("text") is not None
    if has_turns and has_text:
        raise _Bad(f"query {qid!r} gives both 'turns' and 'text'; give one of them")
    if not has_turns and not has_text:
        raise _Bad(f"query {qid!r} has neither 'turns' nor 'text'")
    if has_turns:
        turns = _turns(obj["turns"])
    else:
        if not _nonempty_str(obj["text"]):
            raise _Bad(f"query {qid!r}: 'text' must be a non-empty string, got {_kind_of(obj['text'])}")
        turns = [{"speaker": "user", "text": obj["text"]}]
    gold = obj.get("gold")
    if not isinstance(gold, list) or not gold:
        raise _Bad(f"query {qid!r}: 'gold' must be a non-empty list of dialogue ids, got "
                   f"{_kind_of(gold) if 'gold' in obj else 'nothing'}")
    for i, g in enumerate(gold):
        if not _nonempty_str(g):
            raise _Bad(f"query {qid!r}: 'gold'[{i}] must be a non-empty dialogue id string, got {_kind_of(g)}")
    dup = [g for g, n in Counter(gold).items() if n > 1]
    if dup:
        raise _Bad(f"query {qid!r}: 'gold' lists {dup[0]!r} more than once")
    nuggets = obj.get("nuggets")
    if nuggets is not None:
        if not isinstance(nuggets, list):
            raise _Bad(f"query {qid!r}: 'nuggets' must be a list of strings or null, got {_kind_of(nuggets)}")
        for i, n in enumerate(nuggets):
            if not _nonempty_str(n):
                raise _Bad(f"query {qid!r}: 'nuggets'[{i}] must be a non-empty string, got {_kind_of(n)}")
        nuggets = list(nuggets) or None
    kind = obj.get("kind")
    if kind is not None and not _nonempty_str(kind):
        raise _Bad(f"query {qid!r}: 'kind' must be a non-empty string when given, got {_kind_of(kind)}")
    extra = {k: v for k, v in obj.items() if k not in _QUERY_KNOWN}
    return EvalQuery(qid, turns, list(gold), nuggets, kind, extra)


def _decoded_lines(lines: Iterable[str | bytes], problems: list[tuple[int, str]]):
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append((number, f"invalid UTF-8 at byte {exc.start} of the line"))
                continue
        if number == 1:
            raw = raw.lstrip("\ufeff")
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append((number, f"invalid JSON: {exc.msg} (column {exc.colno})"))
        except RecursionError:
            problems.append((number, "invalid JSON: nested too deeply"))


def _read_records(lines, parse, key, what: str) -> tuple[list, list[tuple[int, str]]]:
    """Parsed records and (line, problem) for every bad line: undecodable, unparsable, or a repeated key."""
    problems: list[tuple[int, str]] = []
    out: list = []
    first_line: dict[str, int] = {}
    for number, obj in _decoded_lines(lines, problems):
        try:
            record = parse(obj)
        except _Bad as exc:
            problems.append((number, str(exc)))
            continue
        value = getattr(record, key)
        if value in first_line:
            problems.append((number, f"duplicate {key} {value!r} (first on line {first_line[value]})"))
            continue
        first_line[value] = number
        out.append(record)
    if not out and not problems:
        problems.append((0, f"no {what} (the file is empty or has only blank lines)"))
    return out, problems


def read_queries(lines: Iterable[str | bytes], source: str = "<queries>") -> list[EvalQuery]:
    """Queries from JSONL lines (str or bytes); raises ``QueryFileError`` naming every bad line."""
    out, problems = _read_records(lines, _parse_query, "query_id", "queries")
    if problems:
        raise QueryFileError(source, sorted(problems))
    return out


def _read_lines(path: str | os.PathLike, error: type[EvalFileError]):
    try:
        with open(path, "rb") as fh:
            return fh.read().split(b"\n")
    except OSError as exc:
        raise error(os.fspath(path), [(0, f"cannot read the file: {exc.strerror or exc}")]) from None


def load_queries(path: str | os.PathLike) -> list[EvalQuery]:
    """Read and validate a QUERIES.jsonl file; raises ``QueryFileError`` (a ValueError) on any bad line."""
    return read_queries(_read_lines(path, QueryFileError), source=Path(path).name)


# --------------------------------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------------------------------


def _parse_dialogue(obj: Any) -> CorpusDialogue:
    if not isinstance(obj, dict):
        raise _Bad(f"a conversation must be a JSON object, got {_kind_of(obj)}")
    did = obj.get("dialogue_id")
    if isinstance(did, int) and not isinstance(did, bool):
        did = str(did)  # as the sarag parser does
    if not _nonempty_str(did):
        raise _Bad(f"'dialogue_id' must be a non-empty string, got {_kind_of(obj.get('dialogue_id'))}")
    raw_turns = obj.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        raise _Bad(f"dialogue {did!r}: 'turns' must be a non-empty list, got {_kind_of(raw_turns)}")
    turns = []
    for i, t in enumerate(raw_turns):
        if not isinstance(t, dict) or not isinstance(t.get("text"), str):
            raise _Bad(f"dialogue {did!r}: turns[{i}] must be an object with a string 'text'")
        turns.append(dict(t))
    if not any(t["text"].strip() for t in turns):
        raise _Bad(f"dialogue {did!r}: every turn has empty text")
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise _Bad(f"dialogue {did!r}: 'metadata' must be an object, got {_kind_of(metadata)}")
    return CorpusDialogue(did, turns, dict(metadata))


def read_corpus(lines: Iterable[str | bytes], source: str = "<corpus>") -> list[CorpusDialogue]:
    """Conversations from generic JSONL lines; raises ``CorpusFileError`` naming every bad line."""
    out, problems = _read_records(lines, _parse_dialogue, "dialogue_id", "conversations")
    if problems:
        raise CorpusFileError(source, sorted(problems))
    return out


def load_corpus(path: str | os.PathLike) -> list[CorpusDialogue]:
    """Read a generic CORPUS.jsonl for evaluation; raises ``CorpusFileError`` (a ValueError) on bad lines.

    Stricter than landing (sarag quarantines a bad record and goes on): an evaluation corpus with a bad
    line would silently score against fewer conversations than the queries' gold assumes.
    """
    return read_corpus(_read_lines(path, CorpusFileError), source=Path(path).name)


def corpus_summary(dialogues: Sequence[CorpusDialogue]) -> dict[str, Any]:
    """Counts for a report header: conversations, turns, and the dialogue ids in file order."""
    return {
        "n_dialogues": len(dialogues),
        "n_turns": sum(len(d.turns) for d in dialogues),
        "dialogue_ids": [d.dialogue_id for d in dialogues],
    }


def check_gold(queries: Sequence[EvalQuery], dialogue_ids: Iterable[str]) -> list[str]:
    """Problems with the queries' gold against a corpus (gold ids missing from it); empty when consistent."""
    known = set(dialogue_ids)
    return [
        f"query {q.query_id!r}: gold dialogue {g!r} is not in the corpus"
        for q in queries
        for g in q.gold
        if g not in known
    ]


# --------------------------------------------------------------------------------------------------
# Converting parsed conversations to the generic format
# --------------------------------------------------------------------------------------------------

# Parser bookkeeping that describes how a record was read, not the conversation.
_BOOKKEEPING = tuple(k for k in READING_KEYS if k != "source_format")


def corpus_record(conversation, source_format: str | None = None, drop_metadata: Sequence[str] = ()) -> dict:
    """One generic CORPUS.jsonl record for a parsed ``sarag_assets.core.conversation.Conversation``.

    Keeps the dialogue id the parser assigned, each turn's speaker label, text, role (explicit, so the
    generic parser resolves the same roles) and timestamp when there is one, and the source metadata
    (including ``_names``, the personal names the source knew, which the generic parser passes on to
    redaction) minus parser bookkeeping and the keys in ``drop_metadata``.
    """
    turns = []
    for t in conversation.turns:
        turn = {"speaker": t.speaker, "text": t.text, "role": t.role}
        if t.ts is not None:
            turn["ts"] = t.ts
        turns.append(turn)
    metadata = {k: v for k, v in conversation.metadata.items() if k not in _BOOKKEEPING and k not in drop_metadata}
    if source_format is not None:
        metadata["source_format"] = source_format
    return {"dialogue_id": conversation.dialogue_id, "turns": turns, "metadata": metadata}
