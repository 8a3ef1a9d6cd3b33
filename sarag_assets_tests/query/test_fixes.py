"""The fix a conversation holds and its outcome (`query.fixes`), on conversations written for each case,
with the real embedding model and the real embedded backend's dialogue graph."""

from __future__ import annotations

import numpy as np
import pytest

from sarag_assets.backends.embedded.graph import dialogue_graph
from sarag_assets.core.encoding.embedder import default_embedder
from sarag_assets.core.structuring.interface import ConversationInput
from sarag_assets.query.fixes import CONFIRMED, FAILED, NOT_RECORDED, Material, conversation_fixes


@pytest.fixture(scope="module")
def embedder():
    return default_embedder()


def _material(dialogue_id: str, turns: list[tuple[str, str]], embedder, accepted: int | None = None) -> Material:
    """A conversation from (role, text) turns, with the graph the embedded backend builds for it."""
    records = [{"role": role, "speaker": f"{role}{1 if role == 'user' else 2}", "text": text,
                "accepted": i == accepted} for i, (role, text) in enumerate(turns)]
    conv = ConversationInput.model_validate({"dialogue_id": dialogue_id, "turns": records})
    graph = dialogue_graph(conv, backend_name="embedded", embedder=embedder)
    nodes = [n.model_dump() | {"dialogue_id": dialogue_id} for n in graph.nodes]
    return Material(dialogue_id, records, nodes, [(e.source, e.target, e.relation) for e in graph.edges])


def _fixes(material: Material, question: str, embedder):
    vector = np.asarray(embedder.encode([question]), dtype=np.float32)[0]
    return conversation_fixes(material, vector / np.linalg.norm(vector), embedder)


def test_a_clarifying_question_greeting_or_thanks_is_never_offered_as_a_fix(embedder):
    material = _material("c1", [
        ("user", "Hi, my Orbit Mail app cannot send any messages since this morning."),
        ("agent", "Hello and thanks for reaching out! What version is installed? Is there any error code shown?"),
        ("user", "Version 6.1.4, and it says error 550."),
        ("agent", "Thank you. Open Settings > Accounts > Outgoing server and set the port to 587 with STARTTLS. "
                  "Then resend the messages in the outbox."),
    ], embedder)
    fixes = _fixes(material, "Orbit Mail cannot send, error 550", embedder)
    assert fixes and fixes[0].turn == 3
    assert fixes[0].text.startswith("Open Settings > Accounts")
    for unwanted in ("Thank you", "What version", "error code shown", "Hello"):
        assert unwanted not in fixes[0].text


@pytest.mark.parametrize("turns, expected", [
    ([("user", "Mein Drucker LaserJet 400 zeigt den Fehler E05 und druckt nicht mehr."),
      ("agent", "Schalten Sie den Drucker aus, ziehen Sie den Netzstecker für 30 Sekunden und starten Sie ihn neu."),
      ("user", "Danke, jetzt läuft er wieder!"),
      ("agent", "Gern geschehen.")], CONFIRMED),
    ([("user", "Mi impresora LaserJet 400 muestra el error E05 y ya no imprime."),
      ("agent", "Apague la impresora, desconecte el cable de corriente durante 30 segundos y vuelva a encenderla."),
      ("user", "¡Gracias, ya funciona!")], CONFIRMED),
    ([("user", "Mein Drucker LaserJet 400 zeigt den Fehler E05 und druckt nicht mehr."),
      ("agent", "Schalten Sie den Drucker aus, ziehen Sie den Netzstecker für 30 Sekunden und starten Sie ihn neu."),
      ("user", "Habe ich gemacht, aber der Drucker LaserJet 400 zeigt immer noch den Fehler E05 und druckt nicht."),
      ("agent", "Dann ist die Fixiereinheit defekt, bitte senden Sie den Drucker zur Reparatur an unseren Service.")],
     FAILED),
    ([("user", "Mi impresora LaserJet 400 muestra el error E05 y ya no imprime."),
      ("agent", "Apague la impresora, desconecte el cable de corriente durante 30 segundos y vuelva a encenderla."),
      ("user", "Lo hice, pero la impresora LaserJet 400 sigue mostrando el error E05 y no imprime."),
      ("agent", "Entonces la unidad fusora está dañada, envíe la impresora a nuestro servicio técnico.")], FAILED),
])
def test_german_and_spanish_outcomes_come_from_what_the_asker_did_next(embedder, turns, expected):
    fixes = _fixes(_material("c", turns, embedder), "LaserJet 400 error E05", embedder)
    by_turn = {f.turn: f.outcome for f in fixes}
    assert by_turn.get(1) == expected, fixes
    assert all(f.outcome != CONFIRMED for f in fixes if f.turn != 1 and expected == FAILED)


