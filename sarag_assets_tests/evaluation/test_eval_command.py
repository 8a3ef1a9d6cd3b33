"""`sarag eval` end to end: a real fixture corpus through the real asset graph, every system, the contract."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sarag_assets.evaluation.scoring import SYSTEMS, EvalError, parse_systems

EVAL_DATA = Path(__file__).resolve().parents[1] / "data" / "eval"
METRICS = {"R@1", "R@3", "R@10", "MRR@3", "nDCG@10"}


def _eval(*args):
    return subprocess.run([sys.executable, "-m", "sarag_assets.cli", "eval", *args], capture_output=True, text=True)


@pytest.mark.slow
def test_eval_on_a_real_fixture_set_reports_every_system(tmp_path):
    corpus, queries = EVAL_DATA / "abcd" / "corpus.jsonl", EVAL_DATA / "abcd" / "queries.jsonl"
    out = tmp_path / "report.json"
    ids = [json.loads(line)["dialogue_id"] for line in corpus.open()]
    truth = tmp_path / "truth.jsonl"
    truth.write_text(json.dumps({"issue": "returns", "problem": "The customer wants to return an item",
                                 "fix": "The agent starts the return and sends a shipping label",
                                 "dialogue_ids": ids + ["not-in-the-corpus"]}) + "\n")
    result = _eval("--corpus", str(corpus), "--queries", str(queries), "--home", str(tmp_path / "home"),
                   "--json", str(out), "--truth", str(truth))
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert set(report) >= {"n_dialogues", "n_queries", "systems", "timings"}
    assert report["n_dialogues"] == sum(1 for _ in corpus.open())
    assert report["n_queries"] == sum(1 for _ in queries.open())
    assert list(report["systems"]) == list(SYSTEMS)
    for name, metrics in report["systems"].items():
        assert set(metrics) == METRICS | {"nugget_coverage@3"}, name
        assert all(0.0 <= v <= 1.0 for v in metrics.values()), (name, metrics)
        assert metrics["R@1"] <= metrics["R@3"] <= metrics["R@10"]
    assert set(report["timings"]) == {"ingest_s", "query_ms_p50", "query_ms_p95"}
    assert report["timings"]["ingest_s"] > 0 and report["timings"]["query_ms_p95"] >= report["timings"]["query_ms_p50"]
    # the stdout table names every system; the ablations really built their own homes
    assert all(name in result.stdout for name in SYSTEMS)
    home = tmp_path / "home"
    assert (home / "reports" / "eval.md").exists() and (home / "reports" / "eval_r3.png").stat().st_size > 0
    # the fidelity of the problem and resolution cells, against the truth file given
    fidelity = json.loads((home / "reports" / "fidelity.json").read_text())
    assert fidelity["groups"]["all"]["n"] == len(ids) and fidelity["missing"] == ["not-in-the-corpus"]
    assert sorted(c["dialogue_id"] for c in fidelity["conversations"]) == sorted(ids)
    assert all(-1.0 <= c[m] <= 1.0 for c in fidelity["conversations"]
               for m in ("problem", "first_user_turn", "resolution", "last_helper_turn"))
    assert "Fidelity of the problem and resolution cells" in result.stdout
    # progress, one line per step when stderr is not a terminal: the ingest, each system, the fidelity
    steps = [line for line in result.stderr.splitlines() if line.startswith("sarag: ")]
    assert any("ingesting" in line for line in steps) and any("sarag: sarag: " in line for line in steps)
    assert any("fidelity" in line for line in steps)
    import duckdb

    from sarag_assets.core.checks import RESERVED_COLUMNS
    from sarag_assets.core.structuring.governance import FIXED_SCHEMA

    def columns(root):
        con = duckdb.connect(str(root / "warehouse.duckdb"), read_only=True)
        try:
            names = [r[0] for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'conversation_table'").fetchall()]
            nulled = con.execute("SELECT count(*) FROM validated_rows WHERE semantic_passed = false "
                                 "OR structural_passed = false").fetchone()[0]
        finally:
            con.close()
        return [n for n in names if n not in RESERVED_COLUMNS], nulled  # the view's own: keys, record fields

    fixed, _ = columns(home / "ablations" / "sarag_no_governance")
    governed, _ = columns(home)
    assert fixed == [name for name, _, _ in FIXED_SCHEMA] and governed != fixed
    _, nulled_without_gates = columns(home / "ablations" / "sarag_no_gates")
    assert nulled_without_gates == 0


def test_eval_input_errors_are_one_line(tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query_id": "q1", "text": "x", "gold": ["not-in-corpus"]}) + "\n")
    missing_gold = _eval("--corpus", str(EVAL_DATA / "abcd" / "corpus.jsonl"), "--queries", str(queries),
                         "--home", str(tmp_path / "h"), "--systems", "bm25")
    assert missing_gold.returncode == 2 and "not-in-corpus" in missing_gold.stderr
    assert "Traceback" not in missing_gold.stderr
    no_file = _eval("--corpus", str(tmp_path / "nope.jsonl"), "--queries", str(queries))
    assert no_file.returncode == 2 and "no such file" in no_file.stderr
    # a truth file of conversations, not of issues (what `sarag generate` writes), is refused before the
    # ingest: the home is never built
    corpus = EVAL_DATA / "abcd" / "corpus.jsonl"
    first = json.loads(corpus.open().readline())["dialogue_id"]
    queries.write_text(json.dumps({"query_id": "q1", "text": "x", "gold": [first]}) + "\n")
    truth = tmp_path / "truth.jsonl"
    truth.write_text(json.dumps({"dialogue_id": first, "product": "x", "resolved": True}) + "\n")
    wrong_truth = _eval("--corpus", str(corpus), "--queries", str(queries), "--home", str(tmp_path / "t"),
                        "--systems", "bm25", "--truth", str(truth))
    assert wrong_truth.returncode == 2 and "not a truth file of issues" in wrong_truth.stderr, wrong_truth.stderr
    assert not (tmp_path / "t" / "warehouse.duckdb").exists()
    with pytest.raises(EvalError, match="unknown systems"):
        parse_systems("bm25,telepathy")
    assert parse_systems("sarag, bm25") == ["sarag", "bm25"]
