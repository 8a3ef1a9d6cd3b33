"""Table quality against generated ground truth: the four measures, the query-field rule, the ablations."""

from __future__ import annotations

import hashlib
import json

import pytest

from sarag_assets.backends.embedded import EmbeddedBackend
from sarag_assets.core.encoding.embedder import default_embedder
from sarag_assets.core.ingest.landing import BatchManifest
from sarag_assets.core.ingest.parsers import parse_file
from sarag_assets.core.ingest.raw_dialogues import build_batch
from sarag_assets.core.structuring import governance
from sarag_assets.core.structuring.interface import (
    ColumnConstraints,
    GovernedMetadata,
    MetadataColumn,
)
from sarag_assets.core.structuring.tables import GATES_SKIPPED, conversations_from_raw
from sarag_assets.evaluation.synthetic import generate, write_corpus
from sarag_assets.evaluation.table_quality import (
    TruthMatcher,
    ablation_tables,
    fields_used_by_queries,
    find_benchmarks,
    measure_benchmark,
    report_markdown,
    structural_compliance,
    write_reports,
)


@pytest.fixture(scope="module")
def embed():
    return default_embedder().encode


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    folder = tmp_path_factory.mktemp("generated") / "n40-seed3"
    write_corpus(folder, 40, 3)
    (benchmark,) = find_benchmarks(folder.parent)
    return benchmark


def test_benchmarks_are_found_by_their_truth_and_corpus_bytes(bench, tmp_path):
    assert bench.name == "n40-seed3" and len(bench.truth) == 40 and bench.queries
    assert bench.corpus_sha256 == hashlib.sha256((bench.directory / "corpus.jsonl").read_bytes()).hexdigest()
    (tmp_path / "user_data").mkdir()
    (tmp_path / "user_data" / "corpus.jsonl").write_text("{}\n")  # no truth: not a benchmark
    assert find_benchmarks(tmp_path) == [] and find_benchmarks(tmp_path / "missing") == []


def test_structural_compliance_counts_each_rule():
    good = MetadataColumn(name="product", type="string", meaning="the product the customer uses")
    columns = [
        good,
        MetadataColumn.model_construct(name="Error Code", type="string", meaning="the code shown", constraints=ColumnConstraints()),
        MetadataColumn.model_construct(name="product", type="text", meaning="Product", constraints=ColumnConstraints()),
    ]
    result = structural_compliance(GovernedMetadata.model_construct(columns=columns, capacity=2, version=1))
    by_rule = [{k: c[k] for k in ("snake_case", "unique", "canonical_type", "definition")} for c in result["per_column"]]
    assert by_rule[0] == {"snake_case": True, "unique": False, "canonical_type": True, "definition": True}
    assert by_rule[1] == {"snake_case": False, "unique": True, "canonical_type": True, "definition": True}
    # "Product" says nothing beyond the name; "text" is not a canonical type; 3 columns exceed capacity 2.
    assert by_rule[2] == {"snake_case": True, "unique": False, "canonical_type": False, "definition": False}
    assert not result["within_capacity"]
    assert (result["passed"], result["checked"]) == (3 + 3 + 1 + 0, 13)
    assert result["score"] == pytest.approx(7 / 13)
    fixed = structural_compliance(GovernedMetadata(columns=governance.fixed_columns()))
    assert fixed["score"] == 1.0


def test_queries_use_the_fields_their_text_and_nuggets_state(bench, embed):
    truth = {t["dialogue_id"]: t for t in bench.truth}
    d = next(t for t in bench.truth if t["product"] and t["root_cause"])
    other = next(t for t in bench.truth if t["product"] and t["product"] != d["product"])
    queries = [
        {"query_id": "states-product", "text": f"my {d['product']} keeps failing, any fix?", "gold": [d["dialogue_id"]],
         "nuggets": [d["root_cause"]]},
        {"query_id": "other-product", "text": f"my {other['product']} keeps failing", "gold": [d["dialogue_id"]]},
    ]
    used = fields_used_by_queries(queries, TruthMatcher(truth, embed))
    assert "states-product" in used["product"]["identifies"]
    assert "other-product" not in used["product"]["identifies"]
    assert used["root_cause"]["answers"] == {"states-product"}
    assert "states-product" not in used.get("resolved", {"identifies": set()})["identifies"]  # booleans never occur


