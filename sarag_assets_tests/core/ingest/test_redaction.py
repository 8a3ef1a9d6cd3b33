"""Redaction: recall on personal data, precision on the support facts around it."""

from __future__ import annotations

import json
import re

import pytest

from sarag_assets.core.ingest.parsers import parse_file
from sarag_assets.core.ingest.redaction import Redactor
from sarag_assets_tests.paths import SAMPLES

ABCD = SAMPLES / "abcd" / "abcd_sample.json"
TWEETSUMM = SAMPLES / "tweetsumm" / "tweetsumm_examples.json"
MULTIDOGO = SAMPLES / "multidogo" / "multidogo_examples.json"

plain = Redactor()

# ---------------------------------------------------------------------------------------------------
# Recall: each of these must be redacted exactly as shown
# ---------------------------------------------------------------------------------------------------
RECALL = [
    # e-mail
    ("write to cminh730@email.com please", "write to [EMAIL] please"),
    ("j.doe+support@mail.example.co.uk.", "[EMAIL]."),
    ("mailto:help@example.org", "[EMAIL]"),
    # phones
    ("(977) 625-2661", "[PHONE]"),
    ("call me on 555-123-4567 tomorrow", "call me on [PHONE] tomorrow"),
    ("555.123.4567", "[PHONE]"),
    ("+1 555 123 4567", "[PHONE]"),
    ("+44 20 7946 0958 (London)", "[PHONE] (London)"),
    ("+1-800-555-1234", "[PHONE]"),
    ("1-800-275-2273", "[PHONE]"),
    ("call our New Accounts Team at 877-399-3086, for assistance.", "call our New Accounts Team at [PHONE], for assistance."),
    ("phone: 020 7946 0958", "phone: [PHONE]"),
    ("you can call us at 877 399 3086", "you can call us at [PHONE]"),
    # IP addresses
    ("my router is at 192.168.1.1.", "my router is at [IP]."),
    ("ping 10.0.0.254 fails", "ping [IP] fails"),
    ("host 10.0.0.1:8080 refused", "host [IP]:8080 refused"),
    ("open https://192.168.0.1/admin", "open https://[IP]/admin"),
    ("link-local fe80::1ff:fe23:4567:890a%eth0 only", "link-local [IP] only"),
    ("2001:0db8:85a3:0000:0000:8a2e:0370:7334", "[IP]"),
    ("localhost ::1 works", "localhost [IP] works"),
    ("update the router at 192.168.1.1", "update the router at [IP]"),  # private: an address despite "update"
    ("server 81.2.69.160 after the update", "server [IP] after the update"),
    # mentions and handles
    ("@AppleSupport please read the above.", "[MENTION] please read the above."),
    ("@135060 Thank you.", "[MENTION] Thank you."),
    ("thanks u/helpful_dude", "thanks [MENTION]"),
    # self-introductions, greetings, sign-offs
    ("Hello, my name is Crystal Minh and I need help", "Hello, my name is [NAME] and I need help"),
    ("my name is raja booking confirmation number fgh425", "my name is [NAME] booking confirmation number fgh425"),
    ("My name's Dave.", "My name's [NAME]."),
    ("This is Phil from GWR, sorry for the wait.", "This is [NAME] from GWR, sorry for the wait."),
    ("Hi, this is Sarah with Comcast support.", "Hi, this is [NAME] with Comcast support."),
    ("I'm Dave at the help desk.", "I'm [NAME] at the help desk."),
    ("I am Priya Raman from billing", "I am [NAME] from billing"),
    ("Try a restart.\n\nRegards,\nJohn Smith", "Try a restart.\n\nRegards,\n[NAME]"),
    ("That should do it. Thanks, Bob", "That should do it. Thanks, [NAME]"),
    ("Let me know. Cheers, Anne-Marie!", "Let me know. Cheers, [NAME]!"),
    ("@216929 Hi Chris. Which U.S. based card is it?", "[MENTION] Hi [NAME]. Which U.S. based card is it?"),
    ("We'll be happy to help. 😊 ^VN", "We'll be happy to help. 😊 ^[NAME]"),
    ("Sorry for the inconvenience.^In", "Sorry for the inconvenience.^[NAME]"),
    ("Hi Al, try this", "Hi [NAME], try this"),
]


