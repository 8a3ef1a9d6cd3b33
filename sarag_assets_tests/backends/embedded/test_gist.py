"""The problem, resolution and resolved cells of the embedded backend (`backends/embedded/gist.py`), with the
packaged model."""

from __future__ import annotations

import pytest

from sarag_assets.backends.embedded import EmbeddedBackend
from sarag_assets.backends.embedded.gist import _answer_turns, _stating_turns
from sarag_assets.core.structuring.gates import EXCERPT_GAP
from sarag_assets.core.structuring.interface import ConversationInput, ConversationTurn
from sarag_assets_tests.backends.embedded.test_signals import CHAINED_FIX_THEN_SECOND_ISSUE


@pytest.fixture(scope="module")
def backend():
    return EmbeddedBackend()


def gist_of(backend, *turns, speakers=None):
    speakers = speakers or [f"{r}1" for r, _ in turns]
    conv = ConversationInput(dialogue_id="g", turns=[ConversationTurn(speaker=p, role=r, text=t)
                                                     for p, (r, t) in zip(speakers, turns)])
    found = {f.signal: f for f in backend.analysis(conv).findings if f.signal in ("problem", "resolution", "resolved")}
    return {k: f.value for k, f in found.items()}, conv


def test_the_problem_is_the_askers_statement_not_their_later_reports_or_thanks(backend):
    g, conv = gist_of(backend,
        ("agent", "Hello, you're through to Harbor Bank. How can I help?"),
        ("user", "Hi, I'm Sam. I've banked with you for years with no problems."),
        ("user", "So basically the app logs me out every time I open the transfers page, which is really annoying."),
        ("agent", "The transfers page signs you out when the app's session token expired. Update the app to 8.2 and "
                  "sign in again; the new version renews the token in the background."),
        ("user", "I updated it and signed in again, it works now. Thank you so much for the quick help!"),
    )
    assert "logs me out every time I open the transfers page" in g["problem"]
    assert "sign in again" not in g["problem"] and "works now" not in g["problem"]
    text = "\n".join(t.text for t in conv.turns)
    assert all(piece in text for piece in g["problem"].split(EXCERPT_GAP))  # extractive


def test_the_resolution_is_the_confirmed_step_by_step_answer_for_the_first_issue(backend):
    g, _ = gist_of(backend, *CHAINED_FIX_THEN_SECOND_ISSUE)
    # the steps the user confirmed; not the filter (it failed), not the oven (the second issue)
    assert "disconnect the drain hose" in g["resolution"]
    assert "drain filter" not in g["resolution"] and "lock button" not in g["resolution"]
    assert g["resolved"] == "true"


@pytest.mark.parametrize("turns", [
    [("user", "The e-reader won't turn on."),
     ("agent", "Could you charge it for an hour and hold the power button for 40 seconds?"),
     ("user", "Did that, no change."),
     ("agent", "I'm sorry. I've escalated this to our hardware team, they'll email you."),
     ("user", "Ok.")],
    [("user", "I was double charged for my last order and need a refund."),
     ("agent", "Unfortunately I can't issue refunds from chat. I'll escalate this to our billing team, someone will get "
               "back to you within 48 hours."),
     ("user", "Ok, thanks for trying.")],
])
def test_nothing_resolved_it_when_the_step_failed_or_the_helper_passed_it_on(backend, turns):
    g, _ = gist_of(backend, *turns)
    assert "resolution" not in g and g["resolved"] == "false"


def test_a_list_after_a_header_and_a_step_put_as_a_question(backend):
    g, _ = gist_of(backend,
        ("user", "Invites to my family plan never arrive."),
        ("agent", "Try these steps:\n1. Have them update their account country.\n2. Resend the invite."),
        ("user", "That did it, thanks!"),
    )
    assert "update their account country" in g["resolution"] and "Resend the invite" in g["resolution"]
    g, _ = gist_of(backend,
        ("user", "The VPN drops every few minutes."),
        ("agent", "Could you switch the protocol to TCP in the settings?"),
        ("user", "Yes, that worked."),
    )
    assert g["resolution"] == "Could you switch the protocol to TCP in the settings?" and g["resolved"] == "true"


