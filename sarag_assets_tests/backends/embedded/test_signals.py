"""The signal detectors: positives on realistic sentences and the negatives that matter."""

from __future__ import annotations

import pytest

from sarag_assets.backends.embedded.analysis import analyze
from sarag_assets.backends.embedded.codes import (
    find_error_codes,
    find_error_messages,
    find_models,
)
from sarag_assets.backends.embedded.cues import (
    cause_clause,
    confirmation,
    instruction_score,
    problem_score,
)
from sarag_assets.backends.embedded.quantities import (
    find_amounts,
    find_dates,
    find_identifiers,
    find_measurements,
    find_plans,
)
from sarag_assets.backends.embedded.statements import (
    answer_value,
    find_key_values,
    find_statements,
    requested_slots,
)
from sarag_assets.backends.embedded.text import snake, split_sentences
from sarag_assets.backends.embedded.versions import (
    correction_cue,
    find_browsers,
    find_os,
    find_versions,
    is_negated,
)


def values(hits):
    return [(h.name, h.value) for h in hits]


# --- text utilities ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Order ID", "order_id"),
        ("firmware Version", "firmware_version"),
        ("errorCode", "error_code"),
        ("OrderID", "order_id"),
        ("iPhone version", "iphone_version"),
        ("Café crème #", "cafe_creme_number"),
        ("3rd party app", "n_3rd_party_app"),
        ("a very long key name that goes on and on beyond the limit", "a_very_long_key_name_that_goes_on_and_on"),
    ],
)
def test_snake(raw, expected):
    name = snake(raw)
    assert name == expected
    assert len(name) <= 40 and name.isascii()


def test_split_sentences_keeps_list_items_versions_and_abbreviations():
    text = "Try these steps:\n1. Flash firmware 5.1.5 from the admin page.\n2. Restart the LS-DSL500. E.g. via the U.S. site."
    sents = [s for _, _, s in split_sentences(text)]
    assert sents == [
        "Try these steps:",
        "1. Flash firmware 5.1.5 from the admin page.",
        "2. Restart the LS-DSL500.",
        "E.g. via the U.S. site.",
    ]
    for start, end, s in split_sentences(text):
        assert text[start:end] == s
    assert [s for _, _, s in split_sentences('It hangs at "Syncing..." and never finishes. Odd.')] == [
        'It hangs at "Syncing..." and never finishes.',
        "Odd.",
    ]


@pytest.mark.parametrize("text, expected", [
    ("我的手机充不进电。换了充电器也不行！怎么办？", ["我的手机充不进电。", "换了充电器也不行！", "怎么办？"]),
    ("जहाज़ देर से आया। मेरा पैसा वापस कब मिलेगा?", ["जहाज़ देर से आया।", "मेरा पैसा वापस कब मिलेगा?"]),
    ("جهاز التوجيه لا يعمل. هل جربت إعادة التشغيل؟ نعم، مرتين.", ["جهاز التوجيه لا يعمل.", "هل جربت إعادة التشغيل؟", "نعم، مرتين."]),
    ("میرا فون بند ہو گیا ہے۔ کیا کروں؟", ["میرا فون بند ہو گیا ہے۔", "کیا کروں؟"]),
    ("Երթուղիչը չի աշխատում։ Վերագործարկեցի երկու անգամ։", ["Երթուղիչը չի աշխատում։", "Վերագործարկեցի երկու անգամ։"]),
    ("ទូរស័ព្ទរបស់ខ្ញុំមិនសាកថ្មទេ។ ខ្ញុំបានប្តូរឆ្នាំងសាក។", ["ទូរស័ព្ទរបស់ខ្ញុំមិនសាកថ្មទេ។", "ខ្ញុំបានប្តូរឆ្នាំងសាក។"]),
    ("ဖုန်း အားမသွင်းပါ။ အားသွင်းကြိုး ပြောင်းပြီးပြီ။", ["ဖုန်း အားမသွင်းပါ။", "အားသွင်းကြိုး ပြောင်းပြီးပြီ။"]),
])
def test_sentences_end_at_each_scripts_full_stop_and_question_mark(text, expected):
    # Chinese ends a sentence with no space after it; Hindi's danda, Arabic's ؟, Urdu's ۔, Armenian's ։,
    # Khmer's ។ and Burmese's ။ with one
    assert [s for _, _, s in split_sentences(text)] == expected


