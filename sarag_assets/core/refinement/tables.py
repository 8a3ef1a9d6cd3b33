"""Refinement stage rows: pseudo-documents and dialogue graphs of a batch. No Dagster imports.

Like the structuring stage, a conversation whose backend call fails is reported and not written.
"""

from __future__ import annotations

import json

import polars as pl

from sarag_assets.core.structuring.interface import (
    ConversationInput,
    StructuringBackend,
    per_conversation,
    prepare_batch,
)
from sarag_assets.core.structuring.tables import (
    PREPARE_CHUNK,
    Failure,
    StageResult,
    failure_reason,
)
from sarag_assets.core.warehouse import conform, empty_frame


def _frame(table: str, rows: list[dict]) -> pl.DataFrame:
    return conform(table, pl.DataFrame(rows, infer_schema_length=None)) if rows else empty_frame(table)


def pseudo_document_rows(
    batch_key: str, conversations: list[tuple[ConversationInput, str]], backend: StructuringBackend
) -> StageResult:
    rows, failures = [], []
    answers = per_conversation(backend, lambda item: backend.pseudo_documents(item[0]), conversations)
    for (conversation, content_hash), docs in zip(conversations, answers):
        if isinstance(docs, Exception):  # recorded per conversation; the batch goes on
            failures.append(Failure(conversation.dialogue_id, content_hash, "pseudo_documents", failure_reason(docs)))
            continue
        rows.append({
            "batch_key": batch_key,
            "dialogue_id": conversation.dialogue_id,
            "content_hash": content_hash,
            "issue_queries": json.dumps(docs.issue_queries, ensure_ascii=False),
            "solution_queries": json.dumps(docs.solution_queries, ensure_ascii=False),
            "issue_document": docs.issue_document(),
            "solution_document": docs.solution_document(),
            "backend": docs.backend or backend.name,
        })
    return StageResult(_frame("pseudo_documents", rows), failures, {"conversations": len(conversations)})


def dialogue_graph_rows(
    batch_key: str, conversations: list[tuple[ConversationInput, str]], backend: StructuringBackend
) -> tuple[StageResult, pl.DataFrame]:
    """(nodes result, edges frame); the backend prepares PREPARE_CHUNK conversations at a
    time (`prepare_batch`), then builds each graph."""
    nodes, edges, failures = [], [], []
    for start in range(0, len(conversations), PREPARE_CHUNK):
        chunk = conversations[start : start + PREPARE_CHUNK]
        prepare_batch(backend, "dialogue_graph", [conversation for conversation, _ in chunk])
        _graph_rows(batch_key, chunk, backend, nodes, edges, failures)
    return (
        StageResult(_frame("graph_nodes", nodes), failures, {"conversations": len(conversations)}),
        _frame("graph_edges", edges),
    )


def _graph_rows(batch_key: str, conversations: list[tuple[ConversationInput, str]], backend: StructuringBackend,
                nodes: list[dict], edges: list[dict], failures: list[Failure]) -> None:
    graphs = per_conversation(backend, lambda item: backend.dialogue_graph(item[0]), conversations)
    for (conversation, content_hash), graph in zip(conversations, graphs):
        if isinstance(graph, Exception):
            failures.append(Failure(conversation.dialogue_id, content_hash, "dialogue_graph", failure_reason(graph)))
            continue
        made_by = graph.backend or backend.name
        common = {"batch_key": batch_key, "dialogue_id": conversation.dialogue_id, "content_hash": content_hash}
        for node in graph.nodes:
            nodes.append({**common, "node_id": node.node_id, "issue": node.issue, "answer": node.answer,
                          "turn_start": node.turn_start, "turn_end": node.turn_end, "backend": made_by})
        for edge in graph.edges:
            edges.append({**common, "source": edge.source, "target": edge.target, "relation": edge.relation,
                          "reason": edge.reason, "backend": made_by})
