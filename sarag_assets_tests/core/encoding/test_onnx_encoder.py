"""The query side's ONNX Runtime encoder: the same vectors as sentence-transformers in torch, exported once
and kept in the model cache, and a fallback to torch for models it cannot run."""

import json
import os

import numpy as np
import pytest

from sarag_assets.core.encoding import onnx_encoder
from sarag_assets.core.encoding.embedder import (
    DEFAULT_MODEL,
    Embedder,
    _load,
    model_path,
)
from sarag_assets.core.encoding.onnx_encoder import (
    RUN_COST_IN_TOKENS,
    OnnxUnavailable,
    length_groups,
    load,
    supported,
)

TEXTS = [
    "my router keeps rebooting",
    "  leading and trailing spaces  ",
    "The printer shows error E-1234 after the 2.3 firmware update — what fixed it for that model?",
    "Le routeur redémarre sans cesse, 设备无法连接, ルーターが再起動します",
    "'; DROP TABLE conversation_table; -- \"quoted\" {json: 1}",
    "x",
    "",
    "word " * 600,  # beyond the model's 256 tokens: truncated as sentence-transformers truncates
    "a much longer paragraph about a vacuum cleaner that stopped charging " * 6,
]


def _torch_vectors(texts):
    return Embedder(runtime="torch").encode(texts)


@pytest.fixture
def fresh_encoders(monkeypatch):
    """No encoder left over in this process from another test."""
    monkeypatch.setattr(onnx_encoder, "_ENCODERS", {})


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
def test_onnx_vectors_equal_torch_vectors(tmp_path, fresh_encoders):
    encoder = load(model_path(DEFAULT_MODEL), lambda: _load(DEFAULT_MODEL), cache_dir=tmp_path)
    onnx = encoder.encode(TEXTS)
    torch = _torch_vectors(TEXTS)
    assert onnx.shape == torch.shape == (len(TEXTS), 384)
    assert np.abs(onnx - torch).max() < 1e-5
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert np.abs(onnx[0] - onnx[5]).max() > 0.1  # different texts, different vectors


def test_texts_sharing_a_run_get_the_vectors_they_get_alone(tmp_path, fresh_encoders):
    encoder = load(model_path(DEFAULT_MODEL), lambda: _load(DEFAULT_MODEL), cache_dir=tmp_path)
    lengths = [len(encoder.tokenizer.encode(encoder._prepare(t)).ids) for t in TEXTS]
    groups = length_groups(lengths, RUN_COST_IN_TOKENS)
    assert any(len({lengths[i] for i in g}) > 1 for g in groups)  # some run pads a shorter text
    together = encoder.encode(TEXTS)
    alone = np.vstack([encoder.encode([text]) for text in TEXTS])
    assert np.abs(together - alone).max() < 1e-6


def test_both_runtimes_say_alike_whether_the_model_reads_a_text_whole(tmp_path, fresh_encoders):
    encoder = load(model_path(DEFAULT_MODEL), lambda: _load(DEFAULT_MODEL), cache_dir=tmp_path)
    torch = Embedder(runtime="torch")
    cjk = "设备无法连接网络，重启路由器以后还是一样。" * 20  # 420 characters, about one word piece each
    for text in ["my router keeps rebooting", "word " * 200, "word " * 300, cjk, cjk[:100]]:
        assert encoder.fits(text) == torch.fits(text)
    assert encoder.fits("word " * 200) and not encoder.fits("word " * 300)  # 256 pieces with [CLS] and [SEP]
    assert not encoder.fits(cjk) and encoder.fits(cjk[:100])


def test_both_runtimes_say_alike_how_much_of_a_text_the_vocabulary_does_not_hold(tmp_path, fresh_encoders):
    encoder = load(model_path(DEFAULT_MODEL), lambda: _load(DEFAULT_MODEL), cache_dir=tmp_path)
    texts = ["my router keeps rebooting", "Очистил кэш", "ทำแล้วครับ ใช้ได้แล้ว", "设备无法连接", ""] + TEXTS
    shares = encoder.unknown_shares(texts)
    assert shares == Embedder(runtime="torch").unknown_shares(texts)
    hf = _load(DEFAULT_MODEL).tokenizer  # the pieces the torch model itself reads
    ids = hf([t.strip() for t in texts], add_special_tokens=False)["input_ids"]
    assert shares == [sum(i == hf.unk_token_id for i in x) / len(x) if x else 0.0 for x in ids]
    assert shares[:2] == [0.0, 0.0]  # English, and Cyrillic read letter by letter
    assert shares[2] == 1.0 and shares[3] > 0.5  # Thai, and most Han characters: [UNK]
    assert shares[4] == 0.0  # nothing to read, nothing unknown