# --- versions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("My router is on firmware 1.2.4 since Monday.", [("firmware_version", "1.2.4")]),
        ("The app version is 6.1.7, installed last week.", [("app_version", "6.1.7")]),
        ("Version 5.4.5, installed yesterday.", [("version", "5.4.5")]),
        ("My iPhone is on 11.1.2, and my watch is on 4.1.", [("iphone_version", "11.1.2"), ("watch_version", "4.1")]),
        ("Kernel is 5.15.0-91-generic.", [("kernel_version", "5.15.0-91-generic")]),
        ("It started after build 22621 rolled out.", [("build_number", "22621")]),
        ("I rolled back to v2.3.1 and it works.", [("version", "v2.3.1")]),
        ("Also, it says 4.7.6 in the About box.", [("version", "4.7.6")]),  # "in" is no unit after three parts
        ("Firmware 3.6.2 in the office, 3.6.4 at home.", [("firmware_version", "3.6.2"), ("version", "3.6.4")]),
        # a model code names one device: no column per model ("ax3000_version")
        ("Running AX3000 1.2.3 here, 型号是 RT-N12，固件 3.0.0.4", [("version", "1.2.3"), ("version", "3.0.0.4")]),
    ],
)
def test_versions(text, expected):
    assert values(find_versions(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Please ping 81.2.69.160 from the router.",  # an address, not a version
        "It costs $12.99 a month.",  # an amount
        "Speeds are 2.5 GB per hour at most.",  # a measurement
        "The meeting is on 12.03.2024.",  # a date
        "I rated it 4.5 stars.",
        "Around 8.30 in the evening.",  # two parts without a version cue
        "The screen is 6.1 in wide.",  # a measurement in inches
    ],
)
def test_not_versions(text):
    assert find_versions(text) == []


def test_agent_update_instruction_is_a_target_version():
    hits = find_versions("Please update the app to 6.1.7 from the store.", role="agent", instruction=True)
    assert values(hits) == [("target_version", "6.1.7")]
    # a fix named without an instruction is one too, but an update the helper reports is what is installed
    assert values(find_versions("That bug was fixed in 6.1.8.", role="agent")) == [("target_version", "6.1.8")]
    hits = find_versions("Your hub updated to 2.8.1 on Saturday, which enabled Fast Roaming.", role="agent")
    assert values(hits) == [("version", "2.8.1")]


# --- OS, browsers -----------------------------------------------------------------------------------


def test_os_and_browser():
    assert [h.value for h in find_os("I'm running Windows 11 Pro 23H2 and macOS Sonoma 14.5 on the other box.")] == [
        "Windows 11 Pro 23H2",
        "macOS Sonoma 14.5",
    ]
    assert [h.value for h in find_os("After upgrading to Ubuntu 22.04 LTS wifi broke; my phone has Android 13.")] == [
        "Ubuntu 22.04 LTS",
        "Android 13",
    ]
    assert find_os("I cleaned the windows of the house.") == []
    assert [h.value for h in find_browsers("Same in Chrome 120.0.6099 and Firefox.")] == ["Chrome 120.0.6099", "Firefox"]
    # an OS version is the OS's, not a separate software version
    assert find_versions("My iPhone runs iOS 17.2.1 now.") == []


# --- error codes and messages -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Windows Update fails with 0x80070005.", ["0x80070005"]),
        ("The installer exits with error 1603.", ["1603"]),
        ("Error code: E-1042 appears on the display.", ["E-1042"]),
        ('I get this: "WAN link down (LS-E854)"', ["LS-E854"]),
        ("Chrome shows ERR_CONNECTION_REFUSED on every site.", ["ERR_CONNECTION_REFUSED"]),
        ("The page returns 404 Not Found.", ["404"]),
    ],
)
def test_error_codes(text, expected):
    assert [h.value for h in find_error_codes(text)] == expected


@pytest.mark.parametrize(
    "text",
    [
        "My router is a Netgear R7000.",  # a model number outside any error context
        "No error code that I can see.",
        "Tracking for the CK-87 says delivered but I never got it.",
        "I ordered 2 items in 2023.",
    ],
)
def test_not_error_codes(text):
    assert find_error_codes(text) == []


def test_error_messages():
    assert [h.value for h in find_error_messages('When I open it, it says "Unable to connect to the server".')] == [
        "Unable to connect to the server"
    ]
    assert [h.value for h in find_error_messages("ModuleNotFoundError: No module named 'numpy'")] == [
        "ModuleNotFoundError: No module named 'numpy'"
    ]
    assert find_error_messages('My daughter calls it "the magic box".') == []


