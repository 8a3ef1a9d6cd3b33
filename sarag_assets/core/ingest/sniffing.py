"""Reading a file's head and sniffing its format from the content, never from the extension alone."""

from __future__ import annotations

import codecs
import csv
import json
import os
import re
from typing import Any

from sarag_assets.core.ingest.drafts import (
    _BINARY_RATIO,
    _BINARY_SNIFF_BYTES,
    _SNIFF_BYTES,
    _UTF8_BOM,
    FORMATS,
    _FileLevel,
    _short,
)

# --------------------------------------------------------------------------------------------------
# Reading and sniffing
# --------------------------------------------------------------------------------------------------


def _read_error(path: Any, exc: OSError) -> _FileLevel:
    what = exc.strerror or exc.__class__.__name__
    if isinstance(exc, FileNotFoundError):
        return _FileLevel(f"cannot read file: {what} (it was moved or deleted before or while being read)")
    return _FileLevel(f"cannot read file: {what} ({exc.__class__.__name__})")


def _open(path: Any):
    try:
        return open(path, "rb")
    except OSError as exc:
        raise _read_error(path, exc) from exc


def _read_head(path: Any) -> bytes:
    """First bytes of the file; raises _FileLevel for unreadable, empty or binary files."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError as exc:
        raise _read_error(path, exc) from exc
    if not head:
        raise _FileLevel("empty file (0 bytes)")
    probe = head[:_BINARY_SNIFF_BYTES]
    if probe.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise _FileLevel("UTF-16 encoded file; only UTF-8 text is supported", head)
    if b"\x00" in probe and not _text_records(head):
        raise _FileLevel("binary file (NUL bytes in the first 8 KB)", head)
    text = probe.decode("utf-8", errors="replace")
    if len(probe) == _BINARY_SNIFF_BYTES:
        text = text.rstrip("\ufffd")  # a multi-byte character cut at the probe boundary
    if text:
        odd = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\f\v"))
        if odd / len(text) > _BINARY_RATIO:
            raise _FileLevel(f"binary file ({odd * 100 // len(text)}% non-text characters in the first 8 KB)", head)
    if not head.removeprefix(_UTF8_BOM).strip():
        raise _FileLevel("empty file (only whitespace)", head)
    return head


def _text_records(head: bytes) -> bool:
    """Whether the head is of a format read record by record (JSONL, CSV): a NUL byte in it then costs
    the record holding it, not the file."""
    try:
        return _sniff(head) in ("jsonl", "ubuntu_csv", "turn_csv")
    except _FileLevel:
        return False


_CSV_ID_ALIASES = ("conversation_id", "dialogue_id", "dialog_id", "conv_id")
_CSV_TURN_ALIASES = ("turn", "turn_id", "turn_index", "turn_no", "turn_number")
_CSV_TS_ALIASES = ("timestamp", "ts", "time", "date", "datetime")
_CSV_TEXT_ALIASES = ("text", "utterance", "message")


def _csv_header(head_text: str) -> list[str]:
    first = head_text.splitlines()[0] if head_text else ""
    try:
        row = next(csv.reader([first]))
    except (csv.Error, StopIteration):
        return []
    return [c.strip().lower() for c in row]


def _first(header: list[str], aliases: tuple[str, ...]) -> str | None:
    for a in aliases:
        if a in header:
            return a
    return None


def _sniff(head: bytes) -> str:
    text = head.removeprefix(_UTF8_BOM).decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if not stripped:
        raise _FileLevel("empty file (only whitespace)", head)
    first_char = stripped[0]
    if first_char == "{":
        lines = stripped.splitlines()
        complete = lines[:-1] if len(head) == _SNIFF_BYTES else lines
        for line in complete[:50]:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict) and ("turns" in obj or "dialogue_id" in obj):
                return "jsonl"
        if '"utterances"' in stripped and '"actor_type"' in stripped:
            return "msdialog"
        if '"log"' in stripped and ('"user utterance"' in stripped or '"system response"' in stripped):
            return "multidogo"
        first_line = lines[0]
        if first_line.startswith('{"') and re.search(r'"(?:dialogue_id|turns)"\s*:', first_line):
            return "jsonl"
        raise _FileLevel(
            "JSON object(s) without the fields of a supported format (jsonl needs dialogue_id/turns, "
            "msdialog utterances/actor_type, multidogo log/'user utterance')",
            head,
        )
    if first_char == "[":
        if '"convo_id"' in stripped and ('"original"' in stripped or '"scenario"' in stripped):
            return "abcd"
        if '"dialog"' in stripped and ('"is_agent"' in stripped or '"sentences"' in stripped):
            return "tweetsumm"
        raise _FileLevel(
            "JSON list without the fields of a supported format (abcd needs convo_id/original, "
            "tweetsumm dialog/is_agent/sentences)",
            head,
        )
    header = _csv_header(text)
    if {"dialogueid", "from", "text"} <= set(header):
        return "ubuntu_csv"
    if (
        _first(header, _CSV_ID_ALIASES)
        and _first(header, _CSV_TURN_ALIASES)
        and "speaker" in header
        and _first(header, _CSV_TEXT_ALIASES)
    ):
        return "turn_csv"
    first_line = stripped.splitlines()[0]
    raise _FileLevel(
        f"content matches no supported format ({', '.join(FORMATS)}); first line: {_short(first_line, 80)}", head
    )


def detect_format(path: str | os.PathLike) -> str:
    """The format of a file, sniffed from its content.

    Raises ``NotAConversationFile`` (with the reason as message) for an empty, binary, unreadable or
    unrecognised file.
    """
    return _sniff(_read_head(path))
