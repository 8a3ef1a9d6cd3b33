"""HTTP latency of `sarag serve` (a benchmark, not a test): warm `POST /api/search`, one request at a time.

    python -m sarag_assets.evaluation.bench.service_latency --home DIR [--queries FILE] [--n-queries 200] [--k 10]

It starts the real service (`sarag serve`, uvicorn) on the home in a child process, waits for
/api/health, sends warm-up questions that are not measured (the first reads the dense vectors), then
times each generated query (the conversations of `queries.jsonl`, found under <home>/generated/ or named
by --queries) from sending the request to reading the whole JSON answer, as a client sees it. Each query
is a new question to the service: its embedding is computed on the request. Reported: p50/p95/p99/mean/max
in ms, the corpus size, and the load average before and after; JSON in <home>/reports/service_latency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

WARMUP = ["my printer jams on every page", "the app crashes at login", "how do I get a refund for a late order",
          "wifi drops every evening", "my card was charged twice"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _summary(ms: list[float]) -> dict:
    import numpy as np

    a = np.asarray(ms)
    return {"n": len(ms), "p50": round(float(np.percentile(a, 50)), 1), "p95": round(float(np.percentile(a, 95)), 1),
            "p99": round(float(np.percentile(a, 99)), 1), "mean": round(float(a.mean()), 1),
            "max": round(float(a.max()), 1)}


def measure(home: Path, queries: Path, n_queries: int, k: int) -> dict:
    import requests

    turns = [json.loads(line)["turns"] for line in queries.read_text().splitlines()][:n_queries]
    port = _port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("SARAG_API_KEY", None)
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "sarag_assets.cli", "serve", "--home", str(home), "--port",
                               str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if server.poll() is not None:
                raise SystemExit(f"sarag serve exited with {server.returncode}")
            try:
                health = requests.get(url + "/api/health", timeout=5)
                if health.status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        ready_s = time.perf_counter() - started
        session = requests.Session()
        for question in WARMUP:
            session.post(url + "/api/search", json={"query": question, "k": k}, timeout=300).raise_for_status()
        load_start = _load()
        times = []
        for query in turns:
            t = time.perf_counter()
            response = session.post(url + "/api/search", json={"query": query, "k": k}, timeout=300)
            response.json()
            times.append((time.perf_counter() - t) * 1000)
            response.raise_for_status()
        return {"home": str(home), "conversations": health.json()["conversations"],
                "published_state": health.json()["published_state"], "k": k, "queries": str(queries),
                "service_ready_s": round(ready_s, 1), "search_ms": _summary(times),
                "load": {"start": load_start, "end": _load()}, "cpus": os.cpu_count()}
    finally:
        server.terminate()
        server.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sarag_assets.evaluation.bench.service_latency",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--home", required=True)
    parser.add_argument("--queries", help="queries.jsonl (default: <home>/generated/*/queries.jsonl)")
    parser.add_argument("--n-queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args(argv)
    home = Path(args.home).resolve()
    queries = Path(args.queries) if args.queries else next(iter(sorted(home.glob("generated/*/queries.jsonl"))), None)
    if queries is None:
        raise SystemExit(f"no queries.jsonl under {home}/generated: name one with --queries")
    result = measure(home, queries, args.n_queries, args.k)
    out = home / "reports" / "service_latency.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
