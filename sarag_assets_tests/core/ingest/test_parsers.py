"""Parsers: every format from a real or realistic sample, sniffing, and one test per kind of bad input."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from sarag_assets.core.conversation import (
    Conversation,
    NotAConversationFile,
    ParsedFile,
    QuarantineRecord,
)
from sarag_assets.core.ingest import parsers
from sarag_assets.core.ingest.drafts import FORMATS
from sarag_assets.core.ingest.parsers import count_records, iter_records, parse_file
from sarag_assets.core.ingest.raw_dialogues import conversation_rows
from sarag_assets.core.ingest.roles import role_hint_of_label, role_of_label
from sarag_assets.core.ingest.sniffing import detect_format
from sarag_assets_tests.paths import SAMPLES, TEST_DATA

PACKAGE_SAMPLES = SAMPLES
ABCD = PACKAGE_SAMPLES / "abcd" / "abcd_sample.json"
TWEETSUMM = PACKAGE_SAMPLES / "tweetsumm" / "tweetsumm_examples.json"
MULTIDOGO = PACKAGE_SAMPLES / "multidogo" / "multidogo_examples.json"
LOCAL = TEST_DATA / "parsers"
JSONL = LOCAL / "generic_sample.jsonl"
MSDIALOG = LOCAL / "msdialog_sample.json"
UBUNTU = LOCAL / "ubuntu_sample.csv"
TURN_CSV = LOCAL / "turns_sample.csv"

SAMPLES = {
    "jsonl": JSONL,
    "msdialog": MSDIALOG,
    "ubuntu_csv": UBUNTU,
    "turn_csv": TURN_CSV,
    "abcd": ABCD,
    "tweetsumm": TWEETSUMM,
    "multidogo": MULTIDOGO,
}


def conv(dialogue_id, *turns, **extra) -> dict:
    record = {"dialogue_id": dialogue_id, "turns": [{"speaker": s, "text": t} for s, t in turns]}
    record.update(extra)
    return record


GOOD_A = conv("a", ("customer", "Router R7000 reboots every hour."), ("agent", "Update firmware to 1.0.11.116."))
GOOD_B = conv("b", ("user", "Error 0x80070005 on update."), ("support", "Run the troubleshooter."))


def write_lines(path: Path, lines: list[str | bytes | dict | list], *, final_newline: bool = True) -> Path:
    chunks = []
    for line in lines:
        if isinstance(line, (dict, list)):
            line = json.dumps(line)
        chunks.append(line if isinstance(line, bytes) else line.encode("utf-8"))
    data = b"\n".join(chunks) + (b"\n" if final_newline else b"")
    path.write_bytes(data)
    return path


def by_id(parsed: ParsedFile) -> dict[str, Conversation]:
    return {c.dialogue_id: c for c in parsed.conversations}


def hash_before_marks(turns) -> str:
    """A conversation's content hash as it was computed before accepted marks and fields could join it."""
    payload = json.dumps([[t.role, t.speaker, t.text, t.ts] for t in turns], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


def only_reason(parsed: ParsedFile) -> str:
    assert len(parsed.quarantined) == 1, parsed.quarantined
    return parsed.quarantined[0].reason


def assert_accounted(parsed: ParsedFile) -> None:
    assert parsed.records_landed == len(parsed.conversations) + len(parsed.quarantined)


# ---------------------------------------------------------------------------------------------------
# Every format, from real or realistic samples
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_detects_every_format_from_content(fmt):
    assert detect_format(SAMPLES[fmt]) == fmt


@pytest.mark.parametrize("fmt", FORMATS)
def test_detection_ignores_the_extension(fmt, tmp_path):
    misleading = tmp_path / "conversations.txt"
    shutil.copy(SAMPLES[fmt], misleading)
    assert detect_format(misleading) == fmt
    parsed = parse_file(misleading)
    assert parsed.source_format == fmt
    assert parsed.conversations and not parsed.quarantined
    assert_accounted(parsed)


def test_explicit_format_skips_sniffing(tmp_path, monkeypatch):
    def no_sniffing(head):  # pragma: no cover - must not be called
        raise AssertionError("format was sniffed despite the override")

    monkeypatch.setattr(parsers, "_sniff", no_sniffing)
    parsed = parse_file(TURN_CSV, "turn_csv")
    assert parsed.source_format == "turn_csv"
    assert set(by_id(parsed)) == {"t-1", "t-2"}
    assert count_records(TURN_CSV, "turn_csv") == 2


def test_explicit_wrong_format_quarantines_instead_of_raising():
    parsed = parse_file(JSONL, "abcd")
    assert parsed.records_landed == 1 and not parsed.conversations
    reason = only_reason(parsed)
    assert reason.startswith("not a valid abcd JSON document") and "expected a JSON list" in reason
    assert parsed.quarantined[0].position == 0


def test_unknown_format_name_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        parse_file(JSONL, "xml")


def test_abcd_fixture():
    parsed = parse_file(ABCD)
    assert parsed.source_format == "abcd" and parsed.records_landed == 3 and not parsed.quarantined
    raw = json.loads(ABCD.read_text(encoding="utf-8"))
    first = parsed.conversations[0]
    assert first.dialogue_id == "3592" and first.position == 0
    actions = [p for p in raw[0]["original"] if p[0] == "action"]
    assert first.metadata["system_actions"] == len(actions) == 4
    assert len(first.turns) == len(raw[0]["original"]) - len(actions)
    assert all(t.speaker in ("customer", "agent") for t in first.turns)
    assert {t.role for t in first.turns if t.speaker == "customer"} == {"user"}
    assert {t.role for t in first.turns if t.speaker == "agent"} == {"agent"}
    assert first.turns[2].text == "Hi! I need to return an item, can you help me with that?"
    assert "Account has been pulled up" not in " ".join(t.text for t in first.turns)
    assert first.metadata["flow"] == "product_defect" and first.metadata["subflow"] == "return_size"
    assert first.metadata["_names"] == ["crystal minh", "cminh730"]
    assert parsed.conversations[2].metadata["_names"] == ["joyce wu"]  # no username in that scenario


def test_tweetsumm_fixture():
    parsed = parse_file(TWEETSUMM)
    assert parsed.source_format == "tweetsumm" and parsed.records_landed == 5 and not parsed.quarantined
    first = parsed.conversations[0]
    assert first.dialogue_id == "b065262210783596c1fe79466b8f8985"
    assert first.turns[0].role == "user" and first.turns[2].role == "agent"
    assert first.turns[0].text.endswith("for some reason. Any ideas? https://t.co/m9DPQbkftD")
    assert first.turns[2].text.startswith("@135060 Let’s investigate this together. To start,")
    assert [t.role for t in first.turns].count("agent") == 4
    assert first.metadata["abstractive_summaries"]


def test_multidogo_fixture():
    parsed = parse_file(MULTIDOGO)
    assert parsed.source_format == "multidogo" and parsed.records_landed == 5 and not parsed.quarantined
    first = by_id(parsed)["MulDoGO--train--1"]
    assert first.metadata["domain"] == "airline"
    assert first.metadata["original_dialog_id"] == "0db9fadd-de84-43cd-a92f-a61da85844ec"
    assert [t.role for t in first.turns[:4]] == ["user", "agent", "user", "agent"]
    assert first.turns[0].text == "hai"
    assert first.turns[1].text.startswith("Hello there! Sky high customer services")
    assert first.metadata["_names"] == ["ajianu"]  # a token tagged as a name by the slot labels
    assert len(first.turns) == 10


def test_msdialog_sample():
    parsed = parse_file(MSDIALOG)
    assert parsed.source_format == "msdialog" and parsed.records_landed == 2 and not parsed.quarantined
    c14, c27 = parsed.conversations
    assert c14.dialogue_id == "14" and c14.position == 0
    assert c14.metadata["title"].startswith("Windows 10 update KB3140743")
    assert c14.metadata["category"] == "Windows_10"
    assert c14.metadata["answer_utterance_pos"] == [2]
    assert [(t.speaker, t.role) for t in c14.turns] == [
        ("Kenneth Gold", "user"),
        ("Andre Da Costa", "agent"),
        ("Kenneth Gold", "user"),
    ]
    assert c14.turns[0].ts == "2016-02-24T20:44:17"
    assert c14.metadata["_names"] == ["Kenneth Gold", "Andre Da Costa"]
    # utterances listed out of order are sorted by utterance_pos
    assert [t.speaker for t in c27.turns] == ["mlopez", "Vijay_MSFT", "mlopez"]
    assert c27.turns[0].role == "user"
    # the thread's title opens the asker's first post, as the forum shows it
    assert c14.turns[0].text == ("Windows 10 update KB3140743 fails with error 0x80070005\n\nSince yesterday every "
                                 "attempt to install KB3140743 fails with error 0x80070005. I'm on build 10586.104.")
    assert c27.turns[0].text.startswith("Outlook keeps asking for password\n\n")
    assert not c14.turns[1].text.startswith("Windows 10") and not c27.turns[1].text.startswith("Outlook keeps")


def test_a_title_or_subject_in_the_metadata_opens_the_askers_first_turn(tmp_path):
    path = write_lines(tmp_path / "tickets.jsonl", [
        {"dialogue_id": "t1", "metadata": {"Subject": "  Printer  PX-2 jams on page 2 "},
         "turns": [{"speaker": "agent", "text": "Hello, how can I help?"},
                   {"speaker": "customer", "text": "It jams every time."},
                   {"speaker": "customer", "text": "Still there."}]},
        {"dialogue_id": "t2", "metadata": {"title": "VPN drops hourly"},
         "turns": [{"speaker": "customer", "text": "Re: vpn drops hourly\nIt drops at :00."},
                   {"speaker": "agent", "text": "Renew the lease."}]},
        {"dialogue_id": "t3", "metadata": {"title": ["not", "a", "string"]},
         "turns": [{"speaker": "customer", "text": "No title here."}, {"speaker": "agent", "text": "Ok."}]},
        {"dialogue_id": "t4", "metadata": {"title": "Outlook"},
         "turns": [{"speaker": "customer", "text": "My Outlook asks for the password on every start."},
                   {"speaker": "agent", "text": "Clear the saved credentials."}]},
        {"dialogue_id": "t5", "metadata": {"title": "Error <DLL> missing & <p> tags"},
         "turns": [{"speaker": "customer", "text": "<p>Setup stops.</p><p>Then it closes.</p>"},
                   {"speaker": "agent", "text": "Reinstall the runtime."}]},
        {"dialogue_id": "t6", "metadata": {"title": "Error <DLL> missing"},
         "turns": [{"speaker": "customer", "text": "Setup stops.\nThen it closes."},
                   {"speaker": "agent", "text": "Reinstall the runtime."}]},
    ])
    t1, t2, t3, t4, t5, t6 = parse_file(path).conversations
    assert [t.text for t in t1.turns] == ["Hello, how can I help?", "Printer PX-2 jams on page 2\n\nIt jams every time.",
                                          "Still there."]
    assert t2.turns[0].text == "Re: vpn drops hourly\nIt drops at :00."  # its first line holds the title
    assert t3.turns[0].text == "No title here."
    # a word of a one-line post is not its title
    assert t4.turns[0].text.startswith("Outlook\n\nMy Outlook asks")
    # the title is plain text beside an HTML post and beside a plain one
    stored = {c.dialogue_id: conversation_rows(c, redact=False)[0]["text"] for c in (t5, t6)}
    assert stored == {"t5": "Error <DLL> missing & <p> tags\nSetup stops.\nThen it closes.",
                      "t6": "Error <DLL> missing\n\nSetup stops.\nThen it closes."}


def test_the_answer_the_source_marks_accepted_is_kept_on_its_turn(tmp_path):
    c14, c27 = parse_file(MSDIALOG).conversations  # MSDialog's is_answer
    assert [t.accepted for t in c14.turns] == [False, True, False]
    assert not any(t.accepted for t in c27.turns)
    # utterances listed out of order keep their mark on their own turn once sorted
    shuffled = json.loads(MSDIALOG.read_text(encoding="utf-8"))
    shuffled["14"]["utterances"].reverse()
    (tmp_path / "shuffled.json").write_text(json.dumps(shuffled), encoding="utf-8")
    c14_shuffled = parse_file(tmp_path / "shuffled.json").conversations[0]
    assert c14_shuffled.turns == c14.turns
    assert conversation_rows(c14, redact=True)[1]["accepted"] is True
    path = write_lines(tmp_path / "forum.jsonl", [
        {"dialogue_id": "f1", "turns": [{"speaker": "op", "text": "Fan runs at night.", "role": "user"},
                                        {"speaker": "kv", "text": "Fit the power adapter.", "role": "agent",
                                         "accepted": True}]},
        {"dialogue_id": "f2", "turns": [{"speaker": "op", "text": "Fan runs.", "role": "user"},
                                        {"speaker": "kv", "text": "Fit it.", "role": "agent", "accepted": "yes"}]},
        {"dialogue_id": "f3", "turns": [{"speaker": "op", "text": "Fan runs.", "role": "user", "accepted": None},
                                        {"speaker": "kv", "text": "Fit it.", "role": "agent", "accepted": True}]},
    ])
    parsed = parse_file(path)
    f1, f3 = parsed.conversations
    assert [t.accepted for t in f1.turns] == [False, True] and [t.accepted for t in f3.turns] == [False, True]
    assert only_reason(parsed) == "dialogue 'f2' turns[1]: accepted 'yes' is neither true nor false"
    # a mark is part of what the conversation says, and a conversation without one keeps its hash
    unmarked = Conversation(f1.dialogue_id, tuple(replace(t, accepted=False) for t in f1.turns), 0)
    assert unmarked.content_hash() != f1.content_hash()
    assert unmarked.content_hash() == hash_before_marks(f1.turns)


def test_a_ticket_csv_gives_its_subject_and_accepted_answer(tmp_path):
    path = tmp_path / "tickets.csv"
    path.write_text(
        "conversation_id,turn,speaker,text,Subject,accepted\n"
        "k-1,1,customer,It jams on every page.,Printer PX-2 jams,\n"
        "k-1,2,agent,Remove the tray and clear the roller.,,TRUE\n"
        "k-2,1,customer,No sound.,,no\n"
        "k-2,2,agent,Unmute it.,,maybe\n", encoding="utf-8")
    parsed = parse_file(path)
    assert parsed.source_format == "turn_csv"
    (k1,) = parsed.conversations
    assert k1.turns[0].text == "Printer PX-2 jams\n\nIt jams on every page."
    assert [t.accepted for t in k1.turns] == [False, True]
    assert only_reason(parsed) == "dialogue 'k-2' row at line 5: accepted 'maybe' is neither true nor false"


def test_a_records_own_fields_are_kept_and_its_identifiers_and_texts_are_not(tmp_path):
    turns = [{"speaker": "ann", "text": "Outlook asks for my password again.", "role": "user"},
             {"speaker": "kv", "text": "Remove the saved credential.", "role": "agent"}]
    path = write_lines(tmp_path / "tickets.jsonl", [
        {"dialogue_id": "t1", "turns": turns, "metadata": {
            "category": "Email", "product": "Outlook", "priority": "High", "tags": ["login", "password"],
            "vip": True, "title": "Password loop", "_batch": "x", "notes": "x " * 41, "nested": {"a": "b"},
            "ticket_id": "TCK-88213", "created": "2024-05-01T10:00:00", "requester": "ann@example.com",
            "url": "https://help.example.com/t/1", "escalations": 2, "uuid": "0db9fadd-de84-43cd-a92f-a61da85844ec"}},
        {"dialogue_id": "t2", "turns": turns},
    ])
    t1, t2 = parse_file(path).conversations
    assert t1.fields == {"category": "Email", "product": "Outlook", "priority": "High", "tags": "login, password",
                         "vip": "true"}
    assert t2.fields == {}
    # the fields the document formats carry: MSDialog's category, ABCD's flow, MultiDoGO's domain
    assert [c.fields for c in parse_file(MSDIALOG).conversations] == [{"category": "Windows_10"},
                                                                        {"category": "Office_365"}]
    assert set(parse_file(ABCD).conversations[0].fields) == {"flow", "subflow"}
    assert set(parse_file(MULTIDOGO).conversations[0].fields) == {"domain"}
    assert parse_file(TWEETSUMM).conversations[0].fields == {}
    # the fields are part of what the record says; a record without any keeps the hash it was landed with
    assert replace(t1, fields={}).content_hash() != t1.content_hash()
    assert t2.content_hash() == hash_before_marks(t2.turns)


def test_a_ticket_csvs_columns_that_hold_one_value_per_ticket_are_its_fields(tmp_path):
    path = tmp_path / "tickets.csv"
    path.write_text(
        "conversation_id,turn,speaker,text,Product,sentiment,queue\n"
        "k-1,1,customer,It jams on every page.,LaserJet Pro,negative,Printers\n"
        "k-1,2,agent,Remove the tray and clear the roller.,,neutral,Printers\n"
        "k-2,1,customer,No sound.,,,\n", encoding="utf-8")
    k1, k2 = parse_file(path).conversations
    # the product given on one row is the ticket's; a sentiment that changes per turn describes the turns
    assert k1.fields == {"product": "LaserJet Pro", "queue": "Printers"}
    assert k2.fields == {}


def test_ubuntu_csv_sample():
    parsed = parse_file(UBUNTU)
    assert parsed.source_format == "ubuntu_csv" and parsed.records_landed == 2 and not parsed.quarantined
    wifi, grub = parsed.conversations
    assert wifi.dialogue_id == "126125.tsv" and wifi.position == 2  # line of its first row
    assert grub.dialogue_id == "64545.tsv" and grub.position == 5
    # rows of one dialogue are gathered even when interleaved with another dialogue's rows
    assert [(t.speaker, t.role) for t in wifi.turns] == [
        ("bad_image", "user"),
        ("Iceroot", "agent"),
        ("bad_image", "user"),
    ]
    assert wifi.turns[1].text == "try: sudo modprobe -r iwl3945\nthen sudo modprobe iwl3945"
    assert wifi.turns[0].ts == "2008-04-23T14:55:00+00:00"
    assert [t.role for t in grub.turns] == ["user", "agent", "agent"]
    assert wifi.metadata["role_inference"] == "opener"
    assert set(wifi.metadata["_names"]) == {"bad_image", "Iceroot"}


def test_turn_csv_sample():
    parsed = parse_file(TURN_CSV)
    assert parsed.source_format == "turn_csv" and parsed.records_landed == 2 and not parsed.quarantined
    t1, t2 = parsed.conversations
    assert t1.dialogue_id == "t-1"
    assert [t.text.split()[0] for t in t1.turns] == ["My", "Have", "Yes,", "Please"]  # sorted by turn
    assert [t.role for t in t1.turns] == ["user", "agent", "user", "agent"]
    assert t1.turns[0].ts == "2024-03-01T10:00:00+00:00"
    assert [(t.speaker, t.role) for t in t2.turns] == [("caller", "user"), ("Support Agent", "agent")]
    assert t2.turns[0].ts is None
    assert t1.metadata["_names"] == []


def test_generic_jsonl_sample():
    parsed = parse_file(JSONL)
    assert parsed.source_format == "jsonl" and parsed.records_landed == 4 and not parsed.quarantined
    convs = by_id(parsed)
    fw = convs["fw-1"]
    assert fw.position == 1 and fw.metadata["channel"] == "chat"
    assert [t.role for t in fw.turns] == ["user", "agent"]
    assert fw.turns[0].ts == "2024-01-05T09:00:00+00:00"
    assert "42" in convs and convs["42"].position == 2  # an integer id becomes its string
    forum = convs["forum-7"]
    assert forum.position == 4  # line numbers count the blank line
    assert [t.role for t in forum.turns] == ["user", "agent", "user"]
    assert forum.metadata["role_inference"] == "opener"
    assert forum.metadata["_names"] == ["jdoe_88", "MrFixit"]
    x9 = convs["x-9"]
    assert [(t.speaker, t.role) for t in x9.turns] == [("Alice", "user"), ("Bot", "agent")]
    assert x9.metadata["dropped_empty_turns"] == 1
    assert x9.metadata["_names"] == ["Alice"]


@pytest.mark.parametrize(
    "label, role",
    [
        ("user", "user"),
        ("Customer", "user"),
        ("CLIENT", "user"),
        ("Human", "user"),
        ("caller", "user"),
        ("OP", "user"),
        ("guest_2", "user"),
        ("end user", "user"),
        ("Visitor", "user"),
        ("agent", "agent"),
        ("Agent 1", "agent"),
        ("assistant", "agent"),
        ("Support Agent", "agent"),
        ("SupportBot", "agent"),
        ("customer service rep", "agent"),
        ("Technical Support", "agent"),
        ("moderator", "agent"),
        ("system", "agent"),
        ("Operator", "agent"),
        ("human agent", "agent"),
        ("bad_image", None),
        ("Agent Smith", None),
        ("Kenneth Gold", None),
        ("Speaker 1", None),
        ("", None),
    ],
)
def test_role_vocabulary(label, role):
    assert role_of_label(label) == role


# ---------------------------------------------------------------------------------------------------
# Bad input: a specific reason, and the rest of the file still parsed
# ---------------------------------------------------------------------------------------------------


def test_truncated_last_line(tmp_path):
    path = write_lines(
        tmp_path / "t.jsonl", [GOOD_A, GOOD_B, '{"dialogue_id": "c", "turns": [{"speaker": "user", "te'], final_newline=False
    )
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"a", "b"}
    reason = only_reason(parsed)
    assert reason.startswith("invalid JSON (last line has no line ending: the file is probably truncated)")
    assert "Unterminated string" in reason
    assert parsed.quarantined[0].position == 3
    assert parsed.quarantined[0].raw.startswith('{"dialogue_id": "c"')
    assert_accounted(parsed)


