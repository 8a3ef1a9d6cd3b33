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
    assert second.encoded == 0
    assert second.work_metadata() == {"encoder_texts": 0, "encoder_seconds": 0.0, "encoder_runtime": "torch"}
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


BF16_TEXTS = [
    "my router keeps rebooting every night since the firmware update to 4.2.1",
    "Die Waschmaschine zeigt Fehler E18 an, obwohl der Ablauf frei ist.",
    "ok",
    "Hi, I was charged twice for my order #10422 and the refund never arrived. I paid with Google Pay "
    "on the 3rd, the bank statement shows both charges, and support chat closed without an answer.",
]


def test_bfloat16_vectors_stay_within_the_stated_tolerance_of_the_float_model():
    from sarag_assets.core.encoding.embedder import BF16_TOLERANCE, _load, encode_bf16

    model = _load(Embedder().model_name)
    reference = model.encode(BF16_TEXTS, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    vectors = encode_bf16(model, BF16_TEXTS, batch_size=64)
    assert vectors.dtype == np.float32 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(np.abs(vectors - reference).max()) <= BF16_TOLERANCE
    assert float(np.abs(vectors - reference).max()) > 0  # really computed in bfloat16, not the float path
    # the float path is untouched afterwards: autocast ended with the call
    again = model.encode(BF16_TEXTS[:1], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    assert np.allclose(again[0], reference[0], atol=1e-6)


def test_a_bf16_embedder_runs_bfloat16_only_where_the_cpu_has_it():
    from sarag_assets.core.encoding.embedder import BF16_TOLERANCE, native_bf16

    embedder = Embedder(runtime="bf16")
    reference = Embedder(runtime="onnx").encode(BF16_TEXTS)
    if native_bf16():
        assert embedder.runtime == "bf16" and embedder.fallback_reason is None
    else:  # emulated bfloat16 would be slower than the float model: ONNX Runtime instead, and why
        assert embedder.runtime == "onnx" and "bfloat16" in embedder.fallback_reason
    assert float(np.abs(embedder.encode(BF16_TEXTS) - reference).max()) <= BF16_TOLERANCE
