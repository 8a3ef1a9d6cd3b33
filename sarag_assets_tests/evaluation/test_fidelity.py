"""The fidelity of the problem and resolution cells: real embeddings, hand-made truth."""

import json

import pytest

from sarag_assets.core.encoding.embedder import default_embedder
from sarag_assets.evaluation.fidelity import TruthFileError, TruthIssue, language_of, load_truth, measure

TRUTH_LINE = {"issue": "dock", "problem": "The robot vacuum cannot find its charging dock",
              "fix": "Move the mirror away from the dock so the infrared beacon is not reflected",
              "dialogue_ids": ["a", "b", "gone"]}
TURNS = {
    "a": [("user", "Hi there!"), ("user", "My robot vacuum keeps circling and never finds the dock"),
          ("agent", "Is there a mirror near the dock? Move it away, it reflects the infrared beacon."),
          ("user", "That was it, thanks!"), ("agent", "Glad to help, have a nice day")],
    "b": [("user", "Hallo, mein Saugroboter findet die Ladestation nicht mehr und fährt im Kreis"),
          ("agent", "Steht ein Spiegel neben der Station? Bitte wegstellen.")],
}


def encode(texts):
    return default_embedder().encode(texts)


def test_cells_are_scored_against_the_truth_and_an_empty_cell_scores_zero():
    truth = [TruthIssue(TRUTH_LINE["problem"], TRUTH_LINE["fix"], tuple(TRUTH_LINE["dialogue_ids"]))]
    cells = {"a": ("My robot vacuum keeps circling and never finds the dock",
                   "Is there a mirror near the dock? Move it away, it reflects the infrared beacon."),
             "b": (None, "")}
    report = measure(truth, cells, TURNS, encode)
    assert report.missing == ["gone"]
    by_id = {c.dialogue_id: c for c in report.conversations}
    a, b = by_id["a"].scores, by_id["b"].scores
    # the trivial baselines read a greeting and a goodbye here; the cells hold the point
    assert a["problem"] > a["first_user_turn"] + 0.2 and a["resolution"] > a["last_helper_turn"] + 0.2
    assert b["problem"] == 0.0 and b["resolution"] == 0.0 and b["first_user_turn"] != 0.0
    assert (by_id["a"].language, by_id["b"].language) == ("en", "de")
    groups = report.groups()
    assert groups["all"]["n"] == 2 and groups["english"]["n"] == 1 and groups["other languages"]["n"] == 1
    assert groups["all"]["problem"] == pytest.approx((a["problem"] + 0.0) / 2, abs=1e-3)
    assert "other languages" in report.render()


def test_truth_files(tmp_path):
    issues = tmp_path / "truth.jsonl"
    issues.write_text(json.dumps(TRUTH_LINE) + "\n\n")
    assert load_truth(issues)[0].dialogue_ids == ("a", "b", "gone")
    per_conversation = tmp_path / "generated.jsonl"  # the generator's facts per conversation: not issues
    per_conversation.write_text(json.dumps({"dialogue_id": "c1", "symptom": "x", "resolved": True}) + "\n")
    assert load_truth(per_conversation) is None
    other_names = tmp_path / "other.jsonl"  # `issue` for a missing problem, `resolution` for a missing fix
    other_names.write_text(json.dumps({"issue": "pip refuses", "resolution": "use a venv", "dialogue_ids": ["x"]}) + "\n")
    assert load_truth(other_names)[0] == TruthIssue("pip refuses", "use a venv", ("x",))
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(TRUTH_LINE) + "\n{oops\n")
    with pytest.raises(TruthFileError, match=r"broken.jsonl:2: not JSON"):
        load_truth(broken)


def test_language_of_is_stable():
    text = "Hola, mi robot aspirador no encuentra la base de carga desde ayer"
    assert len({language_of(text) for _ in range(5)}) == 1
    assert language_of("") == "unknown"


def test_graph_coverage_counts_conversations_where_the_user_speaks_again():
    from sarag_assets.evaluation.fidelity import graph_coverage, user_speaks_again

    two_turns = [("user", "My printer jams."), ("agent", "Open tray 2 and remove the paper.")]
    thanks = two_turns + [("user", "Thanks, it prints.")]
    welcome_first = [("agent", "Hi, how can I help?"), ("user", "My printer jams."), ("agent", "Open tray 2.")]
    assert not user_speaks_again(two_turns) and not user_speaks_again(welcome_first)
    assert user_speaks_again(thanks)
    turns = {"a": two_turns, "b": thanks, "c": thanks, "d": welcome_first + [("user", "Which tray?")]}
    assert graph_coverage(turns, {"b", "a"}) == (3, 1)  # a has an edge but no follow-up: not counted
