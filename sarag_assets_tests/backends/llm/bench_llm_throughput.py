"""The LLM backend's throughput against a local OpenAI-compatible server (a benchmark, not a test).

    python -m sarag_assets_tests.backends.llm.bench_llm_throughput --n 1000 --delay 0.3 --concurrency 8
    python -m sarag_assets_tests.backends.llm.bench_llm_throughput --n 1000 --delay 0.3 --concurrency 8 --rate 12

It generates `n` conversations, starts `FakeOpenAIServer` answering every request after `--delay` seconds
(the scripted model of `scripted_model.py`), points the LLM backend at it and materializes every asset
through the real Dagster definitions (`orchestration.runner.land_and_process`). For each structuring and refinement
step it reads the step's duration from the event log and the LLM calls, retries, tokens, cache hits and
concurrency from its metadata, and sets the time against the ideal: calls x delay / concurrency, what the
calls would take if `concurrency` of them were always in flight and nothing else cost time.

With `--rate R` the server answers HTTP 429 (Retry-After 1 s) to any request beyond R per second, so the
report shows the back-off: the lowest concurrency the client fell to, the retries and the time.

Prints a markdown table and writes <home>/reports/llm_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

LLM_STEPS = ("candidate_schemas", "governed_metadata", "validated_rows", "pseudo_documents", "dialogue_graphs")
PRODUCT = re.compile(r"\b[A-Z][a-z]+ [A-Z0-9][\w-]+")  # "Netwave AX1800", "Vantage Backup"
CODE = re.compile(r"\b[A-Z]{1,4}-?\d{2,5}\b")


class RateLimited:
    """Answers 429 (Retry-After 1 s) to requests beyond `rate` per second (a sliding one-second window),
    and passes the others to `inner`."""

    def __init__(self, inner, rate: float):
        self.inner, self.rate = inner, rate
        self.sent: list[float] = []
        self.refused = 0
        self._lock = threading.Lock()

    def __call__(self, request):
        from sarag_assets_tests.backends.llm.fake_openai_server import Behaviour

        now = time.monotonic()
        with self._lock:
            self.sent = [t for t in self.sent if now - t < 1.0]
            if len(self.sent) >= self.rate:
                self.refused += 1
                return Behaviour.rate_limited(retry_after=1)
            self.sent.append(now)
        return self.inner(request)


def measure(n: int, seed: int, delay: float, concurrency: int, rate: float | None, home_dir: str | None) -> dict[str, Any]:
    home_path = Path(home_dir or tempfile.mkdtemp(prefix="sarag-llm-bench-")).resolve()
    home_path.mkdir(parents=True, exist_ok=True)
    dagster_home = home_path / "dagster_home"
    dagster_home.mkdir(parents=True, exist_ok=True)
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    os.environ.update({"SARAG_HOME": str(home_path), "DAGSTER_HOME": str(dagster_home),
                       "SARAG_LLM_MODEL": "scripted-model", "SARAG_LLM_CONCURRENCY": str(concurrency)})
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import dagster as dg

    from sarag_assets.core.ingest.landing import copy_into_inbox
    from sarag_assets.orchestration.runner import land_and_process
    from sarag_assets.evaluation.bench.pipeline_throughput import LoadSampler, step_durations
    from sarag_assets.evaluation.synthetic import write_corpus
    from sarag_assets.settings import Home
    from sarag_assets_tests.backends.llm.fake_openai_server import FakeOpenAIServer
    from sarag_assets_tests.backends.llm.scripted_model import ScriptedModel

    home = Home(home_path).ensure()
    generated = home.root / "generated"
    write_corpus(generated, n=n, seed=seed)
    staged = generated / f"synthetic-n{n}-seed{seed}.jsonl"
    (generated / "corpus.jsonl").replace(staged)
    copy_into_inbox(home, staged)

    model = ScriptedModel(product=PRODUCT, error=CODE)
    model.broken = False
    limited = RateLimited(model, rate) if rate else None
    answer = limited or model
    with FakeOpenAIServer() as server:
        server.set_responder(lambda request: answer(request).after(delay))
        os.environ["SARAG_LLM_BASE_URL"] = server.base_url
        from sarag_assets.definitions import defs

        started_at = datetime.now(timezone.utc)
        with dg.DagsterInstance.get() as instance, LoadSampler() as load:
            wall_started = time.perf_counter()
            outcome = land_and_process(defs, instance, raise_on_error=True)
            wall = time.perf_counter() - wall_started
            steps = step_durations(instance)
            metadata = {step: _metadata(instance, step) for step in LLM_STEPS}
        most_in_flight = server.most_in_flight

    rows = []
    for step in LLM_STEPS:
        meta, seconds = metadata[step], steps[step].seconds if step in steps else 0.0
        calls = meta.get("llm_calls", 0)
        ideal = calls * delay / concurrency
        rows.append({"step": step, "seconds": round(seconds, 1), "llm_calls": calls,
                     "ideal_seconds": round(ideal, 1), "x_ideal": round(seconds / ideal, 2) if ideal else None,
                     **{k: meta.get(f"llm_{k}", 0) for k in ("retries", "cache_hits", "failures", "total_tokens",
                                                             "concurrency_lowest", "concurrency_peak")}})
    calls = sum(r["llm_calls"] for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    ideal = calls * delay / concurrency
    report = {
        "command": f"python -m sarag_assets_tests.backends.llm.bench_llm_throughput --n {n} --seed {seed} "
                   f"--delay {delay:g} --concurrency {concurrency}" + (f" --rate {rate:g}" if rate else ""),
        "date": started_at.isoformat(timespec="seconds"),
        "n": n, "delay_s": delay, "concurrency": concurrency, "rate_per_s": rate,
        "batches": sorted(outcome.batches), "failed": outcome.failed,
        "cpus": os.cpu_count(), "load_average_1m_during_run": load.summary(),
        "wall_seconds": round(wall, 1), "llm_step_seconds": round(seconds, 1), "llm_calls": calls,
        "ideal_seconds": round(ideal, 1), "x_ideal": round(seconds / ideal, 2) if ideal else None,
        "server_most_in_flight": most_in_flight, "server_refused_429": limited.refused if limited else 0,
        "steps": rows,
    }
    home.reports.mkdir(parents=True, exist_ok=True)
    (home.reports / "llm_throughput.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


def _metadata(instance, step: str) -> dict[str, Any]:
    """The step's LLM counters summed over its materializations (one per partition)."""
    import dagster as dg

    totals: dict[str, Any] = {}
    for record in instance.fetch_materializations(dg.AssetKey(step), limit=10_000).records:
        for key, value in record.asset_materialization.metadata.items():
            if not key.startswith("llm_") or not isinstance(value.value, int):
                continue
            if key == "llm_concurrency_lowest":
                totals[key] = min(totals.get(key, value.value), value.value)
            elif key in ("llm_concurrency_peak", "llm_concurrency_limit"):
                totals[key] = max(totals.get(key, 0), value.value)
            else:
                totals[key] = totals.get(key, 0) + value.value
    return totals


