"""The evidence an answer is written from, gathered for one query. No Dagster.

Evidence for a query (SA-RAG, SDR, cTBLS in one bundle):

- ``rows``: the top retrieved conversations with their table cells;
- ``triples``: (value, column, information) collected by expanding from the values the query mentioned
  through the table: rows holding a value give their other cells as triples; the entity-like values of
  those rows are the next frontier; at most ``depth`` steps and ``max_triples`` triples, rows visited in
  search-rank order (then by id), at most ``rows_per_value`` rows per value. Without mentioned values the
  expansion starts from the top row's entity-like values;
- ``nodes``: per retrieved conversation, its ``m`` dialogue-graph nodes most similar to the query
  (anchors), plus the nodes within ``radius`` steps along ``refines`` / ``elaborates`` edges (either
  direction), in turn order;
- ``cells``: the 3 cells of the top rows most similar to the query (cosine of "column: value" to the
  query vector, weighted 1/rank of the row; cells the query itself named count half: the asker knows them).

An answer adds (`answers.answer_question`):

- ``edges``: the dialogue-graph edges of the conversations the fixes were read from (source = the later
  unit, target = the earlier, relation ``refines`` / ``elaborates``);
- ``fixes``: per retrieved conversation (the `answers.FIX_CONVERSATIONS` best), the fix it holds for the
  question and the outcome the asker's next move records (`query.fixes`: chosen through the dialogue graph).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np

from sarag_assets.core.indices.store import GRAPH_NODES, IndexStore, sql_string
from sarag_assets.query.conversations import ConversationReader
from sarag_assets.query.fixes import CONFIRMED, FAILED, NOT_RECORDED, Fix
from sarag_assets.query.published import PublishedTables
from sarag_assets.query.ranking import SearchResult
from sarag_assets.query.understanding import normalize


@dataclass
class Triple:
    value: str
    column: str
    information: str
    dialogue_id: str
    depth: int

    @property
    def cite(self) -> str:
        return f"{self.dialogue_id}:{self.column}"


@dataclass
class NodeEvidence:
    dialogue_id: str
    node_id: str
    issue: str
    answer: str
    turn_start: int
    turn_end: int
    similarity: float
    anchor: bool

    @property
    def cite(self) -> str:
        return f"{self.dialogue_id}#{self.node_id}"


@dataclass
class CellEvidence:
    dialogue_id: str
    column: str
    value: str
    score: float

    @property
    def cite(self) -> str:
        return f"{self.dialogue_id}:{self.column}"


@dataclass
class Evidence:
    rows: list[dict[str, Any]]
    triples: list[Triple]
    nodes: list[NodeEvidence]
    cells: list[CellEvidence]
    edges: list[tuple[str, str, str, str]] = field(default_factory=list)  # (dialogue id, source, target, relation)
    fixes: list["Fix"] | None = None  # None: the conversations were not read (the cells stand in)

    def ids(self) -> set[str]:
        return set(self.conversations())

    def conversations(self) -> dict[str, str]:
        """Each evidence id and the conversation it comes from (an id is never parsed: a conversation's
        own id may hold ':' or '#')."""
        out = {r["dialogue_id"]: r["dialogue_id"] for r in self.rows}
        for item in (*self.triples, *self.nodes, *self.cells):
            out.setdefault(item.cite, item.dialogue_id)
        return out

    def as_dict(self) -> dict[str, Any]:
        def plain(items):
            return [asdict(i) | {"cite": i.cite} for i in items]

        return {"rows": self.rows, "triples": plain(self.triples), "nodes": plain(self.nodes),
                "cells": plain(self.cells),
                "edges": [{"dialogue_id": d, "source": a, "target": b, "relation": r} for d, a, b, r in self.edges],
                "fixes": [f.as_dict() for f in self.fixes or []]}

    def outcomes(self) -> dict[str, str]:
        """Each conversation's outcome as the answer reads it: that of the fix it holds (a fix that did
        not fail first), else from its cells."""
        out: dict[str, str] = {}
        for fix in self.fixes or []:
            for d in fix.dialogue_ids:
                if out.get(d) in (None, FAILED):
                    out[d] = fix.outcome
        for r in self.rows:
            if r["dialogue_id"] not in out and self.fixes is None:
                out[r["dialogue_id"]] = {True: CONFIRMED, False: FAILED, None: NOT_RECORDED}[outcome(r["row"])]
        return out

    def as_prompt(self) -> str:
        outcomes = self.outcomes()
        lines = ["RETRIEVED CONVERSATIONS (table rows; outcome of the fix each holds: confirmed = the asker or "
                 "the source says it worked, not_recorded = unknown, failed = tried, did not work, none = holds "
                 "no fix):"]
        for r in self.rows:
            cells = "; ".join(f"{k} = {v}" for k, v in r["row"].items())
            lines.append(f"[{r['dialogue_id']}] outcome: {outcomes.get(r['dialogue_id'], 'none')}; {cells}")
        lines.append("FIXES THE CONVERSATIONS HOLD (the helper's answer to the problem, with its outcome):")
        for f in self.fixes or []:
            lines.append(f"[{f.dialogue_ids[0]}] ({f.outcome}) {f.text}")
        lines.append("DIALOGUE GRAPH NODES (user issue -> helper answer):")
        for n in self.nodes:
            lines.append(f"[{n.cite}] issue: {n.issue} | answer: {n.answer}")
        lines.append("DIALOGUE GRAPH EDGES (later node -> earlier node it refines or elaborates):")
        for d, a, b, r in self.edges:
            lines.append(f"[{d}] {d}#{a} {r} {d}#{b}")
        lines.append("TABLE TRIPLES (value, column, information):")
        for t in self.triples:
            lines.append(f"[{t.cite}] ({t.value}, {t.column}, {t.information})")
        lines.append("TOP CELLS:")
        for c in self.cells:
            lines.append(f"[{c.cite}] {c.column} = {c.value}")
        return "\n".join(lines)



def expand_triples(seeds: list[tuple[str, str]], ranked_ids: list[str], rows: dict[str, dict[str, str]],
                   rows_holding, entity_columns: set[str], *, depth: int = 2, max_triples: int = 20,
                   rows_per_value: int = 3) -> list[Triple]:
    """Breadth-first from (column, value) seeds through the table (see the module docstring)."""
    rank = {d: i for i, d in enumerate(ranked_ids)}
    seen_values = set(seeds)
    seen_rows: set[str] = set()
    frontier = list(seeds)
    out: list[Triple] = []
    for step in range(1, depth + 1):
        next_frontier = []
        for column, value in frontier:
            holders = sorted(rows_holding(column, value), key=lambda d: (rank.get(d, len(rank)), d))
            for dialogue_id in holders[:rows_per_value]:
                if dialogue_id in seen_rows:
                    continue
                seen_rows.add(dialogue_id)
                for other, information in rows.get(dialogue_id, {}).items():
                    if other == column:
                        continue
                    out.append(Triple(value, other, information, dialogue_id, step))
                    if len(out) >= max_triples:
                        return out
                    if other in entity_columns and (other, information) not in seen_values:
                        seen_values.add((other, information))
                        next_frontier.append((other, information))
        frontier = next_frontier
        if not frontier:
            break
    return out


def walk_nodes(nodes: list[dict[str, Any]], edges: list[tuple[str, str, str]], similarity: dict[str, float],
               *, m: int = 2, radius: int = 1) -> list[NodeEvidence]:
    """One conversation's anchors (top-m by similarity) and the nodes within `radius` edges of them."""
    if not nodes:
        return []
    ordered = sorted(nodes, key=lambda n: (-similarity.get(n["node_id"], -1.0), n["turn_start"], n["node_id"]))
    anchors = {n["node_id"] for n in ordered[:m]}
    neighbours: dict[str, set[str]] = {}
    for source, target, _ in edges:
        neighbours.setdefault(source, set()).add(target)
        neighbours.setdefault(target, set()).add(source)
    reached = set(anchors)
    frontier = set(anchors)
    for _ in range(radius):
        frontier = {b for a in frontier for b in neighbours.get(a, ())} - reached
        reached |= frontier
    kept = [n for n in nodes if n["node_id"] in reached]
    kept.sort(key=lambda n: (n["turn_start"], n["node_id"]))
    return [NodeEvidence(n["dialogue_id"], n["node_id"], n["issue"], n["answer"], n["turn_start"], n["turn_end"],
                         float(similarity.get(n["node_id"], 0.0)), n["node_id"] in anchors) for n in kept]


