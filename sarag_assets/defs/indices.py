"""Retrieval side: feature_clusters (unpartitioned, incremental), value_mentions and ranking_calibration
(unpartitioned) and lancedb_indices[batch]."""

import dagster as dg

from sarag_assets.core import publication, warehouse
from sarag_assets.core.indices.cluster_updates import (
    save_cluster_update,
    update_clusters,
)
from sarag_assets.core.indices.clusters import ClusterModel, oversized_clusters
from sarag_assets.core.indices.documents import (
    batch_index_rows,
    encode_tables,
    linearized_rows,
)
from sarag_assets.core.indices.store import IndexStore, vector_health
from sarag_assets.core.indices.value_mentions import count_mentions, table_cells
from sarag_assets.query import calibration
from sarag_assets.defs.conditions import ON_DEPENDENCY_CHANGE
from sarag_assets.defs.partitions import conversation_batches
from sarag_assets.defs.resources import (
    DUCKDB_POOL,
    EmbedderResource,
    SaragHome,
    Structuring,
)


class ClusterRunConfig(dg.Config):
    refit: bool = False  # the daily schedule sets it: refit from scratch instead of assigning new rows
    k: int = 0  # clusters per view; 0 = chosen from the corpus size


def _current_table(con, columns):
    table = warehouse.conversation_table(con, has_columns=bool(columns))
    return linearized_rows(table, columns)


# Unpartitioned, read every current row, write the warehouse: rebuilt when any batch's rows changed.
_OVER_ALL_ROWS = dict(deps=["validated_rows"], group_name="retrieval", kinds={"duckdb"}, pool=DUCKDB_POOL,
                      automation_condition=ON_DEPENDENCY_CHANGE)


@dg.asset(
    **_OVER_ALL_ROWS,
    description="T-RAG: every current conversation's linearized row in three feature views (semantic, "
    "structural, heuristic), each clustered with KMeans; new rows join the nearest centroid, a refit "
    "happens on drift and daily.",
    check_specs=[dg.AssetCheckSpec("cluster_sizes", asset="feature_clusters", description="no cluster holds more than half the corpus (warn)")],
)
def feature_clusters(context: dg.AssetExecutionContext, config: ClusterRunConfig, sarag_home: SaragHome,
                     structuring: Structuring, embedder: EmbedderResource):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    with warehouse.connect(home.warehouse) as con:
        metadata = structuring.current_metadata(con, settings)
        rows = _current_table(con, [c.name for c in metadata.columns])
        stored = warehouse.latest_cluster_model(con)
        previous_assignments = warehouse.read_table(con, "cluster_assignments")
    previous = ClusterModel.from_bytes(stored) if stored else None
    if rows.height == 0:
        raise dg.Failure("no current conversations to cluster yet")
    encoder = embedder.embedder(settings)
    update = update_clusters(previous, rows, previous_assignments, refit=config.refit, k=config.k or None,
                             embedder=encoder)
    with warehouse.connect(home.warehouse) as con:
        save_cluster_update(con, update)
    sizes = update.clusters.sort("view", "cluster_id")
    big = oversized_clusters(update.clusters)
    yield dg.MaterializeResult(metadata={
        "action": update.action,
        "reasons": "; ".join(update.reasons) or "none",
        "model_version": update.model.model_version,
        "conversations": rows.height,
        "new_rows": update.new_rows,
        "changed_rows": update.changed_rows,
        **encoder.work_metadata(),
        "clusters_per_view": {v: int(n) for v, n in sizes.group_by("view").len().iter_rows()},
        "sizes": dg.MetadataValue.md("| view | cluster | size |\n|---|---|---|\n" + "\n".join(
            f"| {r['view']} | {r['cluster_id']} | {r['size']} |" for r in sizes.iter_rows(named=True))),
    })
    yield dg.AssetCheckResult(
        check_name="cluster_sizes", passed=big.height == 0, severity=dg.AssetCheckSeverity.WARN,
        description="no cluster holds more than half the corpus",
        metadata={"oversized": ", ".join(f"{r['view']}#{r['cluster_id']} ({r['share']:.0%})"
                                         for r in big.iter_rows(named=True)) or "none",
                  "largest_share": float(big["share"].max()) if big.height else
                  float((sizes["size"] / sizes["size"].sum() * sizes["view"].n_unique()).max()) if sizes.height else 0.0},
    )