def test_invalid_json_in_the_middle(tmp_path):
    path = write_lines(tmp_path / "m.jsonl", [GOOD_A, "{not json}", GOOD_B])
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"a", "b"}
    assert only_reason(parsed).startswith("invalid JSON: Expecting property name enclosed in double quotes (column 2)")
    assert parsed.quarantined[0].position == 2


def test_truncated_single_document_json_is_a_file_level_quarantine(tmp_path):
    data = ABCD.read_bytes()
    path = tmp_path / "abcd_cut.json"
    path.write_bytes(data[: len(data) // 2])
    assert detect_format(path) == "abcd"
    parsed = parse_file(path)
    assert parsed.records_landed == 1 and not parsed.conversations
    reason = only_reason(parsed)
    assert reason.startswith("not a valid abcd JSON document (the document ends early: the file is probably truncated)")
    assert parsed.quarantined[0].position == 0
    assert count_records(path) == 1


def test_invalid_utf8_line(tmp_path):
    bad = b'{"dialogue_id": "c", "turns": [{"speaker": "user", "text": "caf\xe9 wifi"}]}'
    path = write_lines(tmp_path / "u.jsonl", [GOOD_A, bad, GOOD_B])
    in_line = bad.index(b"\xe9")
    offset = len(json.dumps(GOOD_A)) + 1 + in_line
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"a", "b"}
    reason = only_reason(parsed)
    assert reason.startswith(f"invalid UTF-8 at byte offset {offset} of the file (byte {in_line} of line 2)")
    assert parsed.quarantined[0].position == 2
    assert "\\xe9" in parsed.quarantined[0].raw


def test_invalid_utf8_in_a_csv_row(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_bytes(
        b"conversation_id,turn,speaker,text\n"
        b"ok,1,user,printer offline\n"
        b"ok,2,agent,restart the spooler\n"
        b"bad,1,user,caf\xe9 wifi down\n"
        b"bad,2,agent,reboot\n"
    )
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"ok"}
    offset = path.read_bytes().index(b"\xe9")
    assert only_reason(parsed) == f"dialogue 'bad': invalid UTF-8 at byte offset {offset} of the file (line 4)"
    assert parsed.quarantined[0].position == 4


def test_invalid_utf8_inside_one_record_of_a_json_document(tmp_path):
    data = bytearray(MULTIDOGO.read_bytes())
    at = data.index(b"check my seat assignment")
    data[at : at + 1] = b"\xff"
    path = tmp_path / "multidogo.json"
    path.write_bytes(bytes(data))
    parsed = parse_file(path)
    assert len(parsed.conversations) == 4
    assert only_reason(parsed) == f"invalid UTF-8 at byte offset {at} of the file (inside record 0)"
    assert parsed.quarantined[0].position == 0


@pytest.mark.parametrize("content, reason", [(b"", "empty file (0 bytes)"), (b" \n\n\t\n", "empty file (only whitespace)")])
def test_empty_file(tmp_path, content, reason):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(NotAConversationFile, match=r"empty file"):
        detect_format(path)
    parsed = parse_file(path)
    assert parsed.records_landed == 1 and not parsed.conversations
    assert only_reason(parsed) == reason
    assert parsed.quarantined[0].position == 0
    assert count_records(path) == 1
    assert [type(r) for r in iter_records(path)] == [QuarantineRecord]


def test_twenty_megabyte_line(tmp_path, monkeypatch):
    path = tmp_path / "big.jsonl"
    big_text = "x" * (20 * 1024 * 1024)
    big = json.dumps(conv("huge", ("user", big_text), ("agent", "ok")))
    write_lines(path, [GOOD_A, big, GOOD_B])
    real_loads = json.loads

    def no_json_parse_of_big_lines(text, *args, **kwargs):
        assert len(text) < 1024 * 1024, "an oversized line was handed to the JSON parser"
        return real_loads(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", no_json_parse_of_big_lines)
    parsed = parse_file(path)
    monkeypatch.undo()
    assert set(by_id(parsed)) == {"a", "b"}
    reason = only_reason(parsed)
    assert reason == f"line is {len(big):,} bytes, over the 5,242,880-byte record limit; not parsed"
    assert parsed.quarantined[0].position == 2
    assert len(parsed.quarantined[0].raw) <= 2000
    assert count_records(path) == 3


def test_oversized_record_in_a_json_document(tmp_path):
    parsed = parse_file(TWEETSUMM, max_record_bytes=5000)
    sizes = {q.position: q.reason for q in parsed.quarantined}
    assert sizes and all("bytes, over the 5,000-byte record limit" in r for r in sizes.values())
    assert parsed.conversations  # the small dialogues still parse
    assert parsed.records_landed == 5
    assert_accounted(parsed)


def test_record_without_turns(tmp_path):
    path = write_lines(
        tmp_path / "n.jsonl",
        [
            GOOD_A,
            {"dialogue_id": "no-turns", "metadata": {}},
            {"dialogue_id": "empty-turns", "turns": []},
            {"dialogue_id": "str-turns", "turns": "hello"},
            GOOD_B,
        ],
    )
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"a", "b"}
    assert [q.reason for q in parsed.quarantined] == [
        "dialogue 'no-turns' has no 'turns' field",
        "dialogue 'empty-turns' has no turns ('turns' is empty)",
        "dialogue 'str-turns': 'turns' is a string, expected a list",
    ]
    assert [q.position for q in parsed.quarantined] == [2, 3, 4]


def test_non_string_text(tmp_path):
    path = write_lines(
        tmp_path / "t.jsonl",
        [
            GOOD_A,
            {"dialogue_id": "num", "turns": [{"speaker": "user", "text": 42}, {"speaker": "agent", "text": "hi"}]},
            {"dialogue_id": "null", "turns": [{"speaker": "user", "text": "q"}, {"speaker": "agent", "text": None}]},
            GOOD_B,
        ],
    )
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"a", "b"}
    assert [q.reason for q in parsed.quarantined] == [
        "dialogue 'num' turns[0]: text is a number (42), expected a string",
        "dialogue 'null' turns[1]: text is null, expected a string",
    ]


