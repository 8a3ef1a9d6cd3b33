import pytest

from sarag_assets.core.conversation import Conversation, Turn
from sarag_assets.core.ingest.markup import is_html, plain_text
from sarag_assets.core.ingest.raw_dialogues import conversation_rows

FORUM_QUESTION = ('<p>My Acme Hub drops Wi&#8209;Fi every evening &amp; the log shows <code>WAN link down</code>.'
                  '</p><p>Firmware is 2.1.0. Any ideas?</p>')
FORUM_ANSWER = ('<p>That&#39;s a known leak. Update to 2.4.1:</p>'
                '<ol><li>Open the <a href="http://192.168.0.1/admin">admin page</a></li>'
                '<li>Go to <b>System &gt; Update</b></li></ol><script>track()</script>')


def test_a_forum_post_in_html_is_read_as_its_reader_saw_it():
    assert plain_text(FORUM_QUESTION) == ("My Acme Hub drops Wi\u2011Fi every evening & the log shows WAN link down.\n"
                                          "Firmware is 2.1.0. Any ideas?")
    assert plain_text(FORUM_ANSWER) == ("That's a known leak. Update to 2.4.1:\n- Open the admin page\n"
                                        "- Go to System > Update")
    assert plain_text("Line one<br>Line two<br/>three") == "Line one\nLine two\nthree"
    assert plain_text("<table><tr><th>model</th><th>fw</th></tr><tr><td>AX3000</td><td>1.2</td></tr></table>") \
        == "model | fw\nAX3000 | 1.2"
    assert plain_text('<p>see <img src="x.png" alt="the error dialog"></p>') == "see the error dialog"
    # a quoted post (Discourse's markup) is marked as a mail client marks a quotation
    assert plain_text('<aside class="quote"><div class="title">Lena:</div><blockquote><p>Update to 2.4.1.</p>'
                      '<p>Then restart.</p></blockquote></aside><p>Did that.</p>') \
        == "Lena:\n> Update to 2.4.1.\n> Then restart.\nDid that."
    # Stack Exchange escapes code inside the markup: it comes back as written
    assert plain_text("<p>I added <code>&lt;div class=&quot;x&quot;&gt;</code> and it broke</p>") \
        == 'I added <div class="x"> and it broke'


@pytest.mark.parametrize("text", [
    "the <div> tag is not closing in my template",  # an element opened, never closed: prose about HTML
    "if x < 3 and y > 2 the fan stops",
    "AT&T says the line is fine & the modem too",  # no reference ends in ';'
    "my username is <none> and the log says <user id> unknown",
    "Mein Router startet ständig neu <3",
])
def test_text_that_is_not_markup_stays_as_written(text):
    assert not is_html(text)
    assert plain_text(text) == text


def test_markup_that_shows_no_text_stays_as_written():
    assert plain_text('<p><img src="x.png"></p>') == '<p><img src="x.png"></p>'
    conversation = Conversation("img", (Turn("a", "user", "My screen shows this:"),
                                        Turn("a", "user", "<p><img src='x.png'></p><br>")), position=1)
    assert all(row["text"].strip() for row in conversation_rows(conversation, redact=True))


def test_character_references_alone_are_decoded():
    assert plain_text("app &amp; website, it&#39;s &#x2014; &quot;down&quot;") == "app & website, it's \u2014 \"down\""
    assert plain_text("&notareference; &amp") == "&notareference; &amp"


def test_a_combining_mark_written_as_a_reference_is_composed_as_landed_text_is():
    assert plain_text("Vie&#x323;&#x302;t Nam") == "Việt Nam"
    assert plain_text("<p>Zoe&#776; is here</p>") == "Zoë is here"


def test_ingest_stores_the_rendered_text():
    conversation = Conversation("html-1", (Turn("alice", "user", FORUM_QUESTION), Turn("bob", "agent", FORUM_ANSWER)),
                                position=1)
    question, answer = (row["text"] for row in conversation_rows(conversation, redact=True))
    assert "<" not in question and "&amp;" not in question and question.endswith("Any ideas?")
    assert answer.splitlines()[1:] == ["- Open the admin page", "- Go to System > Update"]
    assert "192.168.0.1" not in answer  # a link's address is not part of what was read


def test_a_pasted_html_ticket_is_searched_as_text():
    from sarag_assets.query.understanding import read_query

    query = read_query([{"speaker": "user", "text": FORUM_QUESTION}])
    assert query.turns[0].text.startswith("My Acme Hub drops Wi\u2011Fi every evening & the log")


def test_a_corpus_exported_as_html_reads_back_as_its_lines(tmp_path):
    """The evaluation's HTML export of an out-of-domain corpus, read back at ingest: every turn's
    non-empty lines, list markers aside and runs of spaces read as one, come back as written."""
    import json
    import re

    from sarag_assets.evaluation.corpus_exports import export
    from sarag_assets_tests.paths import TEST_DATA

    source = TEST_DATA / "ood" / "smarthome" / "corpus.jsonl"
    out = tmp_path / "html.jsonl"
    assert export(source, out) == sum(1 for line in source.open() if line.strip())
    marker = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
    turns = 0
    for plain, exported in zip(source.open(), out.open()):
        for a, b in zip(json.loads(plain)["turns"], json.loads(exported)["turns"]):
            assert b["text"].startswith(("<p>", "<ul>")) or not a["text"].strip()
            # as a browser shows it: runs of spaces are one
            expected = [marker.sub("", re.sub(r"\s+", " ", line.strip())) for line in a["text"].split("\n")
                        if line.strip()]
            assert [marker.sub("", line) for line in plain_text(b["text"]).split("\n")] == expected
            turns += 1
    assert turns > 500
