"""The channels, the ranker and the match strength over a home the real pipeline built."""

from __future__ import annotations

import numpy as np
import pytest

from sarag_assets.core.indices.store import CONVERSATION_PASSAGES, CONVERSATION_TEXTS
from sarag_assets.query.channels import alpha_fuse
from sarag_assets.query.ranking import Ranking, SearchSettings
from sarag_assets.query.strength import match_strength
from sarag_assets.query.understanding import QueryError


def test_the_sdr_list_weighs_each_side_by_alpha_and_a_missing_side_by_its_floor():
    issue, solution = [("a", 0.9), ("b", 0.5)], [("b", 0.8), ("c", 0.6)]
    fused = dict(alpha_fuse(issue, solution, 0.25, True, True))
    assert fused["a"] == pytest.approx(0.25 * 0.9 + 0.75 * 0.6)  # not returned by the solution side: its lowest
    assert fused["b"] == pytest.approx(0.25 * 0.5 + 0.75 * 0.8)
    assert fused["c"] == pytest.approx(0.25 * 0.5 + 0.75 * 0.6)
    assert alpha_fuse(issue, solution, 0.25, True, False) == [("a", 0.9), ("b", 0.5), ("c", 0.5)]
    assert alpha_fuse([("y", 0.5), ("x", 0.5)], [], 0.5, True, False) == [("x", 0.5), ("y", 0.5)]  # ties by id


def test_the_passages_channel_gives_each_conversation_once_by_its_best_passage(engine, generated_queries):
    channels = engine.channels
    vector = engine.embed(engine.understand(generated_queries[0]["turns"]))
    listed = channels.search_dense(CONVERSATION_PASSAGES, vector, 20)
    assert len(listed) == 20 and len({d for d, _ in listed}) == 20
    best: dict[str, float] = {}
    for d, score in channels.dense.search(CONVERSATION_PASSAGES, vector, channels.store.counts(CONVERSATION_PASSAGES)):
        best.setdefault(d, score)
    assert listed == list(best.items())[:20]


def test_the_table_is_trusted_fully_when_the_query_names_no_value(engine):
    parsed = engine.understand("zzqx wibble")
    assert not parsed.entities
    assert engine.channels.table_trust(parsed) == 1.0
    assert not len(engine.channels.entity_shares(parsed))


def test_a_ranking_names_its_parts_and_a_deeper_one_reuses_its_vector(engine, generated_queries):
    parsed = engine.understand(generated_queries[1]["turns"])
    settings = SearchSettings()
    ranking = engine.ranker.rank(parsed, settings, 20)
    assert isinstance(ranking, Ranking)
    np.testing.assert_array_equal(ranking.vector, engine.embed(parsed))
    again = engine.ranker.rank(parsed, settings, 20, ranking.vector)
    assert again.fused == ranking.fused and set(ranking.views) <= {"lexical", "dense", "table", "sdr", "trag"}
    assert {"sdr", "passages"} <= set(ranking.ranked) and {"issue", "solution"} <= set(ranking.lists)
    for k in (0, -1, 2.0):
        with pytest.raises(QueryError, match="k must be a positive integer"):
            engine.ranker.retrieve("my printer jams", k, settings)


def test_match_strength_is_each_conversations_cosine_in_standard_deviations(engine, generated_queries):
    vector = engine.embed(engine.understand(generated_queries[2]["turns"]))
    everyone = list(engine.dense.get(CONVERSATION_TEXTS).row_of)
    strength = match_strength(engine.dense, vector, everyone + ["not-a-conversation"])
    values = np.array([strength[d] for d in everyone])
    assert values.mean() == pytest.approx(0.0, abs=1e-4) and values.std() == pytest.approx(1.0, abs=1e-4)
    assert strength["not-a-conversation"] == 0.0
    top = engine.search(generated_queries[2]["turns"], 1)[0].dialogue_id
    assert strength[top] > np.percentile(values, 90)  # the best hit stands out from the corpus
