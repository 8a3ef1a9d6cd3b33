"""Grounded answers from retrieved evidence, and SQL questions answered from result rows. No Dagster.

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

- ``edges``: the dialogue-graph edges of the conversations the fixes were read from (source = the later
  unit, target = the earlier, relation ``refines`` / ``elaborates``);
- ``fixes``: per retrieved conversation (the `FIX_CONVERSATIONS` best), the fix it holds for the question
  and the outcome the asker's next move records (`query.fixes`: chosen through the dialogue graph).

An answer offers the most useful fix the close conversations hold, whatever is known of its outcome, each
with its label: ``confirmed`` (the asker or the source says it worked), ``not_recorded``, or ``failed``
(shown only as "tried, did not work"). Without an LLM the answer is extractive: those fixes, the same fix
told in several conversations merged, ordered by their conversations' support (1/rank each; a confirmed
fix goes before an unconfirmed one of similar support; `fixes.rank_fixes`); each sentence cites the
conversation whose words it is, and the sentence saying where a fix came from cites every conversation
that agrees. The answer is supported when it offers a fix that did not fail (the label says how sure it
is). With an LLM, the model writes the answer from that evidence only (rows, graph nodes and edges,
triples, cells and fixes, each marked with its outcome) and must cite evidence ids in every sentence; ids
it invents are dropped, and the answer is supported only when the model says so, every sentence cites
known evidence, and it cites a conversation that holds a fix that did not fail.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from sarag_assets.query.fixes import CONFIRMED, FAILED, NOT_RECORDED, Fix, rank_fixes
from sarag_assets.query.strength import is_weak

MAX_ANSWER_CHARS = 600


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


@dataclass
class Answer:
    text: str
    citations: list[str]
    supported: bool  # False: the evidence does not answer the question
    generated_by: str  # "extractive" or "llm/<model>"
    evidence: Evidence
    notes: list[str] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)  # the fixes offered, best first, each with its outcome

    def as_dict(self) -> dict[str, Any]:
        return {"answer": self.text, "citations": self.citations, "supported": self.supported,
                "generated_by": self.generated_by, "notes": self.notes, "fixes": [f.as_dict() for f in self.fixes],
                "evidence": self.evidence.as_dict()}


# ---- evidence ------------------------------------------------------------------------------------


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


# ---- extractive answer ---------------------------------------------------------------------------


def outcome(row: dict[str, str]) -> bool | None:
    """Whether the table's `resolved` cell says the fix worked; None when the table does not say."""
    value = row.get("resolved")
    if value is None:
        return None
    return str(value).strip().lower() in ("true", "yes", "1")


def fixes_from_cells(rows: list[dict[str, Any]]) -> list[tuple[int, list[Fix]]]:
    """(rank, fixes) per row from its `resolution` and `resolved` cells: what stands in for a fix when
    the conversations were not read."""
    out = []
    for rank, r in enumerate(rows, start=1):
        text = " ".join(str(r["row"].get("resolution") or "").split())
        if text:
            label = {True: CONFIRMED, False: FAILED, None: NOT_RECORDED}[outcome(r["row"])]
            out.append((rank, [Fix(text, [r["dialogue_id"]], label)]))
    return out


_LABEL = {CONFIRMED: "Confirmed fix", NOT_RECORDED: "Suggested fix (outcome not recorded)",
          FAILED: "Tried, did not work"}


def extractive_answer(evidence: Evidence, notes: list[str], embedder=None, *, weak: set[str] = frozenset()) -> Answer:
    """The fixes the close conversations hold, best first, each labelled with its outcome and each
    sentence cited; conversations in `weak` (they do not stand out from the corpus for this question)
    offer a fix only when no other does, after the answer says nothing matches well, and the answer is then
    not supported. Supported when a close conversation's fix that did not fail is offered."""
    if not evidence.rows:
        return Answer("No similar conversation was found.", [], False, "extractive", evidence, notes)
    ids = [r["dialogue_id"] for r in evidence.rows]
    rank = {d: i for i, d in enumerate(ids, start=1)}
    close = [r for r in evidence.rows if r["dialogue_id"] not in weak]
    if evidence.fixes is None:
        found = fixes_from_cells(close)
    else:
        found = [(rank[f.dialogue_ids[0]], [f]) for f in evidence.fixes
                 if f.dialogue_ids[0] in rank and f.dialogue_ids[0] not in weak]
    fixes = rank_fixes(found, embedder) if embedder is not None and found else []
    loose = False
    if not fixes and embedder is not None and weak:  # offered all the same, said to be a weak match
        everything = fixes_from_cells(evidence.rows) if evidence.fixes is None else \
            [(rank[f.dialogue_ids[0]], [f]) for f in evidence.fixes if f.dialogue_ids[0] in rank]
        fixes, loose = rank_fixes(everything, embedder), True
    parts, citations = [], []
    if loose or not any(f.outcome != FAILED for f in fixes):
        closest = ids[:3]
        if not close:
            parts.append(f"Nothing in this home matches the question well; the closest conversations are "
                         f"{', '.join(closest)} [{', '.join(closest)}].")
        else:
            tried = " (what was tried that did not work follows)" if fixes else ""
            parts.append(f"None of the {len(ids)} similar conversations holds a fix that did not fail{tried}; "
                         f"the closest are {', '.join(closest)} [{', '.join(closest)}].")
        citations.extend(closest)
    for fix in fixes:
        where = f" in {len(fix.dialogue_ids)} of the {len(ids)} similar conversations [{', '.join(fix.dialogue_ids)}]" \
            if len(fix.dialogue_ids) > 1 else ""
        parts.append(f"{_LABEL[fix.outcome]}{where}: " + _each_sentence_cited(fix.text, fix.dialogue_ids[:1]))
        citations.extend(fix.dialogue_ids)
    text = "\n".join(parts)
    supported = not loose and any(f.outcome != FAILED for f in fixes) and not uncited_sentences(text, set(citations))
    return Answer(text, list(dict.fromkeys(citations)), supported, "extractive", evidence, notes, fixes)