# --- models, identifiers, plans ---------------------------------------------------------------------


def test_models():
    assert [h.value for h in find_models("My router is a Netgear R7000 and the phone is an SM-G991B.")] == ["R7000", "SM-G991B"]
    strong = find_models("My modem is the Homelink HC31 cable modem (HC-31).")
    assert {h.value for h in strong} == {"HC31", "HC-31"}
    assert max(h.strength for h in strong) >= 0.75
    # units, seats, long identifiers and plain versions are not models
    assert find_models("I pay for 20GB on 5G, seat 12B, order CC-6395812, version 5.4.5.") == []
    # nor is a byte of an encoded path
    assert find_models('Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.24/containers/json": permission denied') == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Order ID: 3348917502", [("order_id", "3348917502")]),
        ("Account 484-514455, if that helps.", [("account_number", "484-514455")]),
        ("I opened ticket #55812 yesterday.", [("ticket_number", "55812")]),
        ("my booking confirmation number fgh425", [("booking_confirmation_number", "fgh425")]),
        ("Tracking number 1Z999AA10123456784 has not moved.", [("tracking_number", "1Z999AA10123456784")]),
        ("My username is cminh730", [("username", "cminh730")]),
    ],
)
def test_identifiers(text, expected):
    assert values(find_identifiers(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Call me at [PHONE] about the order.",  # a phone number is a placeholder, never an order number
        "I ordered 2 items and case 1 was empty.",
        "Please update to version 2.3.1 first.",
    ],
)
def test_not_identifiers(text):
    assert find_identifiers(text) == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("My plan is Fiber 300.", [("plan", "Fiber 300")]),
        ("I'm on the Cable 200 plan.", [("plan", "Cable 200")]),
        ("We pay for the Premium subscription.", [("subscription", "Premium")]),
    ],
)
def test_plans(text, expected):
    assert values(find_plans(text)) == expected


# --- dates and amounts ------------------------------------------------------------------------------


def test_dates():
    assert values(find_dates("I bought it on March 3, 2022.")) == [("purchase_date", "2022-03-03")]
    assert values(find_dates("It was delivered 2023-11-02.")) == [("delivery_date", "2023-11-02")]
    assert values(find_dates("Charged on 25/12/2023 again.")) == [("billing_date", "2023-12-25")]
    ambiguous = find_dates("Since 03/04/2022 it fails.")
    assert [h.value for h in ambiguous] == ["03/04/2022"] and ambiguous[0].type == "string"  # day/month unclear
    assert find_dates("You may want to restart.") == []


def test_amounts():
    assert values(find_amounts("I was charged $49.99 twice.")) == [("charge_amount", "49.99")]
    assert values(find_amounts("The refund of €1,250.00 never arrived.")) == [("refund_amount", "1250.00")]
    assert values(find_amounts("It is 120 dollars per month.")) == [("price", "120")]
    assert find_amounts("Version 2.3 has 4 bugs.") == []


def test_measurements():
    assert values(find_measurements("I only get 20 Mbps on a 64GB phone.")) == [("speed", "20 Mbps"), ("data_size", "64GB")]


# --- statements, key-values, slots ------------------------------------------------------------------


def test_key_values():
    assert values(find_key_values("Username: cminh730\nBrowser: Chrome, OS: Windows 11")) == [
        ("username", "cminh730"),
        ("browser", "Chrome"),
        ("os", "Windows 11"),
    ]
    assert find_key_values("Forgot to say: the carrier is late.\nNote: nothing") == []
    # a chat line addressed to someone whose nick was redacted is not a field named after them
    assert find_key_values("user1: install the cuda toolkit\nagent2: no, reboot") == []


def test_statements():
    assert values(find_statements("My router is the Homelink HC31, and it is hot.")) == [("router", "Homelink HC31")]
    assert values(find_statements("Your seat number is 5D it is a middle seat.", role="agent")) == [("seat_number", "5D")]
    assert find_statements("My internet is slow and my phone is broken.") == []  # states, not values


def test_requested_slots_and_answers():
    assert requested_slots("ok, may I have your username, email address and order ID please?") == [
        "username",
        "email address",
        "order ID",
    ]
    assert requested_slots("Which U.S. based card is this concerning?") == ["card"]
    assert requested_slots("was the purchase made in the last 90 days?") == []
    assert answer_value("I'm a bronze") == "bronze"
    assert answer_value("It was the Delta sky miles card.") == "Delta sky miles card"
    assert answer_value("not sure, whatever came with it") is None
    assert answer_value("ok") is None