def test_a_text_shares_a_run_only_while_its_padding_costs_less_than_a_run():
    lengths = [5, 30, 8, 200, 12, 30, 190]
    groups = length_groups(lengths, 20)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert groups == [[3, 6], [1, 5, 4], [2, 0]]  # 200 & 190; 30, 30 & 12; 8 & 5 (8 is 22 shorter than 30)
    assert length_groups(lengths, 0) == [[3], [6], [1], [5], [4], [2], [0]]  # free runs: one text each
    assert length_groups([], 20) == []
    # a bounded run: at most 64 tokens (texts x longest), so 200 and 190 no longer share one
    assert length_groups(lengths, 20, 64) == [[3], [6], [1, 5], [4, 2, 0]]


def test_a_large_batch_is_encoded_in_runs_of_bounded_size(tmp_path, fresh_encoders, monkeypatch):
    from sarag_assets.core.encoding import onnx_encoder

    encoder = load(model_path(DEFAULT_MODEL), lambda: _load(DEFAULT_MODEL), cache_dir=tmp_path)
    monkeypatch.setattr(onnx_encoder, "MAX_RUN_TOKENS", 256)
    runs = []
    real_run = encoder.session.run
    monkeypatch.setattr(encoder, "session", type("Spy", (), {"run": lambda self, out, feed: (
        runs.append(feed["input_ids"].shape), real_run(out, feed))[1]})())
    texts = [f"my router number {i} keeps rebooting every night" for i in range(100)]
    vectors = encoder.encode(texts)
    assert max(n * width for n, width in runs) <= 256
    assert sum(n for n, _ in runs) == 100 and len(runs) > 1
    assert np.abs(vectors[:3] - np.vstack([encoder.encode([t]) for t in texts[:3]])).max() < 1e-6


def test_the_export_is_kept_and_reused_without_torch(tmp_path, fresh_encoders, monkeypatch):
    load(model_path(DEFAULT_MODEL), lambda: _load(DEFAULT_MODEL), cache_dir=tmp_path)
    files = list((tmp_path / "onnx").glob("*.onnx"))
    assert len(files) == 1 and files[0].stat().st_size > 1_000_000
    assert not list((tmp_path / "onnx").glob("*.tmp"))  # written atomically, nothing left behind

    monkeypatch.setattr(onnx_encoder, "_ENCODERS", {})  # as a new process

    def no_torch():
        raise AssertionError("the cached export should be used, not exported again")

    again = load(model_path(DEFAULT_MODEL), no_torch, cache_dir=tmp_path)
    assert np.abs(again.encode(TEXTS[:3]) - _torch_vectors(TEXTS[:3])).max() < 1e-5


def test_a_damaged_export_is_exported_again(tmp_path, fresh_encoders, monkeypatch):
    load(model_path(DEFAULT_MODEL), lambda: _load(DEFAULT_MODEL), cache_dir=tmp_path)
    (cached,) = (tmp_path / "onnx").glob("*.onnx")
    cached.write_bytes(b"not an onnx model")
    monkeypatch.setattr(onnx_encoder, "_ENCODERS", {})
    calls = []

    def loader():
        calls.append(1)
        return _load(DEFAULT_MODEL)

    encoder = load(model_path(DEFAULT_MODEL), loader, cache_dir=tmp_path)
    assert calls == [1]
    assert cached.stat().st_size > 1_000_000
    assert np.abs(encoder.encode(TEXTS[:2]) - _torch_vectors(TEXTS[:2])).max() < 1e-5


def _model_copy(tmp_path, pooling: dict):
    """The packaged model's folder, linked file by file, with another pooling configuration."""
    source = model_path(DEFAULT_MODEL)
    copy = tmp_path / "model-copy"
    for root, _, files in os.walk(source):
        target = copy / os.path.relpath(root, source)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            if not (root.endswith("1_Pooling") and name == "config.json"):
                os.symlink(os.path.join(root, name), target / name)
    (copy / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return copy


def test_a_model_it_cannot_run_falls_back_to_torch_and_says_why(tmp_path, fresh_encoders, monkeypatch):
    cls_pooling = {"word_embedding_dimension": 384, "pooling_mode_cls_token": True,
                   "pooling_mode_mean_tokens": False}
    copy = _model_copy(tmp_path, cls_pooling)
    assert "not mean tokens" in supported(copy)
    with pytest.raises(OnnxUnavailable, match="pooling"):
        load(copy, lambda: _load(str(copy)), cache_dir=tmp_path / "cache")

    monkeypatch.setenv("SARAG_MODEL_CACHE", str(tmp_path / "cache"))
    embedder = Embedder(str(copy), runtime="onnx")
    vectors = embedder.encode(TEXTS[:2])
    assert embedder.runtime == "torch" and "pooling" in embedder.fallback_reason
    assert np.abs(vectors - Embedder(str(copy), runtime="torch").encode(TEXTS[:2])).max() < 1e-6
    assert np.abs(vectors - _torch_vectors(TEXTS[:2])).max() > 1e-3  # CLS pooling really was used
    assert not (tmp_path / "cache").exists()  # nothing exported


def test_supported_reads_the_model_folder(tmp_path):
    assert supported(model_path(DEFAULT_MODEL)) is None
    assert "not a local sentence-transformers model folder" in supported(tmp_path)
    with pytest.raises(ValueError, match="runtime"):
        Embedder(runtime="tensorflow")