def test_an_answer_taken_but_not_confirmed_fills_the_resolution_and_leaves_resolved_open(backend):
    g, _ = gist_of(backend,
        ("user", "Hola, la app del banco no me manda el código SMS para entrar."),
        ("agent", "Desde que cambiaste la tarjeta SIM bloqueamos los códigos SMS durante 72 horas por seguridad. "
                  "Puedes entrar con la app del token mientras tanto."),
        ("user", "Vale, lo pruebo mañana."),
    )
    assert g["problem"].startswith("Hola, la app del banco no me manda el código SMS")
    assert g["resolution"].startswith("Desde que cambiaste la tarjeta SIM")
    assert "resolved" not in g  # nobody said it worked, and nothing says it failed


def test_a_sign_off_closer_to_the_problem_than_the_fix_is_not_the_fix(backend):
    # "Any help appreciated" and "Happy to help" are closer in the model than the problem and its fix
    g, _ = gist_of(backend,
        ("user", "My emails sit in the outbox and never go out. I already restarted, same thing. Any help appreciated."),
        ("agent", "Sorry for the trouble. Which OS are you on?"),
        ("user", "Windows 11."),
        ("agent", "Sending fails because your provider now requires an app password. You'll need to create one on "
                  "the provider's security page and enter it in the outgoing server settings."),
        ("user", "That worked! Thanks a lot."),
        ("agent", "Happy to help. Take care!"),
    )
    assert "app password" in g["resolution"] and "Happy to help" not in g["resolution"]
    assert "Which OS" not in g["resolution"]  # the question before the asker's reply is not a step of it
    assert g["resolved"] == "true"


@pytest.mark.parametrize("reply", ["WM8, no it was perfect in the old flat", "WM8, nein, in der alten Wohnung lief sie perfekt"])
def test_a_reply_to_the_helpers_question_is_no_verdict_on_their_greeting(backend, reply):
    # "perfect" answers "did it shake before?"; the greeting and the question before it answer nothing
    g, _ = gist_of(backend,
        ("user", "Hi, since we moved house our washing machine shakes violently and moves"),
        ("agent", "Hello, I'm Jonas from Lavana. I'm sorry to hear that! Which model, and did the machine shake like "
                  "this before the move?"),
        ("user", reply),
        ("agent", "Did the removal company put the transport bolts back in for the move?"),
        ("user", "no idea, we used a moving company"),
        ("agent", "Please check the back panel. If there are bolts in the holes, they were refitted for the move and "
                  "need to be removed again before washing."),
        ("user", "ok thanks, doing it tonight"),
    )
    assert "bolts" in g["resolution"] and "Jonas" not in g["resolution"]
    assert "resolved" not in g  # taken, not confirmed


def test_a_verdict_after_an_answer_that_ends_in_a_question_still_counts(backend):
    g, _ = gist_of(backend,
        ("user", "Tracking for my espresso machine order says delivered but I never got it."),
        ("agent", "Thank you for contacting us. I've seen this before: the driver left it at a parcel locker nearby "
                  "because nobody answered. Could you pick it up from the locker using the code in your email?"),
        ("user", "Got it, all sorted. Thank you."),
        ("agent", "Happy to help. Take care!"),
    )
    assert "parcel locker" in g["resolution"] and g["resolved"] == "true"


TWO_HELPERS = [
    ("user", "My sim racing wheel shows up as a gamepad in Redline, so force feedback does nothing."),
    ("agent", "Calibrate the wheel in the vendor's hub app first."),
    ("user", "did, it looks fine in the hub"),
    ("agent", "The launcher's input layer grabs it. Open the game's properties, then Controller, and disable the "
              "launcher input there."),
    ("user", "oh nice, the FFB is back"),
]


def test_one_helpers_steps_go_together_and_another_helpers_answer_does_not_join_them(backend):
    g, _ = gist_of(backend, *TWO_HELPERS, speakers=["op", "alice", "op", "bob", "op"])
    assert "disable the launcher input" in g["resolution"] and "Calibrate" not in g["resolution"]
    # the same turns from one helper: the asker's comment between them does not split the answer
    g, _ = gist_of(backend, *TWO_HELPERS, speakers=["op", "alice", "op", "alice", "op"])
    assert "disable the launcher input" in g["resolution"] and "Calibrate" in g["resolution"]


