"""Parsers: one landed file in, conversations and quarantine rows out.

Supported formats (``FORMATS``), sniffed from the content, never from the extension alone:

- ``jsonl``: one conversation per line,
  ``{"dialogue_id": str, "turns": [{"speaker", "text", "ts"?, "role"?}], "metadata"?: {}}``.
  Position = 1-based line number; blank lines are not records. An integer ``dialogue_id`` is
  accepted and converted to its decimal string; any other non-string id is quarantined.
- ``msdialog``: MSDialog JSON, ``{id: {title, category, utterances: [{actor_type, utterance,
  utterance_pos, is_answer, user_id, utterance_time, ...}]}}``. Position = 0-based record index.
- ``ubuntu_csv``: Ubuntu Dialogue Corpus CSV (``dialogueID,date,from,to,text``); rows sharing a
  dialogueID form one conversation (first-seen order); the user who opens it is ``user``, every
  other speaker ``agent``. Position = 1-based line of the conversation's first row.
- ``turn_csv``: per-turn CSV (``conversation_id,turn,speaker,text[,timestamp][,role]``); turns are
  sorted by ``turn``. Position = 1-based line of the conversation's first row.
- ``abcd``: ABCD JSON list; ``original`` [[speaker, text]] pairs are used, ``action`` rows are system
  events and are dropped (counted in ``metadata["system_actions"]``). Position = record index.
- ``tweetsumm``: TweetSumm as distributed by DialogStudio (a JSON list of ``{dialog, summaries}``).
- ``multidogo``: MultiDoGO as distributed by DialogStudio (``{id: {..., log: [...]}}``).

Contract: ``iter_records`` yields exactly one item (a ``Conversation`` or a ``QuarantineRecord``) per
landed record, in file order; ``parse_file`` never raises for bad content. A file that is not a
conversation file at all (binary, empty, unreadable, no known format, a single-document JSON that does
not parse) becomes one file-level ``QuarantineRecord`` at position 0.

Speaker roles for ``jsonl`` and ``turn_csv`` are resolved by ``resolve_roles``: an explicit per-turn
``role`` wins, then a vocabulary of role words (``role_of_label``); a conversation whose every label is
outside the vocabulary (a thread of usernames) takes its opener as ``user`` and the rest as ``agent``;
a mix of role words and unknown labels is ambiguous and quarantined.

Every conversation's metadata carries ``_names`` (personal names/handles known to the source, used
for redaction later), ``dropped_empty_turns`` and ``role_inference``. Texts are kept as they are, in
Unicode's composed form (NFC), and so are speakers and names.

No Dagster here. Paths are local paths (``str`` or ``os.PathLike``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from sarag_assets.core.conversation import Conversation, ParsedFile, QuarantineRecord
from sarag_assets.core.ingest.csv_formats import _csv_records
from sarag_assets.core.ingest.document_formats import _document_records
from sarag_assets.core.ingest.drafts import (
    DEFAULT_MAX_RECORD_BYTES,
    FORMATS,
    _Bad,
    _Draft,
    _FileLevel,
    _finish,
    _quarantine,
)
from sarag_assets.core.ingest.jsonl_format import _iter_lines, _jsonl_records
from sarag_assets.core.ingest.sniffing import _open, _read_head, _sniff

# --------------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------------


def _check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _items(
    path: str | os.PathLike, fmt: str | None, max_record_bytes: int, source: str
) -> Iterator[Conversation | QuarantineRecord]:
    """The landed records of a file; raises _FileLevel (before or during iteration) for file-level failures."""
    head = _read_head(path)
    fmt = fmt or _sniff(head)
    seen: dict[str, int] = {}
    with _open(path) as fh:
        if fmt == "jsonl":
            records: Iterator[_Draft | _Bad] = _jsonl_records(fh, max_record_bytes)
        elif fmt in ("ubuntu_csv", "turn_csv"):
            records = _csv_records(fh, fmt, max_record_bytes)
        else:
            records = _document_records(fh, fmt, max_record_bytes)
        for rec in records:
            if isinstance(rec, _Bad):
                yield _quarantine(source, rec.position, rec.reason, rec.raw)
            else:
                yield _finish(rec, seen, source)


def _source_name(path: str | os.PathLike, source_name: str | None) -> str:
    return source_name or os.path.basename(os.fspath(path))


def iter_records(
    path: str | os.PathLike,
    fmt: str | None = None,
    *,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    source_name: str | None = None,
) -> Iterator[Conversation | QuarantineRecord]:
    """Yield one ``Conversation`` or ``QuarantineRecord`` per landed record, in file order.

    The ordinal of an item is its index in this iteration (chunk k of a big file takes ordinals
    [start, end)). A file that is not a conversation file yields a single file-level quarantine row
    (position 0); so does a read error part-way through (after the items already yielded).
    """
    _check_format(fmt)
    source = _source_name(path, source_name)
    try:
        yield from _items(path, fmt, max_record_bytes, source)
    except _FileLevel as exc:
        yield _quarantine(source, 0, exc.reason, exc.raw)


def parse_file(
    path: str | os.PathLike,
    fmt: str | None = None,
    *,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    source_name: str | None = None,
    record_range: tuple[int, int] | None = None,
) -> ParsedFile:
    """Parse one landed file (or the ordinals ``record_range = (start, end)`` of it).

    Never raises for bad content: a file that is not a conversation file at all (binary, empty,
    unreadable or vanished, no known format, a single-document JSON that does not parse) becomes one
    file-level quarantine row at position 0 with ``records_landed = 1``; otherwise
    ``records_landed = len(conversations) + len(quarantined)`` = the records in range.
    An unexpected internal error is also reported as a file-level quarantine row, never raised.
    Integer dialogue ids are accepted and converted to their decimal string.
    Raises ``ValueError`` only for an unknown ``fmt`` or a malformed ``record_range``.
    """
    _check_format(fmt)
    source = _source_name(path, source_name)
    start, end = 0, None
    if record_range is not None:
        start, end = record_range
        if start < 0 or end < start:
            raise ValueError(f"bad record_range {record_range!r}")
    conversations: list[Conversation] = []
    quarantined: list[QuarantineRecord] = []
    detected = fmt
    try:
        if detected is None:
            detected = _sniff(_read_head(path))
        items = _items(path, detected, max_record_bytes, source)
        try:
            for ordinal, item in enumerate(items):
                if end is not None and ordinal >= end:
                    break
                if ordinal < start:
                    continue
                if isinstance(item, Conversation):
                    conversations.append(item)
                else:
                    quarantined.append(item)
        finally:
            items.close()
    except _FileLevel as exc:
        return ParsedFile(source, detected or "unknown", 1, [], [_quarantine(source, 0, exc.reason, exc.raw)])
    except Exception as exc:  # a parser bug must not stop the run; keep the file in quarantine
        reason = f"unexpected parser error (a bug in sarag, please report): {type(exc).__name__}: {exc}"
        return ParsedFile(source, detected or "unknown", 1, [], [_quarantine(source, 0, reason[:500], b"")])
    return ParsedFile(source, detected, len(conversations) + len(quarantined), conversations, quarantined)


def refused_file(path: str | os.PathLike, source_name: str, reason: str) -> ParsedFile:
    """A file landed only to be quarantined whole (a name the inbox scanner skips): one file-level row with
    the reason and the file's first bytes; its content is not read as conversations."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        head = b""
    return ParsedFile(source_name, "unknown", 1, [], [_quarantine(source_name, 0, reason, head)])


def count_records(
    path: str | os.PathLike, fmt: str | None = None, *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
) -> int:
    """How many items ``iter_records`` would yield (1 for a file that is not a conversation file).

    Cheap for JSONL (counts non-blank lines without parsing them); other formats are parsed.
    """
    _check_format(fmt)
    try:
        head = _read_head(path)
        fmt = fmt or _sniff(head)
        if fmt == "jsonl":
            with _open(path) as fh:
                return sum(1 for _ in _iter_lines(fh, max_record_bytes))
    except _FileLevel:
        return 1
    return sum(1 for _ in iter_records(path, fmt, max_record_bytes=max_record_bytes))
