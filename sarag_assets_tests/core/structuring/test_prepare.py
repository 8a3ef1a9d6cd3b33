"""candidate_schemas of a batch: the embedded backend encodes the batch's texts in O(1) model calls
(one per PREPARE_CHUNK conversations), not two per conversation, and the rows are the same as
without preparing. Real model, real generated conversations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sarag_assets.backends.embedded import EmbeddedBackend
from sarag_assets.core.encoding.embedder import Embedder
from sarag_assets.core.ingest.landing import BatchManifest
from sarag_assets.core.ingest.parsers import parse_file
from sarag_assets.core.ingest.raw_dialogues import build_batch
from sarag_assets.core.structuring import tables as structuring
from sarag_assets.core.structuring.tables import (
    candidate_schema_rows,
    conversations_from_raw,
)
from sarag_assets.evaluation.synthetic import generate

N = 40


class CountingEmbedder(Embedder):
    """The real embedder, counting the calls that actually ran the model (not served from its cache)."""

    def __init__(self):
        super().__init__()
        self.model_calls = 0

    def encode(self, texts):
        before = self.encoded
        out = super().encode(texts)
        self.model_calls += self.encoded > before
        return out


class Unprepared:
    """The embedded backend without its `prepare` hook: every conversation encodes on its own."""

    def __init__(self, inner: EmbeddedBackend):
        self.inner, self.name = inner, inner.name

    def candidate_schema(self, conversation):
        return self.inner.candidate_schema(conversation)


@pytest.fixture(scope="module")
def conversations(tmp_path_factory) -> list:
    corpus = generate(N, 7)
    path = Path(tmp_path_factory.mktemp("corpus")) / "corpus.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in corpus.conversations), encoding="utf-8")
    manifest = BatchManifest("b", "corpus.jsonl", "corpus.jsonl", "-", None, 0, N, 0, 1, "2024-01-01T00:00:00+00:00")
    out = conversations_from_raw(build_batch(parse_file(path), manifest).raw_dialogues)
    assert len(out) == N
    return out


@pytest.fixture(scope="module")
def unprepared(conversations):
    embedder = CountingEmbedder()
    result = candidate_schema_rows("b", conversations, Unprepared(EmbeddedBackend(embedder)))
    return result, embedder


@pytest.mark.slow
def test_a_batch_is_encoded_in_one_model_call_with_the_same_rows(conversations, unprepared):
    before, before_embedder = unprepared
    assert before_embedder.model_calls >= N // 2  # what preparing avoids: model calls per conversation

    embedder = CountingEmbedder()
    after = candidate_schema_rows("b", conversations, EmbeddedBackend(embedder))
    assert embedder.model_calls == 1
    assert not after.failures and after.stats == before.stats
    assert after.frame.height > N
    assert after.frame.equals(before.frame)


@pytest.mark.slow
def test_prepare_runs_once_per_chunk(conversations, unprepared, monkeypatch):
    monkeypatch.setattr(structuring, "PREPARE_CHUNK", 15)
    embedder = CountingEmbedder()
    after = candidate_schema_rows("b", conversations, EmbeddedBackend(embedder))
    assert embedder.model_calls == 3  # 40 conversations in chunks of 15
    assert after.frame.equals(unprepared[0].frame)


@pytest.mark.slow
def test_a_failing_prepare_changes_nothing_but_speed(conversations, unprepared):
    class Broken(EmbeddedBackend):
        def prepare(self, step, conversations, metadata=None):
            raise RuntimeError("no batch today")

    after = candidate_schema_rows("b", conversations[:5], Broken(CountingEmbedder()))
    first_five = {c.dialogue_id for c, _ in conversations[:5]}
    expected = unprepared[0].frame.filter(unprepared[0].frame["dialogue_id"].is_in(list(first_five)))
    assert not after.failures
    assert after.frame.equals(expected)


def test_prepare_ignores_other_steps_and_empty_batches(conversations):
    embedder = CountingEmbedder()
    backend = EmbeddedBackend(embedder)
    backend.prepare("extract_row", [c for c, _ in conversations[:3]])
    backend.prepare("candidate_schema", [])
    assert embedder.model_calls == 0


@pytest.mark.slow
def test_dialogue_graphs_of_a_batch_share_one_model_call(conversations):
    from sarag_assets.backends.embedded.graph import dialogue_graph_texts
    from sarag_assets.core.refinement.tables import dialogue_graph_rows

    class UnpreparedGraphs:
        def __init__(self, inner: EmbeddedBackend):
            self.inner, self.name = inner, inner.name

        def dialogue_graph(self, conversation):
            return self.inner.dialogue_graph(conversation)

    comparing = sum(bool(dialogue_graph_texts(c)) for c, _ in conversations)
    assert comparing >= 2  # graphs that compare units, each a model call of its own when unprepared
    before_embedder, after_embedder = CountingEmbedder(), CountingEmbedder()
    before_nodes, before_edges = dialogue_graph_rows("b", conversations, UnpreparedGraphs(EmbeddedBackend(before_embedder)))
    after_nodes, after_edges = dialogue_graph_rows("b", conversations, EmbeddedBackend(after_embedder))
    assert before_embedder.model_calls == comparing
    assert after_embedder.model_calls == 1
    assert after_nodes.frame.equals(before_nodes.frame) and after_edges.equals(before_edges)
    assert not after_nodes.failures and after_nodes.frame.height >= len(conversations)


def test_the_llm_transcript_names_an_accepted_answer_and_is_unchanged_without_one():
    from sarag_assets.core.structuring.interface import ConversationInput, ConversationTurn

    turns = [("user1", "user", "Fan runs at night."), ("agent1", "agent", "Fit the power adapter.")]
    plain = ConversationInput(dialogue_id="f", turns=[ConversationTurn(speaker=s, role=r, text=t) for s, r, t in turns])
    # the format every cached LLM call was made with
    assert plain.transcript() == "[0] user1 (user): Fan runs at night.\n[1] agent1 (agent): Fit the power adapter."
    marked = plain.model_copy(update={"turns": [plain.turns[0], plain.turns[1].model_copy(update={"accepted": True})]})
    assert marked.transcript().splitlines()[1] == "[1] agent1 (agent, the accepted answer): Fit the power adapter."