# --- cues -------------------------------------------------------------------------------------------


def test_negation_and_correction_cues():
    text = "Actually it's 2.3, not 2.1."
    assert correction_cue(text)
    assert is_negated(text, text.index("2.1"), text.index("2.1") + 3)
    assert not is_negated(text, text.index("2.3"), text.index("2.3") + 3)
    t2 = "It doesn't work on 2.1 either."
    assert not is_negated(t2, t2.index("2.1"), t2.index("2.1") + 3)  # the working is denied, not the version
    assert not correction_cue("The router reboots every night.")


@pytest.mark.parametrize(
    "sentence, role, polarity",
    [
        ("That worked, thanks!", "user", 1),
        ("Yes!! it works now", "user", 1),
        ("Great, fixed. thank you", "user", 1),
        ("Did that, didn't help.", "user", -1),
        ("Done, but it's still happening.", "user", -1),
        ("It worked perfectly before the update.", "user", 0),
        ("No problem, have a nice day", "user", 0),
        ("Unfortunately we cannot accept the return.", "agent", -1),
        ("Your seat has been changed successfully.", "agent", 1),
    ],
)
def test_confirmation(sentence, role, polarity):
    assert confirmation(sentence, role)[0] == polarity


def test_instruction_score():
    assert instruction_score("Restart the router and let me know.") >= 0.5
    assert instruction_score("2. Delete index.db in the data folder.") >= 0.5
    assert instruction_score("The fix is to switch the modem to bridge mode.") >= 0.5
    assert instruction_score("I can ship a replacement at no extra cost.") >= 0.5
    assert instruction_score("Please send us your order ID.") == 0
    assert instruction_score("Let me know if that helps.") == 0
    assert instruction_score("Thank you for contacting us.") == 0


def test_cause_clause():
    assert cause_clause("The crash is caused by a corrupted cache file.") == ("a corrupted cache file", 0.75)
    assert cause_clause("This looks like a known issue.") is None
    assert cause_clause("Why does it happen because of the update?") is None


# --- whole conversations ----------------------------------------------------------------------------


def test_analyze_spread_facts_and_corrections():
    turns = [
        ("user", "Hi! My Acme Hub keeps dropping wifi every evening. It's on firmware 2.1.0."),
        ("agent", "Sorry to hear that. Could you confirm the account number?"),
        ("user", "It's 552-193847."),
        ("agent", "Thanks. Which plan are you on?"),
        ("user", "I'm on the Fiber 300 plan. Actually the firmware is 2.3.0, not 2.1.0."),
        ("agent", "The drops are caused by a memory leak in that firmware. Please update the hub to 2.4.1 from the admin page."),
        ("user", "That fixed it, thanks!"),
    ]
    an = analyze(turns)
    best = {f.name: an.best(an.by_name(f.name)).value for f in an.findings if f.usable}
    assert best["firmware_version"] == "2.3.0"  # the correction wins
    assert all(f.value != "2.1.0" for f in an.findings if f.usable)  # the denied value never counts
    assert best["account_number"] == "552-193847"  # answer to the agent's question, two turns later
    assert best["plan"] == "Fiber 300"
    assert best["target_version"] == "2.4.1"
    assert best["resolution"] == "Please update the hub to 2.4.1 from the admin page."
    assert best["resolved"] == "true"
    assert best["root_cause"] == "a memory leak in that firmware"
    assert best["product"] == "Acme Hub"
    assert "dropping wifi" in an.problem_text  # the opening, what column relevance is measured against


def test_a_value_denied_in_the_sentence_that_first_named_it_never_counts():
    turns = [
        ("user", "Playback in the app fails on every title."),
        ("agent", "What version of the app is it?"),
        ("user", "8.4.0 waait, i checked again: 9.0.0, not 8.4.0"),
        ("agent", "Please turn off the VPN while watching."),
    ]
    an = analyze(turns)
    assert [f.value for f in an.findings if f.usable and f.signal == "version"] == ["9.0.0"]


def test_the_root_cause_of_a_second_issue_is_not_the_rows():
    turns = [
        ("user", "Playback in the music app keeps failing on every title."),
        ("agent", "Switch off the VPN and that should do it."),
        ("user", "Confirmed, it's working again. Also, unrelated, the family invite says invalid."),
        ("agent", "It seems the invitee's account is registered in another country. Please update it and resend."),
        ("user", "Great, sorted as well."),
    ]
    an = analyze(turns)
    assert an.by_signal("root_cause") == []  # the only cause stated is the second issue's
    turns[1] = ("agent", "It fails because the VPN makes it look like you are in another region. Switch it off.")
    an = analyze(turns)
    assert [f.turn for f in an.by_signal("root_cause")] == [1]  # the first issue's cause, stated before