@dg.asset(
    **_OVER_ALL_ROWS,
    description="For every short value of the governed table, how many current conversations mention it: "
    "the query module trusts a value named in a question as far as the rows holding it cover them.",
)
def value_mentions(context: dg.AssetExecutionContext, sarag_home: SaragHome, structuring: Structuring):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    with warehouse.connect(home.warehouse) as con:
        metadata = structuring.current_metadata(con, settings)
        names = [c.name for c in metadata.columns]
        cells, n_rows = table_cells(con, names)
        texts = (pair for chunk in warehouse.conversation_text_chunks(con) for pair in chunk)
        mentions = count_mentions(cells, n_rows, texts)  # streamed: one chunk of the texts in memory
    with warehouse.connect(home.warehouse) as con:
        warehouse.replace_table(con, "value_mentions", mentions)
    counts = mentions["conversations"]
    return dg.MaterializeResult(metadata={
        "values": mentions.height,
        "conversations": n_rows,
        "median_mentions": float(counts.median()) if mentions.height else 0.0,
    })


@dg.asset(
    deps=["raw_dialogues"],
    group_name="retrieval",
    kinds={"duckdb"},
    automation_condition=ON_DEPENDENCY_CHANGE,
    description="Which views vote in the home's ranking, measured on its own conversations: the asker's "
    "opening turns of up to 150 of them search a calibration home holding the rest of each, every view alone "
    "and together (query.calibration). Measured again when the home has doubled.",
)
def ranking_calibration(context: dg.AssetExecutionContext, sarag_home: SaragHome, embedder: EmbedderResource):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    with warehouse.connect(home.warehouse, read_only=True) as con:
        previous = warehouse.latest_ranking_calibration(con)
        count = warehouse.current_dialogue_count(con)
        if not settings.ranking_calibration or not calibration.due(previous and previous[0], count):
            reason = "off (ranking_calibration)" if not settings.ranking_calibration else \
                f"measured at {previous[0]} conversations; {count} now, not yet twice as many"
            return dg.MaterializeResult(metadata={"measured": False, "reason": reason})
        turns = warehouse.current_dialogue_turns(con)
    try:
        measured = calibration.calibrate(home.root, turns, home.root / "sarag.toml", embedder.embedder(settings))
    except calibration.CalibrationFailed as exc:  # a measurement missed: the ranking keeps its votes
        context.log.warning(str(exc))
        return dg.MaterializeResult(metadata={"measured": False, "reason": str(exc)})
    with warehouse.connect(home.warehouse) as con:
        warehouse.append_rows(con, "ranking_calibrations", measured.frame())
    return dg.MaterializeResult(metadata={
        "measured": True, "weights": measured.weights, "pseudo_queries": measured.queries,
        "ndcg_alone": measured.alone, "ndcg_chosen": measured.chosen if measured.chosen is not None else -1.0,
        "note": measured.note})


