"""Which runtime encodes fastest on this machine, measured once and remembered. No Dagster.

torch and ONNX Runtime give the same vectors (to ~1e-7), but which is faster depends on the CPU: ONNX
Runtime on the AVX2 and AVX-512 machines measured here, torch on those with AMX (docs/results.md). So the
`auto` runtime times both on the same texts and takes the faster, separately for the two workloads: the
pipeline's batches (texts per second) and a query's one short text (milliseconds). The answer is kept in
the model cache (`onnx_encoder.model_cache_dir`), named by what it depends on (the CPU, the cores, the
threads, the model, the runtimes' versions and the sample), so a machine measures once and a changed one
measures again.
bfloat16 is no candidate: its vectors are not the same (it stays a setting one chooses).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

CANDIDATES = ("onnx", "torch")
# Word counts of the timed texts: a transformer's cost depends on the number of word pieces, not on the
# words, and the pipeline encodes single turns, windows of turns and whole conversations (cut at 256).
SAMPLE_LENGTHS = (8, 16, 32, 64, 128, 256)
SAMPLE_PER_LENGTH = 12
QUERY_SAMPLES = 15
ROUNDS = 2  # after one untimed round; the runtimes alternate so a drift of the machine's speed hits both
_WORDS = ("the router drops the connection after the firmware update and error E-1234 shows on the "
          "display when I restart it twice from the app settings page").split()

log = logging.getLogger(__name__)


class Encoder(Protocol):
    runtime: str  # the runtime it runs on (another than asked when it fell back)

    def encode(self, texts: Sequence[str]): ...


# (runtime, threads) -> an encoder of the model on that runtime that encodes every text it is given
# (no cache: a cached text would answer a timed round)
MakeEncoder = Callable[[str, "int | None"], Encoder]


@dataclass(frozen=True)
class RuntimeChoice:
    batches: str  # the pipeline's runtime
    queries: str  # the query side's runtime
    texts_per_second: dict[str, float]  # per candidate, over the sample
    query_ms: dict[str, float]  # per candidate, median of one short text
    machine: str
    measured_at: str

    def summary(self) -> str:
        """One readable line: 'torch for batches (torch 134.6, onnx 119.2 texts/s), onnx for queries (...)'."""
        rates = ", ".join(f"{k} {v:.1f}" for k, v in sorted(self.texts_per_second.items(), key=lambda kv: -kv[1]))
        times = ", ".join(f"{k} {v:.1f} ms" for k, v in sorted(self.query_ms.items(), key=lambda kv: kv[1]))
        return f"{self.batches} for batches ({rates} texts/s), {self.queries} for queries ({times})"


def sample_texts() -> list[list[str]]:
    """Texts of each length, a group per length: the pipeline encodes thousands of texts at once, which
    both runtimes run in batches of similar length, so a sample mixing lengths in one small call would
    time torch's padding of short texts to long ones (measured: a fifth of its rate), not its speed."""
    return [[" ".join(_WORDS[(start + k) % len(_WORDS)] for k in range(n)) for start in range(SAMPLE_PER_LENGTH)]
            for n in SAMPLE_LENGTHS]


@functools.cache
def cpu_info() -> tuple[str, tuple[str, ...]]:
    """This CPU's model name and instruction-set flags (Linux's /proc/cpuinfo; elsewhere the platform's
    processor name and no flags)."""
    name, flags = "", ()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name") and not name:
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = tuple(line.split(":", 1)[1].split())
    except OSError:
        pass
    return name or platform.processor(), flags


def _cpu() -> dict[str, str]:
    name, flags = cpu_info()
    return {"cpu": name, "flags": hashlib.sha256(" ".join(flags).encode()).hexdigest()[:12],
            "cores": str(os.cpu_count())}


def machine_key(model_dir: str, threads: int | None, query_threads: int | None) -> str:
    """What the answer depends on, as a short hash: the machine, the model, the runtimes and the sample."""
    from importlib.metadata import version

    key = {**_cpu(), "model": str(Path(model_dir).resolve()), "threads": threads, "query_threads": query_threads,
           "torch": version("torch"), "onnxruntime": version("onnxruntime"),
           "sample": [SAMPLE_LENGTHS, SAMPLE_PER_LENGTH, ROUNDS, QUERY_SAMPLES]}  # another sample: measure again
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]


