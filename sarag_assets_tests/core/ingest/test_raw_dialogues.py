import json

from sarag_assets.core.conversation import Conversation, Turn
from sarag_assets.core.ingest.raw_dialogues import conversation_rows


def test_stored_text_keeps_words_and_line_breaks_but_no_terminal_or_bidi_controls():
    conversation = Conversation(
        "c-1",
        (
            Turn("customer", "user", "Router\x00 down\x1b[2J since 2.1.0\r\nsee log:\tE42\x0bline two\x85line three"),
            Turn("agent", "agent", "Try \u202ereset\u202c the 👩\u200d💻 profile; سلام\u200f"),
        ),
        position=1,
    )
    user, agent = (row["text"] for row in conversation_rows(conversation, redact=True))
    assert user == "Router down[2J since 2.1.0\r\nsee log:\tE42\nline two\nline three"
    # zero-width joiners and marks are part of the words; only the overrides go
    assert agent == "Try reset the 👩\u200d💻 profile; سلام\u200f"


def test_a_records_fields_are_stored_on_each_turn_and_a_personal_one_is_left_out():
    turns = (Turn("Ann Lee", "user", "My printer jams."), Turn("agent", "agent", "Clear the roller."))
    conversation = Conversation("c-2", turns, position=1,
                                fields={"queue": "Printers", "reported_by": "Ann Lee", "phone": "+1 415 555 0100"})
    rows = conversation_rows(conversation, redact=True)
    assert [json.loads(r["source_fields"]) for r in rows] == [{"queue": "Printers"}] * 2
    assert conversation_rows(Conversation("c-3", turns, position=2), redact=True)[0]["source_fields"] is None
    # redaction off stores them as the source gives them
    assert json.loads(conversation_rows(conversation, redact=False)[0]["source_fields"])["reported_by"] == "Ann Lee"