def top_cells(hits, query_vector: np.ndarray, embedder, mentioned: set[tuple[str, str]], *, rows: int = 3,
              n: int = 3) -> list[CellEvidence]:
    candidates = [(rank, h.dialogue_id, column, value) for rank, h in enumerate(hits[:rows], start=1)
                  for column, value in h.row.items()]
    if not candidates:
        return []
    vectors = embedder.encode([f"{c}: {v}" for _, _, c, v in candidates])
    sims = vectors @ query_vector
    scored = []
    for (rank, dialogue_id, column, value), sim in zip(candidates, sims.tolist()):
        weight = 0.5 if (column, value) in mentioned else 1.0
        scored.append(CellEvidence(dialogue_id, column, value, round(weight * sim / rank, 6)))
    scored.sort(key=lambda c: (-c.score, c.dialogue_id, c.column))
    return scored[:n]


def outcome(row: dict[str, str]) -> bool | None:
    """Whether the table's `resolved` cell says the fix worked; None when the table does not say."""
    value = row.get("resolved")
    if value is None:
        return None
    return str(value).strip().lower() in ("true", "yes", "1")


class Gathered(NamedTuple):
    """A query's search result and the evidence gathered from it (`Sarag.evidence`)."""

    result: SearchResult
    evidence: Evidence


