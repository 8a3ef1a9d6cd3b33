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

An answer offers as a fix only what a retrieved conversation shows worked: its `resolved` cell says the
asker confirmed it, and its `resolution` cell says what it was. Without an LLM the answer is extractive:
those fixes, the same fix told in several conversations merged (`SAME_FIX_COSINE`), ordered by their
conversations' votes weighted by rank (1/rank each: agreement counts, but two conversations far down the
list do not outvote the closest one); the fix's sentences cite the conversation whose words they are, and
the sentence saying where it worked cites every conversation that agrees. When the closest conversation
records that it was not resolved, the answer says so first. When none worked it says so, and the answer
is not supported. With an LLM, the model writes the answer from that evidence only (each row marked with
its outcome) and must cite evidence ids in every sentence; ids it invents are dropped, and the answer is
supported only when the model says so, every sentence cites known evidence, and it cites a conversation
whose fix was confirmed.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

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
                "cells": plain(self.cells)}

    def as_prompt(self) -> str:
        lines = ["RETRIEVED CONVERSATIONS (table rows; outcome: whether the asker confirmed the fix worked):"]
        for r in self.rows:
            cells = "; ".join(f"{k} = {v}" for k, v in r["row"].items())
            worked = {True: "fix confirmed", False: "NOT confirmed", None: "unknown"}[outcome(r["row"])]
            lines.append(f"[{r['dialogue_id']}] outcome: {worked}; {cells}")
        lines.append("DIALOGUE GRAPH NODES (user issue -> helper answer):")
        for n in self.nodes:
            lines.append(f"[{n.cite}] issue: {n.issue} | answer: {n.answer}")
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
    fixes: list["Fix"] = field(default_factory=list)  # extractive: the fixes offered, with where each worked

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


# Two fixes whose texts are at least this similar (cosine, all-MiniLM-L6-v2) are read as the same fix told
# twice: the level of close paraphrases for that model, a property of the model, not of any corpus.
SAME_FIX_COSINE = 0.75


@dataclass
class Fix:
    text: str
    dialogue_ids: list[str]  # the retrieved conversations where it worked, best-ranked first

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "worked_in": self.dialogue_ids}


def outcome(row: dict[str, str]) -> bool | None:
    """Whether the asker confirmed a fix (the `resolved` cell); None when the table does not say."""
    value = row.get("resolved")
    if value is None:
        return None
    return str(value).strip().lower() in ("true", "yes", "1")


