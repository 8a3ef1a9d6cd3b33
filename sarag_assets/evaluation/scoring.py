"""The systems `sarag eval` scores, and how a home's queries are scored against them (no ingestion here:
`evaluation.run` ingests; the retrieval_evaluation asset scores a home the pipeline built).

Systems (the names are a contract; other tools read them):

- ``text_freq``, ``bm25``, ``dense``: baselines over the raw text of each current conversation, as the
  pipeline stored it (redacted turns joined), with the whole query conversation as the query text;
- ``dense_passages``: the query module with only the dense passage channel (each conversation by its best
  passage); ``hybrid``: only the passage channel and BM25 over each conversation's whole text, fused by the
  product's own rule: the product's text views exactly. Both read what the people wrote, nothing derived;
- ``sdr``: the query module with only the issue and solution pseudo-document channels;
- ``table``: only the table-row channels (dense, full text, and the matches on mentioned values);
- ``trag``: only the cluster route (best cluster per view, then personalized PageRank);
- ``sarag``: the full fused system;
- ``sarag_no_governance`` / ``sarag_no_gates``: the full system over a second / third home built by the
  same pipeline from the same corpus with ``SARAG_GOVERNANCE=fixed`` (a fixed hand-written schema
  instead of the governed metadata) / ``SARAG_GATES=off`` (no semantic or structural gate).

Nugget coverage@3 (for queries with nuggets) is computed on the same evidence for every system: the raw
text of its top 3 conversations (`metrics.NuggetMatcher`). Timings: ``ingest_s`` is the main home's
ingestion (landing + every asset), query latencies are the full system's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

BASELINES = ("text_freq", "bm25", "dense")
# Text only, searched the way the product searches its text channels (same passages, same fusion rule)
TEXT_SYSTEMS = ("dense_passages", "hybrid")
QUERY_SYSTEMS = ("sdr", "table", "trag", "sarag")
ABLATIONS = {"sarag_no_governance": {"SARAG_GOVERNANCE": "fixed"}, "sarag_no_gates": {"SARAG_GATES": "off"}}
SYSTEMS = BASELINES + TEXT_SYSTEMS + QUERY_SYSTEMS + tuple(ABLATIONS)
# One query channel alone (`--systems only_issue,...`): not in the default set, for asking whether the fused
# ranking beats each channel on your own queries.
CHANNEL_PREFIX = "only_"


class EvalError(RuntimeError):
    """The evaluation could not run (bad input, a failed pipeline run)."""


def query_settings(system: str):
    from sarag_assets.query.engine import SearchSettings

    if system == "dense_passages":
        return SearchSettings.only("passages")
    if system == "hybrid":
        return SearchSettings.only("passages", "conversation_text")
    if system == "sdr":
        return SearchSettings.only("issue", "solution")
    if system == "table":
        return SearchSettings.only("table_row", "full_text", "table_match")
    if system == "trag":
        return SearchSettings.only("cluster_route")
    if system.startswith(CHANNEL_PREFIX):
        return SearchSettings.only(system[len(CHANNEL_PREFIX):])
    return SearchSettings()


def channel_systems() -> tuple[str, ...]:
    from sarag_assets.query.engine import CHANNELS

    return tuple(CHANNEL_PREFIX + c for c in CHANNELS)


def parse_systems(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return list(SYSTEMS)
    names = [s.strip() for s in (value.split(",") if isinstance(value, str) else value) if s.strip()]
    known = SYSTEMS + channel_systems()
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise EvalError(f"unknown systems {unknown or names}; known: {', '.join(known)}")
    return list(dict.fromkeys(names))



def raw_texts(warehouse: Path) -> dict[str, str]:
    """Each current conversation's stored (redacted) text, turns joined in order."""
    from sarag_assets.core import warehouse as wh

    with wh.connect(warehouse, read_only=True) as con:
        return dict(wh.conversation_texts(con))



def score_systems(root: Path, eval_queries, names: Sequence[str], *, k: int = 10,
                  ablation_homes: dict[str, Path] | None = None, ingest_s: float | None = None,
                  log: Callable[[str], None] = lambda _: None):
    """Score the named systems on a materialized home (ablations on their own homes) -> EvalReport."""
    from sarag_assets.evaluation.baselines import fit_baselines
    from sarag_assets.evaluation.metrics import NuggetMatcher, score_queries
    from sarag_assets.evaluation.report import build_report
    from sarag_assets.settings import Home

    ablation_homes = ablation_homes or {}
    texts = raw_texts(Home(root).warehouse)
    matcher = NuggetMatcher()
    scores, latencies = {}, []
    wanted_baselines = [n for n in names if n in BASELINES]
    if wanted_baselines:
        log(f"baselines: {', '.join(wanted_baselines)}")
        fitted = fit_baselines(sorted(texts.items()), wanted_baselines)
        for name in wanted_baselines:
            ranked = {q.query_id: [d for d, _ in fitted[name].search(q.text, k)] for q in eval_queries}
            scores[name] = score_queries(eval_queries, ranked, texts=texts, matcher=matcher)
    for name in names:
        if name in BASELINES:
            continue
        if name in ABLATIONS:
            system_home, settings_name = ablation_homes[name], "sarag"
        else:
            system_home, settings_name = root, name
        log(f"{name}: {len(eval_queries)} queries")
        ranked, system_latencies = _run_query_system(system_home, eval_queries, k, query_settings(settings_name))
        if name == "sarag":
            latencies = system_latencies
        system_texts = texts if system_home == root else raw_texts(Home(system_home).warehouse)
        scores[name] = score_queries(eval_queries, ranked, texts=system_texts, matcher=matcher)
    return build_report(len(texts), {n: scores[n] for n in names}, ingest_s=ingest_s, query_ms=latencies or None)


def _run_query_system(home: Path, queries, k: int, settings) -> tuple[dict[str, list[str]], list[float]]:
    from sarag_assets.query.engine import Sarag

    ranked, latencies = {}, []
    with Sarag(home, settings=settings) as engine:
        engine.search(queries[0].turns, k)  # warm: model load and cluster index, not a query's cost
        for q in queries:
            started = time.perf_counter()
            ranked[q.query_id] = [h.dialogue_id for h in engine.search(q.turns, k)]
            latencies.append((time.perf_counter() - started) * 1000.0)
    return ranked, latencies