def test_analyze_shape_correction_and_unresolved():
    turns = [
        ("agent", "Hello, how can I help?"),
        ("user", "My parcel never arrived."),
        ("agent", "What's the order number?"),
        ("user", "MK-7538395"),
        ("agent", "Please wait another 24 hours."),
        ("user", "Sorry, I meant MK-7538795. And it's still not here."),
    ]
    an = analyze(turns)
    order = [f for f in an.findings if f.usable and f.name == "order_number"]
    assert [f.value for f in order] == ["MK-7538795"]
    resolved = an.best(an.by_signal("resolved"))
    assert resolved is not None and resolved.value == "false"


def test_analyze_is_deterministic_and_fast_enough():
    turns = [("user", "Windows 11 23H2: Outlook crashes with 0x80004005 since the 2.3.1 update."), ("agent", "Try repairing Office.")] * 5
    a, b = analyze(turns), analyze(turns)
    assert [(f.signal, f.name, f.value, f.turn) for f in a.findings] == [(f.signal, f.name, f.value, f.turn) for f in b.findings]


def test_analyze_forum_thread_self_fix_and_attempts():
    turns = [
        ("user", "Excel keeps freezing when I open a workbook with pivot tables. I already restarted the PC, no change. Version 2310 (Build 16924.20150)."),
        ("agent", "Try starting Excel in safe mode (hold Ctrl while launching)."),
        ("user", "Safe mode works. I disabled the Power Pivot add-in and now it opens fine. Problem solved!"),
    ]
    an = analyze(turns)
    best = {s: an.best(an.by_signal(s)) for s in ("resolution", "resolved", "attempted_steps", "version")}
    assert best["resolution"].value == "I disabled the Power Pivot add-in and now it opens fine."  # the user's own fix
    assert best["resolution"].role == "user"
    assert best["resolved"].value == "true"
    assert best["attempted_steps"].value == "I already restarted the PC, no change"
    assert best["version"].value == "2310"


def test_analyze_escalation_without_resolution():
    turns = [
        ("user", "I was double charged for my last order and need a refund."),
        ("agent", "Unfortunately I can't issue refunds from chat. I'll escalate this to our billing team, someone will get back to you within 48 hours."),
        ("user", "Ok, thanks for trying."),
    ]
    an = analyze(turns)
    assert an.best(an.by_signal("escalated")).value == "true"
    assert an.best(an.by_signal("resolved")).value == "false"
    assert an.best(an.by_signal("resolution")) is None  # no concrete step was given


# --- problem statement ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "problem, not_problem",
    [
        # a malfunction beats the report of a step already tried
        ("My printer won't print anything since the update.", "I restarted the printer twice, it didn't help."),
        ("Power-cycling didn't help and the scanner still jams.", "Reinstalled the driver, no change."),
        # a malfunction beats a bare detail, even one that contains the word "error"
        ("The thermostat keeps resetting to 30 degrees at night.", "The status page says firmware 3.2.1."),
        ("The dishwasher leaks from the door.", "I get error E24 every time."),
        # what the software says (quoted) is a detail, not the user's statement of the problem
        ("My card is declined at checkout.", 'It shows "Payment failed (E-402)".'),
        # what works fine and background usage are not the problem
        ("Playlists stopped syncing to my phone.", "I've used Spotify for years with no issues."),
        ("My tablet has no sound in videos.", "I rely on the tablet for school."),
        # an aside or a bare plea is not the problem
        ("The bank app logs me out every minute.", "Btw, the weather here is awful."),
        ("The ticket machine rejected my card.", "How do I fix this?"),
    ],
)
def test_problem_score_prefers_the_malfunction(problem, not_problem):
    assert problem_score(problem) >= 0.5
    assert problem_score(problem) > problem_score(not_problem)


# --- instructions and resolutions -------------------------------------------------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        "Could you clear the browser cache and try again?",
        "Can you reseat the memory module and let me know?",
        "You'll need to re-pair the headphones.",
        "Let's reset your PIN.",
        "Please have them re-send the invitation.",
        "Nice, next please restart the dishwasher.",
        "Step one: do a factory reset from the recovery menu.",
        "Please let Zoom through the firewall.",
        "Let me reissue the boarding pass to your email.",
    ],
)
def test_instruction_score_polite_steps(sentence):
    assert instruction_score(sentence) >= 0.5