def as_markdown(report: dict[str, Any]) -> str:
    lines = [f"`{report['command']}` ({report['date']}, {report['cpus']} CPUs, load {report['load_average_1m_during_run']})", "",
             "| step | seconds | LLM calls | ideal s | x ideal | retries | cache hits | failures | tokens | lowest / peak concurrency |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["steps"]:
        lines.append(f"| {r['step']} | {r['seconds']} | {r['llm_calls']} | {r['ideal_seconds']} | {r['x_ideal']} | "
                     f"{r['retries']} | {r['cache_hits']} | {r['failures']} | {r['total_tokens']} | "
                     f"{r['concurrency_lowest']} / {r['concurrency_peak']} |")
    lines += ["", f"LLM steps: {report['llm_step_seconds']} s for {report['llm_calls']} calls; ideal "
              f"{report['ideal_seconds']} s; {report['x_ideal']} x ideal. Wall time of every asset: "
              f"{report['wall_seconds']} s. Most requests in flight at the server: {report['server_most_in_flight']}; "
              f"answered 429: {report['server_refused_429']}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--delay", type=float, default=0.3, help="seconds the server takes per answer")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rate", type=float, default=None, help="requests per second before the server answers 429")
    parser.add_argument("--home", default=None, help="a fresh folder (default: a new temporary one)")
    args = parser.parse_args(argv)
    report = measure(args.n, args.seed, args.delay, args.concurrency, args.rate, args.home)
    print(as_markdown(report))
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
