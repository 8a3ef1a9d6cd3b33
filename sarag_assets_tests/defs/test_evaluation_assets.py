"""The evaluation assets through real Dagster runs: table_quality_report against a generated benchmark landed
the way `sarag demo` lands it, preference_pairs from the validated rows, and a home with only user data."""

from __future__ import annotations

import json
import shutil

import dagster as dg
import duckdb
import pytest

from sarag_assets.backends.llm.training_pairs import KINDS
from sarag_assets.core.structuring import governance
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets.evaluation.synthetic import write_corpus
from sarag_assets_tests.conftest import conversation, write_jsonl

pytestmark = pytest.mark.slow


def materializations(instance, asset) -> list[dict]:
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=100).records
    return [{k: v.value for k, v in r.asset_materialization.metadata.items()} for r in records]


def test_reports_for_a_landed_generated_benchmark(home, instance, defs, monkeypatch):
    monkeypatch.delenv("SARAG_GOVERNANCE", raising=False)
    monkeypatch.delenv("SARAG_GATES", raising=False)
    generated = home.root / "generated" / "n16-seed3"
    write_corpus(generated, 16, 3)
    shutil.copyfile(generated / "corpus.jsonl", home.inbox / "synthetic-n16-seed3.jsonl")  # as `sarag demo` stages it
    write_jsonl(home.inbox / "tickets.jsonl", [conversation(
        "t1", ("user", "My Widget A100 shows E101 since version 2.1"), ("agent", "Reinstall the driver"))])
    run = land_and_process(defs, instance, raise_on_error=True)
    assert len(run.batches) == 2 and not run.failed

    (meta,) = materializations(instance, "table_quality_report")
    assert meta["benchmarks"] == "n16-seed3" and meta["conversations"] == 16  # the user's ticket is not measured
    table = meta["quality"]
    for variant in ("governed", "no_governance", "no_gates"):
        assert f"| n16-seed3 | {variant} |" in table
    report = json.loads((home.reports / "table_quality.json").read_text())
    (bench,) = report["benchmarks"]
    variants = bench["variants"]
    assert [c["name"] for c in variants["no_governance"]["metadata"]] == [n for n, _, _ in governance.FIXED_SCHEMA]
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        (state,) = con.execute("SELECT state_json FROM governance_state ORDER BY saved_at DESC LIMIT 1").fetchone()
        stored = con.execute("""SELECT count(value) FROM validated_rows
                                WHERE batch_key IN (SELECT batch_key FROM raw_dialogues
                                                    WHERE source_file LIKE 'synthetic%')""").fetchone()[0]
    governed_columns = [c["name"] for c in json.loads(state)["columns"]]
    assert [c["name"] for c in variants["governed"]["metadata"]] == governed_columns
    assert variants["no_gates"]["columns"] == len(governed_columns)
    assert variants["governed"]["non_null_values"] == stored  # the pipeline's own rows, not a recomputation
    for v in variants.values():
        assert meta[f"{v['variant']}/structural_compliance"] == round(v["structural_compliance"], 4)
        assert 0.0 <= v["semantic_correctness"] <= 1.0 and 0.0 <= v["metadata_effectiveness"] <= 1.0
        assert len(v["per_column"]) == v["columns"]
    assert (home.reports / "table_quality.md").read_text().startswith("# Table quality")

    (pairs_meta,) = materializations(instance, "preference_pairs")
    files = sorted((home.reports / "preference_pairs").glob("*.jsonl"))
    lines = [line for f in files for line in f.read_text().splitlines()]
    assert pairs_meta["rows"] == 17 and pairs_meta["pairs"] == len(lines) > 0
    assert pairs_meta["batches"] == pairs_meta["batches_written"] == len(files) > 1
    assert sum(pairs_meta["pairs_per_perturbation"].values()) == len(lines)
    assert set(pairs_meta["pairs_per_perturbation"]) == set(KINDS)
    records = [json.loads(line) for line in lines]
    ticket = [r for r in records if r["dialogue_id"] == "t1"]
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        row = dict(con.execute("SELECT column_name, value FROM validated_rows WHERE dialogue_id = 't1'").fetchall())
    assert ticket and all(json.loads(r["chosen"]) == {c: row[c] for c in governed_columns} for r in ticket)
    assert all(r["rejected"] != r["chosen"] and "<conversation>" in r["prompt"] for r in records)

    # Nothing new: the runner does not redo the evaluation; asked again, the pairs come out identical.
    before = {f.name: f.read_bytes() for f in files}
    land_and_process(defs, instance, raise_on_error=True)
    assert len(materializations(instance, "table_quality_report")) == 1
    defs.resolve_job_def("evaluation_job").execute_in_process(instance=instance)
    assert {f.name: f.read_bytes() for f in sorted((home.reports / "preference_pairs").glob("*.jsonl"))} == before
    assert materializations(instance, "preference_pairs")[0]["batches_written"] == 0


def test_a_home_with_only_user_data_skips_the_table_quality_report(home, instance, defs, tmp_path):
    write_corpus(tmp_path / "elsewhere", 5, 1)  # a benchmark that was generated but never landed here
    shutil.copytree(tmp_path / "elsewhere", home.root / "generated" / "n5-seed1")
    write_jsonl(home.inbox / "tickets.jsonl", [
        conversation("t1", ("user", "My Widget A100 shows E101 since version 2.1"), ("agent", "Reinstall the driver")),
        conversation("t2", ("user", "Widget B200 beeps with E202"), ("agent", "Replace the battery"), ("user", "Fixed!")),
    ])
    home.reports.mkdir(parents=True, exist_ok=True)
    (home.reports / "preference_pairs.jsonl").write_text("{}\n")  # the one file of a home from before the batch files
    run = land_and_process(defs, instance, raise_on_error=True)
    assert not run.failed
    (meta,) = materializations(instance, "table_quality_report")
    assert "n5-seed1: its corpus was not landed in this home" in meta["skipped"]
    assert not (home.reports / "table_quality.md").exists()
    (pairs_meta,) = materializations(instance, "preference_pairs")
    assert pairs_meta["rows"] == 2
    assert not (home.reports / "preference_pairs.jsonl").exists()
    (pairs_file,) = (home.reports / "preference_pairs").glob("*.jsonl")
    assert len(pairs_file.read_text().splitlines()) == pairs_meta["pairs"]

    shutil.rmtree(home.root / "generated")
    defs.resolve_job_def("evaluation_job").execute_in_process(instance=instance)
    assert "no generated benchmark" in materializations(instance, "table_quality_report")[0]["skipped"]