@pytest.mark.parametrize(
    "sentence",
    [
        "Can you tell me your booking reference?",
        "Could you check the version number for me?",
        "Could you please allow me a moment while I look?",
        "Let's move this to DM.",
        "Let's see what we can do.",
        "Do keep us posted.",
        "Do the two devices show up in the list?",
        "Have a safe flight!",
    ],
)
def test_instruction_score_not_steps(sentence):
    assert instruction_score(sentence) == 0


# A chained fix for a first issue, then a second issue (also used by test_gist).
CHAINED_FIX_THEN_SECOND_ISSUE = [
    ("user", "My dishwasher shows E24 and won't drain."),
    ("agent", "Please clean the drain filter under the lower rack."),
    ("user", "Done, but it still won't drain."),
    ("agent", "Thanks. First, disconnect the drain hose and clear the blockage."),
    ("user", "ok"),
    ("agent", "Good. Now run a short rinse cycle."),
    ("user", "That worked, thanks!"),
    ("user", "Also, my oven clock resets every night."),
    ("agent", "Hold the lock button for 3 seconds after setting the clock."),
    ("user", "That fixed it too."),
]


def test_resolution_is_the_head_of_the_confirmed_chain_for_the_first_issue():
    turns = CHAINED_FIX_THEN_SECOND_ISSUE
    an = analyze(turns)
    res = an.best(an.by_signal("resolution"))
    # not the filter (it failed), not the rinse cycle (the follow-through), not the oven (the second issue)
    assert res is not None and res.value == "First, disconnect the drain hose and clear the blockage."


def test_resolution_none_when_the_step_failed_and_the_agent_escalated():
    turns = [
        ("user", "The e-reader won't turn on."),
        ("agent", "Could you charge it for an hour and hold the power button for 40 seconds?"),
        ("user", "Did that, no change."),
        ("agent", "I'm sorry. I've escalated this to our hardware team, they'll email you."),
        ("user", "Ok."),
    ]
    an = analyze(turns)
    assert an.best(an.by_signal("resolution")) is None


def test_resolution_list_after_a_header_and_a_polite_request():
    turns = [
        ("user", "Invites to my family plan never arrive."),
        ("agent", "Try these steps:\n1. Have them update their account country.\n2. Resend the invite."),
        ("user", "That did it, thanks!"),
    ]
    res = analyze(turns).best(analyze(turns).by_signal("resolution"))
    assert res is not None and "update their account country" in res.value and "Resend the invite" in res.value
    turns = [
        ("user", "The VPN drops every few minutes."),
        ("agent", "Could you switch the protocol to TCP in the settings?"),
        ("user", "Yes, that worked."),
    ]
    res = analyze(turns).best(analyze(turns).by_signal("resolution"))
    assert res is not None and res.value == "Could you switch the protocol to TCP in the settings?"


# --- product names ----------------------------------------------------------------------------------


def product_of(turns):
    an = analyze(turns)
    f = an.best(an.by_signal("product"))
    return f.value if f is not None else None


def test_product_is_not_a_person():
    assert product_of([("user", "Hi, this is Maria Lopez. My Roomba keeps stopping in the hallway.")]) == "Roomba"
    assert product_of([("user", "(name's Tomasz) The Kobo Clara won't charge."), ("agent", "Sorry about that, Tomasz.")]) == "Kobo Clara"
    turns = [
        ("user", "Hello,\nmy Garmin Forerunner keeps losing GPS.\nThanks,\nPriya"),
        ("agent", "Thanks, Priya. Please update the watch from the Connect app."),
    ]
    assert product_of(turns) == "Garmin Forerunner"


def test_values_written_against_chinese_and_japanese_are_found_verbatim():
    found = {(f.signal, f.value) for f in analyze([("user", "我的华为P40手机充不进电，版本是10.1.0。")]).findings}
    assert {("product", "P40"), ("version", "10.1.0")} <= found
    assert ("model", "WH-1000XM4") in {(f.signal, f.value) for f in analyze([("user", "ソニーのWH-1000XM4がペアリングできません。")]).findings}
    # Chinese is read as spaces, but a name is never read across it: "P40 P40" is not in the text
    assert product_of([("user", "我的P40手机P40坏了，请帮忙。")]) in (None, "P40")


