"""The generic JSONL format: one conversation per line, read line by line within the size limit."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from json import JSONDecodeError
from typing import Any

from sarag_assets.core.ingest.drafts import (
    _RAW_BYTES,
    _UTF8_BOM,
    _Bad,
    _check_speaker,
    _check_text,
    _Draft,
    _kind,
    _norm_id,
    _norm_ts,
    _short,
)
from sarag_assets.core.ingest.json_numbers import NumberReader
from sarag_assets.core.ingest.roles import _explicit_role, _RawTurn, _Reject
from sarag_assets.core.ingest.sniffing import _read_error

# --------------------------------------------------------------------------------------------------
# JSONL
# --------------------------------------------------------------------------------------------------


@dataclass
class _Line:
    number: int  # 1-based
    offset: int  # byte offset of the line's content in the file
    data: bytes  # the line without its line ending (only the head for an oversized line)
    size: int  # bytes of the line without its line ending
    oversized: bool
    terminated: bool  # ended with a newline


def _iter_lines(fh, max_bytes: int) -> Iterator[_Line]:
    """Non-blank lines, never holding more than max_bytes (+1) of one line in memory."""
    number = 0
    offset = 0
    while True:
        try:
            chunk = fh.readline(max_bytes + 2)
        except OSError as exc:
            raise _read_error(None, exc) from exc
        if not chunk:
            return
        number += 1
        start = offset
        data = chunk
        total = len(chunk)
        oversized = False
        if not chunk.endswith(b"\n") and len(chunk) == max_bytes + 2:
            oversized = True
            data = chunk[:_RAW_BYTES]
            while not chunk.endswith(b"\n"):
                try:
                    chunk = fh.readline(1 << 20)
                except OSError as exc:
                    raise _read_error(None, exc) from exc
                if not chunk:
                    break
                total += len(chunk)
        offset += total
        terminated = chunk.endswith(b"\n")
        size = total - (1 if terminated else 0)
        if not oversized:
            data = data.rstrip(b"\r\n")
            size = len(data)
            if number == 1 and data.startswith(_UTF8_BOM):
                data = data[len(_UTF8_BOM) :]
                start += len(_UTF8_BOM)
                size = len(data)
            if not data.strip():
                continue
            if size > max_bytes:
                oversized = True
                data = data[:_RAW_BYTES]
        yield _Line(number, start, data, size, oversized, terminated)


def _jsonl_records(fh, max_bytes: int) -> Iterator[_Draft | _Bad]:
    reader = NumberReader()
    for line in _iter_lines(fh, max_bytes):
        pos = line.number
        if line.oversized:
            reason = f"line is {line.size:,} bytes, over the {max_bytes:,}-byte record limit; not parsed"
            yield _Bad(pos, reason, line.data)
            continue
        nul = line.data.find(b"\x00")
        if nul >= 0:
            yield _Bad(pos, f"NUL byte at byte offset {line.offset + nul} of the file (byte {nul} of line {pos}): "
                            "not text", line.data)
            continue
        try:
            text = line.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield _Bad(
                pos,
                f"invalid UTF-8 at byte offset {line.offset + exc.start} of the file "
                f"(byte {exc.start} of line {pos}): {exc.reason}",
                line.data,
            )
            continue
        try:
            obj = reader.loads(text)
        except JSONDecodeError as exc:
            hint = "" if line.terminated else " (last line has no line ending: the file is probably truncated)"
            yield _Bad(pos, f"invalid JSON{hint}: {exc.msg} (column {exc.colno})", text)
            continue
        except RecursionError:
            yield _Bad(pos, "invalid JSON: nested too deeply", text)
            continue
        if reader.reason():
            yield _Bad(pos, reader.reason(), text)
            continue
        try:
            yield _jsonl_draft(pos, obj, text)
        except _Reject as exc:
            yield _Bad(pos, str(exc), text)


def _jsonl_draft(pos: int, obj: Any, raw: str) -> _Draft:
    if not isinstance(obj, dict):
        raise _Reject(f"record is {_kind(obj, json_prefix=True)}, expected an object")
    dialogue_id = _norm_id(obj.get("dialogue_id"))
    if "turns" not in obj:
        raise _Reject(f"dialogue {dialogue_id!r} has no 'turns' field")
    raw_turns = obj["turns"]
    if not isinstance(raw_turns, list):
        raise _Reject(f"dialogue {dialogue_id!r}: 'turns' is {_kind(raw_turns)}, expected a list")
    if not raw_turns:
        raise _Reject(f"dialogue {dialogue_id!r} has no turns ('turns' is empty)")
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise _Reject(f"dialogue {dialogue_id!r}: 'metadata' is {_kind(metadata)}, expected an object")
    turns, bad_ts = _generic_turns(raw_turns, dialogue_id)
    return _Draft(pos, raw, dialogue_id, turns, dict(metadata), bad_timestamps=bad_ts, fields=dict(metadata))


def _generic_turns(raw_turns: list, dialogue_id: str) -> tuple[list[_RawTurn], int]:
    turns: list[_RawTurn] = []
    bad_ts = 0
    for i, t in enumerate(raw_turns):
        where = f"dialogue {dialogue_id!r} turns[{i}]"
        if not isinstance(t, dict):
            raise _Reject(f"{where} is {_kind(t)}, expected an object")
        speaker = _check_speaker(where, t.get("speaker"))
        if "text" not in t:
            raise _Reject(f"{where} has no 'text'")
        text = _check_text(where, t["text"])
        role = None
        if t.get("role") is not None:
            role = _explicit_role(t["role"])
            if role is None:
                raise _Reject(f"{where}: role {_short(t['role'])} is neither 'user' nor 'agent'")
        ts, invalid = _norm_ts(t.get("ts"))
        bad_ts += invalid
        accepted = t.get("accepted") or False  # null, as database exports write it, is no mark
        if not isinstance(accepted, bool):
            raise _Reject(f"{where}: accepted {_short(accepted)} is neither true nor false")
        turns.append(_RawTurn(speaker, text, ts, role, accepted))
    return turns, bad_ts
