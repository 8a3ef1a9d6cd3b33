"""The fusion rule: text is the base; structure moves a conversation only within the text's own doubt."""

from __future__ import annotations

import numpy as np

from sarag_assets.query.fusion import NEIGHBOUR_SEEDS, fuse, neighbours, standardized, with_neighbours


def test_standardized_scores_and_the_floor_for_missing():
    z, floor = standardized([("a", 3.0), ("b", 2.0), ("c", 1.0)])
    assert z["a"] > 0 > z["c"] and abs(z["b"]) < 1e-9
    assert floor == z["c"]
    assert standardized([("a", 1.0), ("b", 1.0)]) == ({"a": 0.0, "b": 0.0}, 0.0)
    assert standardized([]) == ({}, 0.0)


def test_structure_cannot_reverse_what_the_text_channels_agree_on():
    text = [("a", 0.9), ("b", 0.5), ("c", 0.4), ("d", 0.1)]
    lists = {"passages": text, "conversation": text, "conversation_text": [(d, s * 10) for d, s in text],
             # every structured view puts d first and a last, with certainty
             "table_row": [("d", 9.0), ("c", 0.1), ("b", 0.05), ("a", 0.0)],
             "sdr": [("d", 0.99), ("c", 0.2), ("b", 0.1), ("a", 0.0)]}
    fused = fuse(lists)
    assert sorted(fused, key=lambda d: -fused[d]) == ["a", "b", "c", "d"]


def test_structure_decides_where_the_text_channels_disagree():
    lists = {"passages": [("a", 0.9), ("b", 0.5), ("c", 0.1)],
             "conversation": [("b", 0.9), ("a", 0.5), ("c", 0.1)],
             "conversation_text": [("a", 9.0), ("b", 5.0), ("c", 1.0)]}
    without = fuse(lists)
    assert max(without, key=without.get) == "a"
    with_structure = fuse({**lists, "table_row": [("b", 0.9), ("c", 0.2), ("a", 0.1)]})
    assert max(with_structure, key=with_structure.get) == "b"


def test_without_text_channels_the_structure_lists_rank():
    fused = fuse({"table_row": [("x", 0.9), ("y", 0.1)], "cluster_route": [("y", 2.0), ("x", 1.0)],
                  "sdr": [("x", 0.8), ("y", 0.7)]})
    assert fused["x"] > fused["y"]


def test_a_conversation_every_text_channel_scores_alike_never_moves_relative_to_the_base():
    """Text channels giving each conversation the same z: the band is 0, whatever structure says."""
    rng = np.random.default_rng(7)
    ids = ["p", "q", "r", "s"]
    for _ in range(200):
        text = list(zip(ids, rng.random(4).tolist()))
        lists = {"passages": text, "conversation": text, "conversation_text": [(d, 3 * s + 1) for d, s in text]}
        base = fuse(lists)
        for name in ("table_row", "full_text", "sdr", "cluster_route")[: rng.integers(1, 5)]:
            lists[name] = list(zip(ids, rng.random(4).tolist()))
        fused = fuse(lists)
        assert all(abs(fused[d] - base[d]) < 1e-9 for d in ids)


def test_an_empty_list_is_no_evidence():
    text = [("a", 0.9), ("b", 0.2), ("c", 0.1)]
    with_empty = fuse({"passages": text, "conversation": [], "conversation_text": text, "table_row": []})
    assert with_empty == fuse({"passages": text, "conversation_text": text})


def test_a_conversation_no_text_channel_returned_cannot_be_rescued_by_structure():
    text = [("a", 0.9), ("b", 0.6), ("c", 0.5)]
    lists = {"passages": text, "conversation": [("a", 0.8), ("c", 0.7), ("b", 0.2)],
             "conversation_text": [("b", 9.0), ("a", 4.0), ("c", 1.0)],
             "table_row": [("z", 0.99), ("c", 0.1), ("b", 0.05), ("a", 0.0)],
             "cluster_route": [("z", 5.0), ("a", 1.0)]}
    fused = fuse(lists)
    assert min(fused, key=fused.get) == "z"


def test_with_one_text_channel_structure_changes_nothing():
    text = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    assert fuse({"passages": text, "table_row": [("c", 0.9), ("b", 0.5), ("a", 0.1)]}) == fuse({"passages": text})


def _unit(*xs):
    v = np.asarray(xs, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_neighbours_rank_the_candidates_by_their_likeness_to_the_first_few():
    assert NEIGHBOUR_SEEDS == 3
    fused = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 1.1, "e": 1.0}
    vectors = {"a": _unit(1, 0, 0), "b": _unit(1, 0.1, 0), "c": _unit(1, 0, 0.1),  # the seeds: one problem
               "d": _unit(0, 1, 0),  # another problem
               "e": _unit(1, 0.05, 0.05)}  # the seeds' problem, found last
    hits = neighbours(fused, vectors)
    assert [d for d, _ in hits][-1] == "d" and hits[0][1] <= 1.0 + 1e-12
    assert dict(hits)["e"] > dict(hits)["d"]
    voted = with_neighbours(fused, hits, votes=3)
    assert voted["e"] > voted["d"]  # e passes d: it resembles what the ranking found first
    assert sorted(voted, key=lambda x: -voted[x])[:3] == ["a", "b", "c"]


def test_the_neighbours_vote_weighs_as_one_text_channel_and_reads_only_candidates_with_vectors():
    fused = {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0, "x": -1.0}
    vectors = {d: _unit(1, i, 0) for i, d in enumerate("abcd")}
    hits = neighbours(fused, vectors)
    assert {d for d, _ in hits} == set("abcd")  # x has no vector: it takes the list's lowest z
    z, floor = standardized(hits)
    voted = with_neighbours(fused, hits, votes=3)
    assert voted["x"] == (3 * -1.0 + floor) / 4
    assert all(abs(voted[d] - (3 * fused[d] + z[d]) / 4) < 1e-12 for d in "abcd")


def test_no_more_candidates_than_seeds_gives_no_vote():
    fused = {"a": 2.0, "b": 1.0, "c": 0.0}
    vectors = {d: _unit(1, i, 1) for i, d in enumerate("abc")}
    assert neighbours(fused, vectors) == []
    assert with_neighbours(fused, [], votes=3) == fused
