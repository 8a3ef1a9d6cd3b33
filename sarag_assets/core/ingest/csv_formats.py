"""CSV formats (ubuntu_csv, turn_csv): one row per turn, grouped into conversations."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass, field

from sarag_assets.core.conversation import QUARANTINE_RAW_CHARS
from sarag_assets.core.ingest.drafts import (
    TITLE_KEYS,
    _UTF8_BOM,
    _Bad,
    _check_speaker,
    _Draft,
    _FileLevel,
    _norm_ts,
)
from sarag_assets.core.ingest.roles import _explicit_role, _RawTurn, _Reject
from sarag_assets.core.ingest.sniffing import (
    _CSV_ID_ALIASES,
    _CSV_TEXT_ALIASES,
    _CSV_TS_ALIASES,
    _CSV_TURN_ALIASES,
    _first,
    _read_error,
)

# --------------------------------------------------------------------------------------------------
# CSV (ubuntu_csv, turn_csv)
# --------------------------------------------------------------------------------------------------


@dataclass
class _CsvRow:
    line: int  # first physical line of the row
    values: dict[str, str | None]
    nfields: int


@dataclass
class _CsvGroup:
    gid: str
    line: int
    rows: list[_CsvRow] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    raw_chars: int = 0
    size: int = 0
    problem: str | None = None


class _LineFeed:
    """Decoded physical lines for csv.reader, remembering byte sizes and UTF-8 errors per line."""

    def __init__(self, fh):
        self.fh = fh
        self.number = 0  # the last line handed out
        self.offset = 0
        self.sizes: dict[int, int] = {}
        self.errors: dict[int, str] = {}
        self.last: dict[int, str] = {}
        self.read = 0  # the last line read from the file (past `number` while lines are read again)

    def __iter__(self):
        return self

    def again_from(self, number: int) -> None:
        """Hand out the lines from `number` on again (they are still held: not taken yet)."""
        self.number = number - 1

    def __next__(self) -> str:
        if self.number < self.read:
            self.number += 1
            return self.last[self.number]
        try:
            data = self.fh.readline()
        except OSError as exc:
            raise _read_error(None, exc) from exc
        if not data:
            raise StopIteration
        self.number += 1
        if self.number == 1 and data.startswith(_UTF8_BOM):
            data = data[len(_UTF8_BOM) :]
            self.offset += len(_UTF8_BOM)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = data.decode("utf-8", errors="surrogateescape")
            self.errors[self.number] = (
                f"invalid UTF-8 at byte offset {self.offset + exc.start} of the file (line {self.number})"
            )
        nul = data.find(b"\x00")
        if nul >= 0:
            self.errors[self.number] = f"NUL byte at byte offset {self.offset + nul} of the file (line {self.number})"
        self.offset += len(data)
        self.read = self.number
        self.sizes[self.number] = len(data)
        self.last[self.number] = text
        return text

    def take(self, first: int, last: int) -> tuple[int, str | None, str]:
        """Size, first UTF-8 error and text of lines first..last (forgotten afterwards)."""
        size, error, parts = 0, None, []
        for n in range(first, last + 1):
            size += self.sizes.pop(n, 0)
            error = error or self.errors.pop(n, None)
            parts.append(self.last.pop(n, ""))
        return size, error, "".join(parts)


def _csv_records(fh, fmt: str, max_bytes: int) -> Iterator[_Draft | _Bad]:
    if csv.field_size_limit() < max_bytes * 2:
        csv.field_size_limit(max_bytes * 2)
    feed = _LineFeed(fh)
    reader = csv.reader(feed)
    try:
        header_row = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise _FileLevel(f"unreadable CSV header: {exc}") from exc
    feed.take(1, reader.line_num)
    header = [h.strip().lower() for h in header_row]
    shown = {h: raw.strip() for h, raw in zip(header, header_row)}  # column names as the file spells them
    if fmt == "ubuntu_csv":
        cols = {
            "id": "dialogueid",
            "turn": None,
            "speaker": "from",
            "text": "text",
            "ts": "date",
            "role": None,
            "to": "to",
            "title": None,
            "accepted": None,
        }
    else:
        cols = {
            "id": _first(header, _CSV_ID_ALIASES),
            "turn": _first(header, _CSV_TURN_ALIASES),
            "speaker": "speaker",
            "text": _first(header, _CSV_TEXT_ALIASES),
            "ts": _first(header, _CSV_TS_ALIASES),
            "role": "role" if "role" in header else None,
            "to": None,
            "title": _first(header, TITLE_KEYS),  # a ticket's subject, on any of its rows
            "accepted": "accepted" if "accepted" in header else None,
        }
    required = [cols["id"], cols["speaker"], cols["text"]] + ([cols["turn"]] if fmt == "turn_csv" else [])
    missing = [c for c in required if c is None or c not in header]
    if missing:
        raise _FileLevel(f"CSV header {header_row!r} lacks the column(s) {missing} needed for {fmt}")
    index = {name: header.index(name) for name in set(cols.values()) if name and name in header}
    if fmt == "turn_csv":  # a ticket export's other columns may be the ticket's fields (`_ticket_fields`)
        index = {name: i for i, name in reversed(list(enumerate(header))) if name} | index

    groups: dict[str, _CsvGroup] = {}
    order: list[_CsvGroup | _Bad] = []

    def group_of(gid: str, line: int) -> _CsvGroup:
        group = groups.get(gid)
        if group is None:
            group = groups[gid] = _CsvGroup(gid, line)
            order.append(group)
        return group

    def unclosed(first_line: int, last_line: int, problem: str) -> None:
        """Quarantine the row's first line alone and read the lines after it again: a quote that does not
        close would otherwise swallow the rows after it into one field."""
        feed.again_from(first_line + 1)
        _, _, text = feed.take(first_line, first_line)
        reason = (f"row at line {first_line} {problem}; it cannot be read, and lines {first_line + 1}-{last_line} "
                  "are read again as rows")
        gid = _first_cell(text, index.get(cols["id"]))
        if gid:  # the conversation lost a turn: it is quarantined whole, not landed without it
            group = group_of(gid, first_line)
            group.problem = group.problem or reason
            if group.raw_chars < QUARANTINE_RAW_CHARS:
                group.raw.append(text)
                group.raw_chars += len(text)
        else:
            order.append(_Bad(first_line, reason, text))

    prev_line = feed.number
    while True:
        reader = csv.reader(feed)  # one per row: after a resynchronization lines are handed out again
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            first_line = prev_line + 1
            if feed.number > first_line:
                unclosed(first_line, feed.number, f"opens a quoted field that is not read as CSV ({exc})")
                prev_line = first_line
                continue
            _, _, text = feed.take(first_line, feed.number)
            order.append(_Bad(first_line, f"unreadable CSV row at line {first_line}: {exc}", text))
            prev_line = feed.number
            continue
        first_line, prev_line = prev_line + 1, feed.number
        if prev_line > first_line and not _closes_its_quotes(feed, first_line, prev_line):
            unclosed(first_line, prev_line, "opens a quoted field that is never closed (an unclosed quote)")
            prev_line = first_line
            continue
        size, error, text = feed.take(first_line, prev_line)
        if not row or all(not c.strip() for c in row):
            continue
        values = {name: (row[i] if i < len(row) else None) for name, i in index.items()}
        gid = values.get(cols["id"])
        if gid is None or not gid.strip():
            order.append(_Bad(first_line, f"row at line {first_line} has no {shown[cols['id']]}", text))
            continue
        group = group_of(gid, first_line)
        group.rows.append(_CsvRow(first_line, values, len(row)))
        group.size += size
        if group.raw_chars < QUARANTINE_RAW_CHARS:
            group.raw.append(text)
            group.raw_chars += len(text)
        if group.problem is None:
            if error:
                group.problem = error
            elif any(values.get(c) is None for c in required):
                group.problem = f"row at line {first_line} has {len(row)} fields, the header has {len(header)}"
    for item in order:
        if isinstance(item, _Bad):
            yield item
            continue
        gid = item.gid
        raw = "".join(item.raw)
        if item.problem:
            yield _Bad(item.line, f"dialogue {gid!r}: {item.problem}", raw)
        elif item.size > max_bytes:
            yield _Bad(
                item.line, f"dialogue {gid!r} is {item.size:,} bytes, over the {max_bytes:,}-byte record limit", raw
            )
        else:
            try:
                yield _csv_draft(fmt, gid, item, cols, raw)
            except _Reject as exc:
                yield _Bad(item.line, str(exc), raw)


def _closes_its_quotes(feed: _LineFeed, first: int, last: int) -> bool:
    """Whether a row over several lines holds quoted fields with line breaks, not a quote left open that
    swallowed the rows after it: read strictly, each quote closes before the end of the file, where a
    field may end."""
    lines = [feed.last[n] for n in range(first, last + 1)]
    try:
        rows = list(csv.reader(lines, strict=True))
    except csv.Error:
        return False
    return len(rows) == 1


def _first_cell(text: str, column: int | None) -> str | None:
    """The cell of `column` in one line read alone, or None."""
    try:
        row = next(csv.reader([text]))
    except (csv.Error, StopIteration):
        return None
    cell = row[column] if column is not None and column < len(row) else None
    return cell if cell and cell.strip() else None


def _csv_draft(fmt: str, gid: str, group: _CsvGroup, cols: dict[str, str | None], raw: str) -> _Draft:
    rows = group.rows
    if fmt == "turn_csv":
        keyed = []
        for r in rows:
            value = (r.values.get(cols["turn"]) or "").strip()  # type: ignore[arg-type]
            try:
                keyed.append((int(value), r))
            except ValueError:
                raise _Reject(
                    f"dialogue {gid!r}: row at line {r.line} has {cols['turn']} {value!r}, expected an integer"
                ) from None
        keyed.sort(key=lambda kr: kr[0])
        rows = [r for _, r in keyed]
    turns: list[_RawTurn] = []
    names: list[str] = []
    metadata: dict[str, str] = {}
    bad_ts = 0
    for r in rows:
        where = f"dialogue {gid!r} row at line {r.line}"
        speaker = _check_speaker(where, r.values.get(cols["speaker"]))  # type: ignore[arg-type]
        text = r.values.get(cols["text"]) or ""  # type: ignore[arg-type]
        ts, invalid = _norm_ts(r.values.get(cols["ts"])) if cols["ts"] else (None, False)  # type: ignore[arg-type]
        bad_ts += invalid
        role = None
        if cols["role"] and (r.values.get(cols["role"]) or "").strip():
            role = _explicit_role(r.values[cols["role"]])
            if role is None:
                raise _Reject(f"{where}: role {r.values[cols['role']]!r} is neither 'user' nor 'agent'")
        if cols["to"] and (r.values.get(cols["to"]) or "").strip():
            names.append(r.values[cols["to"]].strip())  # type: ignore[union-attr]
        title = (r.values.get(cols["title"]) or "").strip() if cols["title"] else ""
        if title and "title" not in metadata:
            metadata["title"] = title
        accepted = _accepted(where, r.values.get(cols["accepted"])) if cols["accepted"] else False
        turns.append(_RawTurn(speaker, text, ts, role, accepted))
    inference = None
    if fmt == "ubuntu_csv":
        kept = [t for t in turns if t.text.strip()]
        opener = kept[0].speaker if kept else None
        for t in turns:
            t.role = "user" if t.speaker == opener else "agent"
        names += [t.speaker for t in turns]
        inference = "opener"
    fields = _ticket_fields(rows, cols) if fmt == "turn_csv" else {}
    return _Draft(group.line, raw, gid, turns, metadata, names, inference, bad_ts, fields)


def _ticket_fields(rows: list[_CsvRow], cols: dict[str, str | None]) -> dict[str, str]:
    """The columns beside the turn's own that hold one value for the whole conversation (a ticket's
    product, queue or priority, repeated on each of its rows, or given on one); a column whose value
    changes from turn to turn describes the turns, not the ticket."""
    mapped = {c for c in cols.values() if c}
    fields = {}
    for name in rows[0].values:
        if name in mapped:
            continue
        cells = {(r.values.get(name) or "").strip() for r in rows} - {""}
        if len(cells) == 1:
            fields[name] = cells.pop()
    return fields


_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no", "")


def _accepted(where: str, value: str | None) -> bool:
    """An `accepted` cell: true/1/yes or false/0/no/empty, any case."""
    cell = (value or "").strip().lower()
    if cell not in _TRUE + _FALSE:
        raise _Reject(f"{where}: accepted {value!r} is neither true nor false")
    return cell in _TRUE
