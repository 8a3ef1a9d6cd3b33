"""Search latency of the query module (a benchmark, not a test): warm, in process, no LLM; and the CLI's cold start.

    python -m sarag_assets.evaluation.bench.search_latency --home DIR [--queries FILE] [--n-queries 200] [--k 10]
    python -m sarag_assets.evaluation.bench.search_latency --home OUT --replicate-from BASE --replicas 10   # build, then measure

Measuring: it opens `sarag_assets.query.engine.Sarag(home)` (timed), warms up with a few queries that are
not in the measured set (the first one reads the dense vectors and builds the cluster route's index,
reported apart), then times `search(turns, k)` for each generated query (the `queries.jsonl` that
`evaluation.synthetic.write_corpus` writes next to the corpus; found under <home>/generated/ or named by
--queries). The query embedder's in-memory cache is emptied before each timed query, so every query
pays for its embedding (a service sees new questions). Reported: p50/p95/p99/mean/max in ms, and the
load average before and after.

Where the time goes, measured without changing the engine:
- `retrieve` with `SearchSettings.only(channel)` for each channel (understanding and the query embedding
  included, the embedding served from the cache, so the channel shows);
- the stages alone on the same queries: query understanding, the query embedding (cache emptied), each
  channel's own call with the vector precomputed (`Sarag.channels`: `search_dense`, `search_text`, `route`,
  `entity_shares`),
  run one after the other (the engine runs them in a thread pool: on two cores they compete);
- the same `search` with the query encoded by sentence-transformers in torch instead of the engine's
  ONNX Runtime export (`SARAG_QUERY_RUNTIME`), on the same number of threads.

Cold start: `python -m sarag_assets.cli search --home DIR "<query>"` in a fresh process (several runs,
median), and in one fresh process the split: imports, `Sarag(home)`, first search, second search.

Writes <home>/reports/search_latency.json and prints a markdown table.

`--replicate-from BASE --replicas R` first builds the measured home from a home the real pipeline
materialized (`build_replicated_home`): every conversation of BASE appears R times (copy 0 as it is,
copies 1..R-1 with the dialogue id and batch key suffixed `~r<i>`) in the DuckDB tables the query side
reads (raw_dialogues, validated_rows, pseudo_documents, graph_nodes, graph_edges; governance_state and
metadata_versions copied once), and in every LanceDB table, written through `IndexStore.replace_batch`
and indexed by `IndexStore.ensure_indices` (IVF_PQ sized for the new row count, native FTS), the
vectors of copies 1..R-1 moved by Gaussian noise of expected cosine `--noise-cos` (0.9) to the original
and re-normalized (so the ANN index and KMeans do not see exact duplicates); the cluster model is then
fitted on all rows by `core.indices.clusters.fit_clusters` with those row vectors (as the feature_clusters asset
does on a first fit) and stored in cluster_models / cluster_assignments / clusters. The texts of a copy
are its original's: full-text posting lists grow R times, as R times more conversations of the same
generator would make them, but BM25 scores of copies tie. It is a latency fixture, not a quality one.

A home of N distinct generated conversations is built by the real assets, through the runner of `sarag
materialize`: `python -m sarag_assets.evaluation.bench.pipeline_throughput --n N --seed S --home DIR`; then
measure it here with `--home DIR --queries DIR/generated/queries.jsonl`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

WARMUP_QUERIES = (
    "printer shows an error after the firmware update",
    "my refund has not arrived yet, what can I do?",
    "app crashes on startup since version 2",
    "internet speed drops every evening",
    "cannot log in to my account after password reset",
)


# ---- queries -------------------------------------------------------------------------------------------

def find_queries(home: Path) -> Path | None:
    """The generated queries of a home: <home>/generated/*/queries.jsonl, or the one a replicated home
    recorded from its base."""
    manifest = home / "reports" / "replicated_home.json"
    if manifest.exists():
        source = json.loads(manifest.read_text(encoding="utf-8")).get("queries")
        if source and Path(source).exists():
            return Path(source)
    found = sorted((home / "generated").glob("*/queries.jsonl")) if (home / "generated").is_dir() else []
    return found[0] if found else None


