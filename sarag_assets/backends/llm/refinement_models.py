"""The response models of the refinement calls (SDR): pseudo-documents and the dialogue graph, checked
against the conversation's turns."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from sarag_assets.backends.llm.response_models import (
    Line,
    Note,
    _bound,
    _required,
    _text_or_none,
)
from sarag_assets.core.structuring.interface import DialogueGraph, GraphEdge, GraphNode

# ---------------------------------------------------------------------------------------------------
# refinement response models (SDR)

_EMPTY = "empty conversation"
MAX_QUERIES = 8
_REDACTION = re.compile(r"\[(?:[A-Z][A-Z_]{1,20})\]|\b(?:user|agent)\d+\b")


def _queries(value: Any, what: str) -> list[str]:
    """A list of query strings: a lone string is a one-item list; redaction placeholders and speaker
    labels are removed; empty and repeated (case-insensitively) queries dropped; at most 8 kept."""
    if value is None:
        value = []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list of strings")
    out: dict[str, str] = {}
    for item in value:
        text = _text_or_none(item)
        if not isinstance(text, str):
            continue
        text = re.sub(r"\s+", " ", _REDACTION.sub(" ", text)).strip(" ,;:-")
        if text and text.lower() not in out:
            out[text.lower()] = text
    if not out:
        raise ValueError(f"{what} must hold at least one non-empty query")
    return list(out.values())[:MAX_QUERIES]


class PseudoDocumentsAnswer(BaseModel):
    """Predicted queries from both sides of this conversation."""

    issue_queries: list[str] = Field(
        description="3 to 8 short, distinct queries a user with this problem would type (what they needed)"
    )
    solution_queries: list[str] = Field(
        description="2 to 8 short, distinct queries this conversation's resolution answers (what fixed it, the cause, "
        "what was tried and failed as 'tried: <step> (did not help)')"
    )

    @field_validator("issue_queries", mode="before")
    @classmethod
    def _issue(cls, value: Any) -> list[str]:
        return _queries(value, "issue_queries")

    @field_validator("solution_queries", mode="before")
    @classmethod
    def _solution(cls, value: Any) -> list[str]:
        return _queries(value, "solution_queries")


class GraphNodeAnswer(BaseModel):
    node_id: Annotated[str, _required("node_id")] = Field(description="n0, n1, ... in conversation order")
    issue: Annotated[str, _required("issue")] = Field(description="the user's issue in this unit")
    answer: Note = Field("", description="the helper's answer to it; empty when nobody answered")
    turn_start: int = Field(description="first turn number of the unit")
    turn_end: int = Field(description="last turn number of the unit (inclusive)")


class GraphEdgeAnswer(BaseModel):
    source: Annotated[str, _required("edge endpoint")] = Field(description="node_id of the later unit")
    target: Annotated[str, _required("edge endpoint")] = Field(description="node_id of the earlier unit it refines or elaborates")
    relation: Literal["refines", "elaborates"] = Field(
        description="refines: the user narrowed or corrected the earlier issue; elaborates: the helper expanded the earlier solution"
    )
    reason: Line = Field("", description="one short line")

    @field_validator("relation", mode="before")
    @classmethod
    def _relation(cls, value: Any) -> Any:
        if isinstance(value, str):
            v = value.strip().lower()
            return {"refine": "refines", "refined": "refines", "elaborate": "elaborates", "elaborated": "elaborates"}.get(v, v)
        return value


class DialogueGraphAnswer(BaseModel):
    """The conversation's issue-solution units (nodes) and how later units relate to earlier ones."""

    n_turns: ClassVar[int | None] = None  # bound per call: the conversation's number of turns
    nodes: list[GraphNodeAnswer]
    edges: list[GraphEdgeAnswer] = Field(default_factory=list)

    @field_validator("edges", mode="before")
    @classmethod
    def _edges(cls, value: Any) -> Any:
        return [] if value is None else value

    @model_validator(mode="after")
    def _consistent(self) -> "DialogueGraphAnswer":
        n = type(self).n_turns
        errors: list[str] = []
        if not self.nodes:
            errors.append("nodes must hold at least one unit")
        seen: dict[str, GraphNodeAnswer] = {}
        for node in self.nodes:
            if node.node_id in seen:
                errors.append(f"node_id {node.node_id!r} is used twice; node ids must be unique")
            seen[node.node_id] = node
            if node.turn_start > node.turn_end:
                errors.append(f"node {node.node_id}: turn_start {node.turn_start} is after turn_end {node.turn_end}")
            if n is not None and not (0 <= node.turn_start < n and 0 <= node.turn_end < n):
                errors.append(f"node {node.node_id}: turns {node.turn_start}..{node.turn_end} are outside the conversation (turns 0..{n - 1})")
        position = {nid: k for k, nid in enumerate(self._order())}
        listing = ", ".join(seen) or "(none)"
        for i, edge in enumerate(self.edges):
            where = f"edges[{i}] {edge.source} -{edge.relation}-> {edge.target}"
            missing = [x for x in (edge.source, edge.target) if x not in seen]
            if missing:
                errors.append(f"{where}: no node {', '.join(repr(m) for m in missing)} (nodes: {listing})")
            elif edge.source == edge.target:
                errors.append(f"{where}: an edge connects two different units")
            elif position[edge.source] <= position[edge.target]:
                errors.append(f"{where}: the source must be the later unit and the target an earlier one")
        if errors:
            raise ValueError("; ".join(errors))
        return self

    def _order(self) -> list[str]:
        """Node ids in conversation order (by turn_start, then as listed)."""
        ranked = sorted(enumerate(self.nodes), key=lambda item: (item[1].turn_start, item[0]))
        return list(dict.fromkeys(node.node_id for _, node in ranked))

    def graph(self, dialogue_id: str, backend: str) -> DialogueGraph:
        """The interface model, ids renumbered n0, n1, ... in conversation order; repeated edges dropped."""
        by_id = {node.node_id: node for node in self.nodes}
        new_id = {old: f"n{k}" for k, old in enumerate(self._order())}
        nodes = [
            GraphNode(node_id=new_id[old], issue=by_id[old].issue, answer=by_id[old].answer,
                      turn_start=by_id[old].turn_start, turn_end=by_id[old].turn_end)
            for old in new_id
        ]
        edges: dict[tuple[str, str, str], GraphEdge] = {}
        for e in self.edges:
            key = (new_id[e.source], new_id[e.target], e.relation)
            edges.setdefault(key, GraphEdge(source=key[0], target=key[1], relation=e.relation, reason=e.reason))
        return DialogueGraph(dialogue_id=dialogue_id, nodes=nodes, edges=list(edges.values()), backend=backend)


@lru_cache(maxsize=256)
def _graph_model(n_turns: int) -> type[DialogueGraphAnswer]:
    return _bound(DialogueGraphAnswer, n_turns=n_turns)
