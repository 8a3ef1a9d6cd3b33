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
