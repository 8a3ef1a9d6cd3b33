"""Passages: every turn is read by the model whole, somewhere; windows share their boundary turn."""

from __future__ import annotations

import polars as pl
import pytest

from sarag_assets.core.encoding.embedder import default_embedder
from sarag_assets.core.indices.documents import (
    BatchIndexRows,
    encode_tables,
    text_index_rows,
)
from sarag_assets.core.indices.passages import (
    MAX_PASSAGE_CHARS,
    _pieces,
    conversation_passages,
)


@pytest.fixture(scope="module")
def fits():
    return default_embedder().fits


def test_short_conversation_is_one_passage(fits):
    turns = ["My printer jams.", "Clean the roller.", "That fixed it."]
    (only,) = conversation_passages(turns, fits)
    assert (only.turn_start, only.turn_end) == (0, 2)
    assert only.text == "\n".join(turns)


def test_long_thread_is_cut_into_windows_that_fit_and_share_a_turn(fits):
    sentence = "the printer shows a paper jam error after every second page and the tray light blinks"
    turns = [f"Turn {i}: {sentence}. {sentence}." for i in range(12)]  # ~40 word pieces each
    passages = conversation_passages(turns, fits)
    assert len(passages) > 1
    assert all(fits(p.text) for p in passages)
    assert any(p.turn_end > p.turn_start for p in passages)  # several turns per window
    covered = {t for p in passages for t in range(p.turn_start, p.turn_end + 1)}
    assert covered == set(range(len(turns)))
    for before, after in zip(passages, passages[1:]):
        assert after.turn_start == before.turn_end  # the boundary turn is in both
        assert after.turn_start > before.turn_start  # always moves on


def test_no_window_is_a_turn_the_previous_window_already_holds(fits):
    short, middle, long = ("jam " * 30).strip(), ("jam " * 100).strip(), ("jam " * 200).strip()
    # short + middle fit; middle + long do not: the long turn starts a window of its own
    assert [(p.turn_start, p.turn_end) for p in conversation_passages([short, middle, long], fits)] == [(0, 1), (2, 2)]
    # any two fit, three do not: the middle turn is shared
    assert [(p.turn_start, p.turn_end) for p in conversation_passages([middle, middle, middle], fits)] == [(0, 1), (1, 2)]


def test_a_turn_too_long_for_the_model_is_split_into_pieces_that_fit(fits):
    english = " ".join(f"Sentence number {i} describes the failing backup job in detail." for i in range(80))
    chinese = "备份任务在凌晨失败并显示错误代码。" * 60  # no spaces: about one word piece per character
    blob = "QUJDRE" * 20_000  # a pasted blob: one 120,000-character run
    for turn in (english, chinese, blob):
        passages = conversation_passages(["hi", turn, "thanks"], fits)
        assert len(passages) > 2
        assert all(fits(p.text) for p in passages)
        pieces = _pieces(turn, fits, MAX_PASSAGE_CHARS)  # nothing of the turn is lost
        assert len(pieces) > 1 and "".join(pieces).replace(" ", "") == turn.replace(" ", "")
    # Chinese is cut at its sentence ends
    assert all(p.endswith("。") for p in _pieces(chinese, fits, MAX_PASSAGE_CHARS))


def test_empty_conversation_has_no_passage_but_keeps_its_text_row(fits):
    assert conversation_passages(["", "  "], fits) == []
    turns = pl.DataFrame({"dialogue_id": ["d1", "d1", "d2"], "batch_key": ["b", "b", "b"], "turn_index": [0, 1, 0],
                          "text": ["", " ", "Router drops wifi every evening."]})
    passages, texts = text_index_rows(turns, fits)
    assert passages["dialogue_id"].to_list() == ["d2"]
    assert texts["id"].to_list() == ["d1", "d2"]
    encoded = encode_tables(BatchIndexRows({"conversation_passages": passages, "conversation_texts": texts}),
                            default_embedder().encode)
    vectors = encoded["conversation_texts"]["vector"].to_list()
    assert all(abs(sum(x * x for x in v) - 1.0) < 1e-3 for v in vectors)  # unit norm, the empty one included
    # one passage: the conversation's vector is that passage's
    passage_vector = encoded["conversation_passages"]["vector"].to_list()[0]
    assert max(abs(a - b) for a, b in zip(vectors[1], passage_vector)) < 1e-5


def test_every_tables_texts_are_encoded_in_one_call_and_each_row_keeps_its_own_vector():
    embedder = default_embedder()
    calls = []

    def encode(texts):
        calls.append(list(texts))
        return embedder.encode(texts)

    issues = pl.DataFrame({"id": ["a", "b"], "dialogue_id": ["a", "b"],
                           "text": ["Router drops wifi every evening.", "Printer jams on page two."]})
    nodes = pl.DataFrame({"id": ["a#0"], "dialogue_id": ["a"], "text": ["Update the router firmware."]})
    passages = pl.DataFrame({"id": ["a:0", "b:0"], "dialogue_id": ["a", "b"],
                             "text": ["My router drops wifi.\nUpdate its firmware.", "The printer jams.\nClean the roller."]})
    texts = pl.DataFrame({"id": ["a", "b"], "dialogue_id": ["a", "b"], "text": ["unused", "unused"]})
    encoded = encode_tables(BatchIndexRows({"issue_documents": issues, "graph_nodes": nodes,
                                            "conversation_passages": passages, "conversation_texts": texts}), encode)
    assert len(calls) == 1 and len(calls[0]) == 5  # the conversations' own vectors come from their passages
    for name, frame in (("issue_documents", issues), ("graph_nodes", nodes), ("conversation_passages", passages)):
        expected = embedder.encode(frame["text"].to_list())
        stored = encoded[name]["vector"].to_list()
        assert all(max(abs(a - b) for a, b in zip(s, e)) < 1e-5 for s, e in zip(stored, expected)), name
