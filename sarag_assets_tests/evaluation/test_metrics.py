"""Retrieval metrics on small rankings whose values are worked out by hand in the comments."""

from __future__ import annotations

import math

import pytest

from sarag_assets.evaluation.metrics import (
    NUGGET_METRIC,
    QueryScore,
    aggregate,
    mean_scores,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank_at_k,
    retrieval_scores,
    score_queries,
)
from sarag_assets.evaluation.queries import EvalQuery

RANKED = ["d1", "g1", "d2", "g2", "d3", "d4", "d5", "d6", "d7", "d8", "g3"]
GOLD = ["g1", "g2", "g3"]


def test_recall_counts_the_share_of_gold_in_the_top_k():
    assert recall_at_k(RANKED, GOLD, 1) == 0.0  # d1
    assert recall_at_k(RANKED, GOLD, 2) == pytest.approx(1 / 3)  # g1
    assert recall_at_k(RANKED, GOLD, 4) == pytest.approx(2 / 3)  # g1, g2
    assert recall_at_k(RANKED, GOLD, 10) == pytest.approx(2 / 3)  # g3 is 11th
    assert recall_at_k(RANKED, GOLD, 11) == 1.0


def test_recall_with_a_short_ranking_and_repeated_ids():
    assert recall_at_k([], ["g"], 3) == 0.0
    assert recall_at_k(["g"], ["g"], 10) == 1.0
    # a repeated id counts once, at its first position: top 3 distinct = g1, d1, g2
    assert recall_at_k(["g1", "g1", "d1", "g2"], ["g1", "g2"], 3) == 1.0
    assert recall_at_k(["g1", "g1", "g1"], ["g1", "g2"], 3) == 0.5


def test_reciprocal_rank_within_the_top_three():
    assert reciprocal_rank_at_k(RANKED, GOLD, 3) == 0.5  # first gold at rank 2
    assert reciprocal_rank_at_k(["g1", "d1"], GOLD, 3) == 1.0
    assert reciprocal_rank_at_k(["d1", "d2", "g1"], GOLD, 3) == pytest.approx(1 / 3)
    assert reciprocal_rank_at_k(["d1", "d2", "d3", "g1"], GOLD, 3) == 0.0  # rank 4 is outside the top 3


def test_ndcg_with_linear_gain():
    # gold at ranks 2 and 4 in the top 10: DCG = 1/log2(3) + 1/log2(5);
    # ideal: three gold at ranks 1..3: 1/log2(2) + 1/log2(3) + 1/log2(4)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(RANKED, GOLD, 10) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(["g1", "g2", "g3"], GOLD, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["d1"], GOLD, 10) == 0.0
    # one gold, found at rank 3: (1/log2(4)) / 1 = 0.5
    assert ndcg_at_k(["a", "b", "g"], ["g"], 10) == pytest.approx(0.5)
    # more gold than k: the ideal has only k ones
    assert ndcg_at_k(["g1", "g2"], ["g1", "g2", "g3"], 2) == pytest.approx(1.0)


def test_metrics_reject_empty_gold_and_bad_k():
    with pytest.raises(ValueError, match="gold is empty"):
        recall_at_k(["a"], [], 3)
    with pytest.raises(ValueError, match="k must be"):
        ndcg_at_k(["a"], ["a"], 0)


def test_retrieval_scores_has_the_report_metrics():
    s = retrieval_scores(RANKED, GOLD)
    assert list(s) == ["R@1", "R@3", "R@10", "MRR@3", "nDCG@10"]
    assert s["R@3"] == pytest.approx(1 / 3) and s["MRR@3"] == 0.5


def _q(qid, gold, kind=None, **extra):
    return EvalQuery(qid, [{"speaker": "user", "text": qid}], gold, None, kind, extra)


def test_aggregate_means_overall_and_per_kind():
    queries = [_q("a", ["x"], "single", pattern="p1"), _q("b", ["y"], "single", pattern="p2"), _q("c", ["z"], "followup")]
    rankings = {"a": ["x", "y"], "b": ["x", "w", "v", "y"], "c": ["z"]}
    scores = score_queries(queries, rankings)
    agg = aggregate(scores)
    # R@1: a 1, b 0, c 1 -> 2/3 overall; single 1/2, followup 1
    assert agg["n"] == 3
    assert agg["all"]["R@1"] == pytest.approx(2 / 3)
    assert agg["by_kind"]["single"]["R@1"] == pytest.approx(0.5)
    assert agg["by_kind"]["single"]["n"] == 2
    assert agg["by_kind"]["followup"]["R@1"] == 1.0
    # R@3 for b: y is 4th -> 0; so single R@3 = 0.5
    assert agg["by_kind"]["single"]["R@3"] == pytest.approx(0.5)
    by_pattern = aggregate(scores, group_by="pattern")["by_pattern"]
    assert set(by_pattern) == {"p1", "p2"}  # c has no pattern: in "all" only
    assert by_pattern["p2"]["MRR@3"] == 0.0


def test_nugget_mean_only_over_queries_that_have_nuggets():
    scores = [
        QueryScore("a", None, {"R@1": 1.0, NUGGET_METRIC: 0.5}),
        QueryScore("b", None, {"R@1": 0.0}),
        QueryScore("c", None, {"R@1": 1.0, NUGGET_METRIC: 1.0}),
    ]
    means = mean_scores(scores)
    assert means["R@1"] == pytest.approx(2 / 3)
    assert means[NUGGET_METRIC] == pytest.approx(0.75)


def test_score_queries_needs_a_ranking_per_query():
    with pytest.raises(ValueError, match="no ranking"):
        score_queries([_q("a", ["x"])], {"b": ["x"]})
    with pytest.raises(ValueError, match="rankings for"):
        score_queries([_q("a", ["x"])], [["x"], ["y"]])