def test_the_four_measures_follow_the_table(bench, embed):
    stated = [t for t in bench.truth if t["product"] and t["mentioned"].get("product")]
    ids = [t["dialogue_id"] for t in bench.truth]
    right = {t["dialogue_id"]: t["product"] for t in stated}
    metadata = GovernedMetadata(version=1, columns=[
        MetadataColumn(name="product", type="string", meaning="the product the customer uses"),
        MetadataColumn(name="channel_note", type="string", meaning="a note unrelated to any truth field",
                       constraints=ColumnConstraints(max_length=5)),
    ])
    exact = {d: {"product": right.get(d), "channel_note": "hello there"} for d in ids}
    products = sorted(set(right.values()))
    # Every product value moved to another product: aligned nowhere near as well.
    wrong = {d: {"product": products[(products.index(p) + 1) % len(products)] if p else None,
                 "channel_note": "hi"} for d, p in ((d, right.get(d)) for d in ids)}
    result = measure_benchmark(bench, [("exact", "truth copied", metadata, exact),
                                       ("wrong", "values rotated", metadata, wrong)], embed)
    exact_q, wrong_q = result.variants
    assert result.conversations == 40 and result.queries == len(bench.queries)
    assert exact_q.semantic_correctness == 1.0
    assert exact_q.per_column[0]["truth_field"] == "product" and exact_q.per_column[0]["verifiable"] == len(right)
    assert exact_q.per_column[1]["truth_field"] is None  # a constant note matches no field
    assert exact_q.fields_covered == 1 and exact_q.summary()["truth_fields_covered"] == 1
    assert exact_q.constraint_satisfaction == pytest.approx(len(right) / (len(right) + len(ids)))  # notes too long
    assert wrong_q.per_column[1]["constraint_satisfied"] == len(ids)
    product_queries = result.fields_used.get("product", {}).get("any", 0)
    assert product_queries > 0, "the generated queries name products"
    assert exact_q.effectiveness == 0.5 and exact_q.per_column[0]["queries_helped"] == product_queries
    assert wrong_q.effectiveness in (0.0, None) or wrong_q.per_column[0]["queries_helped"] < product_queries
    assert (wrong_q.semantic_correctness or 0.0) < 0.5
    md = report_markdown([result])
    assert "| n40-seed3 | exact | 2 |" in md and "channel_note" in md


def test_ablations_run_the_structuring_core_with_the_switches(bench, embed, tmp_path):
    n = 12
    corpus = generate(40, 3)
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in corpus.conversations[:n]))
    manifest = BatchManifest("b", "corpus.jsonl", "corpus.jsonl", "-", None, 0, n, 0, 1, "2024-01-01T00:00:00+00:00")
    conversations = conversations_from_raw(build_batch(parse_file(path), manifest).raw_dialogues)
    metadata = GovernedMetadata(version=4, columns=[
        MetadataColumn(name="product", type="string", meaning="the product the customer uses"),
        MetadataColumn(name="problem", type="string", meaning="the customer's problem"),
    ])
    tables = ablation_tables(conversations, metadata, EmbeddedBackend())
    assert governance.is_fixed(tables["no_governance"].metadata)
    assert set(tables["no_governance"].rows["column_name"]) == {c for c, _, _ in governance.FIXED_SCHEMA}
    assert tables["no_gates"].metadata is metadata
    kept = tables["no_gates"].rows.filter(tables["no_gates"].rows["value"].is_not_null())
    assert kept.height > 0 and set(kept["semantic_reason"]) == {GATES_SKIPPED}
    assert tables["no_governance"].rows["semantic_reason"].drop_nulls().ne(GATES_SKIPPED).all()
    from sarag_assets.evaluation.table_quality import table_from_rows

    result = measure_benchmark(bench, [(k, k, t.metadata, table_from_rows(t.rows)) for k, t in tables.items()], embed)
    assert result.conversations == n
    md_path, json_path = write_reports([result], tmp_path / "reports")
    report = json.loads(json_path.read_text())
    variants = report["benchmarks"][0]["variants"]
    assert set(variants) == {"no_governance", "no_gates"}
    for v in variants.values():
        for measure in ("structural_compliance", "metadata_effectiveness", "value_constraint_satisfaction"):
            assert 0.0 <= v[measure] <= 1.0
    assert "## n40-seed3" in md_path.read_text()