def gather(result: SearchResult, tables: PublishedTables, store: IndexStore, reader: ConversationReader, embedder,
           *, m: int = 2, radius: int = 1, depth: int = 2, max_triples: int = 20) -> Evidence:
    """The rows, triples, graph nodes and cells of a search result (module docstring)."""
    hits = result.hits
    entity_columns = set(tables.entity_columns)
    seeds = [(e.column, e.value) for e in result.query.entities]
    if not seeds and hits:
        seeds = [(c, v) for c, v in hits[0].row.items() if c in entity_columns and len(v) <= 60]
    ranked = [h.dialogue_id for h in hits]
    triples = expand_triples(seeds, ranked, tables.rows,
                             lambda c, v: tables.lexicon.rows(c, normalize(v)) or
                             {d for d in ranked if tables.rows.get(d, {}).get(c) == v},
                             entity_columns, depth=depth, max_triples=max_triples)
    nodes = graph_evidence(ranked, result.query_vector, store, reader, m=m, radius=radius)
    mentioned = {(e.column, e.value) for e in result.query.entities}
    cells = top_cells(hits, result.query_vector, embedder, mentioned)
    rows = [{"dialogue_id": h.dialogue_id, "score": round(h.score, 6), "row": h.row} for h in hits]
    return Evidence(rows, triples, nodes, cells)


def graph_evidence(dialogue_ids: list[str], vector: np.ndarray, store: IndexStore, reader: ConversationReader, *,
                   m: int, radius: int) -> list[NodeEvidence]:
    """Each conversation's graph nodes nearest the query vector and their neighbours (`walk_nodes`)."""
    if not dialogue_ids:
        return []
    nodes, edges = reader.graphs(dialogue_ids)
    where = "dialogue_id IN (" + ", ".join(sql_string(d) for d in dialogue_ids) + ")"
    similarity = {(h["dialogue_id"], h.get("node_id")): float(h["score"])
                  for h in store.vector_search(GRAPH_NODES, vector, max(len(nodes), 1), where)}
    out = []
    for dialogue_id in dialogue_ids:
        own = [n for n in nodes if n["dialogue_id"] == dialogue_id]
        own_edges = [(s, t, r) for d, s, t, r in edges if d == dialogue_id]
        sims = {n["node_id"]: similarity.get((dialogue_id, n["node_id"]), -1.0) for n in own}
        out.extend(walk_nodes(own, own_edges, sims, m=m, radius=radius))
    return out