def _each_sentence_cited(text: str, dialogue_ids: list[str]) -> str:
    """`text` with the citation bracket after each of its sentences: each says what it rests on."""
    cite = f"[{', '.join(dialogue_ids)}]"
    return " ".join(f"{sentence} {cite}" for sentence in _sentences(text))


# ---- LLM answers -----------------------------------------------------------------------------------


class GroundedAnswer(BaseModel):
    answer: str = Field(description="The answer, written only from the evidence; say plainly when the "
                                    "evidence does not answer the question.")
    supported: bool = Field(description="True only if the evidence answers the question.")
    citations: list[str] = Field(default_factory=list,
                                 description="Ids in square brackets from the evidence that support the answer.")


ANSWER_SYSTEM = (
    "You answer a support engineer's question using ONLY the evidence provided: retrieved past support "
    "conversations as table rows, dialogue-graph nodes (a user issue and the helper's answer), table "
    "triples and cells, each with an id in square brackets. The question may be a conversation: read the "
    "whole of it, the last turn is what is asked now. Do not use outside knowledge. Offer the most useful "
    "fix the conversations hold, in the helper's words, and say its outcome: 'confirmed' (it worked), "
    "'not_recorded' (not known whether it worked) or 'failed' (offer it only as tried, did not work). Prefer "
    "a confirmed fix to an unconfirmed one of similar support, and a fix several conversations agree on. If "
    "no conversation holds a fix that did not fail, say so plainly and set supported to false. End every "
    "sentence with the ids it rests on in square brackets, and list the ids you used (without brackets) as "
    "citations."
)


def llm_answer(llm, question: str, evidence: Evidence, notes: list[str]) -> Answer:
    data = f"QUESTION:\n{question}\n\nEVIDENCE:\n{evidence.as_prompt()}"
    result = llm.complete(system=ANSWER_SYSTEM, user_data=data, response_model=GroundedAnswer,
                          task="grounded_answer", data_tag="evidence")
    known = evidence.conversations()
    cited = [c.strip().strip("[]") for c in result.citations]
    in_text = [c.strip() for group in _CITE.findall(result.answer) for c in group.split(",")]
    valid = [c for c in dict.fromkeys(cited + in_text) if c in known]
    dropped = [c for c in dict.fromkeys(cited) if c not in known]
    if dropped:
        notes = notes + [f"dropped citations not in the evidence: {', '.join(dropped[:5])}"]
    uncited = uncited_sentences(result.answer, set(known))
    if uncited:
        notes = notes + [f"{len(uncited)} sentence(s) of the answer cite no evidence"]
    # supported only when it cites a conversation holding a fix that did not fail: the model's word is not enough
    outcomes = evidence.outcomes()
    holds_fix = any(outcomes.get(known[c]) in (CONFIRMED, NOT_RECORDED) for c in valid)
    if result.supported and valid and not holds_fix:
        notes = notes + ["the answer cites no conversation holding a fix that did not fail"]
    supported = bool(result.supported and valid and not uncited and holds_fix)
    cited = {known[c] for c in valid}
    fixes = [f for f in evidence.fixes or [] if f.dialogue_ids[0] in cited]
    return Answer(result.answer.strip(), valid, supported, f"llm/{llm.settings.model}", evidence, notes, fixes)


# The conversations whose turns an answer reads for fixes: the fixes of those further down the list rarely
# gather the support to be shown (1/rank), and each costs an embedding of its helpers' sentences.
FIX_CONVERSATIONS = 3


