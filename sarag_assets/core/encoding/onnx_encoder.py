"""A sentence-transformers model run by ONNX Runtime, for encoding a few short texts at a time (queries).
No Dagster.

Why: a search embeds one to a few short turns. Through sentence-transformers most of that time is torch's
per-operator overhead and padding a batch's turns to the longest; ONNX Runtime, with its graph fusions and
turns of similar length run together (`length_groups`: a short run costs mostly reading the model's
weights), gives the same vectors faster, and without torch the query side also starts faster. The
measurements are in docs/results.md (Latency).

Only a model that is exactly Transformer -> mean pooling -> Normalize (the default all-MiniLM-L6-v2 is)
is exported; anything else stays in torch (`supported` says why). The export runs once per model (torch
and onnx, ~3 s with loading the model), is checked against torch on probe texts, and is kept in the model cache
(`SARAG_MODEL_CACHE`, default `$XDG_CACHE_HOME/sarag` or `~/.cache/sarag`), named by the model's files
and the exporter's versions, so a changed model or torch exports again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Texts the export is checked on: a word, a sentence, non-Latin script, and one truncated at the model's length.
PROBES = ("ok", "The printer shows error E-1234 after the 2.3 firmware update, what fixed it?",
          "Le routeur redémarre sans cesse — 设备无法连接", "word " * 400)
MAX_PROBE_DIFFERENCE = 1e-4
# A run's fixed cost in tokens' worth of time: for all-MiniLM-L6-v2 on one thread here, a run took ~2.5 ms
# plus ~0.13 ms per token of (texts x padded length), so ~20 tokens.
RUN_COST_IN_TOKENS = 20
# At most this many tokens (texts x padded length) in one run: a run's attention scores take
# texts x 12 heads x length^2 floats, so a run of 1,000 texts of 256 tokens would need 3 GB, and ONNX
# Runtime's arena keeps its largest run's memory for the process's life. 8,192 is 32 texts of 256 tokens
# (about 100 MB of scores); larger runs are no faster on a CPU.
MAX_RUN_TOKENS = 8_192


class OnnxUnavailable(RuntimeError):
    """The model cannot be run by ONNX Runtime here (the reason says why); use torch."""


def model_cache_dir() -> Path:
    configured = os.environ.get("SARAG_MODEL_CACHE", "").strip()
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sarag"


def _read_json(path: Path) -> dict | list:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def supported(model_dir: str | os.PathLike) -> str | None:
    """None when the sentence-transformers model at ``model_dir`` is Transformer -> mean pooling ->
    Normalize with a fast tokenizer file; else the reason it is not."""
    root = Path(model_dir)
    if not (root / "modules.json").is_file():
        return f"{root} is not a local sentence-transformers model folder"
    modules = _read_json(root / "modules.json")
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds != ["Transformer", "Pooling", "Normalize"]:
        return f"modules are {kinds}, not Transformer, Pooling, Normalize"
    if modules[0].get("path", "") not in ("", "."):
        return "the transformer is not at the model's root"
    pooling = _read_json(root / modules[1]["path"] / "config.json")
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
    if modes != {"pooling_mode_mean_tokens"}:
        return f"pooling is {sorted(modes)}, not mean tokens"
    if not pooling.get("include_prompt", True):
        return "pooling excludes the prompt"
    if not (root / "tokenizer.json").is_file():
        return "no tokenizer.json (fast tokenizer) in the model folder"
    return None


def _fingerprint(root: Path) -> str:
    """Names, sizes and modification times of the model's files, and the exporter's versions."""
    from importlib.metadata import (
        version,  # not the packages themselves: importing torch takes seconds
    )

    files = sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
                   for p in root.rglob("*") if p.is_file())
    key = json.dumps({"model": str(root.resolve()), "files": files, "torch": version("torch"),
                      "transformers": version("transformers"), "onnxruntime": version("onnxruntime"),
                      "opset": OPSET})
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def export(model, out_file: Path) -> None:
    """Write the sentence-transformers ``model``'s transformer (token embeddings out) as ONNX, atomically."""
    import torch

    transformer = model[0].auto_model.eval()

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    sample = model.tokenizer(["a sample sentence to trace"], return_tensors="pt")
    missing = [name for name in INPUTS if name not in sample]
    if missing:
        raise OnnxUnavailable(f"the tokenizer gives no {missing}")
    out_file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out_file.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on Python control flow; the probes check the result
            torch.onnx.export(
                TokenEmbeddings(transformer), tuple(sample[name] for name in INPUTS), tmp, dynamo=False,
                input_names=list(INPUTS), output_names=["token_embeddings"], opset_version=OPSET,
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "token_embeddings")})
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would keep the cache to one user
        os.replace(tmp, out_file)  # readers see the whole file or none
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class OnnxSentenceEncoder:
    """``encode(texts)``: L2-normalized mean-pooled token embeddings, float32. Texts of similar length
    share a run (padded, the padding masked out of attention and pooling): a run of a few tokens costs
    mostly the reading of the model's weights, so a query's turns in one run cost little more than the
    longest alone. The vectors are those of one text per run (the tests check)."""

    def __init__(self, onnx_file: str | os.PathLike, model_dir: str | os.PathLike, *, threads: int = 1):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        root = Path(model_dir)
        config = _read_json(root / "sentence_bert_config.json") if (root / "sentence_bert_config.json").is_file() else {}
        self.max_seq_length = int(config.get("max_seq_length") or 512)
        self.lower_case = bool(config.get("do_lower_case", False))
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tokenizer.no_padding()  # the file pads to 128; `encode` pads a run to its longest text
        self.tokenizer.enable_truncation(max_length=self.max_seq_length)  # as sentence-transformers truncates
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(int(threads), 0)  # 0: ONNX Runtime's default
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self.dimension = int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        encodings = [self.tokenizer.encode(self._prepare(text)) for text in texts]
        for group in length_groups([len(e.ids) for e in encodings], RUN_COST_IN_TOKENS, MAX_RUN_TOKENS):
            rows = [encodings[i] for i in group]
            width = max(len(e.ids) for e in rows)
            feed = {name: np.zeros((len(rows), width), dtype=np.int64) for name in INPUTS}
            for r, encoding in enumerate(rows):
                n = len(encoding.ids)
                feed["input_ids"][r, :n] = encoding.ids
                feed["attention_mask"][r, :n] = encoding.attention_mask
                feed["token_type_ids"][r, :n] = encoding.type_ids
            tokens = self.session.run(None, feed)[0]  # (texts, tokens, dimension)
            for r, i in enumerate(group):
                vector = tokens[r, :len(rows[r].ids)].mean(axis=0, dtype=np.float64)  # padding left out
                out[i] = vector / max(np.linalg.norm(vector), 1e-12)
        return out

    def fits(self, text: str) -> bool:
        """Whether ``text`` is read whole (nothing cut at the model's length)."""
        return not self.tokenizer.encode(self._prepare(text)).overflowing

    def unknown_shares(self, texts: Sequence[str]) -> list[float]:
        """Per text, the share of its word pieces (the special ones left out) the vocabulary does not hold."""
        return unknown_shares(self.tokenizer, [self._prepare(t) for t in texts])

    def _prepare(self, text: str) -> str:
        text = text.strip()  # sentence-transformers strips before tokenizing
        return text.lower() if self.lower_case else text