@dg.asset(
    partitions_def=conversation_batches,
    deps=["validated_rows", "pseudo_documents", "dialogue_graphs"],
    group_name="retrieval",
    kinds={"lancedb"},
    pool=DUCKDB_POOL,
    automation_condition=ON_DEPENDENCY_CHANGE,
    description="LanceDB tables for the batch's current conversations (text, vector, ids back to DuckDB), with "
    "native full-text indices: their own words (conversation_passages, conversation_texts) and the structured "
    "views (table_rows, issue_documents, solution_documents, graph_nodes).",
    check_specs=[
        dg.AssetCheckSpec("index_counts_match_sources", asset="lancedb_indices", blocking=True,
                          description="each LanceDB table holds exactly one row per source row of the batch"),
        dg.AssetCheckSpec("no_duplicate_ids", asset="lancedb_indices", blocking=True,
                          description="no id appears twice in a LanceDB table"),
        dg.AssetCheckSpec("vectors_unit_norm", asset="lancedb_indices",
                          description="the stored vectors have the model's dimension and unit norm (warn)"),
    ],
)
def lancedb_indices(context: dg.AssetExecutionContext, sarag_home: SaragHome, structuring: Structuring,
                    embedder: EmbedderResource):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    key = context.partition_key
    with warehouse.connect(home.warehouse) as con:
        metadata = structuring.current_metadata(con, settings)
        columns = [c.name for c in metadata.columns]
        current_ids = warehouse.current_dialogue_ids(con, key)
        table = warehouse.conversation_table(con, key)
        documents = warehouse.read_batch(con, "pseudo_documents", key)
        nodes = warehouse.read_batch(con, "graph_nodes", key)
        turns = warehouse.current_turns(con, key)
    encoder = embedder.embedder(settings)
    rows = batch_index_rows(linearized_rows(table, columns), documents, nodes, current_ids, turns,
                            getattr(encoder, "fits", None))
    store = IndexStore(str(home.lancedb), dimension=encoder.dimension,
                       keep_versions_since=publication.keep_versions_since(home))
    written, outcomes = {}, {}
    for name, frame in encode_tables(rows, encoder.encode).items():
        result = store.replace_batch(name, key, frame, superseded_dialogue_ids=current_ids)
        store.ensure_indices(name)
        written[name] = result.as_dict()
        stored_ids, stored_vectors = store.vectors(name, key)  # what LanceDB holds now, not what was sent
        outcomes[name] = (frame.height, len(stored_ids), len(stored_ids) - len(set(stored_ids)),
                          vector_health(stored_vectors, encoder.dimension))
    yield dg.MaterializeResult(metadata={
        "conversations": len(current_ids),
        "rows": {n: o[1] for n, o in outcomes.items()},
        "inserted": {n: w["inserted"] for n, w in written.items()},
        "updated": {n: w["updated"] for n, w in written.items()},
        "deleted": {n: w["deleted"] for n, w in written.items()},
        **encoder.work_metadata(),
        "lancedb_uri": str(home.lancedb),
    })
    mismatched = {n: f"{o[1]} stored vs {o[0]} source" for n, o in outcomes.items() if o[0] != o[1]}
    yield dg.AssetCheckResult(check_name="index_counts_match_sources", passed=not mismatched,
                              description="each table holds exactly one row per source row of the batch",
                              metadata={n: o[1] for n, o in outcomes.items()} | {"mismatched": str(mismatched or "none")})
    dupes = {n: o[2] for n, o in outcomes.items()}
    yield dg.AssetCheckResult(check_name="no_duplicate_ids", passed=not any(dupes.values()),
                              description="no id appears twice in a table", metadata=dupes)
    health = {n: o[3] for n, o in outcomes.items()}
    norms = [h[bound] for h in health.values() for bound in ("min_norm", "max_norm") if h[bound] is not None]
    yield dg.AssetCheckResult(
        check_name="vectors_unit_norm",
        passed=all(h["passed"] for h in health.values()),
        description="the vectors stored in LanceDB for the batch have the model's dimension and unit norm",
        metadata={"model_dimension": encoder.dimension,
                  "stored_dimension": {n: h["dimension"] for n, h in health.items()},
                  "off_norm_rows": {n: h["off_norm"] for n, h in health.items()},
                  "min_norm": min(norms) if norms else 1.0, "max_norm": max(norms) if norms else 1.0},
    )