def answer_question(engine, query, *, k: int = 5, m: int = 2, radius: int = 1, settings=None) -> Answer:
    """`Sarag.answer`: the evidence, the fixes its close conversations hold (read from their turns and
    dialogue graphs), and the answer: generated by the LLM when one is configured, else extractive."""
    from sarag_assets.core import warehouse
    from sarag_assets.query.fixes import Material, conversation_fixes

    result, evidence = engine.evidence(query, k=k, m=m, radius=radius, settings=settings)
    notes = list(result.query.notes)
    strength = engine.match_strength(result.query_vector, result.ids())
    weak = {h.dialogue_id for h in result.hits if is_weak(strength.get(h.dialogue_id), h.matched_columns)}
    read = result.ids()[:FIX_CONVERSATIONS]  # a weak match's fix is evidence for the LLM, never offered as the fix
    evidence.fixes = []
    if read:
        with warehouse.connect(engine._published_warehouse(), read_only=True) as con:
            turns = warehouse.turns_of(con, read)
            nodes, edges = warehouse.graph_of(con, read)
        for d in read:
            material = Material(d, turns.get(d, []), [n for n in nodes if n["dialogue_id"] == d],
                                [(a, b, r) for e, a, b, r in edges if e == d])
            evidence.edges.extend((d, a, b, r) for a, b, r in material.edges)
            evidence.fixes.extend(conversation_fixes(material, result.query_vector, engine.embedder))
    if engine.llm is None:
        return extractive_answer(evidence, notes, engine.embedder, weak=weak)
    question = "\n".join(f"{t.speaker}: {t.text}" for t in result.query.turns)
    return llm_answer(engine.llm, question, evidence, notes)


_CITE = re.compile(r"\[([^\[\]]+)\]")


def uncited_sentences(text: str, known: set[str]) -> list[str]:
    """The sentences of `text` that cite none of the `known` evidence ids."""
    return [s for s in _sentences(text)
            if not any(c.strip() in known for group in _CITE.findall(s) for c in group.split(","))]


_ENDS_WITH_LIST_MARKER = re.compile(r"(?:^|\s)\d{1,2}\.$")


def _sentences(text: str) -> list[str]:
    """The answer's sentences; a citation bracket after the full stop belongs to the sentence before, and
    a list item's number ("1.") to its item."""
    parts: list[str] = []
    for part in re.split(r"(?<=[.!?])\s+(?!\[)", text.strip()):
        if parts and _ENDS_WITH_LIST_MARKER.search(parts[-1]):
            parts[-1] += " " + part
        else:
            parts.append(part)
    return [p for p in parts if re.search(r"\w", _CITE.sub("", p))]


class SqlPlan(BaseModel):
    sql: str = Field(description="One read-only DuckDB SELECT statement over the tables described.")
    columns: list[str] = Field(default_factory=list, description="The table columns the question needs.")


class SqlAnswer(BaseModel):
    answer: str = Field(description="The answer, derived only from the result rows.")
    supported: bool = Field(description="True only if the result rows answer the question.")


SQL_SYSTEM = (
    "You translate a question about support conversations into ONE read-only DuckDB SELECT statement over "
    "the schema given in the data. Use only the tables and columns listed; string comparisons should be "
    "case-insensitive (ILIKE) unless exact values are given. Return the SQL and the columns it needs."
)
SQL_ANSWER_SYSTEM = (
    "You answer a question from the result rows of a SQL query only. Do not use outside knowledge. If the "
    "rows do not answer the question (empty, or about something else), say so and set supported to false."
)


@dataclass
class SqlQuestionAnswer:
    question: str
    sql: str
    columns: list[str]
    rows: list[dict[str, Any]]
    answer: str
    supported: bool
    generated_by: str
    truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_sql(llm, question: str, schema: str, error: str | None = None) -> SqlPlan:
    data = f"SCHEMA:\n{schema}\n\nQUESTION:\n{question}"
    if error:
        data += f"\n\nYOUR PREVIOUS SQL FAILED WITH:\n{error}\nWrite a corrected statement."
    return llm.complete(system=SQL_SYSTEM, user_data=data, response_model=SqlPlan, task="ask_sql_plan",
                        data_tag="question")


def answer_from_rows(llm, question: str, sql: str, rows: list[dict[str, Any]]) -> SqlAnswer:
    shown = json.dumps(rows[:200], default=str, ensure_ascii=False)
    data = f"QUESTION:\n{question}\n\nSQL:\n{sql}\n\nRESULT ROWS ({len(rows)}):\n{shown}"
    return llm.complete(system=SQL_ANSWER_SYSTEM, user_data=data, response_model=SqlAnswer,
                        task="ask_sql_answer", data_tag="result")
