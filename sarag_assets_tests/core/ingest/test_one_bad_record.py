"""One bad record costs that record only: every good record of the file lands, the bad one is quarantined
alone with its position and a reason a user understands, and nothing is swallowed into another record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sarag_assets.core.ingest.parsers import count_records, parse_file
from sarag_assets_tests.paths import SAMPLES

ABCD = SAMPLES / "abcd" / "abcd_sample.json"


def turns(dialogue_id: str, ask: str = "my router drops wifi", fix: str = "move it to channel 6") -> dict:
    return {"dialogue_id": dialogue_id, "turns": [{"speaker": "customer", "text": ask},
                                                  {"speaker": "agent", "text": fix}]}


def jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def landed_and_quarantined(path: Path) -> tuple[list[str], list[tuple[int, str]]]:
    parsed = parse_file(path)
    records = count_records(path)
    assert parsed.records_landed == records == len(parsed.conversations) + len(parsed.quarantined)
    for row in parsed.quarantined:
        assert "a bug in sarag" not in row.reason
    return [c.dialogue_id for c in parsed.conversations], [(q.position, q.reason) for q in parsed.quarantined]


@pytest.mark.parametrize("value, reason", [
    ("1" * 5000, "an integer of 5,000 digits"),
    ("NaN", "NaN"), ("-Infinity", "-Infinity"), ("1e999", "1e999")])
def test_a_number_json_cannot_hold_quarantines_its_record_only(tmp_path, value, reason):
    bad = json.dumps(turns("b"))[:-1] + f', "metadata": {{"score": {value}}}}}'
    landed, quarantined = landed_and_quarantined(jsonl(tmp_path / "n.jsonl", [
        json.dumps(turns("a")), bad, json.dumps(turns("c"))]))
    assert landed == ["a", "c"]
    [(position, why)] = quarantined
    assert position == 2 and why.startswith("invalid JSON: ") and reason in why


def test_a_bad_number_in_one_entry_of_a_json_document_quarantines_that_entry_only(tmp_path):
    entries = json.loads(ABCD.read_text(encoding="utf-8"))
    entries[1]["scenario"]["score"] = "__BIG__"
    path = tmp_path / "abcd.json"
    path.write_text(json.dumps(entries).replace('"__BIG__"', "9" * 5000))
    landed, quarantined = landed_and_quarantined(path)
    assert len(landed) == len(entries) - 1
    [(position, why)] = quarantined
    assert position == 1 and why.startswith("invalid JSON: an integer of 5,000 digits")


def test_an_unclosed_quote_in_a_turn_csv_quarantines_what_it_cannot_read_and_keeps_the_rest(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_text("conversation_id,turn,speaker,text\n"
                    'c1,0,customer,"unterminated quote\n'
                    "c1,1,agent,ok\n"
                    "c2,0,customer,hello my printer jams\n"
                    "c2,1,agent,clean the roller\n")
    landed, quarantined = landed_and_quarantined(path)
    assert landed == ["c2"]  # c1 lost its first turn: it is not landed as if it had only the second
    [(position, why)] = quarantined
    assert position == 2 and "unclosed quote" in why and "line 2" in why


def test_a_quoted_turn_over_several_lines_still_lands_whole(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_text("conversation_id,turn,speaker,text\n"
                    'c1,0,customer,"my printer\njams, ""always""\non page 2"\n'
                    "c1,1,agent,clean the roller\n")
    parsed = parse_file(path)
    assert [t.text for t in parsed.conversations[0].turns] == ['my printer\njams, "always"\non page 2',
                                                                "clean the roller"]


def test_a_quote_closed_lines_later_does_not_swallow_the_rows_between(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_text("conversation_id,turn,speaker,text\n"
                    'c1,0,customer,"unterminated quote\n'
                    "c2,0,customer,hello my printer jams\n"
                    "c2,1,agent,clean the roller\n"
                    'c3,0,customer,"quoted" wifi drops\n'
                    "c3,1,agent,restart it\n")
    landed, quarantined = landed_and_quarantined(path)
    assert "c2" in landed and all("printer jams" not in why for _, why in quarantined)
    assert any(position == 2 and "line 2" in why for position, why in quarantined)


def nul_jsonl(tmp_path: Path, nul_at_line: int, lines: int = 81) -> Path:
    records = [json.dumps(turns(f"d{i}")) for i in range(lines)]
    records[nul_at_line] = records[nul_at_line].replace("wifi", "wi\x00fi")
    return jsonl(tmp_path / "nul.jsonl", records)


@pytest.mark.parametrize("nul_at_line", [0, 2, 70])  # all in the first 8 KB
def test_a_nul_byte_in_a_jsonl_file_quarantines_its_line_wherever_it_is(tmp_path, nul_at_line):
    landed, quarantined = landed_and_quarantined(nul_jsonl(tmp_path, nul_at_line))
    assert len(landed) == 80
    [(position, why)] = quarantined
    assert position == nul_at_line + 1 and "NUL byte" in why


def test_a_nul_byte_in_a_csv_quarantines_its_conversation_only(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_bytes(b"conversation_id,turn,speaker,text\n"
                     b"c1,0,customer,my printer\x00 jams\nc1,1,agent,clean the roller\n"
                     b"c2,0,customer,wifi drops\nc2,1,agent,restart it\n")
    landed, quarantined = landed_and_quarantined(path)
    assert landed == ["c2"]
    [(position, why)] = quarantined
    assert position == 2 and "NUL byte" in why and "line 2" in why


def test_an_id_holding_a_lone_surrogate_is_quarantined_not_changed(tmp_path):
    landed, quarantined = landed_and_quarantined(jsonl(tmp_path / "s.jsonl", [
        json.dumps(turns("ok")), json.dumps(turns("ab\ud800"))]))
    assert landed == ["ok"]
    [(position, why)] = quarantined
    assert position == 2 and "dialogue_id" in why and "surrogate" in why
    why.encode("utf-8")