def test_duplicate_ids_inside_one_file(tmp_path):
    again = conv("a", ("customer", "A different text under the same id."), ("agent", "Noted."))
    path = write_lines(tmp_path / "d.jsonl", [GOOD_A, GOOD_B, again])
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"a", "b"}
    assert by_id(parsed)["a"].position == 1  # the first one wins
    assert only_reason(parsed) == "duplicate dialogue_id 'a': already used by the record at position 1"
    assert parsed.quarantined[0].position == 3


def test_duplicate_keys_in_a_json_object_document(tmp_path):
    text = MSDIALOG.read_text(encoding="utf-8")
    doc = json.loads(text)
    # a document with key "14" twice: json.load would silently keep only the last one
    body = json.dumps(doc["14"])
    path = tmp_path / "dup.json"
    path.write_text('{"14": %s, "27": %s, "14": %s}' % (body, json.dumps(doc["27"]), body), encoding="utf-8")
    parsed = parse_file(path)
    assert [c.dialogue_id for c in parsed.conversations] == ["14", "27"]
    assert only_reason(parsed) == "duplicate dialogue_id '14': already used by the record at position 0"
    assert parsed.quarantined[0].position == 2


def test_unknown_speaker_labels_mixed_with_role_words(tmp_path):
    mixed = conv("mixed", ("customer", "My screen flickers."), ("dave_99", "Same here."), ("agent", "Update the driver."))
    path = write_lines(tmp_path / "s.jsonl", [GOOD_A, mixed, GOOD_B])
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"a", "b"}
    reason = only_reason(parsed)
    assert reason.startswith("dialogue 'mixed': ambiguous speaker label(s) 'dave_99': not role words")
    assert parsed.quarantined[0].position == 2


