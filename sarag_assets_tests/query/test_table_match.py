"""The table-match channel's arithmetic: shares of mentioned values per row, its ranking and the lift."""

import math

import numpy as np

from sarag_assets.query.table_match import RowShares, entity_shares
from sarag_assets.query.understanding import Entity

ROW_IDS = ["a", "b", "c", "d", "e"]
HOLDERS = {  # (column, value) -> rows holding it
    ("product", "X100"): ["b", "d"],
    ("app_version", "2.3"): ["a", "d"],
    ("os_version", "2.3"): ["d", "e"],  # the same surface "2.3" read in a second column
    ("error_code", "E-12"): ["c"],
    ("product", "Z9"): ["a", "e"],
    ("product", "Q1"): ["c"],
    ("app_version", "3.0"): ["b"],
    ("os_version", "3.0"): ["b"],
    ("product", "Gone"): [],  # named, and no row holds it
}


def _positions(entity):
    return np.array(sorted(ROW_IDS.index(d) for d in HOLDERS[(entity.column, entity.value)]), dtype=np.int64)


def _idf(df):
    return math.log(1.0 + len(ROW_IDS) / df)


def _entity(column, value, surface):
    return Entity(column, value, 0, len(HOLDERS[(column, value)]), surface)


def test_a_value_read_in_two_columns_counts_once_by_its_best_reading():
    entities = [_entity("product", "X100", "x100"), _entity("app_version", "2.3", "2.3"),
                _entity("os_version", "2.3", "2.3")]
    shares = entity_shares(entities, _positions, _idf, ROW_IDS).as_dict()
    product, version = _idf(2), _idf(2)  # each group's best gain adds to the total once
    total = product + version
    assert set(shares) == {"a", "b", "d", "e"}
    assert math.isclose(shares["d"], (product + version) / total)  # holds both; 2.3 counted once
    assert math.isclose(shares["a"], version / total)
    assert math.isclose(shares["e"], version / total)
    assert math.isclose(shares["b"], product / total)


def test_rarer_values_weigh_more_and_unheld_values_are_ignored():
    entities = [_entity("product", "X100", "x100"), _entity("error_code", "E-12", "e-12")]
    shares = entity_shares(entities, _positions, _idf, ROW_IDS).as_dict()
    assert shares["c"] > shares["b"] == shares["d"]  # E-12, in one row, is rarer than X100, in two
    assert not entity_shares([_entity("product", "Gone", "gone")], _positions, _idf, ROW_IDS)
    assert not entity_shares([], _positions, _idf, ROW_IDS)


def test_the_ranking_breaks_equal_shares_by_the_fused_score_then_by_id():
    shares = RowShares(ROW_IDS, np.array([0, 1, 3, 4]), np.array([0.5, 1.0, 0.5, 0.5]))
    position = {d: i for i, d in enumerate(ROW_IDS)}
    assert [d for d, _ in shares.top(10, {}, position)] == ["b", "a", "d", "e"]
    fused = {"e": 0.02, "d": 0.01, "zz-not-a-row": 0.5}
    assert [d for d, _ in shares.top(10, fused, position)] == ["b", "e", "d", "a"]
    assert [d for d, _ in shares.top(2, fused, position)] == ["b", "e"]

def test_the_lift_adds_trust_times_share_and_lets_the_best_holders_join():
    shares = RowShares(ROW_IDS, np.array([0, 1, 3, 4]), np.array([0.5, 1.0, 0.5, 0.5]))
    position = {d: i for i, d in enumerate(ROW_IDS)}
    lifted = shares.lift({"a": -0.5, "c": 1.0, "b": 0.2}, 2.0, position, joining=["b", "d"])
    # c holds no value: unchanged; d was in no channel's list: it joins at the lowest fused score, lifted
    assert lifted == {"a": -0.5 + 1.0, "c": 1.0, "b": 0.2 + 2.0, "d": -0.5 + 1.0}
    assert shares.lift({"a": 0.1}, 0.0, position, joining=["b"]) == {"a": 0.1}  # no trust: nothing moves
    assert RowShares(ROW_IDS, np.zeros(0, np.int64), np.zeros(0)).lift({"a": 0.1}, 2.0, position) == {"a": 0.1}