def test_product_is_not_an_identifier_or_a_setting_in_code():
    turns = [("user", "STRIPE_KEY is empty in production although the deploy sets STRIPE_KEY in the env file.")]
    assert product_of(turns) is None
    turns = [
        ("user", "the service won't start: Process: 2231 ExecStart=/opt/minecraft/start.sh "
                 "(code=exited, status=203/EXEC)"),
        ("agent", "your ExecStart=/opt/minecraft/start.sh has no x bit. chmod +x it, or write "
                  "ExecStart=/bin/bash /opt/minecraft/start.sh"),
    ]
    assert product_of(turns) is None
    turns = [("user", "My Flask app ignores SPRING_PROFILES_ACTIVE and STRIPE_KEY from the env file.")]
    assert product_of(turns) == "Flask"


def test_product_is_not_a_menu_path_button_or_dialog():
    turns = [
        ("user", "My phone keeps rebooting."),
        ("agent", "Go to Settings > About and tap Software Information. What does it say in the About box?"),
    ]
    assert product_of(turns) is None


def test_product_is_not_a_plan_carrier_payment_or_kind_of_thing():
    turns = [("user", "I'm on the Unlimited Plus plan and my Galaxy S21 has no signal. The TV app works though.")]
    assert product_of(turns) == "Galaxy S21"
    turns = [("user", "It was shipped with FedEx and my Dyson V11 arrived broken. I paid with PayPal.")]
    assert product_of(turns) == "Dyson V11"
    turns = [
        ("agent", "Which plan are you on?"),
        ("user", "Family Max"),
        ("agent", "And which model is it?"),
        ("user", "It's a Bosch Serie 4 dishwasher."),
    ]
    assert product_of(turns) == "Bosch Serie 4"


def test_product_correction_and_model_code_of_a_longer_name():
    turns = [("user", "I'm using the Kindle Oasis. Sorry, I meant the Kindle Paperwhite, not the Kindle Oasis. It freezes on the home screen.")]
    assert product_of(turns) == "Kindle Paperwhite"
    turns = [
        ("user", "The HL-2270 prints blank pages."),
        ("agent", "Which printer model is it exactly?"),
        ("user", "A Brother HL2270 laser printer."),
        ("agent", "Please replace the toner in the HL-2270."),
    ]
    assert product_of(turns) == "Brother HL2270"  # the code counts for the longer name


def test_a_measure_joined_to_its_number_is_part_of_the_name():
    # "27-inch", "6-Quart", "2-in-1": a hyphen does not end a name, and a code is not cut inside a word
    assert product_of([("user", "My Kestrel 27-inch Monitor flickers after the update.")]) == "Kestrel 27-inch Monitor"
    assert product_of([("user", "The Instant Pot 6-Quart won't seal.")]) == "Instant Pot 6-Quart"
    assert product_of([("user", "The Netgear 8-Port Switch drops links every hour.")]) == "Netgear 8-Port Switch"
    assert product_of([("user", "My Lenovo Yoga 2-in-1 won't wake up.")]) == "Lenovo Yoga 2-in-1"
    # a range or a date after a name is not part of it
    assert product_of([("user", "My Kestrel 27 flickers 3-4 times a day.")]) == "Kestrel 27"


def test_a_short_model_code_counts_for_the_longer_name_that_holds_it_whole():
    turns = [("user", "T3 drops to 15 degrees every afternoon\n\nThermia T3, set up in October. The T3 shows 'Away'."),
             ("agent", "Check the phone's location permission.")]
    assert product_of(turns) == "Thermia T3"
    # a short code is the name's only as a whole token
    from sarag_assets.backends.embedded.products import _names_same_thing
    assert _names_same_thing("T3", "Thermia T3") and not _names_same_thing("T3", "Thermia T35")


def test_a_word_opening_a_quoted_status_or_label_is_no_name():
    # a quoted message starts its own sentence: its first word is capitalized for that, not as a name
    turns = [("user", "Since 1.4 it no longer shows 'Preparing shaders' in the menu and the game stutters."),
             ("agent", "Check the launch options.")]
    assert product_of(turns) is None
    # an apostrophe inside a word opens nothing
    assert product_of([("user", "It's Orbit Mail that fails since this morning.")]) == "Orbit Mail"


