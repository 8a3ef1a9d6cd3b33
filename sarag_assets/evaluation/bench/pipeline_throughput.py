"""Conversations per second of every asset, through the real Dagster definitions (a benchmark, not a test).

    python -m sarag_assets.evaluation.bench.pipeline_throughput --n 10000 --seed 11 [--home DIR] [--batch-size 2500]
    sarag bench-pipeline --n 10000 --seed 11

It generates `n` conversations (`evaluation.synthetic.write_corpus`), lands them in a fresh home (SARAG_HOME)
with a Dagster instance under it (DAGSTER_HOME = <home>/dagster_home), and materializes every asset with
`orchestration.runner.land_and_process`, as `sarag demo` does. SARAG_BATCH_SIZE (`--batch-size`) cuts the corpus into
partitions. Then it reads each step's duration from the Dagster event log (start to end of the step, so
the asset's checks are included; summed over partitions and runs) and divides the conversations the
asset covered (`n`: every asset sees every conversation once) by it. Against each step's time it sets its
inherent work: the texts the step ran through the encoder and the seconds that took (the steps'
`encoder_texts` / `encoder_seconds` metadata; the rest is reading, computing and writing), and the highest
resident memory sampled while the step ran (every step runs in this process). Next to `lancedb_indices` it puts the
embedding model's own speed on the same texts the index step encoded: the texts now in the LanceDB
tables, encoded again per batch and table, in the order the asset encodes them, with a fresh `Embedder`
without a cache and the resource's batch size (model load excluded).

Prints a markdown table and writes <home>/reports/pipeline_throughput.json. The 1-minute load average is
sampled every second during the run and reported, since on a shared machine other processes change the result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sarag_assets.core.indices.store import CONVERSATION_TEXTS, TABLES

# the tables whose texts lancedb_indices encodes (a conversation text's vector is its passages' mean)
LANCEDB_TABLES = tuple(t for t in TABLES if t != CONVERSATION_TEXTS)

# Steps whose name is not the asset's: the ingest step materializes two assets.
STEP_ASSETS = {"ingest_batch": "raw_dialogues + quarantine"}


def step_order(defs) -> list[str]:
    """The steps (ops, as the event log names them) in the order the runner runs their assets."""
    import dagster as dg

    from sarag_assets.orchestration.pipeline import Pipeline

    return list(dict.fromkeys(defs.resolve_assets_def(dg.AssetKey.from_user_string(asset)).node_def.name
                              for step in Pipeline(defs).steps for asset in step.assets))


def resident_mb() -> float | None:
    """This process's resident memory now (Linux), in MB."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


class LoadSampler:
    """The 1-minute load average and this process's resident memory every `interval_s` seconds, in a
    daemon thread (the steps run in this process: the memory samples say which step held how much)."""

    def __init__(self, interval_s: float = 1.0):
        self.interval_s = interval_s
        self.samples: list[float] = []
        self.memory: list[tuple[float, float]] = []  # (unix time, resident MB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            rss = resident_mb()
            if rss is not None:
                self.memory.append((time.time(), rss))
            if self._stop.wait(self.interval_s):
                return

    def peak_mb(self, intervals: list[tuple[float, float]]) -> float | None:
        """The highest resident memory sampled within any of the (start, end) unix-time intervals."""
        inside = [mb for t, mb in self.memory if any(start <= t <= end for start, end in intervals)]
        return round(max(inside)) if inside else None

    def __enter__(self) -> "LoadSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float]:
        s = self.samples or [os.getloadavg()[0]]
        return {"mean": round(sum(s) / len(s), 2), "max": round(max(s), 2), "min": round(min(s), 2),
                "samples": len(s)}


@dataclass
class StepTotals:
    step: str
    seconds: float = 0.0
    executions: int = 0
    partitions: set[str] = field(default_factory=set)
    intervals: list[tuple[float, float]] = field(default_factory=list)  # (start, end) unix times


def step_durations(instance) -> dict[str, StepTotals]:
    """Per step key: summed duration of its successful executions over every run of the instance."""
    totals: dict[str, StepTotals] = {}
    for run in instance.get_runs():
        partition = run.tags.get("dagster/partition")
        for stats in instance.get_run_step_stats(run.run_id):
            if stats.start_time is None or stats.end_time is None or stats.status is None:
                continue
            if stats.status.value != "SUCCESS":
                continue
            entry = totals.setdefault(stats.step_key, StepTotals(stats.step_key))
            entry.seconds += stats.end_time - stats.start_time
            entry.executions += 1
            entry.intervals.append((stats.start_time, stats.end_time))
            if partition:
                entry.partitions.add(partition)
    return totals