@pytest.mark.parametrize("turns, answer, asked", [
    ([("user", "i want to know my seat no"),
      ("agent", "Surely! I'll be happy to help you with that. Could you please tell me your booking confirmation number?"),
      ("user", "booking confirmation number fgh425"),
      ("agent", "Here's your seat number K17 which is a window seat, is that okay for you?"),
      ("user", "ok thanks")],
     "seat number K17", "booking confirmation number"),
    ([("user", "Welche Sitznummer habe ich auf meinem Flug nach Lissabon?"),
      ("agent", "Gern helfe ich Ihnen dabei. Wie lautet Ihre Buchungsnummer?"),
      ("user", "Die Buchungsnummer ist QX7731."),
      ("agent", "Sie sitzen auf Platz 14C am Gang, passt das so?"),
      ("user", "ja danke")],
     "Platz 14C", "Buchungsnummer"),
])
def test_a_question_that_brings_a_new_value_answers(backend, turns, answer, asked):
    # the answer ends in a question ("is that okay?"); it tells a value nobody had named, and the helper's
    # request for the booking number names none
    g, _ = gist_of(backend, *turns)
    assert answer in g["resolution"] and asked not in g["resolution"]



def test_a_question_the_asker_answers_with_a_value_asks_whatever_it_names(backend):
    # the ticket number is new, but the asker's reply brings the version asked for: the question asked,
    # so the reply still states the problem; the same question answered "ok" would have told
    asked = [
        ("user", "Warden VPN keeps losing the connection and reconnecting every few minutes."),
        ("agent", "(Ticket #847358) What version is installed?"),
        ("user", "It's version 2.2.4 on Windows 11."),
        ("agent", "Version 2.3.0 fixes that reconnect loop: please update the client."),
        ("user", "That worked, thanks."),
    ]
    assert _answer_turns(asked) == [3] and 2 in _stating_turns(asked, [3])
    told = [asked[0], ("agent", "Your client is on 2.2.4, is that right?"), ("user", "yes")]
    assert _answer_turns(told) == [1]
    addressed = [("user", "nginx to gunicorn on port 8000 gives 502 bad gateway"), ("agent", "user1: firewalld?"),
                 ("user", "it's loopback, firewalld doesn't filter that")]
    assert _answer_turns(addressed, ["user1", "agent7", "user1"]) == []  # a participant's name is no value
    g, _ = gist_of(backend, *asked)
    assert "What version" not in g["resolution"] and "update the client" in g["resolution"]


def test_the_askers_reply_to_a_question_that_told_still_states_what_they_want(backend):
    g, _ = gist_of(backend,
        ("user", "please help me to check my seat assignment"),
        ("agent", "Sure, your seat is 5D in the middle of the row, is that okay?"),
        ("user", "no, change it to a window seat please"),
        ("agent", "Done: you are now in 12A, a window seat."),
        ("user", "great"),
    )
    assert "change it to a window seat" in g["problem"] and "12A" in g["resolution"]


@pytest.mark.parametrize("turns, kept, dropped", [
    ([("user", "Dear Support Team,\n\nThe backup app stops at 80% on every update since Monday. I'm on version 9.1.6."),
      ("agent", "Hello Sam,\n\nThanks for the details. The update needs the old service stopped first: stop the "
                "Vantage service, then run the installer again.\n\nKind regards,\nCarla | Customer Support"),
      ("user", "That worked, thanks!")],
     ["stops at 80%", "stop the Vantage service"], ["Dear Support Team", "Hello Sam", "Kind regards", "Carla"]),
    ([("user", "Sehr geehrte Damen und Herren,\n\nmein Thermostat verliert jede Nacht die WLAN-Verbindung. Die "
               "Firmware ist 2.4.1."),
      ("agent", "Hallo Frau Weber,\n\ndas liegt am Energiesparmodus des Routers. Bitte schalten Sie im Router den "
                "Energiesparmodus für 2,4 GHz aus.\n\nMit freundlichen Grüßen,\nJonas Keller\nKundenservice Heizwerk"),
      ("user", "Danke, das hat funktioniert!")],
     ["WLAN-Verbindung", "Energiesparmodus für 2,4 GHz aus"],
     ["Sehr geehrte", "Hallo Frau Weber", "Mit freundlichen", "Jonas Keller", "Kundenservice"]),
])
def test_a_letters_salutation_and_signature_are_in_neither_cell(backend, turns, kept, dropped):
    g, _ = gist_of(backend, *turns)
    cells = g["problem"] + "\n" + g["resolution"]
    assert all(k in cells for k in kept)
    assert not any(d in cells for d in dropped)


