"""The home's own measurement of which views vote: the split, the choice, when to measure again."""

from __future__ import annotations

import hashlib

import numpy as np

from sarag_assets.query import calibration
from sarag_assets.query.calibration import choose, due, split


def test_the_asker_opening_is_the_query_and_the_rest_is_what_is_searched():
    turns = {"c1": [("user", "hi"), ("user", "printer jams on page two"), ("agent", "open tray B"), ("user", "done, works"),
                    ("agent", "great")]}
    records, queries = split(turns)
    assert len(records) == len(queries) == 1
    # the first half is turns 0-2: the asker's two turns there are the query; nothing of them is searched
    assert [t["text"] for t in queries[0].turns] == ["hi", "printer jams on page two"]
    assert [(t["role"], t["text"]) for t in records[0]["turns"]] == [
        ("agent", "open tray B"), ("user", "done, works"), ("agent", "great")]
    assert queries[0].gold == records[0]["dialogue_id"]


def test_a_conversation_without_an_asker_opening_or_a_helper_after_gives_no_query():
    turns = {"helper-first": [("agent", "we are down"), ("agent", "fixed"), ("user", "ok")],
             "no-helper": [("user", "a"), ("user", "b")],
             "usable": [("user", "wifi drops"), ("agent", "update the driver")]}
    records, queries = split(turns)
    assert len(queries) == 1 and [t["text"] for t in queries[0].turns] == ["wifi drops"]


def test_the_sample_is_the_same_whatever_order_the_home_lists_its_conversations_in():
    turns = {f"d{i}": [("user", f"problem {i}"), ("agent", f"fix {i}")] for i in range(40)}
    forward = split(turns, sample=10)[1]
    backward = split(dict(reversed(list(turns.items()))), sample=10)[1]
    assert [q.turns for q in forward] == [q.turns for q in backward]
    first = sorted(turns, key=lambda d: hashlib.sha256(d.encode()).hexdigest())[0]
    assert forward[0].turns[0]["text"] == f"problem {first[1:]}"


def _views(rng, n, good: dict[str, float]):
    """n pseudo-queries over 20 candidates; each view puts the gold first with its probability in ``good``."""
    views, gold = [], []
    for i in range(n):
        g = f"g{i}"
        ids = [g] + [f"o{i}-{j}" for j in range(19)]
        query = {}
        for view, p in good.items():
            scores = rng.random(len(ids))
            if rng.random() < p:
                scores[0] = scores.max() + 1.0
            z = (scores - scores.mean()) / scores.std()
            query[view] = (dict(zip(ids, z.tolist())), float(z.min()))
        views.append(query)
        gold.append(g)
    return views, gold


def test_views_that_find_nothing_get_no_vote_and_the_text_stays():
    rng = np.random.default_rng(11)
    views, gold = _views(rng, 120, {"lexical": 0.7, "dense": 0.6, "table": 0.0, "sdr": 0.0, "trag": 0.0})
    choice = choose(views, gold)
    weights, alone, together = choice.weights, choice.alone, choice.together
    assert weights == {"lexical": 1.0, "dense": 1.0}
    assert alone["lexical"] > alone["table"] and alone["dense"] > alone["sdr"]
    assert together >= max(alone.values()) - 0.05


def test_a_text_view_that_only_adds_noise_is_dropped():
    rng = np.random.default_rng(2)
    views, gold = _views(rng, 150, {"lexical": 0.95, "dense": 0.0, "table": 0.0, "sdr": 0.0, "trag": 0.0})
    choice = choose(views, gold)
    assert choice.weights == {"lexical": 1.0} and choice.alone["lexical"] > choice.alone["dense"]
    assert choice.steps[0]["taken"] == "lexical" and choice.steps[0]["bar_se"] == 1.0
    tried = choice.steps[0]["tried"]
    assert tried["lexical"]["gain"] > tried["lexical"]["se"] > 0 and tried["dense"]["gain"] < 0


def test_a_structure_view_better_than_the_text_leads_the_ranking():
    rng = np.random.default_rng(5)
    views, gold = _views(rng, 120, {"lexical": 0.3, "dense": 0.3, "table": 0.95, "sdr": 0.1, "trag": 0.1})
    choice = choose(views, gold)
    weights, alone, together = choice.weights, choice.alone, choice.together
    assert "table" in weights and max(alone, key=alone.get) == "table"
    assert together > max(alone["lexical"], alone["dense"])


def test_measured_again_only_once_the_home_has_doubled():
    assert due(None, 10)
    assert not due(300, 599) and due(300, 600)


def test_too_few_pseudo_queries_keep_the_text_views(tmp_path):
    turns = {f"d{i}": [("user", f"problem {i}"), ("agent", f"fix {i}")] for i in range(calibration.MIN_QUERIES - 1)}
    measured = calibration.calibrate(tmp_path, turns)
    assert measured.queries == 0 and measured.weights == {"lexical": 1.0, "dense": 1.0}
    assert not (tmp_path / "calibration").exists()


def test_the_pipeline_measured_the_built_home_and_the_engine_ranks_by_it(built_home, engine):
    """The conversations of the query tests' home (the demo's): the ranking_calibration asset built a
    calibration home of the rests, measured every view and stored the votes the engine now uses."""
    import json

    from sarag_assets.core import warehouse
    from sarag_assets.query.fusion import VIEWS

    with warehouse.connect(engine.publication.warehouse, read_only=True) as con:
        conversations, queries, weights_json, report_json = con.execute(
            "SELECT conversations, queries, weights_json, report_json FROM ranking_calibrations").fetchone()
    weights, report = json.loads(weights_json), json.loads(report_json)
    assert conversations == len(engine.rows) and queries == calibration.SAMPLE
    assert weights and set(weights) <= set(VIEWS) and engine.weights == weights
    assert set(report["alone"]) == set(VIEWS)
    assert set(weights) >= {"lexical"} or set(weights) >= {"dense"}  # the text is the base
    assert report["steps"][0]["step"] == "one text view" and set(report["steps"][0]["tried"]) == {"lexical", "dense"}
    with warehouse.connect(built_home.root / "calibration" / "warehouse.duckdb", read_only=True) as con:
        assert warehouse.current_dialogue_count(con) == calibration.SAMPLE


def test_a_calibration_home_that_cannot_be_built_is_one_clear_error(tmp_path):
    """The home's own settings file travels with it; one its sub-home cannot read fails the measurement (the
    asset then keeps the votes it had) with what `sarag materialize` said."""
    import pytest

    settings = tmp_path / "sarag.toml"
    settings.write_text("batch_size = 'many'\n")
    turns = {f"d{i}": [("user", f"problem {i}"), ("agent", f"fix {i}")] for i in range(calibration.MIN_QUERIES)}
    with pytest.raises(calibration.CalibrationFailed, match="batch_size"):
        calibration.calibrate(tmp_path, turns, settings)