def run_durations(instance) -> float:
    total = 0.0
    for record in instance.get_run_records():
        if record.start_time and record.end_time:
            total += record.end_time - record.start_time
    return total


def encoder_work(instance, asset: str, since: float = 0.0) -> dict[str, float]:
    """Texts the asset's materializations (after unix time `since`) ran through the encoder and the seconds
    that took (their `encoder_texts` / `encoder_seconds` metadata): the step's inherent model work."""
    import dagster as dg

    texts, seconds = 0, 0.0
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=10_000).records
    for record in records:
        if record.timestamp < since:
            continue
        metadata = record.asset_materialization.metadata
        texts += int(metadata["encoder_texts"].value) if "encoder_texts" in metadata else 0
        seconds += float(metadata["encoder_seconds"].value) if "encoder_seconds" in metadata else 0.0
    return {"texts": texts, "seconds": round(seconds, 2)}


def index_texts(lancedb_uri: str) -> list[tuple[str, str, list[str]]]:
    """(batch, table, texts) as the index step encodes them: per batch, per table, in row order."""
    import lancedb

    db = lancedb.connect(lancedb_uri)
    by_batch: dict[str, dict[str, list[str]]] = {}
    for name in LANCEDB_TABLES:
        try:
            data = db.open_table(name).search().select(["batch_key", "id", "text"]).limit(None).to_arrow()
        except ValueError:
            continue
        data = data.sort_by([("batch_key", "ascending"), ("id", "ascending")])
        for batch, text in zip(data.column("batch_key").to_pylist(), data.column("text").to_pylist()):
            by_batch.setdefault(batch, {}).setdefault(name, []).append(text)
    return [(b, t, by_batch[b][t]) for b in sorted(by_batch) for t in LANCEDB_TABLES if t in by_batch[b]]


def spread_sample(groups: list[tuple[str, str, list[str]]], size: int) -> list[tuple[str, str, list[str]]]:
    """About `size` of the texts, every k-th over all groups in order, each kept in its group: the
    model's rate on them stands for its rate on all, since every table and every length is in it (the
    first `size` texts were one table's whole conversations, longer than the average text)."""
    total = sum(len(texts) for _, _, texts in groups)
    if size <= 0 or size >= total:
        return groups
    stride = total / size
    picks = {int(i * stride) for i in range(size)}
    kept, start = [], 0
    for batch, table, texts in groups:
        chosen = [text for offset, text in enumerate(texts) if start + offset in picks]
        if chosen:
            kept.append((batch, table, chosen))
        start += len(texts)
    return kept


def embedding_speed(groups: list[tuple[str, str, list[str]]], batch_size: int, runtime: str = "torch") -> dict[str, Any]:
    """The model alone on the groups' texts, in one call: the step encodes each partition's table in one
    call of hundreds to thousands of texts, and a sample split the same way gives calls of a few dozen,
    where the cost per call would understate the model's rate."""
    from sarag_assets.core.encoding.embedder import Embedder

    embedder = Embedder(batch_size=batch_size, store=None, runtime=runtime)
    _ = embedder.dimension  # load the model before timing
    texts = [text for _, _, chunk in groups for text in chunk]
    started = time.perf_counter()
    embedder.encode(texts)
    seconds = time.perf_counter() - started
    return {
        "model": embedder.model_name,
        "runtime": embedder.runtime,
        "batch_size": batch_size,
        "texts": len(texts),
        "texts_encoded": embedder.encoded,  # distinct texts (the embedder encodes a repeated text once)
        "seconds": round(seconds, 2),
        "texts_per_second": round(embedder.encoded / seconds, 1) if seconds else None,
    }


def _fresh_home(path: str | None) -> Path:
    if path is None:
        return Path(tempfile.mkdtemp(prefix="sarag-bench-"))
    home = Path(path)
    if home.exists() and any(home.iterdir()):
        raise SystemExit(f"--home {home} is not empty; the benchmark needs a fresh home")
    home.mkdir(parents=True, exist_ok=True)
    return home


