from sarag_assets.core.conversation import Conversation, Turn
from sarag_assets.core.ingest.quoting import without_quotations
from sarag_assets.core.ingest.raw_dialogues import conversation_rows

QUESTION = "Hi, my Acme Hub drops wifi every evening since firmware 2.3.0, the log shows WAN link down."
ANSWER = "Please update the hub to 2.4.1 from the admin page and restart it afterwards.\n\nKind regards,\nLena"


def test_a_bottom_quoted_email_reply_keeps_only_the_new_words():
    reply = ("Model: AX3000\nFirmware: 2.3.0\n\nThat did not help, still drops.\n\n"
             "On Mon, 3 Jun 2024 at 10:02, Lena <l@example.com> wrote:\n"
             "> Please update the hub to 2.4.1 from the admin page\n> and restart it afterwards.\n>\n"
             "> Kind regards,\n> Lena")
    # the quotation is re-wrapped at another width than the turn it quotes; the asker's own
    # "key: value" lines above the attribution stay
    assert without_quotations([QUESTION, ANSWER, reply])[2] == "Model: AX3000\nFirmware: 2.3.0\n\nThat did not help, still drops."


def test_an_outlook_style_header_in_another_language_goes_with_its_quotation():
    reply = ("Danke, jetzt geht es!\n\n-----Ursprüngliche Nachricht-----\nVon: Lena\nGesendet: Montag, 3. Juni\n"
             "An: Kunde\nBetreff: Hub\n\nPlease update the hub to 2.4.1 from the admin page and restart it afterwards.")
    assert without_quotations([QUESTION, ANSWER, reply])[2] == "Danke, jetzt geht es!"


def test_words_said_again_and_turns_that_only_repeat_stay():
    short = "still drops wifi every evening"  # five words of the question: said again, not quoted
    repeat = "Please update the hub to 2.4.1 from the admin page and restart it afterwards."
    assert without_quotations([QUESTION, ANSWER, short, repeat]) == [QUESTION, ANSWER, short, repeat]
    # marked "> ", a short quotation is one all the same
    assert without_quotations(["Which plan are you on?", "> Which plan are you on?\nFiber 300"])[1] == "Fiber 300"
    # a quotation of nothing in the conversation (a forwarded message) is the turn's own text
    forwarded = "> Your order 1234 has shipped and will arrive within three to five working days."
    assert without_quotations([forwarded, "ok"]) == [forwarded, "ok"]


def test_ingest_stores_replies_without_the_quoted_history():
    reply = f"Still broken after the update.\n\nOn Tue, Lena wrote:\n> {ANSWER.splitlines()[0]}"
    conversation = Conversation("q-1", (Turn("anna", "user", QUESTION), Turn("lena", "agent", ANSWER),
                                        Turn("anna", "user", reply)), position=1)
    texts = [row["text"] for row in conversation_rows(conversation, redact=False)]
    assert texts[2] == "Still broken after the update."
    assert texts[:2] == [QUESTION, ANSWER]


def test_a_corpus_exported_as_quoting_email_reads_back_as_written(tmp_path):
    """The evaluation's e-mail export of an out-of-domain corpus (every reply quotes the turn before it,
    re-wrapped and marked "> "), read back at ingest: every turn as the plain corpus has it."""
    import json

    from sarag_assets.core.conversation import displayable
    from sarag_assets.core.ingest.markup import plain_text
    from sarag_assets.evaluation.corpus_exports import export
    from sarag_assets_tests.paths import TEST_DATA

    source = TEST_DATA / "ood" / "banking" / "corpus.jsonl"
    out = tmp_path / "email.jsonl"
    export(source, out, "email")
    turns = 0
    for plain, exported in zip(source.open(), out.open()):
        originals = [t["text"] for t in json.loads(plain)["turns"]]
        quoted = [t["text"] for t in json.loads(exported)["turns"]]
        assert all("wrote:\n> " in t for t in quoted[1:] if t.strip())
        read = without_quotations([displayable(plain_text(t)) for t in quoted])
        assert read == [displayable(plain_text(t)) for t in originals]
        turns += len(read)
    assert turns == 702  # every turn of the 66 conversations


def test_a_forum_reply_quoting_a_post_in_html_keeps_its_own_words():
    answer = "<p>Update the hub to 2.4.1 from the admin page.</p><p>Then restart it.</p>"
    reply = ('<aside class="quote"><div class="title">lena:</div><blockquote><p>Then restart it.</p>'
             "</blockquote></aside><p>Did that twice, it still drops every evening.</p>")
    conversation = Conversation("f-1", (Turn("anna", "user", QUESTION), Turn("lena", "agent", answer),
                                        Turn("anna", "user", reply)), position=1)
    texts = [row["text"] for row in conversation_rows(conversation, redact=False)]
    # a three-word quotation: marked by the blockquote, so it goes with its heading
    assert texts[2] == "Did that twice, it still drops every evening."
    assert texts[1] == "Update the hub to 2.4.1 from the admin page.\nThen restart it."