def load_queries(path: Path, n: int) -> list[list[dict[str, str]]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append([{"speaker": t["speaker"], "text": t["text"]} for t in json.loads(line)["turns"]])
    if not out:
        raise SystemExit(f"no queries in {path}")
    return [out[i % len(out)] for i in range(n)]


# ---- statistics ----------------------------------------------------------------------------------------

def summary(ms: list[float]) -> dict[str, float]:
    s = sorted(ms)

    def pct(p: float) -> float:  # nearest rank
        return s[min(len(s) - 1, max(0, int(round(p / 100 * len(s) + 0.5)) - 1))]

    return {"n": len(s), "p50": round(statistics.median(s), 2), "p95": round(pct(95), 2), "p99": round(pct(99), 2),
            "mean": round(statistics.fmean(s), 2), "max": round(s[-1], 2), "min": round(s[0], 2)}


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _clear_embedding_cache(engine) -> None:
    embedder = engine.embedder
    if hasattr(embedder, "_memory"):
        with embedder._lock:
            embedder._memory.clear()


def _timed(fn, *args, **kwargs) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return (time.perf_counter() - t) * 1000, out


# ---- in-process measurements ---------------------------------------------------------------------------

def time_search(engine, queries, k: int, *, fresh_embeddings: bool = True) -> list[float]:
    times = []
    for turns in queries:
        if fresh_embeddings:
            _clear_embedding_cache(engine)
        else:  # this query's embedding computed (untimed) and kept in the engine's cache
            engine.embed(engine.understand(turns))
        ms, _ = _timed(engine.search, turns, k)
        times.append(ms)
    return times


def channel_timings(engine, queries, k: int) -> dict[str, dict]:
    """`retrieve` with one channel on (embedding cached: understanding + that channel + fusion)."""
    from sarag_assets.query.engine import CHANNELS, SearchSettings

    out = {}
    for channel in CHANNELS:
        settings = SearchSettings.only(channel)
        engine.retrieve(queries[0], k, settings=settings)
        out[channel] = summary([_timed(engine.retrieve, q, k, settings=settings)[0] for q in queries])
    return out


def stage_timings(engine, queries, k: int) -> dict[str, dict]:
    """Each stage alone, one after the other, on the same queries (the engine's channels, read only)."""
    from sarag_assets.core.indices.store import (
        CONVERSATION_PASSAGES,
        CONVERSATION_TEXTS,
        ISSUE_DOCUMENTS,
        SOLUTION_DOCUMENTS,
        TABLE_ROWS,
    )

    depth = max(engine.settings.depth, 5 * k)
    stages: dict[str, list[float]] = {s: [] for s in (
        "understand", "embed (cache emptied)", "passages (dense)", "conversation_text (BM25)", "table_row (dense)",
        "issue (dense)", "solution (dense)", "full_text (BM25)", "cluster_route", "table_match (entity shares)",
        "sum of stages", "search (same query)")}
    channels = engine.channels
    for turns in queries:
        ms_u, parsed = _timed(engine.understand, turns)
        _clear_embedding_cache(engine)
        ms_e, vector = _timed(engine.embed, parsed)
        parts = {
            "understand": ms_u, "embed (cache emptied)": ms_e,
            "passages (dense)": _timed(channels.search_dense, CONVERSATION_PASSAGES, vector, depth)[0],
            "conversation_text (BM25)": _timed(channels.search_text, CONVERSATION_TEXTS, parsed.full_text(), depth)[0],
            "table_row (dense)": _timed(channels.search_dense, TABLE_ROWS, vector, depth)[0],
            "issue (dense)": _timed(channels.search_dense, ISSUE_DOCUMENTS, vector, depth)[0],
            "solution (dense)": _timed(channels.search_dense, SOLUTION_DOCUMENTS, vector, depth)[0],
            "full_text (BM25)": _timed(channels.search_text, TABLE_ROWS, parsed.full_text(), depth)[0],
            "cluster_route": _timed(channels.route, parsed, vector, depth)[0],
            "table_match (entity shares)": (_timed(channels.entity_shares, parsed)[0]
                                            if parsed.entities else 0.0),
        }
        for name, ms in parts.items():
            stages[name].append(ms)
        stages["sum of stages"].append(sum(parts.values()))
        _clear_embedding_cache(engine)
        stages["search (same query)"].append(_timed(engine.search, turns, k)[0])
    return {name: summary(ms) for name, ms in stages.items()}


def torch_runtime_timings(engine, queries, k: int) -> dict:
    """`search` with the query embedded by sentence-transformers in torch (SARAG_QUERY_RUNTIME=torch) on
    the engine's thread count, for comparison with ONNX Runtime (the default)."""
    from sarag_assets.core.encoding.embedder import Embedder

    original = engine.embedder
    engine.embedder = Embedder(original.model_name, runtime="torch", threads=original.threads)
    try:
        time_search(engine, queries[:5], k)
        return summary(time_search(engine, queries, k))
    finally:
        engine.embedder = original


# ---- cold start ----------------------------------------------------------------------------------------

def _env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def cli_available() -> bool:
    try:
        done = subprocess.run([sys.executable, "-m", "sarag_assets.cli", "search", "--help"], env=_env(),
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0 and "--home" in done.stdout


_SPLIT = r"""
import json, sys, time
t0 = time.perf_counter()
from sarag_assets.query.engine import Sarag
t1 = time.perf_counter()
s = Sarag(sys.argv[1])
t2 = time.perf_counter()
s.search(sys.argv[2], 10)
t3 = time.perf_counter()
s.search(sys.argv[3], 10)
t4 = time.perf_counter()
print(json.dumps({"import_engine": (t1 - t0) * 1000, "open_home": (t2 - t1) * 1000,
                  "first_search": (t3 - t2) * 1000, "second_search": (t4 - t3) * 1000}))
"""


def cold_start(home: Path, query: str, runs: int) -> dict:
    use_cli = cli_available()
    if use_cli:
        command = [sys.executable, "-m", "sarag_assets.cli", "search", "--home", str(home), query]
        label = 'python -m sarag_assets.cli search --home HOME "<query>"'
    else:
        command = [sys.executable, "-c", "import sys; from sarag_assets.query.engine import Sarag; "
                   "Sarag(sys.argv[1]).search(sys.argv[2], 10)", str(home), query]
        label = "python -c 'Sarag(home).search(query, 10)' (the CLI search subcommand did not answer --help)"
    walls, failures = [], []
    for _ in range(runs):
        t = time.perf_counter()
        done = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=600)
        walls.append((time.perf_counter() - t) * 1000)
        if done.returncode != 0:
            failures.append(done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"])
    split_runs = []
    for _ in range(max(1, min(3, runs))):
        done = subprocess.run([sys.executable, "-c", _SPLIT, str(home), query, WARMUP_QUERIES[1]], env=_env(),
                              capture_output=True, text=True, timeout=600)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith('{"import_engine"')]
        if done.returncode == 0 and lines:
            split_runs.append(json.loads(lines[-1]))
    split = {key: round(statistics.median(r[key] for r in split_runs), 1) for key in split_runs[0]} if split_runs else {}
    return {"command": label, "cli": use_cli, "runs": runs, "median_ms": round(statistics.median(walls), 1),
            "min_ms": round(min(walls), 1), "max_ms": round(max(walls), 1), "failures": failures,
            "fresh_process_split_ms (median of runs)": split}


# ---- a home at R times the size of a real one ----------------------------------------------------------

REPLICATED_TABLES = ("raw_dialogues", "validated_rows", "pseudo_documents", "graph_nodes", "graph_edges")
COPIED_TABLES = ("governance_state", "metadata_versions")


def _suffix(copy: int) -> str:
    return "" if copy == 0 else f"~r{copy}"


def build_replicated_home(base: Path, out: Path, replicas: int, *, noise_cos: float = 0.9, seed: int = 0) -> dict:
    """See the module docstring. `out` must not hold a warehouse yet."""
    import numpy as np
    import polars as pl
    import pyarrow as pa
    import pyarrow.compute as pc

    from sarag_assets.core import publication, warehouse
    from sarag_assets.core.indices.clusters import clusters_frame, fit_clusters
    from sarag_assets.core.indices.documents import linearized_rows
    from sarag_assets.core.indices.store import TABLE_ROWS, TABLES, IndexStore
    from sarag_assets.settings import Home

    src, dst = Home(Path(base)), Home(Path(out))
    if dst.warehouse.exists() or dst.lancedb.exists():
        raise SystemExit(f"{out} already holds a warehouse or LanceDB folder; pick an empty directory")
    dst.ensure()
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    with warehouse.connect(dst.warehouse) as con:
        warehouse.ensure_schema(con)
        con.execute(f"ATTACH '{src.warehouse}' AS base (READ_ONLY)")
        for table in COPIED_TABLES:
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM base.{table}")
        for table in REPLICATED_TABLES:
            for copy in range(replicas):
                s = _suffix(copy)
                con.execute(f"INSERT INTO {table} BY NAME SELECT * REPLACE (dialogue_id || '{s}' AS dialogue_id, "
                            f"batch_key || '{s}' AS batch_key) FROM base.{table}")
        con.execute("DETACH base")
        state = con.execute("SELECT state_json FROM governance_state ORDER BY saved_at DESC, version DESC LIMIT 1").fetchone()
        columns = [(c["name"], c.get("type", "string")) for c in json.loads(state[0])["columns"]] if state else []
        warehouse.refresh_conversation_table(con, columns)
        counts = {tb: con.execute(f"SELECT count(*) FROM {tb}").fetchone()[0] for tb in REPLICATED_TABLES}
        counts["conversations"] = con.execute("SELECT count(*) FROM conversation_table").fetchone()[0]
    seconds["duckdb"] = round(time.perf_counter() - t, 1)

    t = time.perf_counter()
    reader = IndexStore.open_for_read(str(src.lancedb), read_consistency_interval_s=None)
    writer = IndexStore(str(dst.lancedb))
    sigma = float(np.sqrt((1.0 / noise_cos ** 2 - 1.0) / writer.dimension)) if noise_cos < 1 else 0.0
    lance_counts, index_info = {}, {}
    for table in TABLES:
        handle = reader._open(table)
        if handle is None:
            continue
        data = handle.to_arrow()
        ids = data["id"].to_pylist()
        dialogue_ids = data["dialogue_id"].to_pylist()
        batch_keys = data["batch_key"].to_pylist()
        vectors = np.asarray(data["vector"].to_pylist(), dtype=np.float32)
        assert all(i.startswith(d) for i, d in zip(ids, dialogue_ids)), "ids must start with the dialogue id"
        for copy in range(replicas):
            s = _suffix(copy)
            v = vectors
            if copy and sigma:
                rng = np.random.default_rng([seed, copy, TABLES.index(table)])
                v = vectors + rng.standard_normal(vectors.shape, dtype=np.float32) * sigma
                v /= np.linalg.norm(v, axis=1, keepdims=True)
            frame = data.set_column(data.schema.get_field_index("id"), "id",
                                    pa.array([d + s + i[len(d):] for i, d in zip(ids, dialogue_ids)]))
            frame = frame.set_column(frame.schema.get_field_index("dialogue_id"), "dialogue_id",
                                     pa.array([d + s for d in dialogue_ids]))
            frame = frame.set_column(frame.schema.get_field_index("batch_key"), "batch_key",
                                     pa.array([b + s for b in batch_keys]))
            frame = frame.set_column(frame.schema.get_field_index("vector"), "vector",
                                     pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), writer.dimension))
            for key in sorted(set(batch_keys)):
                part = frame.filter(pc.equal(frame["batch_key"], key + s))
                writer.replace_batch(table, key + s, part)
        index_info[table] = writer.ensure_indices(table)
        lance_counts[table] = writer.counts(table)
    seconds["lancedb"] = round(time.perf_counter() - t, 1)

    t = time.perf_counter()
    with warehouse.connect(dst.warehouse, read_only=True) as con:
        table = con.execute("SELECT * FROM conversation_table").pl()
    rows = linearized_rows(table, [c for c, _ in columns])
    rows = rows.filter(pl.col("dialogue_id").is_not_null()).unique("dialogue_id", keep="last").sort("dialogue_id")
    ids, vecs = writer.vectors(TABLE_ROWS)
    position = {d: i for i, d in enumerate(ids)}
    embeddings = vecs[[position[d] for d in rows["dialogue_id"].to_list()]]
    model = fit_clusters(rows, embeddings=embeddings)
    with warehouse.connect(dst.warehouse) as con:
        warehouse.append_rows(con, "cluster_models", pl.DataFrame([{
            "model_version": model.model_version, "model": model.to_bytes(), "n_fit_rows": model.n_fit_rows,
            "fitted_at": datetime.now(timezone.utc), "drift_report": json.dumps(["first fit (replicated home)"])}]))
        warehouse.replace_table(con, "cluster_assignments", model.fit_assignments)
        warehouse.replace_table(con, "clusters", clusters_frame(model))
    seconds["clusters"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    publication.promote(dst, publication.stage(dst).id)  # readers open published states only
    seconds["publish"] = round(time.perf_counter() - t, 1)

    report = {"base": str(Path(base).resolve()), "replicas": replicas, "noise_cos": noise_cos, "noise_sigma": sigma,
              "seed": seed, "duckdb_rows": counts, "lancedb_rows": lance_counts,
              "cluster_model": {"version": model.model_version, "n_fit_rows": model.n_fit_rows,
                                "k": {v: int(model.views[v].centroids.shape[0]) for v in model.views}},
              "indices": {k: str(v) for k, v in index_info.items()}, "seconds": seconds,
              "queries": str(find_queries(Path(base))) if find_queries(Path(base)) else None,
              "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    dst.reports.mkdir(parents=True, exist_ok=True)
    (dst.reports / "replicated_home.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


# ---- the run -------------------------------------------------------------------------------------------

def _corpus_size(engine) -> dict:
    return {"conversations": len(engine.rows),
            **{t: engine.store.counts(t) for t in engine.store.tables()}}


def run(home: Path, queries_path: Path | None, n_queries: int, k: int, *, cli_runs: int = 5,
        profile: bool = True, profile_queries: int = 50, on_progress=None) -> dict:
    from sarag_assets.query.engine import Sarag

    queries_path = queries_path or find_queries(home)
    if queries_path is None:
        raise SystemExit(f"no queries.jsonl under {home}/generated: pass --queries FILE")
    queries = load_queries(queries_path, n_queries)
    load_start = _load()
    ms_open, engine = _timed(Sarag, home)
    ms_first, _ = _timed(engine.search, WARMUP_QUERIES[0], k)  # reads the vectors, builds the route's index
    for q in WARMUP_QUERIES[1:]:
        engine.search(q, k)
    engine.search([{"speaker": "user", "text": WARMUP_QUERIES[2]}, {"speaker": "agent", "text": "Which model?"},
                   {"speaker": "user", "text": "the one from last year, does the fix apply to it?"}], k)
    result: dict[str, Any] = {
        "home": str(home), "queries_file": str(queries_path), "n_queries": len(queries), "k": k,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "processor": _cpu_model()},
        "corpus": _corpus_size(engine), "open_ms": round(ms_open, 1), "first_search_ms": round(ms_first, 1),
    }
    result["query_runtime"] = engine.embedder.runtime
    result["query_runtime_fallback"] = engine.embedder.fallback_reason
    times = time_search(engine, queries, k)
    result["search_ms"] = summary(times)
    result["search_ms_embedding_cached"] = summary(time_search(engine, queries, k, fresh_embeddings=False))
    if profile:
        sample = queries[:profile_queries]
        result["profile_queries"] = len(sample)
        result["channels_ms"] = channel_timings(engine, sample, k)
        result["stages_ms"] = stage_timings(engine, sample, k)
    result["search_ms_torch_runtime"] = torch_runtime_timings(engine, queries, k)
    engine.close()
    result["load_during_in_process"] = {"start": load_start, "end": _load()}
    if on_progress:
        on_progress(result)
    if cli_runs:
        result["cold_start"] = cold_start(home, WARMUP_QUERIES[0], cli_runs)
    result["load_end"] = _load()
    return result


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def markdown(result: dict) -> str:
    s = result["search_ms"]
    lines = [f"home {result['home']}: {result['corpus']['conversations']:,} conversations; {result['n_queries']} "
             f"queries, k={result['k']}; load {result['load_during_in_process']['start']} → "
             f"{result['load_during_in_process']['end']} ({result['machine']['cpus']} CPUs)", "",
             "| measure | p50 ms | p95 ms | p99 ms | mean ms |", "|---|---|---|---|---|",
             f"| search (warm, embedding included; query runtime {result['query_runtime']}) | {s['p50']} | {s['p95']} | "
             f"{s['p99']} | {s['mean']} |"]
    c = result["search_ms_torch_runtime"]
    lines.append(f"| search, query encoded by torch instead of {result['query_runtime']} | {c['p50']} | {c['p95']} | {c['p99']} | {c['mean']} |")
    c = result["search_ms_embedding_cached"]
    lines.append(f"| search, query embedding cached | {c['p50']} | {c['p95']} | {c['p99']} | {c['mean']} |")
    for name, c in result.get("channels_ms", {}).items():
        lines.append(f"| retrieve, only `{name}` (embedding cached) | {c['p50']} | {c['p95']} | {c['p99']} | {c['mean']} |")
    for name, c in result.get("stages_ms", {}).items():
        lines.append(f"| stage alone: {name} | {c['p50']} | {c['p95']} | {c['p99']} | {c['mean']} |")
    lines += ["", f"open Sarag(home): {result['open_ms']} ms; first search (reads the dense vectors, builds the cluster index): "
              f"{result['first_search_ms']} ms"]
    if "cold_start" in result:
        cs = result["cold_start"]
        lines.append(f"cold start, {cs['command']}: median {cs['median_ms']} ms over {cs['runs']} runs "
                     f"(min {cs['min_ms']}, max {cs['max_ms']}); fresh-process split (ms): "
                     f"{cs['fresh_process_split_ms (median of runs)']}" + (f"; failures {cs['failures']}" if cs["failures"] else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sarag_assets.evaluation.bench.search_latency", description=__doc__.split("\n")[0])
    parser.add_argument("--home", required=True, help="a materialized sarag home (or where to build one)")
    parser.add_argument("--queries", help="queries.jsonl (default: <home>/generated/*/queries.jsonl)")
    parser.add_argument("--n-queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--cli-runs", type=int, default=5, help="cold-start runs (0: skip)")
    parser.add_argument("--no-profile", action="store_true", help="only the end-to-end search timings")
    parser.add_argument("--profile-queries", type=int, default=50, help="queries the per-channel and per-stage profile uses")
    parser.add_argument("--replicate-from", metavar="BASE", help="first build --home from BASE (see the docstring)")
    parser.add_argument("--replicas", type=int, default=10)
    parser.add_argument("--noise-cos", type=float, default=0.9)
    args = parser.parse_args(argv)
    home = Path(args.home)
    if args.replicate_from:
        built = build_replicated_home(Path(args.replicate_from), home, args.replicas, noise_cos=args.noise_cos)
        print(json.dumps(built, indent=1), flush=True)
    reports = home / "reports"
    reports.mkdir(parents=True, exist_ok=True)

    def write(result: dict) -> None:  # also before the cold start, so a failure there keeps the rest
        (reports / "search_latency.json").write_text(json.dumps(result, indent=1), encoding="utf-8")

    result = run(home, Path(args.queries) if args.queries else None, args.n_queries, args.k,
                 cli_runs=args.cli_runs, profile=not args.no_profile, profile_queries=args.profile_queries,
                 on_progress=write)
    write(result)
    print(markdown(result))
    print(f"\nwritten: {reports / 'search_latency.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
