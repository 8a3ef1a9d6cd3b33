"""A deterministic synthetic benchmark of support conversations, with latent truth and queries.

    corpus = generate(n=500, seed=7)          # in memory: .conversations, .queries, .truth
    summary = write_corpus("out/", 100_000, 7)  # streams corpus.jsonl, queries.jsonl, truth.jsonl

The same (n, seed) gives byte-identical files in any process. Four domains (software, telecom, orders,
accounts) are built from catalogues of products and *archetypal* problems; each latent issue is one
archetype on one product (and version band) with one concrete root cause and fix. Issue popularity is
Zipf-skewed, so many conversations share an issue; hard negatives exist by construction (the same
symptom on other products, the same product and symptom on another version with another cause).
Conversations are rendered from templates with the noise of real logs (greetings, chatter, typos, facts
spread over turns, corrections, failed fixes, second issues, PII, unresolved endings, channel styles).
How often each of these happens is one frozen object, `rates.GeneratorRates` (a part per stage: world,
dialogue, queries, typos), passed down from `generate`; a conversation is a `dialogue.Scene` written move
by move (`course`, `facts`, `agent_lines`) and realized as turns (`turns`).
Pure Python and the standard library; no Dagster.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .queries import build_queries, query_count
from .rates import RATES, GeneratorRates
from .rendering import render
from .world import DOMAINS, PlanItem, World, build_plan, build_world

__all__ = ["SyntheticCorpus", "generate", "write_corpus", "iter_corpus", "query_count", "DOMAIN_NAMES"]

DOMAIN_NAMES = tuple(d.name for d in DOMAINS)
CORPUS_FILE, QUERIES_FILE, TRUTH_FILE = "corpus.jsonl", "queries.jsonl", "truth.jsonl"


@dataclass
class SyntheticCorpus:
    conversations: list[dict] = field(default_factory=list)
    queries: list[dict] = field(default_factory=list)
    truth: list[dict] = field(default_factory=list)


def _check(n: int, seed: int) -> None:
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")


def _world_and_plan(n: int, seed: int, rates: GeneratorRates = RATES) -> tuple[World, list[PlanItem]]:
    _check(n, seed)
    world = build_world(n, seed, rates)
    return world, build_plan(world, n, seed, rates)


def iter_corpus(world: World, plan: list[PlanItem], seed: int,
                rates: GeneratorRates = RATES) -> Iterator[tuple[dict, dict]]:
    """(conversation, truth) pairs in corpus order; each depends only on its plan item and the seed."""
    for item in plan:
        yield render(item, world, seed, rates)


def generate(n: int, seed: int, rates: GeneratorRates = RATES) -> SyntheticCorpus:
    """The whole benchmark in memory (fine up to tens of thousands of conversations)."""
    world, plan = _world_and_plan(n, seed, rates)
    out = SyntheticCorpus()
    for conv, truth in iter_corpus(world, plan, seed, rates):
        out.conversations.append(conv)
        out.truth.append(truth)
    out.queries = build_queries(world, plan, n, seed, rates)
    return out


def _dumps(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def write_corpus(out_dir: str | os.PathLike, n: int, seed: int, rates: GeneratorRates = RATES) -> dict:
    """Write corpus.jsonl, queries.jsonl and truth.jsonl under out_dir (streamed); return a summary."""
    world, plan = _world_and_plan(n, seed, rates)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_domain: Counter = Counter()
    by_channel: Counter = Counter()
    resolved = two_issues = 0
    with (
        open(out / CORPUS_FILE, "w", encoding="utf-8", newline="\n") as fc,
        open(out / TRUTH_FILE, "w", encoding="utf-8", newline="\n") as ft,
    ):
        buf_c: list[str] = []
        buf_t: list[str] = []
        for conv, truth in iter_corpus(world, plan, seed, rates):
            buf_c.append(_dumps(conv))
            buf_t.append(_dumps(truth))
            by_domain[truth["domain"]] += 1
            by_channel[truth["channel"]] += 1
            resolved += truth["resolved"]
            two_issues += truth["secondary_issue_id"] is not None
            if len(buf_c) >= 2000:
                fc.write("\n".join(buf_c) + "\n")
                ft.write("\n".join(buf_t) + "\n")
                buf_c.clear()
                buf_t.clear()
        if buf_c:
            fc.write("\n".join(buf_c) + "\n")
            ft.write("\n".join(buf_t) + "\n")
    queries = build_queries(world, plan, n, seed, rates)
    with open(out / QUERIES_FILE, "w", encoding="utf-8", newline="\n") as fq:
        for q in queries:
            fq.write(_dumps(q) + "\n")
    kinds = Counter(q["kind"] for q in queries)
    patterns = Counter(q["pattern"] for q in queries)
    return {
        "n_conversations": n,
        "seed": seed,
        "n_issues": len(world.issues),
        "conversations_by_domain": {d: by_domain.get(d, 0) for d in DOMAIN_NAMES},
        "conversations_by_channel": {c: by_channel.get(c, 0) for c in ("forum", "chat", "ticket")},
        "resolved": resolved,
        "two_issue_conversations": two_issues,
        "n_queries": len(queries),
        "queries_by_kind": {k: kinds.get(k, 0) for k in ("single", "followup")},
        "queries_by_pattern": dict(sorted(patterns.items())),
        "files": {"corpus": str(out / CORPUS_FILE), "queries": str(out / QUERIES_FILE), "truth": str(out / TRUTH_FILE)},
    }