def test_an_unmarked_forum_thread_offers_its_final_substantive_answer_as_not_recorded(embedder):
    turns = [("user", "Why does my homebrew taste sour after two weeks in the bottle?"),
             ("agent", "It is probably an infection from lactobacillus; sanitize every bottle with a no-rinse "
                       "sanitizer before filling."),
             ("agent", "Sourness after bottling usually comes from a wild yeast or bacteria infection. Clean the "
                       "bottles with hot water, soak them in a star san solution and replace old tubing.")]
    fixes = _fixes(_material("f1", turns, embedder), "homebrew tastes sour in the bottle", embedder)
    assert fixes[0].turn == 2 and fixes[0].outcome == NOT_RECORDED
    assert fixes[0].text.startswith("Sourness after bottling")
    # the same thread with the first answer marked accepted by the source: that one, confirmed
    marked = _fixes(_material("f1", turns, embedder, accepted=1), "homebrew tastes sour in the bottle", embedder)
    assert (marked[0].turn, marked[0].outcome) == (1, CONFIRMED)


def test_a_step_that_failed_is_not_shown_as_what_worked_the_later_one_is(embedder):
    turns = [("user", "Outlook on my laptop keeps asking for my password and will not sync the mailbox."),
             ("agent", "Can you run it in compatibility mode? Right-click the Outlook icon, Properties, "
                       "Compatibility, and tick Run this program in compatibility mode."),
             ("user", "Nope, same thiing, it still asks for the password."),
             ("agent", "Then create an app password in your account's security page and enter it in Outlook "
                       "instead of your normal password."),
             ("user", "That did it, it syncs now. Thanks!")]
    fixes = _fixes(_material("c2", turns, embedder), "Outlook keeps asking for password", embedder)
    assert (fixes[0].turn, fixes[0].outcome) == (3, CONFIRMED)
    assert "app password" in fixes[0].text and "compatibility" not in fixes[0].text
    assert all(f.outcome != CONFIRMED for f in fixes[1:])


def test_in_a_two_issue_conversation_the_fix_is_the_one_for_the_issue_asked_about(embedder):
    turns = [("user", "Vantage Backup says my license is already in use on another computer."),
             ("agent", "Sign in to your account, open Account > Devices and release the old activation, "
                       "then enter the license key again."),
             ("user", "That worked, the license is accepted now, thank you."),
             ("user", "Another issue: the scheduled backup to my NAS fails every night with error 0x8007."),
             ("agent", "Map the NAS share with a user that has write permission and select that user under "
                       "Schedule > Run as."),
             ("user", "Perfect, last night's backup finished.")]
    material = _material("c3", turns, embedder)
    first = _fixes(material, "Vantage Backup license already in use", embedder)
    second = _fixes(material, "scheduled backup to NAS fails with error 0x8007", embedder)
    assert "Account > Devices" in first[0].text and first[0].outcome == CONFIRMED
    assert "Map the NAS share" in second[0].text and second[0].outcome == CONFIRMED


def test_a_closing_after_the_asker_confirmed_is_not_the_fix(embedder):
    """The README's question on the demo home ("Vantage Backup says license already in use, fix?"): its
    second issue's fix, confirmed, and not the helper's "Great to hear." after it (which a step of any
    length, `309490a`, offered as the confirmed fix)."""
    turns = [("user", "Not sure what changed but Vantage Backup says an update is available but the update fails "
                      "once more. I'm on version 9.1.3. Can someone help?"),
             ("agent", "Thanks for reaching out. Could you reinstall the app and see if that helps?"),
             ("user", "That didn't help unfortunately."),
             ("agent", "Files from an older install are left behind and the new installer can't replace them. Do a "
                       "clean reinstall: remove Vantage Backup, wipe its program data folder and install it again."),
             ("user", "That did it! Thanks a lot. One more thing: Vantage Backup says my license is already in use "
                      "even though I bought it."),
             ("agent", "Go ahead and paste the key straight from the purchase email instead of typing it, that "
                       "should sort it."),
             ("user", "Ok that fixed it too"),
             ("agent", "Great to hear. Have a nice day!")]
    fixes = _fixes(_material("c28", turns, embedder), "Vantage Backup says license already in use, fix?", embedder)
    assert fixes and fixes[0].turn == 5 and fixes[0].outcome == CONFIRMED, fixes
    assert all("Great to hear" not in f.text for f in fixes)


