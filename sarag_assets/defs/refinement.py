"""Refinement stage (SDR): pseudo_documents[batch] and dialogue_graphs[batch] from raw_dialogues[batch]."""

import dagster as dg

from sarag_assets.backends.llm import CallStats
from sarag_assets.core import warehouse
from sarag_assets.core.checks import dialogue_graph_rules, pseudo_document_rules
from sarag_assets.core.refinement.tables import (
    dialogue_graph_rows,
    pseudo_document_rows,
)
from sarag_assets.core.structuring.tables import conversations_from_raw, failure_frame
from sarag_assets.defs.partitions import conversation_batches
from sarag_assets.defs.resources import DUCKDB_POOL, SaragHome, Structuring


def _batch_conversations(home, key):
    with warehouse.connect(home.warehouse) as con:
        warehouse.ensure_schema(con)
        raw = warehouse.read_batch(con, "raw_dialogues", key)
    return conversations_from_raw(raw)


def _check_results(outcomes):
    for outcome in outcomes:
        yield dg.AssetCheckResult(check_name=outcome.name, passed=outcome.passed, description=outcome.description,
                                  metadata=outcome.metadata)


@dg.asset(
    partitions_def=conversation_batches,
    deps=["raw_dialogues"],
    group_name="refinement",
    kinds={"duckdb"},
    pool=DUCKDB_POOL,
    description="SDR: each conversation's issue-centric and solution-centric predicted queries, concatenated "
    "into an issue and a solution pseudo-document.",
    metadata={"table": "pseudo_documents", "partition_expr": "batch_key"},
    check_specs=[dg.AssetCheckSpec("both_documents_non_empty", asset="pseudo_documents", blocking=True,
                                 description="every conversation has a non-empty issue and solution document")],
)
def pseudo_documents(context: dg.AssetExecutionContext, sarag_home: SaragHome, structuring: Structuring):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    stats = CallStats()
    backend = structuring.backend(settings, stats)
    key = context.partition_key
    conversations = _batch_conversations(home, key)
    result = pseudo_document_rows(key, conversations, backend)
    with warehouse.connect(home.warehouse) as con:
        warehouse.replace_batch(con, "pseudo_documents", key, result.frame)
        warehouse.replace_failures(con, key, "pseudo_documents", failure_frame(key, result.failures, backend.name))
        stored = warehouse.read_batch(con, "pseudo_documents", key)
    failed = {f.dialogue_id for f in result.failures}
    yield dg.MaterializeResult(metadata={
        "backend": backend.name,
        "conversations": stored.height,
        "failed_conversations": len(failed),
        "mean_issue_queries": round(stored["issue_queries"].str.json_decode().list.len().mean() or 0, 2)
        if stored.height else 0,
        "mean_solution_queries": round(stored["solution_queries"].str.json_decode().list.len().mean() or 0, 2)
        if stored.height else 0,
        "dagster/row_count": stored.height,
        **structuring.work_metadata(backend, stats),
    })
    # Conversations that failed are reported by the failure table, not counted as empty documents.
    yield from _check_results(pseudo_document_rules(stored, {c.dialogue_id for c, _ in conversations} - failed))


@dg.asset(
    partitions_def=conversation_batches,
    deps=["raw_dialogues"],
    group_name="refinement",
    kinds={"duckdb"},
    pool=DUCKDB_POOL,
    description="SDR dialogue graphs: issue-solution units as nodes (graph_nodes), refines/elaborates edges "
    "(graph_edges); unconnected nodes are topic shifts or abandoned attempts.",
    metadata={"tables": "graph_nodes, graph_edges", "partition_expr": "batch_key"},
    check_specs=[
        dg.AssetCheckSpec("edge_endpoints_exist", asset="dialogue_graphs", blocking=True,
                          description="every edge joins two nodes of its own conversation"),
        dg.AssetCheckSpec("every_dialogue_has_a_node", asset="dialogue_graphs", blocking=True,
                          description="every current conversation of the batch has at least one graph node"),
    ],
)
def dialogue_graphs(context: dg.AssetExecutionContext, sarag_home: SaragHome, structuring: Structuring):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    stats = CallStats()
    backend = structuring.backend(settings, stats)
    key = context.partition_key
    conversations = _batch_conversations(home, key)
    nodes, edges = dialogue_graph_rows(key, conversations, backend)
    with warehouse.connect(home.warehouse) as con:
        warehouse.replace_batch(con, "graph_nodes", key, nodes.frame)
        warehouse.replace_batch(con, "graph_edges", key, edges)
        warehouse.replace_failures(con, key, "dialogue_graph", failure_frame(key, nodes.failures, backend.name))
        stored_nodes = warehouse.read_batch(con, "graph_nodes", key)
        stored_edges = warehouse.read_batch(con, "graph_edges", key)
    failed = {f.dialogue_id for f in nodes.failures}
    relations = dict(stored_edges.group_by("relation").len().iter_rows()) if stored_edges.height else {}
    yield dg.MaterializeResult(metadata={
        "backend": backend.name,
        "nodes": stored_nodes.height,
        "edges": stored_edges.height,
        "refines_edges": relations.get("refines", 0),
        "elaborates_edges": relations.get("elaborates", 0),
        "failed_conversations": len(failed),
        "dagster/row_count": stored_nodes.height,
        **structuring.work_metadata(backend, stats),
    })
    yield from _check_results(
        dialogue_graph_rules(stored_nodes, stored_edges, {c.dialogue_id for c, _ in conversations} - failed)
    )
