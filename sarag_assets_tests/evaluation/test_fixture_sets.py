"""The hand-written evaluation sets for the bundled real samples: files consistent, baselines run.

No score thresholds here: these sets are small and exist to run the evaluation end to end on real
text; their figures are reported, not asserted.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sarag_assets.core.ingest.parsers import parse_file
from sarag_assets.evaluation.baselines import BASELINE_NAMES, fit_baselines, run_queries
from sarag_assets.evaluation.metrics import score_queries
from sarag_assets.evaluation.queries import (
    check_gold,
    corpus_record,
    load_corpus,
    load_queries,
)
from sarag_assets.evaluation.report import build_report, validate_report_dict

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "sarag_assets_tests" / "data" / "eval"
SAMPLES = {
    "abcd": ("abcd/abcd_sample.json", "LICENSE"),
    "tweetsumm": ("tweetsumm/tweetsumm_examples.json", "LICENSE.txt"),
    "multidogo": ("multidogo/multidogo_examples.json", "LICENSE.txt"),
}


@pytest.fixture(scope="module", params=sorted(SAMPLES))
def eval_set(request):
    name = request.param
    folder = EVAL / name
    return name, folder, load_corpus(folder / "corpus.jsonl"), load_queries(folder / "queries.jsonl")


def test_every_gold_id_is_in_the_corpus(eval_set):
    name, folder, corpus, queries = eval_set
    ids = [d.dialogue_id for d in corpus]
    assert check_gold(queries, ids) == []
    assert len(set(ids)) == len(ids)
    assert {g for q in queries for g in q.gold} <= set(ids)


def test_the_set_has_single_and_follow_up_queries_with_nuggets(eval_set):
    name, folder, corpus, queries = eval_set
    kinds = {q.kind for q in queries}
    assert kinds == {"single", "followup"}
    for q in queries:
        assert q.nuggets, q.query_id
        if q.kind == "followup":
            assert q.is_multi_turn and q.turns[-1]["speaker"] == "user"
            assert re.search(r"\b(it|that one|that|them)\b", q.last_text, re.IGNORECASE), q.query_id
        else:
            assert not q.is_multi_turn


def test_queries_are_not_copied_from_the_conversations(eval_set):
    """No query turn or nugget repeats 7 consecutive words of the corpus."""
    name, folder, corpus, queries = eval_set
    words = lambda s: re.findall(r"[a-z0-9']+", s.lower())  # noqa: E731
    grams = set()
    for d in corpus:
        w = words(d.text)
        grams |= {tuple(w[i : i + 7]) for i in range(len(w) - 6)}
    assert grams and queries
    for q in queries:
        for text in [t["text"] for t in q.turns] + list(q.nuggets or []):
            w = words(text)
            assert not any(tuple(w[i : i + 7]) in grams for i in range(len(w) - 6)), (q.query_id, text)


def test_corpus_is_what_the_project_parsers_make_of_the_bundled_sample(eval_set):
    name, folder, corpus, queries = eval_set
    sample, license_name = SAMPLES[name]
    source = ROOT / "sarag_assets" / "sample_data" / sample
    parsed = parse_file(source, name)
    assert not parsed.quarantined
    expected = [corpus_record(c, name, drop_metadata=("abstractive_summaries",)) for c in parsed.conversations]
    assert [d.dialogue_id for d in corpus] == [r["dialogue_id"] for r in expected]
    assert [d.turns for d in corpus] == [r["turns"] for r in expected]
    assert [d.metadata for d in corpus] == [r["metadata"] for r in expected]
    # landed as generic JSONL, sarag reads the same conversations (same ids, roles, texts, hashes)
    relanded = parse_file(folder / "corpus.jsonl")
    assert relanded.source_format == "jsonl" and not relanded.quarantined
    assert [c.dialogue_id for c in relanded.conversations] == [c.dialogue_id for c in parsed.conversations]
    assert [c.content_hash() for c in relanded.conversations] == [c.content_hash() for c in parsed.conversations]
    assert [c.metadata["_names"] for c in relanded.conversations] == [c.metadata["_names"] for c in parsed.conversations]
    assert (folder / license_name).read_bytes() == (source.parent / license_name).read_bytes()


def test_the_baselines_run_over_the_set(eval_set):
    name, folder, corpus, queries = eval_set
    docs = [(d.dialogue_id, d.text) for d in corpus]
    baselines = fit_baselines(docs)
    assert set(baselines) == set(BASELINE_NAMES)
    ids = {d for d, _ in docs}
    scores, latencies = {}, []
    for system, retriever in baselines.items():
        ranked, lat = run_queries(retriever.search, [q.text for q in queries], k=10)
        assert len(ranked) == len(queries)
        assert all(set(r) <= ids and len(r) == len(set(r)) for r in ranked)
        scores[system] = score_queries(queries, ranked, texts=dict(docs))
        latencies += lat
    # dense ranks every conversation; the sparse ones only those sharing a term
    assert all(len(s.ranked) == min(10, len(docs)) for s in scores["dense"])
    data = build_report(len(docs), scores, ingest_s=0.0, query_ms=latencies).to_dict()
    validate_report_dict(data)
    assert data["n_dialogues"] == len(corpus) and data["n_queries"] == len(queries)
    for metrics in data["systems"].values():
        assert set(metrics) == {"R@1", "R@3", "R@10", "MRR@3", "nDCG@10", "nugget_coverage@3"}
    assert set(data["by_kind"]) == {"single", "followup"}
