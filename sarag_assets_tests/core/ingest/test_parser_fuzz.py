"""Generated hostile JSONL and CSV files: every record lands or is quarantined on its own, with a reason a
user can read, and no exception escapes the parser."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sarag_assets.core.ingest.parsers import count_records, parse_file

pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=150, deadline=5000, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# what breaks readers: quotes, separators, line breaks, NUL, invalid UTF-8, lone surrogates, huge numbers
_HOSTILE = st.sampled_from(['"', '""', ",", "\n", "\r", "\r\n", "\x00", "\\", "\ud800", "{", "}", "[", "]",
                            "NaN", "1e999", "9" * 5000, "\ufeff", "\u202e", " ", "true"])
_TEXT = st.lists(st.one_of(st.text(max_size=12), _HOSTILE), max_size=6).map("".join)


def _line_of(value: dict) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


_RECORD = st.fixed_dictionaries({
    "dialogue_id": st.one_of(_TEXT, st.integers(), st.none(), st.booleans()),
    "turns": st.lists(st.fixed_dictionaries({"speaker": st.sampled_from(["customer", "agent", "ann", ""]),
                                             "text": st.one_of(_TEXT, st.integers())}), max_size=3),
}).map(_line_of)
_JSONL_LINE = st.one_of(
    _RECORD,
    _RECORD.map(lambda line: line[:-1] + b', "metadata": {"n": ' + b"7" * 4400 + b"}}"),
    _RECORD.map(lambda line: line[:-1] + b', "metadata": {"n": NaN}}'),
    _RECORD.map(lambda line: line[: len(line) // 2]),  # cut short
    _TEXT.map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.binary(max_size=40),
)
_CELL = st.one_of(_TEXT, st.sampled_from(["c1", "c2", "0", "1", "x", "customer", "agent"]))


def _csv_row(cells: list[str]) -> bytes:
    return ",".join(cells).encode("utf-8", "surrogatepass")


_CSV_ROW = st.lists(_CELL, min_size=1, max_size=6).map(_csv_row)


def _parsed(data: bytes, suffix: str):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"fuzz{suffix}"
        path.write_bytes(data)
        return parse_file(path), count_records(path)


def _assert_each_record_accounted(parsed, records: int) -> None:
    assert parsed.records_landed == records == len(parsed.conversations) + len(parsed.quarantined)
    for row in parsed.quarantined:
        assert "a bug in sarag" not in row.reason, row.reason
        row.reason.encode("utf-8")
        row.raw.encode("utf-8")
    for conversation in parsed.conversations:
        conversation.dialogue_id.encode("utf-8")
        for turn in conversation.turns:
            turn.text.encode("utf-8")


@FUZZ
@given(good=st.lists(st.integers(0, 10_000), max_size=4, unique=True), hostile=st.lists(_JSONL_LINE, max_size=6))
def test_every_jsonl_line_lands_or_is_quarantined_alone(good, hostile):
    lines = [_line_of({"dialogue_id": f"good-{n}", "turns": [{"speaker": "customer", "text": "printer jams"},
                                                             {"speaker": "agent", "text": "clean it"}]})
             for n in good]
    data = b"\n".join(hostile[:2] + lines + hostile[2:]) + b"\n"
    parsed, records = _parsed(data, ".jsonl")
    _assert_each_record_accounted(parsed, records)
    if parsed.records_landed == 1 and parsed.quarantined and parsed.quarantined[0].position == 0:
        return  # not a JSONL file at all (no line of it looks like one): one file-level row
    landed = {c.dialogue_id for c in parsed.conversations}
    assert {f"good-{n}" for n in good} <= landed  # hostile lines never cost a good one
    positions = sorted([c.position for c in parsed.conversations] + [q.position for q in parsed.quarantined])
    assert len(positions) == len(set(positions))  # one item per line


@FUZZ
@given(good=st.lists(st.integers(0, 10_000), max_size=3, unique=True), hostile=st.lists(_CSV_ROW, max_size=6))
def test_every_csv_conversation_lands_or_is_quarantined_alone(good, hostile):
    rows = [b"conversation_id,turn,speaker,text"] + hostile[:3]  # an open quote before the good rows, too
    for n in good:
        rows += [f"good-{n},0,customer,printer jams".encode(), f"good-{n},1,agent,clean it".encode()]
    parsed, records = _parsed(b"\n".join(rows + hostile[3:]) + b"\n", ".csv")
    _assert_each_record_accounted(parsed, records)
    landed = {c.dialogue_id for c in parsed.conversations}
    quarantined = " ".join(q.reason for q in parsed.quarantined)
    for n in good:  # a good conversation lands, unless a hostile row claims its id and so spoils it
        assert f"good-{n}" in landed or f"good-{n}" in quarantined