def test_names_carrying_a_role_word_settle_a_conversation_of_role_words(tmp_path):
    chat = conv("chat", ("customer", "My screen flickers."), ("Agent Priya", "Update the driver."),
                ("Mod_Pauline", "Moved to the display forum."), ("customer", "Done, thanks."))
    parsed = parse_file(write_lines(tmp_path / "c.jsonl", [chat]))
    (c,) = parsed.conversations
    assert [t.role for t in c.turns] == ["user", "agent", "agent", "user"]


def test_handles_beside_a_bot_and_a_moderator_read_as_a_thread(tmp_path):
    thread = conv("t", ("xXSniperXx", "Game crashes on launch."), ("Helper-Bot", "Try verifying files."),
                  ("gamer42", "Same here."), ("mod_renzo", "Disable the overlay."), ("xXSniperXx", "That fixed it."))
    parsed = parse_file(write_lines(tmp_path / "t.jsonl", [thread]))
    (c,) = parsed.conversations
    assert [t.role for t in c.turns] == ["user", "agent", "agent", "agent", "user"]


@pytest.mark.parametrize(
    "label, side",
    [("Agent Priya", "agent"), ("Mod_Pauline", "agent"), ("SupportDana", "agent"), ("customer_john", "user"),
     ("dave_99", None), ("support_user", None), ("Kenneth Gold", None)],
)
def test_role_hint_of_label(label, side):
    assert role_hint_of_label(label) == side