def test_two_names_joined_by_and_stay_two():
    # a name with "and" inside is kept whole by the batch's unit names (core/structuring/test_unit_names.py);
    # the detector alone reads one conversation, where "Orbit Mail and the Postwise" are two names
    turns = [("user", "I have the Orbit Mail and the Postwise apps. Orbit Mail won't send since this morning."),
             ("agent", "Is it Orbit Mail or Postwise that fails?")]
    assert product_of(turns) == "Orbit Mail"
    # two names an "and" in lower case joins stay two, however often they are said together
    turns = [("user", "I'm having trouble with Netflix and Hulu on my Roku TV."),
             ("agent", "Do Netflix and Hulu both show the same error?")]
    assert product_of(turns) not in ("Netflix and Hulu", "Netflix And Hulu")
    turns = [("user", "My iPhone and iPad won't sync."), ("agent", "Are your iPhone and iPad on the same account?")]
    assert product_of(turns) == "iPhone"


def test_a_name_shouted_in_capitals_takes_the_case_it_is_also_written_in():
    turns = [("user", "Hi, I have a question about HOBSONS HOUSE. Is breakfast included?"),
             ("agent", "Yes, breakfast is included at Hobsons House.")]
    assert product_of(turns) == "Hobsons House"
    assert product_of(turns[:1]) == "HOBSONS HOUSE"  # written only in capitals: as written


def test_a_bare_model_code_is_the_model_cell_not_the_product_cell_too():
    model_of = lambda an: {f.value for f in an.by_signal("model")}  # noqa: E731
    turns = [("user", "The XR-7 headset crackles on the left side."), ("agent", "Which firmware is on the XR-7?")]
    an = analyze(turns)
    assert model_of(an) == {"XR-7"} and an.by_signal("product") == []
    turns = [("user", "My Sony WH-1000XM4 (WH-1000XM4) keeps disconnecting.")]
    assert product_of(turns) == "Sony WH-1000XM4"  # a name with the code still is the product


def test_product_company_only_where_it_greets():
    turns = [
        ("agent", "Thanks for contacting Lumo! How can I help?"),
        ("user", "Lumo Lights won't pair with my hub."),
        ("agent", "Lumo Support here: please reset the bulb."),
    ]
    assert product_of(turns) == "Lumo Lights"
    assert product_of([("agent", "Thanks for contacting Comcast!"), ("user", "My internet is down since this morning.")]) is None


def test_the_name_that_ends_the_reply_to_which_program_is_the_product():
    # a lone name at the end of a message is mostly a person ("... Phil."), but not in the reply to
    # "which program is it?"; the protocol the helper names later is no product either
    turns = [
        ("agent", "Hello and welcome to Postwise support. How can I help?"),
        ("user", "I can't send anything from the email app, it keeps retrying."),
        ("agent", "What version is installed? Can you tell me which program this is?"),
        ("user", "It says 12.3.0, Postwise"),
        ("agent", "The SMTP port is wrong: change it to 587 and pick STARTTLS."),
        ("user", "That did it, thanks"),
    ]
    assert product_of(turns) == "Postwise"
    assert product_of([("user", "My router drops the connection every hour."), ("agent", "Which model is it?"),
                       ("user", "the AX3000. Thanks, Phil")]) != "Phil"


@pytest.mark.parametrize("salutation", ["Dear Crate & Co team,", "Dear Sir or Madam,", "Sehr geehrtes Nordlicht Team,"])
def test_whom_a_letter_addresses_or_who_signs_it_is_no_product(salutation):
    turns = [("user", f"{salutation}\n\nthe refund for my order hasn't shown up. The total was $193.95.\n\nSincerely,\nMira Holt"),
             ("agent", "Hello,\n\nthe refund was sent to an expired card; I reissued it.\n\nKind regards,\nCarla | Customer Support")]
    assert product_of(turns) is None


def test_resolved_is_about_the_first_issue_and_unknown_after_an_untried_step():
    turns = [
        ("user", "My bike computer won't pair with the heart-rate strap."),
        ("agent", "Please replace the strap's coin battery and pair again."),
        ("user", "That worked, thanks! While I have you, the app shows my rides twice."),
        ("agent", "Could you remove the duplicate account link under Connections?"),
    ]
    an = analyze(turns)
    assert an.best(an.by_signal("resolved")).value == "true"  # the opening problem was fixed
    turns = [
        ("user", "The smart lock doesn't respond to the keypad."),
        ("agent", "Please replace the batteries."),
        ("user", "Did that, still nothing."),
        ("agent", "Could you reset the lock by holding the button for 10 seconds?"),
        ("user", "I'll try that tonight."),
    ]
    an = analyze(turns)
    assert an.best(an.by_signal("resolved")) is None  # the failure was about the first step, not the last