def measure(n: int, seed: int, home_dir: str | None = None, batch_size: int = 2500, increment: int = 0,
            encoder_sample: int = 0) -> dict[str, Any]:
    home_path = _fresh_home(home_dir).resolve()
    dagster_home = home_path / "dagster_home"
    dagster_home.mkdir(parents=True, exist_ok=True)
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    os.environ["SARAG_HOME"] = str(home_path)
    os.environ["SARAG_BATCH_SIZE"] = str(batch_size)
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import dagster as dg

    from sarag_assets.core.ingest.landing import copy_into_inbox
    from sarag_assets.defs.resources import EmbedderResource
    from sarag_assets.orchestration.runner import land_and_process
    from sarag_assets.evaluation.synthetic import write_corpus
    from sarag_assets.settings import Home, Settings

    home = Home(home_path).ensure()
    generated = home.root / "generated"
    write_corpus(generated, n=n + increment, seed=seed)
    staged = generated / f"synthetic-n{n}-seed{seed}.jsonl"
    later = generated / f"synthetic-n{n}-seed{seed}-next{increment}.jsonl"
    with open(generated / "corpus.jsonl", encoding="utf-8") as corpus, open(staged, "w", encoding="utf-8") as first, \
            open(later, "w", encoding="utf-8") as rest:
        for i, line in enumerate(corpus):
            (first if i < n else rest).write(line)  # the last `increment` conversations land afterwards
    (generated / "corpus.jsonl").unlink()
    copy_into_inbox(home, staged)

    from sarag_assets.evaluation.definitions import process_definitions
    defs = process_definitions()

    started_at = datetime.now(timezone.utc)
    load_before = os.getloadavg()
    with dg.DagsterInstance.get() as instance, LoadSampler() as load:
        wall_started = time.perf_counter()
        outcome = land_and_process(defs, instance, raise_on_error=True)
        wall = time.perf_counter() - wall_started
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the build's high-water mark
        steps = step_durations(instance)
        runs_seconds = run_durations(instance)
        work = {key: encoder_work(instance, key) for key in steps if key not in STEP_ASSETS}
        incremental = None
        if increment:
            copy_into_inbox(home, later)
            again_started, again_at = time.perf_counter(), time.time()
            again = land_and_process(defs, instance, raise_on_error=True)
            again_wall = time.perf_counter() - again_started
            after = step_durations(instance)
            incremental = {
                "conversations": increment, "wall_seconds": round(again_wall, 1),
                "share_of_full_build": round(again_wall / wall, 3), "batches": sorted(again.batches),
                "failed": again.failed,
                "steps": {k: round(after[k].seconds - (steps[k].seconds if k in steps else 0.0), 1)
                          for k in after if after[k].seconds - (steps[k].seconds if k in steps else 0.0) > 0.05},
                "encoder_texts": sum(encoder_work(instance, k, again_at)["texts"] for k in after
                                     if k not in STEP_ASSETS),
            }
        groups = index_texts(str(home.lancedb))
        if encoder_sample:
            groups = spread_sample(groups, encoder_sample)
        embedding = embedding_speed(groups, EmbedderResource().batch_size, Settings.load().encoder_runtime)
        # the other runtime on the same texts in the same run: what `auto` chose against
        other = embedding_speed(groups, EmbedderResource().batch_size,
                                "torch" if embedding["runtime"] == "onnx" else "onnx")
    load_after = os.getloadavg()

    assets = []
    order = step_order(defs)
    for key in sorted(steps, key=lambda k: (order.index(k) if k in order else len(order), k)):
        s = steps[key]
        encoding = work.get(key, {"texts": 0, "seconds": 0.0})
        assets.append({
            "step": key,
            "assets": STEP_ASSETS.get(key, key),
            "executions": s.executions,
            "partitions": len(s.partitions),
            "seconds": round(s.seconds, 2),
            "conversations_per_second": round(n / s.seconds, 1) if s.seconds else None,
            # the inherent work: texts through the encoder and the seconds in it; the rest is reading,
            # computing and writing
            "encoder_texts": encoding["texts"],
            "encoder_seconds": encoding["seconds"],
            "encoder_share": round(encoding["seconds"] / s.seconds, 3) if s.seconds else None,
            "peak_rss_mb": load.peak_mb(s.intervals),
        })
    index_seconds = steps["lancedb_indices"].seconds if "lancedb_indices" in steps else None
    encoded_by_index = work.get("lancedb_indices", {"texts": 0})["texts"]
    embedding["conversations_per_second"] = (
        round(n / embedding["seconds"], 1) if embedding["seconds"] and not encoder_sample else None
    )
    embedding["lancedb_indices_texts_encoded"] = encoded_by_index
    embedding["other_runtime"] = other
    # the index step's encoding rate against the model's own (texts through the model per second)
    embedding["share_of_lancedb_indices_step"] = (
        round(encoded_by_index / index_seconds / embedding["texts_per_second"], 3)
        if index_seconds and embedding["texts_per_second"] else None
    )
    report = {
        "command": f"python -m sarag_assets.evaluation.bench.pipeline_throughput --n {n} --seed {seed} --batch-size {batch_size}"
                   + (f" --increment {increment}" if increment else "")
                   + (f" --encoder-sample {encoder_sample}" if encoder_sample else ""),
        "date": started_at.isoformat(timespec="seconds"),
        "n": n,
        "seed": seed,
        "batch_size": batch_size,
        "home": str(home.root),
        "batches": sorted(outcome.batches),
        "failed": outcome.failed,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_1m_during_run": load.summary(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after],
        },
        "wall_seconds": round(wall, 1),
        "peak_rss_mb": round(peak_rss_mb),
        "incremental": incremental,
        "run_seconds": round(runs_seconds, 1),
        "step_seconds": round(sum(s.seconds for s in steps.values()), 1),
        "assets": assets,
        "embedding_model": embedding,
    }
    home.reports.mkdir(parents=True, exist_ok=True)
    (home.reports / "pipeline_throughput.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


def as_markdown(report: dict[str, Any]) -> str:
    n = report["n"]
    lines = [
        f"{n:,} generated conversations (seed {report['seed']}), {len(report['batches'])} partitions of at most "
        f"{report['batch_size']:,}; step time from the Dagster event log, summed over partitions.",
        "",
        "| asset (step) | partitions | seconds | conversations / s | texts encoded | seconds in the encoder "
        "| seconds besides | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for a in report["assets"]:
        label = a["assets"] if a["assets"] == a["step"] else f"{a['assets']} (`{a['step']}`)"
        parts = a["partitions"] or "—"
        encoded = f"{a['encoder_texts']:,} | {a['encoder_seconds']:,.1f} ({a['encoder_share']:.0%})" \
            if a["encoder_texts"] else "— | —"
        lines.append(f"| {label} | {parts} | {a['seconds']:,.1f} | {a['conversations_per_second']:,} | {encoded} "
                     f"| {a['seconds'] - a['encoder_seconds']:,.1f} | {a['peak_rss_mb'] or '—'} |")
    e = report["embedding_model"]
    lines.append(
        f"| *embedding model alone, {e['runtime']}* ({e['texts_encoded']:,} distinct texts of the LanceDB tables, "
        f"batch {e['batch_size']}) | — | {e['seconds']:,.1f} | {e['conversations_per_second'] or '—'} "
        f"({e['texts_per_second']:,} texts / s) | | | | |"
    )
    o = e["other_runtime"]
    lines.append(f"| *the same texts on {o['runtime']}* | — | {o['seconds']:,.1f} | — ({o['texts_per_second']:,} "
                 "texts / s) | | | | |")
    load = report["machine"]["load_average_1m_during_run"]
    lines += [
        "",
        f"Wall time {report['wall_seconds']:,.0f} s (runs {report['run_seconds']:,.0f} s, steps "
        f"{report['step_seconds']:,.0f} s); {report['machine']['cpus']} CPUs, 1-minute load average during the "
        f"run {load['mean']} on average (max {load['max']}). `lancedb_indices` runs at "
        f"{e['share_of_lancedb_indices_step']:.0%} of the model's own rate on its texts ({e['runtime']}). "
        f"Peak resident memory of the build (this process): {report['peak_rss_mb']:,} MB.",
    ]
    inc = report.get("incremental")
    if inc:
        lines += ["", f"Then {inc['conversations']:,} more conversations landed into the built home: {inc['wall_seconds']:,} s "
                      f"of wall time, {inc['share_of_full_build']:.1%} of the full build. Steps (s): "
                      + ", ".join(f"{k} {v}" for k, v in sorted(inc["steps"].items(), key=lambda kv: -kv[1]))
                      + f"; {inc['encoder_texts']:,} texts through the encoder."]
    return "\n".join(lines)


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="python -m sarag_assets.evaluation.bench.pipeline_throughput",
                                               description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="conversations to generate")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--home", help="a fresh (missing or empty) directory for the run; default: a new temp dir")
    parser.add_argument("--batch-size", type=int, default=2500, help="SARAG_BATCH_SIZE: conversations per partition")
    parser.add_argument("--increment", type=int, default=0,
                        help="then land this many more conversations into the built home and time that")
    parser.add_argument("--encoder-sample", type=int, default=0,
                        help="time the model alone on this many of the index's texts, spread over them (default: all)")
    return parser


def run(args: argparse.Namespace) -> int:
    report = measure(args.n, args.seed, args.home, args.batch_size, args.increment, args.encoder_sample)
    print(as_markdown(report))
    print(f"\nreport: {Path(report['home']) / 'reports' / 'pipeline_throughput.json'}")
    return 1 if report["failed"] else 0


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