def test_explicit_role_wins_over_labels(tmp_path):
    record = {
        "dialogue_id": "r",
        "turns": [
            {"speaker": "dave_99", "role": "user", "text": "My screen flickers."},
            {"speaker": "agent", "text": "Update the driver."},
            {"speaker": "dave_99", "text": "Fixed, thanks."},  # inherits dave_99's explicit role
        ],
    }
    parsed = parse_file(write_lines(tmp_path / "r.jsonl", [record]))
    (c,) = parsed.conversations
    assert [t.role for t in c.turns] == ["user", "agent", "user"]
    assert c.metadata["_names"] == ["dave_99"]


@pytest.mark.parametrize(
    "record, reason",
    [
        ([1, 2], "record is a JSON list, expected an object"),
        ({"turns": []}, "missing dialogue_id"),
        ({"dialogue_id": "  ", "turns": []}, "empty dialogue_id"),
        ({"dialogue_id": 1.5, "turns": []}, "dialogue_id is a number (1.5), expected a string"),
        (
            {"dialogue_id": "s", "turns": [{"speaker": 7, "text": "hi"}]},
            "dialogue 's' turns[0]: speaker is a number (7), expected a string",
        ),
        ({"dialogue_id": "s", "turns": [{"speaker": "", "text": "hi"}]}, "dialogue 's' turns[0]: empty speaker"),
        ({"dialogue_id": "s", "turns": ["hi"]}, "dialogue 's' turns[0] is a string, expected an object"),
        (
            {"dialogue_id": "s", "turns": [{"speaker": "user", "text": "hi", "role": "boss"}]},
            "dialogue 's' turns[0]: role 'boss' is neither 'user' nor 'agent'",
        ),
        (
            conv("g", ("agent", "Hello?"), ("bot", "Anyone there?")),
            "dialogue 'g' has no user turn (all 2 turns are agent turns)",
        ),
        (conv("e", ("user", " "), ("agent", "")), "dialogue 'e': all 2 turn(s) have empty text"),
        (
            {"dialogue_id": "m", "turns": [{"speaker": "user", "text": "x"}], "metadata": [1]},
            "dialogue 'm': 'metadata' is a list, expected an object",
        ),
    ],
)
def test_record_rules(tmp_path, record, reason):
    path = write_lines(tmp_path / "r.jsonl", [GOOD_A, record, GOOD_B])
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"a", "b"}
    assert only_reason(parsed) == reason
    assert parsed.quarantined[0].position == 2


