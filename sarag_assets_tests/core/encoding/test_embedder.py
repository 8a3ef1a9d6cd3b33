import numpy as np

from sarag_assets.core.encoding.embedder import DuckDBEmbeddingStore, Embedder


def test_embeddings_are_unit_vectors_and_cached_across_embedders(tmp_path):
    store = DuckDBEmbeddingStore(tmp_path / "w.duckdb")
    first = Embedder(store=store)
    texts = ["my router keeps rebooting", "the refund never arrived", "my router keeps rebooting"]
    vectors = first.encode(texts)
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[2])
    assert first.encoded == 2  # the repeated text is encoded once
    work = first.work_metadata()
    assert work["encoder_texts"] == 2 and work["encoder_seconds"] > 0

    second = Embedder(store=store)  # a new process would start like this: empty memory, same warehouse
    again = second.encode(texts[:2])
    assert second.encoded == 0 and second.work_metadata() == {"encoder_texts": 0, "encoder_seconds": 0.0}
    assert np.allclose(again, vectors[:2], atol=1e-6)
    assert float(vectors[0] @ vectors[1]) < float(vectors[0] @ second.encode(["the router reboots all the time"])[0])


def test_the_memory_keeps_the_most_recently_used_texts_only():
    embedder = Embedder(memory_entries=2)
    embedder.encode(["first text", "second text"])
    embedder.encode(["first text"])  # used again: now the most recent
    embedder.encode(["third text"])  # pushes out the least recently used, "second text"
    assert embedder.encoded == 3
    embedder.encode(["first text", "third text"])
    assert embedder.encoded == 3  # both still remembered
    embedder.encode(["second text"])
    assert embedder.encoded == 4  # forgotten, encoded again