@pytest.mark.parametrize("text, expected", RECALL)
def test_recall(text, expected):
    assert plain.redact(text) == expected


# ---------------------------------------------------------------------------------------------------
# Precision: support facts that must survive untouched
# ---------------------------------------------------------------------------------------------------
PRECISION = [
    "Version 2.3.1 fixed it",
    "Windows build v10.0.19045.3803 is installed",
    "build 10.0.0.1 of the firmware",
    "firmware 1.2.3.4 is current",
    "ver. 4.4.2.1 on the tablet",
    "fw 2.0.1.12",
    "Please roll back to 1.0.9.88 from the admin page.",
    "upgraded to 2.1.0.7 last night",
    "1.2.3.4 firmware is out",
    "HEY HO!",
    "Error 0x80070005 on KB3140743",
    "E-1042 appears on the display",
    "net::ERR_CONNECTION_RESET in Chrome",
    "order 3348917502 never arrived",
    "Order ID: 3348917502",
    "ticket #4471829 and case 00012345",
    "account 1234567890 is locked",
    "purchased on 2019-11-06 at 10:45",
    "dates 11/06/2019, 06.11.2019 and 2019/11/06",
    "Monday - Friday 8:00 AM to 12:00 AM (ET)",
    "at 12:30:45 the log shows the crash",
    "it cost $94.00, refund of £7.5bn? no, €1,299.99",
    "Netgear R7000 and Samsung SM-G991B",
    "My iPhone is on 11.1.2, and my watch is on 4.1.",
    "zip 75227, seat 12B, gate K17",
    "24/7 for 5 days",
    "meet @5pm",
    "iwlagn on 9.04; root (hd0,1)",
    "std::vector<int> and Foo::Bar",
    "MAC 00:1A:2B:3C:4D:5E",
    "numbers 100 200 3000 in the table",
    "order 123 456 7890",
    "https://t.co/GDrqU22YpT",
    "KB4023057 and ISBN 978-3-16-148410-0",
    "Thanks, Everyone!",
    "Hi Team, any update?",
    "This is fine with me",
    "my name is not on the account",
    "Username: admin",
]


@pytest.mark.parametrize("text", PRECISION)
def test_precision(text):
    assert plain.redact(text) == text


# ---------------------------------------------------------------------------------------------------
# Known names and speaker placeholders
# ---------------------------------------------------------------------------------------------------


def test_known_names_whole_word_case_insensitive():
    r = Redactor(["crystal minh", "cminh730"])
    assert r.redact("CRYSTAL MINH") == "[NAME]"
    assert r.redact("Username: cminh730") == "Username: [NAME]"
    assert r.redact("user cminh7300 is someone else") == "user cminh7300 is someone else"  # whole word only
    assert r.redact("What is your membership level Crystal?") == "What is your membership level [NAME]?"
    assert r.redact("Ms. Minh, your refund is ready") == "Ms. [NAME], your refund is ready"
    # a part of a multi-word name only counts when capitalized in the text
    assert r.redact("the screen is crystal clear") == "the screen is crystal clear"


def test_speaker_placeholders():
    r = Redactor(["Kenneth Gold", "Andre Da Costa", "bad_image"])
    mapping = {"Kenneth Gold": "user1", "Andre Da Costa": "agent1", "bad_image": "user2"}
    assert r.redact("Hi Kenneth, try this.", mapping) == "Hi user1, try this."
    assert r.redact("thanks Andre Da Costa!", mapping) == "thanks agent1!"
    assert r.redact("That worked, thanks Andre!", mapping) == "That worked, thanks agent1!"
    assert r.redact("bad_image: did it work?", mapping) == "user2: did it work?"
    # short parts ("Da") are not matched on their own
    assert r.redact("Da capo", mapping) == "Da capo"
    # without a placeholder the name becomes [NAME]
    assert r.redact("Hi Kenneth, try this.") == "Hi [NAME], try this."