def test_a_chat_answer_of_a_few_words_is_the_fix_where_the_helpers_wrote_nothing_longer(embedder):
    """Real chat answers a question with a command or a menu path; with no longer step beside it, that
    is the conversation's fix (the 4-word minimum per step skipped it for another conversation's)."""
    turns = [("user", "how do i see which folder my terminal is in right now"),
             ("agent", "type pwd there"),
             ("user", "ok"),
             ("agent", ":)")]
    fixes = _fixes(_material("irc1", turns, embedder), "which folder is my terminal in", embedder)
    assert fixes and fixes[0].turn == 1 and fixes[0].text == "type pwd there", fixes
    # beside a full step, a short helper turn is not offered: here the closing after the confirmation
    longer = turns[:1] + [("agent", "Type pwd in the terminal and press Enter to print the current folder."),
                          ("user", "that printed it, thanks"), ("agent", "Great to hear.")]
    fixes = _fixes(_material("irc2", longer, embedder), "which folder is my terminal in", embedder)
    assert fixes and fixes[0].turn == 1 and all("Great to hear" not in f.text for f in fixes), fixes


def test_a_numbered_list_is_offered_whole_without_the_signature(embedder):
    """The middle item of a list, less close to the problem than the others, is still part of the fix;
    the pseudonymized signature ("- agent1, Orbit team") is not."""
    turns = [("user", "Hi all,\nAll of a sudden my Orbit Mail client can receive mail but sending doesn't work."),
             ("agent", "Hi,\n\nAre you on Windows or Mac, and which version?"),
             ("user", "macOS Ventura 13.6, Orbit Mail 6.1.4."),
             ("agent", "No worries at all!\n\nPlease try the following:\n1. Generate an ... in your provider's security "
                       "page.\n2. Use the app password for outgoing mail.\n\nPlease report back.\n- agent1, Orbit team")]
    fixes = _fixes(_material("c267", turns, embedder), "Orbit Mail cannot send mail", embedder)
    assert fixes and fixes[0].turn == 3, fixes
    assert "1. Generate an ... in your provider's security page. 2. Use the app password" in fixes[0].text, fixes
    assert "agent1" not in fixes[0].text and "Orbit team" not in fixes[0].text, fixes


def test_a_statement_followed_by_a_tag_question_is_the_answer_not_a_clarifying_question(embedder):
    turns = [("user", "where can i pick up my parcel, tracking PX-20417"),
             ("agent", "Could you confirm the postcode of the delivery address?"),
             ("user", "it is 4051"),
             ("agent", "Thanks! I've checked it and your parcel is waiting in locker 14B at the central station, "
                       "is that okay?"),
             ("user", "ok thanks")]
    fixes = _fixes(_material("p1", turns, embedder), "where is my parcel PX-20417", embedder)
    assert fixes and fixes[0].turn == 3 and "locker 14B" in fixes[0].text, fixes
    assert all("postcode" not in f.text for f in fixes)



def test_the_askers_answers_to_the_helpers_questions_are_the_same_issue_not_a_new_one(embedder):
    """`ood/smarthome`'s sh-019: rounds of questions and answers about one docking problem. What the asker
    told when asked is no new issue, so the opening sympathy ("I'm sorry to hear ... Let me help.") is not
    confirmed as the fix; the last step, which the asker accepted, is."""
    import json

    from sarag_assets_tests.paths import TEST_DATA

    record = next(r for r in map(json.loads, (TEST_DATA / "ood" / "smarthome" / "corpus.jsonl").open())
                  if r["dialogue_id"] == "sh-019")
    turns = [("user" if t["speaker"].lower() == "customer" else "agent", t["text"]) for t in record["turns"]]
    fixes = _fixes(_material("sh-019", turns, embedder), "My robot vacuum turns away from its charging base at "
                                                          "the last moment", embedder)
    last_step = max(i for i, (role, _) in enumerate(turns) if role == "agent")
    assert fixes and (fixes[0].turn, fixes[0].outcome) == (last_step, CONFIRMED), fixes
    assert all("sorry to hear" not in f.text for f in fixes if f.outcome == CONFIRMED), fixes