def test_binary_file(tmp_path):
    path = tmp_path / "conversations.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 20)
    with pytest.raises(NotAConversationFile, match=r"binary file \(NUL bytes in the first 8 KB\)"):
        detect_format(path)
    parsed = parse_file(path)
    assert parsed.records_landed == 1 and parsed.source_format == "unknown"
    assert only_reason(parsed) == "binary file (NUL bytes in the first 8 KB)"
    # even with an explicit format
    assert only_reason(parse_file(path, "jsonl")) == "binary file (NUL bytes in the first 8 KB)"


def test_binary_file_without_nul_bytes(tmp_path):
    path = tmp_path / "noise.csv"
    path.write_bytes(bytes(b for b in range(128, 256)) * 40)
    parsed = parse_file(path)
    assert only_reason(parsed).startswith("binary file (") and "non-text characters in the first 8 KB" in only_reason(parsed)


def test_text_in_no_known_format(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text("Meeting notes\nnothing to see here\n", encoding="utf-8")
    with pytest.raises(NotAConversationFile, match="content matches no supported format"):
        detect_format(path)
    parsed = parse_file(path)
    assert parsed.records_landed == 1
    assert only_reason(parsed).startswith("content matches no supported format")


def test_file_that_disappears_between_detection_and_reading(tmp_path):
    path = write_lines(tmp_path / "gone.jsonl", [GOOD_A, GOOD_B])
    fmt = detect_format(path)
    path.unlink()
    parsed = parse_file(path, fmt)
    assert parsed.records_landed == 1 and not parsed.conversations
    reason = only_reason(parsed)
    assert reason == (
        "cannot read file: No such file or directory (it was moved or deleted before or while being read)"
    )
    assert parsed.quarantined[0].position == 0
    assert count_records(path) == 1
    with pytest.raises(NotAConversationFile, match="cannot read file"):
        detect_format(path)


def test_read_error_part_way_through(tmp_path, monkeypatch):
    path = write_lines(tmp_path / "flaky.jsonl", [GOOD_A, GOOD_B, conv("c", ("user", "q"), ("agent", "a"))])

    class Flaky:
        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def readline(self, *args):
            self.calls += 1
            if self.calls > 2:
                raise OSError(5, "Input/output error")
            return self.inner.readline(*args)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.inner.close()

    real_open = parsers._open
    monkeypatch.setattr(parsers, "_open", lambda p: Flaky(real_open(p)))
    parsed = parse_file(path)
    assert parsed.records_landed == 1 and not parsed.conversations
    assert only_reason(parsed) == "cannot read file: Input/output error (OSError)"
    # iter_records yields what it read, then one row for the failure
    items = list(iter_records(path))
    assert [type(i) for i in items] == [Conversation, Conversation, QuarantineRecord]
    assert items[-1].position == 0


def test_a_directory_is_not_readable(tmp_path):
    parsed = parse_file(tmp_path)
    assert only_reason(parsed).startswith("cannot read file: Is a directory")


def test_csv_rows_with_missing_fields_or_ids(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_text(
        "conversation_id,turn,speaker,text\n"
        "ok,1,user,vpn drops\n"
        "ok,2,agent,update the client to 5.2\n"
        "short,1,user\n"
        ",1,user,orphan row\n"
        "badturn,x,user,hi\n"
        "badturn,2,agent,hello\n",
        encoding="utf-8",
    )
    parsed = parse_file(path)
    assert set(by_id(parsed)) == {"ok"}
    assert [(q.position, q.reason) for q in parsed.quarantined] == [
        (4, "dialogue 'short': row at line 4 has 3 fields, the header has 4"),
        (5, "row at line 5 has no conversation_id"),
        (6, "dialogue 'badturn': row at line 6 has turn 'x', expected an integer"),
    ]
    assert count_records(path) == 4


# ---------------------------------------------------------------------------------------------------
# Chunks: record_range and count_records
# ---------------------------------------------------------------------------------------------------


def test_record_range_slices_and_count_matches(tmp_path):
    lines: list = []
    for i in range(12):
        lines.append(conv(f"c{i}", ("user", f"question {i}"), ("agent", f"answer {i}")))
        if i % 4 == 1:
            lines.append("")  # blank lines are not records
        if i % 5 == 2:
            lines.append("{broken")
    path = write_lines(tmp_path / "many.jsonl", lines)
    everything = list(iter_records(path))
    assert count_records(path) == len(everything) == 14
    chunks = [parse_file(path, record_range=(s, min(s + 5, 14))) for s in range(0, 14, 5)]
    assert [c.records_landed for c in chunks] == [5, 5, 4]
    rebuilt = [item for c in chunks for item in sorted(c.conversations + c.quarantined, key=lambda r: r.position)]
    assert rebuilt == everything
    for chunk in chunks:
        assert_accounted(chunk)
    assert parse_file(path, record_range=(20, 30)).records_landed == 0


def test_record_range_keeps_duplicates_across_chunks(tmp_path):
    path = write_lines(tmp_path / "d.jsonl", [GOOD_A, GOOD_B, GOOD_A])
    last = parse_file(path, record_range=(2, 3))
    assert not last.conversations
    assert only_reason(last) == "duplicate dialogue_id 'a': already used by the record at position 1"


@pytest.mark.parametrize("fmt", FORMATS)
def test_count_matches_iteration_for_every_format(fmt):
    path = SAMPLES[fmt]
    items = list(iter_records(path))
    assert count_records(path) == len(items) == parse_file(path).records_landed
    first_two = parse_file(path, record_range=(0, 2))
    assert first_two.records_landed == 2
    assert [c.dialogue_id for c in first_two.conversations] == [c.dialogue_id for c in items[:2]]


def test_source_name_goes_into_quarantine_rows(tmp_path):
    path = write_lines(tmp_path / "x.jsonl", [GOOD_A, "{oops"])
    parsed = parse_file(path, source_name="inbox/2024/x.jsonl")
    assert parsed.source_file == "inbox/2024/x.jsonl"
    assert parsed.quarantined[0].source_file == "inbox/2024/x.jsonl"
    assert parse_file(path).quarantined[0].source_file == "x.jsonl"


def test_unpaired_surrogates_are_replaced_so_text_stays_valid_utf8(tmp_path):
    # a tweet cut in the middle of an emoji: JSON allows the lone escape, UTF-8 storage does not
    line = (
        '{"dialogue_id": "s1", "turns": [{"speaker": "user", "text": "broken \\ud83d emoji"}, '
        '{"speaker": "agent", "text": "ok"}]}'
    )
    broken = '{"dialogue_id": "s2", "turns": [{"speaker": "user", "text": 5, "x": "\\udc80"}]}'
    path = write_lines(tmp_path / "s.jsonl", [line, broken])
    parsed = parse_file(path)
    (c,) = parsed.conversations
    assert c.turns[0].text == "broken \ufffd emoji"
    assert c.metadata["unpaired_surrogates_replaced"] == 1
    (q,) = parsed.quarantined
    for text in (q.reason, q.raw, *[t.text for t in c.turns]):
        text.encode("utf-8")  # no lone surrogates left anywhere


def test_decomposed_text_lands_composed(tmp_path):
    # "Việt Nam" and "Müller" as a Mac or a web form may export them: letters followed by combining marks
    decomposed = "Vie\u0323\u0302t Nam: the router of Mu\u0308ller drops"
    line = json.dumps({"dialogue_id": "d1", "turns": [{"speaker": "Mu\u0308ller", "text": decomposed},
                                                      {"speaker": "agent", "text": "restart it"}]})
    (c,) = parse_file(write_lines(tmp_path / "d.jsonl", [line])).conversations
    assert c.turns[0].text == "Việt Nam: the router of Müller drops"
    assert c.turns[0].speaker == "Müller"
    assert c.turns[0].text.split()[0] == "Việt"  # one word of four characters, not "Vie" + marks + "t"


def test_a_decomposed_name_the_source_gives_still_redacts_the_composed_text(tmp_path):
    name = "Zoe\u0308 Ka\u0301lma\u0301n"  # as a decomposed export writes "Zoë Kálmán"
    line = json.dumps({"dialogue_id": "d1", "metadata": {"_names": [name]}, "turns": [
        {"speaker": "customer", "text": f"hi, this is {name}, my router drops wifi every night"},
        {"speaker": "agent", "text": f"Hi {name}, please restart it"}]})
    (c,) = parse_file(write_lines(tmp_path / "d.jsonl", [line])).conversations
    texts = [row["text"] for row in conversation_rows(c, redact=True)]
    assert not any("Zo" in t or "lm" in t for t in texts), texts


def test_an_internal_error_becomes_a_file_level_quarantine(monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(parsers, "_finish", broken)
    parsed = parse_file(JSONL)
    assert parsed.records_landed == 1 and not parsed.conversations
    assert only_reason(parsed) == "unexpected parser error (a bug in sarag, please report): KeyError: 'boom'"


@pytest.mark.parametrize(
    "greeting",
    ["Hi, how can I help you today?", "Thanks for contacting Acme support!", "Dana here from ShopSphere. What's going on?"],
)
def test_name_labeled_chat_opened_by_the_helper_makes_the_second_speaker_the_user(tmp_path, greeting):
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"dialogue_id": "c", "turns": [
        {"speaker": "Dana", "text": greeting},
        {"speaker": "mike_77", "text": "my blender will not turn on"},
        {"speaker": "Dana", "text": "Please check the lid lock."},
    ]}) + "\n", encoding="utf-8")
    (conv,) = parse_file(path).conversations
    assert [t.role for t in conv.turns] == ["agent", "user", "agent"]