def test_role_words_and_common_words_are_never_names():
    r = Redactor(["customer", "agent", "user", "system", "Speaker 1", "help", "ubuntu", "7", "x"])
    text = "The customer asked the agent for help with ubuntu; the system said 7 of x."
    assert r.redact(text) == text


def test_name_with_regex_characters():
    r = Redactor(["j.doe (admin)", "c++guy"])
    assert r.redact("ask j.doe (admin) or c++guy") == "ask [NAME] or [NAME]"


def test_disabled_redactor_returns_text_unchanged():
    text = "Call (977) 625-2661 or mail cminh730@email.com, Crystal Minh"
    assert Redactor(["crystal minh"], enabled=False).redact(text) == text


def test_overlaps_prefer_the_more_specific_finding():
    r = Redactor(["cminh730"])
    assert r.redact("cminh730@email.com") == "[EMAIL]"
    assert r.redact("@cminh730 hi") == "[MENTION] hi"


# ---------------------------------------------------------------------------------------------------
# Real fixture lines
# ---------------------------------------------------------------------------------------------------


def test_abcd_fixture_lines():
    convs = parse_file(ABCD).conversations
    first = convs[0]
    redactor = Redactor(first.metadata["_names"])
    texts = {t.text: redactor.redact(t.text) for t in first.turns}
    assert texts["(977) 625-2661"] == "[PHONE]"
    assert texts["Crystal Minh"] == "[NAME]"
    assert texts["Username: cminh730"] == "Username: [NAME]"
    assert texts["cminh730@email.com"] == "[EMAIL]"
    assert texts["Order ID: 3348917502"] == "Order ID: 3348917502"
    assert texts["thanks so much! What is your membership level Crystal?"] == (
        "thanks so much! What is your membership level [NAME]?"
    )
    raw = json.loads(ABCD.read_text(encoding="utf-8"))
    action = next(text for speaker, text in raw[0]["original"] if "(977) 625-2661" in text and speaker == "action")
    assert Redactor().redact(action) == "Details of [PHONE] have been entered."


def test_tweetsumm_fixture_lines():
    first = parse_file(TWEETSUMM).conversations[0]
    redacted = [plain.redact(t.text) for t in first.turns]
    assert redacted[1] == "[MENTION] please read the above."
    assert redacted[2].startswith("[MENTION] Let’s investigate this together.")
    assert redacted[3] == "[MENTION] My iPhone is on 11.1.2, and my watch is on 4.1."
    assert "@" not in " ".join(redacted)


def test_multidogo_fixture_names_from_slot_labels():
    first = parse_file(MULTIDOGO).conversations[0]
    redactor = Redactor(first.metadata["_names"])
    texts = [redactor.redact(t.text) for t in first.turns]
    assert texts[4] == "[NAME] n76f34"
    assert texts[5] == "Thanks [NAME]! Please allow me a moment to check the details and get back to you."
    assert "5D" in texts[7]


_FACT = re.compile(r"\b\d+(?:\.\d+)+\b|\b0x[0-9A-Fa-f]+\b|\b[A-Z]{1,3}-?\d{2,}[A-Z]?\b|\b\d{5,}\b")


@pytest.mark.parametrize("path", [ABCD, TWEETSUMM, MULTIDOGO])
def test_fixture_facts_survive_redaction(path):
    """Version-, code- and number-like tokens outside e-mails, phones and handles are all kept."""
    checked = 0
    for conversation in parse_file(path).conversations:
        redactor = Redactor(conversation.metadata["_names"])
        for turn in conversation.turns:
            out = redactor.redact(turn.text)
            pii = _PII.findall(turn.text)
            for fact in _FACT.findall(turn.text):
                if not any(fact in span for span in pii):
                    assert fact in out, (fact, turn.text, out)
                    checked += 1
    assert checked > 0


_PII = re.compile(r"\S*@\S+|\(\d{3}\) \d{3}-\d{4}|\d{3}-\d{3}-\d{4}")
