"""The fusion rule: one vote per view, each weighed as the home measured it."""

from __future__ import annotations

import numpy as np

from sarag_assets.query.fusion import DEFAULT_WEIGHTS, combine, fuse, standardized, view_scores


def order(fused: dict[str, float]) -> list[str]:
    return sorted(fused, key=lambda d: (-fused[d], d))


def test_standardized_scores_and_the_floor_for_missing():
    z, floor = standardized([("a", 3.0), ("b", 2.0), ("c", 1.0)])
    assert z["a"] > 0 > z["c"] and abs(z["b"]) < 1e-9
    assert floor == z["c"]
    assert standardized([("a", 1.0), ("b", 1.0)]) == ({"a": 0.0, "b": 0.0}, 0.0)
    assert standardized([]) == ({}, 0.0)


def test_two_channels_of_one_view_are_one_vote():
    """The two table channels agree on b; BM25 over the text says a as firmly: a tie, not two votes to one."""
    row = [("b", 0.9), ("a", 0.5), ("c", 0.1)]
    lists = {"table_row": row, "full_text": row, "conversation_text": [("a", 9.0), ("b", 5.0), ("c", 1.0)]}
    fused = fuse(lists, {"lexical": 1, "table": 1})
    assert abs(fused["a"] - fused["b"]) < 1e-9
    counted_apart = {d: sum(standardized(lists[n])[0][d] for n in lists) for d in "abc"}
    assert order(counted_apart)[0] == "b"  # what counting channels one by one would have said


def test_a_view_without_a_vote_moves_nothing():
    text = [("a", 0.9), ("b", 0.5), ("c", 0.4), ("d", 0.1)]
    lists = {"passages": text, "conversation_text": [(d, s * 10) for d, s in text]}
    base = fuse(lists)
    structured = fuse({**lists, "table_row": [("d", 9.0), ("c", 0.1), ("a", 0.0)], "sdr": [("d", 0.99), ("a", 0.0)],
                       "cluster_route": [("e", 3.0), ("d", 2.0)]})
    assert structured == base and "e" not in structured


def test_a_view_with_a_vote_moves_the_ranking_and_a_view_alone_ranks_by_itself():
    lists = {"passages": [("a", 0.9), ("b", 0.8), ("c", 0.1)], "conversation_text": [("a", 3.0), ("b", 2.9), ("c", 1.0)],
             "table_row": [("b", 0.9), ("c", 0.2), ("a", 0.1)]}
    assert order(fuse(lists))[0] == "a"
    assert order(fuse(lists, {"lexical": 1, "dense": 1, "table": 1}))[0] == "b"
    assert order(fuse(lists, {"table": 1})) == ["b", "c", "a"]


def test_views_that_are_on_but_weigh_nothing_vote_equally():
    """The `table` system of a home whose calibration gave the table no vote is still the table's ranking."""
    lists = {"table_row": [("x", 0.9), ("y", 0.1)], "full_text": [("x", 5.0), ("y", 1.0)]}
    assert order(fuse(lists, DEFAULT_WEIGHTS)) == ["x", "y"]
    two = fuse({"cluster_route": [("y", 2.0), ("x", 1.0)], "sdr": [("x", 0.8), ("y", 0.7)]}, {"dense": 1})
    assert abs(two["x"] - two["y"]) < 1e-9  # one vote each, opposite: a tie


def test_an_empty_list_is_no_evidence():
    text = [("a", 0.9), ("b", 0.2), ("c", 0.1)]
    votes = {"lexical": 1, "dense": 1, "table": 1}
    with_empty = fuse({"passages": text, "conversation_text": text, "table_row": text, "full_text": []}, votes)
    without = fuse({"passages": text, "conversation_text": text, "table_row": text}, votes)
    assert with_empty == without
    assert "table" not in view_scores({"table_row": [], "passages": text})


def test_the_table_lift_acts_inside_the_table_view_by_its_weight():
    lists = {"passages": [("a", 0.9), ("b", 0.5), ("c", 0.1)], "conversation_text": [("a", 9.0), ("b", 5.0), ("c", 1.0)],
             "table_row": [("a", 0.9), ("b", 0.5), ("c", 0.1)]}

    def lift_c(scores, floor):
        return {d: s + (10.0 if d == "c" else 0.0) for d, s in scores.items()}, floor

    assert order(fuse(lists, {"lexical": 1, "dense": 1}, lift_c))[0] == "a"  # the table has no vote here
    assert order(fuse(lists, {"lexical": 1, "dense": 1, "table": 1}, lift_c))[0] == "c"


def test_the_weighted_mean_is_the_definition():
    rng = np.random.default_rng(3)
    ids = list("pqrs")
    for _ in range(50):
        lists = {n: list(zip(ids, rng.random(4).tolist())) for n in ("passages", "conversation_text", "table_row", "sdr")}
        weights = {"lexical": float(rng.integers(0, 3)), "dense": 1.0, "table": float(rng.integers(0, 3)),
                   "sdr": float(rng.integers(0, 3))}
        views = view_scores(lists)
        fused = combine(views, weights)
        total = sum(weights[v] for v in views)
        for d in ids:
            expected = sum(weights[v] * views[v][0][d] for v in views) / total
            assert abs(fused[d] - expected) < 1e-9
