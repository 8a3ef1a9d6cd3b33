"""`sarag eval-entities`: entity cells and query values measured on a labelled real corpus (a slice of the
bundled SGD one), and what it refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sarag_assets.evaluation.entities import follow_up_queries, same_value

ENTITIES = Path(__file__).resolve().parents[1] / "data" / "entities"


def _run(*args):
    return subprocess.run([sys.executable, "-m", "sarag_assets.cli", "eval-entities", *args],
                          capture_output=True, text=True, timeout=900)


def test_a_follow_up_query_is_the_conversation_up_to_the_askers_next_turn():
    turns = [{"role": "user", "text": "a table at Benissimo please"}, {"role": "agent", "text": "For when?"},
             {"role": "user", "text": "tonight"}, {"role": "agent", "text": "Done."}]
    names = [{"turn": 0, "value": "Benissimo", "role": "user"}, {"turn": 3, "value": "Benissimo Bar", "role": "agent"}]
    [(query, gold)] = follow_up_queries(turns, names)
    assert [t["text"] for t in query] == ["a table at Benissimo please", "For when?", "tonight"] and gold == ["Benissimo"]
    assert follow_up_queries(turns[:2], names) == []  # the asker never speaks again
    assert follow_up_queries(turns, names[1:]) == []  # the asker names nothing
    assert same_value("Benissimo  Restaurant & Bar", "benissimo restaurant bar") and not same_value(None, "x")


def test_eval_entities_reports_exactness_and_recall_and_writes_them_as_json(tmp_path):
    folder = tmp_path / "sgd40"
    folder.mkdir()
    for name in ("corpus.jsonl", "labels.jsonl"):
        lines = (ENTITIES / "sgd" / name).read_text("utf-8").splitlines()[:40]
        (folder / name).write_text("\n".join(lines) + "\n", "utf-8")
    out = tmp_path / "report.json"
    run = _run(str(folder), "--json", str(out))
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    [corpus] = report["corpora"]
    assert corpus["conversations"] == corpus["labelled"] == 40
    assert 0 < corpus["exact_cells"] <= corpus["filled"] <= 40
    assert corpus["cell_exactness"] == round(corpus["exact_cells"] / 40, 3)
    assert corpus["queries"] > 0 and corpus["value_recall"] == round(corpus["values_found"] / corpus["queries"], 3)
    # every conversation not exact, and every query not found, is listed with what it held
    misses = report["misses"]["sgd40"]
    assert sum("dialogue_id" in m for m in misses) == 40 - corpus["exact_cells"]
    assert sum("query_of" in m for m in misses) == corpus["queries"] - corpus["values_found"]
    assert f"cells exact         {corpus['exact_cells']}/40" in run.stdout


def test_a_folder_without_its_labels_is_refused_before_any_run(tmp_path):
    (tmp_path / "corpus.jsonl").write_text((ENTITIES / "sgd" / "corpus.jsonl").read_text("utf-8"), "utf-8")
    run = _run(str(ENTITIES / "sgd"), str(tmp_path))
    assert run.returncode == 2 and "needs corpus.jsonl and labels.jsonl" in run.stderr
    assert "sgd: 300 conversations" not in run.stdout and "Traceback" not in run.stderr