def test_the_letter_frame_is_layout_not_a_line_without_a_full_stop():
    from sarag_assets.backends.embedded.findings import Sentence
    from sarag_assets.backends.embedded.text import split_sentences, without_letter_frame

    def kept(text):
        ss = [Sentence(0, "agent", i, s, e, x) for i, (s, e, x) in enumerate(split_sentences(text))]
        return [s.text for s in without_letter_frame([("agent", text)], ss)]

    # a command after a colon, a chat turn on two lines without punctuation, a data line: all content
    assert kept("Try this.\nThen run:\nsudo systemctl restart nginx") == ["Try this.", "Then run:", "sudo systemctl restart nginx"]
    assert kept("my router drops every night\nAny Ideas") == ["my router drops every night", "Any Ideas"]
    assert kept("It stopped after the update.\nSerial: VX2-4471-KD09") == ["It stopped after the update.", "Serial: VX2-4471-KD09"]
    assert kept("OK, switch off the VPN.\nSara (Melodia Support)") == ["OK, switch off the VPN."]
    assert kept("No worries!\n\nHello user1,\n\nMark our address as a safe sender.") == ["No worries!", "Mark our address as a safe sender."]
    # a signature whose name the pipeline pseudonymized ("- Julia, Orbit team" published as "agent1")
    assert kept("Use the app password for outgoing mail.\n- agent1, Orbit team") == ["Use the app password for outgoing mail."]


def test_a_verdict_written_like_a_valediction_still_counts(backend):
    # "Works now, thanks a lot," closes the letter and is the asker's verdict: not quoted, still read
    g, _ = gist_of(backend,
        ("user", "Hello,\n\nthe label printer prints blank pages since the driver update to 4.2."),
        ("agent", "Hi,\n\nplease roll the driver back to 4.1 under Devices > Printer > Driver.\n\nBest,\nOmar | Support"),
        ("user", "Rolled it back.\n\nWorks now, thanks a lot,\nSam"))
    assert g["resolved"] == "true"
    assert "roll the driver back to 4.1" in g["resolution"] and "Omar" not in g["resolution"]


def test_a_refusal_that_ends_a_letter_before_its_signature_resolves_nothing(backend):
    g, _ = gist_of(backend,
        ("user", "Hello,\n\nmy annual plan renewed yesterday and I want the renewal refunded, I did not use it."),
        ("agent", "Dear customer,\n\nI checked your account: the renewal was charged on 3 May as announced. "
                  "Unfortunately we cannot refund a renewal after the 14-day window.\n\nKind regards,\nLena | Billing Team"),
        ("user", "Ok."))
    assert "resolution" not in g and g["resolved"] == "false"