OOD_SETS = TEST_DATA / "ood"


@pytest.mark.parametrize("name", ["devchat", "smarthome", "gaming", "banking"])
def test_the_written_out_of_domain_sets_land_whole(name):
    """Help-desk chats ("customer" / "Agent Priya"), forum threads with a bot and a moderator, IRC logs:
    every conversation gets roles, with its asker as the user."""
    path = OOD_SETS / name / "corpus.jsonl"
    parsed = parse_file(path)
    assert parsed.quarantined == []
    assert len(parsed.conversations) == sum(1 for _ in path.open(encoding="utf-8"))
    for c in parsed.conversations:
        assert c.turns[0].role == "user" or any(t.role == "user" for t in c.turns[:3]), c.dialogue_id


def test_an_id_holding_control_characters_is_quarantined_with_its_reason(tmp_path):
    # an id is printed by `sarag show` and `search` and typed back by the user: an ESC in it would drive
    # the terminal, and nobody could type it
    bad = '{"dialogue_id": "t1\\u001b[2J", "turns": [{"speaker": "user", "text": "hi"}, {"speaker": "agent", "text": "ok"}]}'
    path = write_lines(tmp_path / "ids.jsonl", [GOOD_A, bad])
    parsed = parse_file(path)
    assert [c.dialogue_id for c in parsed.conversations] == [GOOD_A["dialogue_id"]]
    (q,) = parsed.quarantined
    assert "holds control characters" in q.reason and "\x1b" not in q.reason