def confirmed_fixes(rows: list[dict[str, Any]], embedder) -> list[Fix]:
    """The fixes that worked in the retrieved conversations (resolved, with a resolution), the same fix
    told by several merged, each group's words those of its best-ranked conversation. Groups are ordered by
    their conversations' votes, each 1/rank (then by the best rank): a fix several close conversations
    agree on comes first, but conversations far down the list do not outvote the closest one."""
    worked = [(rank, r["dialogue_id"], " ".join(str(r["row"]["resolution"]).split()))
              for rank, r in enumerate(rows, start=1)
              if outcome(r["row"]) and str(r["row"].get("resolution") or "").strip()]
    if not worked:
        return []
    vectors = np.asarray(embedder.encode([text for _, _, text in worked]), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    similar = vectors @ vectors.T >= SAME_FIX_COSINE
    groups: list[list[int]] = []
    for i in range(len(worked)):  # each joins the first group whose first fix it repeats
        home = next((g for g in groups if similar[g[0], i]), None)
        (home.append(i) if home is not None else groups.append([i]))
    groups.sort(key=lambda g: (-sum(1.0 / worked[i][0] for i in g), g[0]))
    return [Fix(worked[g[0]][2], [worked[i][1] for i in g]) for g in groups]


def extractive_answer(evidence: Evidence, notes: list[str], embedder=None, *, weak: set[str] = frozenset()) -> Answer:
    """The fixes that worked in the retrieved conversations, each sentence with its citations; when none
    of them shows a fix that worked, it says so and the answer is not supported. Conversations in `weak`
    (they do not stand out from the corpus for this question) offer no fix: they are not about it."""
    if not evidence.rows:
        return Answer("No similar conversation was found.", [], False, "extractive", evidence, notes)
    ids = [r["dialogue_id"] for r in evidence.rows]
    close = [r for r in evidence.rows if r["dialogue_id"] not in weak]
    fixes = confirmed_fixes(close, embedder) if embedder is not None else []
    # a second fix only when several conversations show it worked: one conversation far down the list is not
    fixes = fixes[:1] + [f for f in fixes[1:2] if len(f.dialogue_ids) > 1]
    parts, citations = [], []
    if fixes and close and outcome(close[0]["row"]) is False and close[0]["dialogue_id"] not in fixes[0].dialogue_ids:
        closest = close[0]["dialogue_id"]  # the best match failed: the asker should know before any other fix
        parts.append(f"The closest conversation, {closest}, was not resolved [{closest}].")
        citations.append(closest)
    for n, fix in enumerate(fixes):
        where = f"{len(fix.dialogue_ids)} of the {len(ids)} similar conversations" if len(fix.dialogue_ids) > 1 \
            else "1 of the similar conversations"
        label = "What worked" if n == 0 else "Also worked"
        agreeing = f" [{', '.join(fix.dialogue_ids)}]" if len(fix.dialogue_ids) > 1 else ""
        parts.append(f"{label} in {where}{agreeing}: " + _each_sentence_cited(_clip(fix.text), fix.dialogue_ids[:1]))
        citations.extend(fix.dialogue_ids)
    if not fixes:
        closest = ids[:3]
        if not close:
            parts.append(f"Nothing in this home matches the question well; the closest conversations are "
                         f"{', '.join(closest)} [{', '.join(closest)}].")
        else:
            # a fix whose outcome the conversation does not record is neither offered nor called a failure
            unknown = [r["dialogue_id"] for r in close
                       if outcome(r["row"]) is None and str(r["row"].get("resolution") or "").strip()]
            if unknown:
                parts.append(f"None of the {len(ids)} similar conversations shows a fix confirmed to have worked; "
                             f"{len(unknown)} of them {'suggests' if len(unknown) == 1 else 'suggest'} a fix whose "
                             "outcome the conversation does not "
                             f"record [{', '.join(unknown)}].")
                closest = unknown
            else:
                why = "shows a fix that worked" if any(outcome(r["row"]) is not None for r in evidence.rows) \
                    else "records whether a fix worked"
                parts.append(f"None of the {len(ids)} similar conversations {why}; the closest are "
                             f"{', '.join(closest)} [{', '.join(closest)}].")
        citations.extend(closest)
    text = "\n".join(parts)
    supported = bool(fixes) and not uncited_sentences(text, set(citations))
    return Answer(text, list(dict.fromkeys(citations)), supported, "extractive", evidence, notes, fixes)


def _each_sentence_cited(text: str, dialogue_ids: list[str]) -> str:
    """`text` with the citation bracket after each of its sentences: each says what it rests on."""
    cite = f"[{', '.join(dialogue_ids)}]"
    return " ".join(f"{sentence} {cite}" for sentence in _sentences(text))


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
    "whole of it, the last turn is what is asked now. Do not use outside knowledge. Offer as a fix only what "
    "a conversation whose outcome is 'fix confirmed' shows worked, and prefer a fix several of them agree "
    "on; if none shows a fix that worked, say so plainly and set supported to false. End every sentence with "
    "the ids it rests on in square brackets, and list the ids you used (without brackets) as citations."
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
    # a fix is offered only from a conversation whose fix was confirmed: the model's word is not enough
    rows = {r["dialogue_id"]: r["row"] for r in evidence.rows}
    confirmed = any(outcome(rows.get(known[c], {})) for c in valid)
    if result.supported and valid and not confirmed:
        notes = notes + ["the answer cites no conversation whose fix was confirmed to have worked"]
    supported = bool(result.supported and valid and not uncited and confirmed)
    return Answer(result.answer.strip(), valid, supported, f"llm/{llm.settings.model}", evidence, notes)


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