@pytest.mark.parametrize("turns, problem, fix", [
    ([("user", "你好。我的华为P40手机充不进电了，版本是10.1.0。"),
      ("agent", "您好！请问您用的是原装充电器吗？"),
      ("user", "是原装的，用了两年。"),
      ("agent", "请先用牙签清理充电口里的灰尘。然后长按电源键十秒重启手机，再试一次充电。"),
      ("user", "好了，谢谢！")],
     "充不进电", "清理充电口"),
    ([("user", "こんにちは。ソニーのWH-1000XM4がスマホとペアリングできません。ファームウェアは2.1.3です。"),
      ("agent", "お問い合わせありがとうございます。スマホの機種は何ですか？"),
      ("user", "Pixel 7です。"),
      ("agent", "スマホのBluetooth設定からヘッドホンを削除してください。その後、電源ボタンを七秒押して初期化し、もう一度ペアリングしてください。"),
      ("user", "直りました。ありがとうございます。")],
     "ペアリングできません", "Bluetooth設定からヘッドホンを削除"),
])
def test_chinese_and_japanese_answers_are_answers_and_their_questions_are_questions(backend, turns, problem, fix):
    # written without spaces, a whole turn was one word: no helper turn held an answer's four words
    g, conv = gist_of(backend, *turns)
    assert problem in g["problem"] and fix in g["resolution"]
    assert "？" not in g["resolution"]  # the helper's question (the model, the charger) is no fix
    found = {(f.signal, f.value) for f in backend.analysis(conv).findings}
    assert ("version", "10.1.0" if "10.1.0" in turns[0][1] else "2.1.3") in found


def test_an_arabic_question_is_no_answer(backend):
    g, _ = gist_of(backend,
        ("user", "جهاز التوجيه يفصل الإنترنت كل ليلة منذ التحديث الأخير."),
        ("agent", "هل قمت بإعادة تشغيل جهاز التوجيه بعد التحديث الأخير؟"),
        ("user", "نعم، عدة مرات ولم يتغير شيء."),
        ("agent", "يرجى إيقاف وضع توفير الطاقة من الإعدادات ثم إعادة تشغيل الجهاز."),
        ("user", "حسنا، سأجرب ذلك الليلة."),
    )
    assert g["resolution"] == "يرجى إيقاف وضع توفير الطاقة من الإعدادات ثم إعادة تشغيل الجهاز."
    assert "نعم، عدة مرات" in g["problem"]  # the reply to the helper's question still states the problem


@pytest.mark.parametrize("turns, greeting", [
    ([("user", "मेरा राउटर हर शाम वाईफाई छोड़ देता है। फर्मवेयर 1.4 है।"),
      ("agent", "नमस्ते जी, धन्यवाद!"),
      ("agent", "कृपया एडमिन पेज से फर्मवेयर 2.1 पर अपडेट करें और चैनल 6 चुनें।"),
      ("user", "ठीक है, धन्यवाद")], "नमस्ते"),
    ([("user", "என் ரூட்டர் தினமும் மாலையில் வைஃபை இணைப்பை இழக்கிறது."),
      ("agent", "வணக்கம் நண்பரே!"),
      ("agent", "நிர்வாகப் பக்கத்தில் ஃபர்ம்வேரை 2.1 க்கு புதுப்பித்து சேனல் 6 ஐத் தேர்ந்தெடுக்கவும்."),
      ("user", "சரி நன்றி")], "வணக்கம்"),
], ids=["hindi", "tamil"])
def test_a_two_word_greeting_in_hindi_or_tamil_is_no_answer(backend, turns, greeting):
    # a vowel sign or virama inside a word once split it, so "नमस्ते जी, धन्यवाद!" counted as an answer's four
    # words and joined the fix
    g, _ = gist_of(backend, *turns)
    assert "2.1" in g["resolution"] and greeting not in g["resolution"]


def test_a_thai_fix_written_without_spaces_is_an_answer(backend):
    # "clear the cache and reinstall the app": one run of Thai, once one word and so no answer
    g, _ = gist_of(backend,
        ("user", "แอป Lumo ปิดตัวเองทุกครั้งที่เปิด ขึ้นข้อผิดพลาด E-478"),
        ("agent", "ล้างแคชแล้วติดตั้งแอปใหม่"),
        ("user", "โอเค"),
    )
    assert g["resolution"] == "ล้างแคชแล้วติดตั้งแอปใหม่"


# A forum thread: two helpers answer, the asker says nothing after the second; the forum marks the second.
ACCEPTED_THREAD = [
    ("user", "Outlook 2016 asks for my password every few minutes since the last update. The account is Exchange."),
    ("agent", "Delete the saved Outlook entries in Credential Manager, then restart Outlook and sign in once."),
    ("user", "ok"),
    ("agent", "You could also try repairing Office from Apps and Features, choose Quick Repair and reboot."),
]