def test_a_forum_export_that_gives_titles_apart_reads_back_as_the_threads_show_them(tmp_path):
    """The evaluation's `titled` export moves each first post's title line into metadata.title; landing it
    puts every title back above its first post, so the stored turns are those of the original corpus."""
    from sarag_assets.evaluation.corpus_exports import export

    source = TEST_DATA / "ood" / "smarthome" / "corpus.jsonl"
    out = tmp_path / "titled.jsonl"
    export(source, out, "titled")
    moved = sum("title" in json.loads(line).get("metadata", {}) for line in out.open())

    def stored(path):
        return {c.dialogue_id: [r["text"] for r in conversation_rows(c, redact=True)] for c in parse_file(path).conversations}

    assert moved > 20 and stored(out) == stored(source)


def test_the_chat_export_is_lower_case_unpunctuated_and_misspelt_the_same_way_each_time():
    from sarag_assets.evaluation.corpus_exports import as_chat

    text = "Hello! My Thermostat keeps rebooting, every evening; firmware 2.4.1 installed. Any ideas?"
    chat = as_chat(text, "sh-1/0")
    assert chat == as_chat(text, "sh-1/0") and chat == chat.lower()
    assert "2.4.1" in chat and not any(p in chat.replace("2.4.1", "") for p in ".,;!?")
    many = [as_chat("understanding configuration", f"d/{k}") for k in range(200)]
    assert 0 < sum(m != "understanding configuration" for m in many) < 200