def _torch_threads(threads: int | None):
    """torch's thread count is process-wide: set it for a measurement and put it back after."""
    import torch

    @contextlib.contextmanager
    def scope():
        before = torch.get_num_threads()
        if threads:
            torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)
    return scope()


def measure(make_encoder: MakeEncoder, threads: int | None, query_threads: int | None) -> RuntimeChoice:
    """Time each candidate on the sample's groups and on single short texts; the faster wins each workload."""
    groups = sample_texts()
    texts = [text for group in groups for text in group]
    # torch's threads are set around each timing (process-wide); ONNX Runtime's belong to its session
    batch = {r: make_encoder(r, threads if r == "onnx" else None) for r in CANDIDATES}
    single = {r: make_encoder(r, query_threads if r == "onnx" else None) for r in CANDIDATES}
    for encoder in (*batch.values(), *single.values()):
        encoder.encode(["load the model before timing"])
    runnable = [r for r in CANDIDATES if batch[r].runtime == r]  # a model ONNX Runtime cannot run is torch's
    best: dict[str, float] = {}
    for round_ in range(ROUNDS + 1):
        for runtime in (runnable if round_ % 2 else runnable[::-1]):
            with _torch_threads(threads):
                started = time.perf_counter()
                for group in groups:
                    batch[runtime].encode(group)
                seconds = time.perf_counter() - started
            if round_:
                best[runtime] = min(best.get(runtime, seconds), seconds)
    query_ms: dict[str, float] = {}
    for runtime in runnable:
        with _torch_threads(query_threads):
            single[runtime].encode([texts[0]])
            times = []
            for i in range(QUERY_SAMPLES):
                started = time.perf_counter()
                single[runtime].encode([texts[i % len(texts)]])
                times.append(time.perf_counter() - started)
        query_ms[runtime] = round(1000 * sorted(times)[len(times) // 2], 3)
    rates = {r: round(len(texts) / s, 1) for r, s in best.items()}
    return RuntimeChoice(batches=max(rates, key=rates.get), queries=min(query_ms, key=query_ms.get),
                         texts_per_second=rates, query_ms=query_ms, machine=", ".join(_cpu().values()),
                         measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def _read(path: Path) -> RuntimeChoice | None:
    try:
        choice = RuntimeChoice(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    if choice.batches not in CANDIDATES or choice.queries not in CANDIDATES:
        return None
    return choice


_CHOSEN: dict[str, RuntimeChoice] = {}


def fastest_runtimes(model_dir: str, threads: int | None, query_threads: int | None,
                     make_encoder: MakeEncoder) -> RuntimeChoice:
    """This machine's faster runtime for batches and for queries of the model at ``model_dir``:
    remembered in the model cache, else measured (about 10 s, once) and kept there. Processes that start
    at once measure one at a time, and the later ones read the first one's answer. A cache that cannot be
    written costs a measurement per process, not an error."""
    from sarag_assets.core.encoding.onnx_encoder import model_cache_dir

    key = machine_key(model_dir, threads, query_threads)
    if key in _CHOSEN:
        return _CHOSEN[key]
    path = model_cache_dir() / "runtime" / f"{key}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_suffix(".lock"), "a")
    except OSError as error:
        log.warning("cannot keep the runtime choice in %s (%s); measuring for this process", path.parent, error)
        lock = None
    with lock or contextlib.nullcontext():
        if lock is not None:
            try:
                import fcntl
            except ImportError:  # not on Windows: there, processes starting at once may each measure
                pass
            else:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        choice = _read(path)
        if choice is None:
            choice = measure(make_encoder, threads, query_threads)
            log.warning("encoder runtime chosen by timing both: %s", choice.summary())
            if lock is not None:
                fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".json.tmp")
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(asdict(choice), out, indent=1)
                os.chmod(tmp, 0o644)
                os.replace(tmp, path)  # readers see the whole answer or none
    _CHOSEN[key] = choice
    return choice