@pytest.mark.parametrize("language, turns", [
    ("en", ACCEPTED_THREAD),
    ("de", [("user", "Outlook 2016 fragt seit dem letzten Update alle paar Minuten nach meinem Passwort. Es ist ein "
                     "Exchange-Konto."),
            ("agent", "Löschen Sie die gespeicherten Outlook-Einträge in der Anmeldeinformationsverwaltung, starten "
                      "Sie Outlook neu und melden Sie sich einmal an."),
            ("user", "ok"),
            ("agent", "Sie könnten auch Office unter Apps und Features reparieren, Schnellreparatur wählen und neu "
                      "starten.")]),
])
def test_the_answer_the_source_marks_accepted_is_the_resolution_and_resolves_it(backend, language, turns):
    speakers = ["op", "alice", "op", "bob"]
    unmarked, _ = gist_of(backend, *turns, speakers=speakers)
    # the same id as the unmarked one: the backend's memo must tell the two apart
    conv = ConversationInput(dialogue_id="g", turns=[
        ConversationTurn(speaker=p, role=r, text=t, accepted=(i == 3)) for i, (p, (r, t)) in enumerate(zip(speakers, turns))])
    found = {f.signal: f for f in backend.analysis(conv).findings if f.signal in ("resolution", "resolved")}
    accepted_words = turns[3][1].split()[0]  # "You" / "Sie"
    assert found["resolution"].value.startswith(accepted_words) and found["resolution"].turn == 3
    assert found["resolved"].value == "true" and found["resolved"].evidence in turns[3][1]
    # without the mark the cues alone decide (here the first answer), and nothing says it worked
    assert not unmarked.get("resolution", "").startswith(accepted_words) and unmarked.get("resolved") != "true"


def test_an_unpunctuated_post_is_read_in_pieces_so_the_problem_holds_more_than_its_title(backend):
    from sarag_assets.backends.embedded.text import MAX_SENTENCE_CHARS, sentence_pieces, split_sentences

    body = ("we replaced the isp router with a meshlink pro 3-pack last week speeds are great no complaints there "
            "but im trying to add 9 lumi bulbs and every single one fails at the last step with device failed to "
            "join network code 12 im standing right next to the node with my phone and the bulbs are 2 meters away "
            "i already reset them 5 times and moved the hub closer and even tried the old router again for one of "
            "them which worked so it must be the mesh")
    post = f"cant add any smart bulbs after switching to meshlink pro\n\n{body}"
    units = [p for start, end, _ in split_sentences(post) for p in sentence_pieces(post, start, end)]
    assert len(units) == 4 and all(len(seg) <= MAX_SENTENCE_CHARS for _, _, seg in units)
    assert " ".join(seg for _, _, seg in units[1:]) == body and all(post[s:e] == seg for s, e, seg in units)
    g, _ = gist_of(backend, ("user", post),
                   ("agent", "meshlink pro uses band steering turn on the 2.4 ghz compatibility mode in the app and "
                             "pair the bulbs again"),
                   ("user", "that did it all 9 paired thanks"))
    assert "meshlink pro" in g["problem"] and "device failed to join network" in g["problem"]
    assert len(g["problem"]) <= 400


def test_a_marked_turn_with_nothing_to_quote_leaves_the_resolution_to_the_cues(backend):
    turns = [("user", "The app logs me out every time I open the transfers page."),
             ("agent", "Update the app to 8.2 and sign in again; the new version renews the session token."),
             ("user", "Updated and signed in again, it works now. Thanks!"),
             ("agent", "[URL]")]
    marked = ConversationInput(dialogue_id="g", turns=[
        ConversationTurn(speaker=f"{r}1", role=r, text=t, accepted=(i == 3)) for i, (r, t) in enumerate(turns)])
    found = {f.signal: f.value for f in backend.analysis(marked).findings if f.signal in ("resolution", "resolved")}
    assert found["resolution"].startswith("Update the app to 8.2") and found["resolved"] == "true"