def unknown_shares(tokenizer, texts: Sequence[str]) -> list[float]:
    """Per text, the share of its word pieces (``tokenizer``'s, the special ones left out) that are its
    unknown piece; 0 for a text with none."""
    unknown = tokenizer.token_to_id(getattr(tokenizer.model, "unk_token", None) or "[UNK]")
    out = []
    for text in texts:
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        out.append(sum(i == unknown for i in ids) / len(ids) if ids else 0.0)
    return out


def word_pieces(model_dir: str | os.PathLike):
    """The model's own tokenizer (its folder's tokenizer.json) without the model, or None without one."""
    from tokenizers import Tokenizer

    path = Path(model_dir) / "tokenizer.json"
    if not path.is_file():
        return None
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()  # the file pads to 128: the padding would count as pieces
    tokenizer.no_truncation()
    return tokenizer


def length_groups(lengths: Sequence[int], run_cost: int, max_tokens: int = 0) -> list[list[int]]:
    """The texts (indices) to encode in one run each: a run costs about ``run_cost`` tokens' worth of time
    whatever its size, and every text in it is padded to its longest, so a text joins the run of the
    longer ones while the padding it adds costs less than a run of its own, and while the run stays
    within ``max_tokens`` (texts x longest; 0: no bound). Longest first."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    groups: list[list[int]] = []
    for i in order:
        if (groups and lengths[groups[-1][0]] - lengths[i] < run_cost
                and (not max_tokens or (len(groups[-1]) + 1) * lengths[groups[-1][0]] <= max_tokens)):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


_ENCODERS: dict[str, OnnxSentenceEncoder] = {}
_ENCODERS_LOCK = threading.Lock()


def load(model_dir: str | os.PathLike, torch_model_loader, *, threads: int = 1,
         cache_dir: Path | None = None) -> OnnxSentenceEncoder:
    """The ONNX encoder of the model at ``model_dir``, exported on first use (``torch_model_loader()``
    gives the sentence-transformers model then) and checked against it; one per process and model.
    Raises OnnxUnavailable with the reason when the model or this installation cannot."""
    reason = supported(model_dir)
    if reason:
        raise OnnxUnavailable(reason)
    try:
        import onnxruntime  # noqa: F401
    except ImportError as error:
        raise OnnxUnavailable(f"onnxruntime is not installed ({error})") from error
    root = Path(model_dir)
    with _ENCODERS_LOCK:
        key = f"{root.resolve()}|{threads}"
        if key in _ENCODERS:
            return _ENCODERS[key]
        onnx_file = (cache_dir or model_cache_dir()) / "onnx" / f"{root.name}-{_fingerprint(root)}.onnx"
        encoder = None
        if onnx_file.is_file():
            try:
                encoder = OnnxSentenceEncoder(onnx_file, root, threads=threads)
            except Exception:  # a damaged cache file: export again
                onnx_file.unlink(missing_ok=True)
        if encoder is None:
            model = torch_model_loader()
            try:
                export(model, onnx_file)
                encoder = OnnxSentenceEncoder(onnx_file, root, threads=threads)
            except OnnxUnavailable:
                raise
            except Exception as error:  # an exporter or runtime that cannot handle this model
                onnx_file.unlink(missing_ok=True)
                raise OnnxUnavailable(f"export failed: {type(error).__name__}: {error}") from error
            try:
                check_against(encoder, model)
            except OnnxUnavailable:
                onnx_file.unlink(missing_ok=True)
                raise
        _ENCODERS[key] = encoder
        return encoder


def check_against(encoder: OnnxSentenceEncoder, model) -> None:
    """Refuse (and delete) an export whose vectors differ from the torch model's on the probe texts."""
    expected = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False, batch_size=1)
    difference = float(np.abs(encoder.encode(list(PROBES)) - expected).max())
    if difference > MAX_PROBE_DIFFERENCE:
        raise OnnxUnavailable(f"the exported model's vectors differ from torch's by {difference:.2g}")
