"""Jobs: what the inbox sensor, the schedules and the in-process runner launch."""

import dagster as dg

from sarag_assets.defs.resources import SaragHome

# Per new batch, launched by the inbox sensor: parse, store, propose candidate columns.
ingest_batch_job = dg.define_asset_job(
    "ingest_batch_job",
    selection=dg.AssetSelection.assets(
        "raw_dialogues", "quarantine", "candidate_schemas", "pseudo_documents", "dialogue_graphs"
    ),
    description="Parse and store one conversation batch; propose its candidate columns, pseudo-documents and graphs.",
)

# Unpartitioned: evolve M* with every candidate not governed yet.
govern_metadata_job = dg.define_asset_job(
    "govern_metadata_job",
    selection=dg.AssetSelection.assets("governed_metadata"),
    description="Evolve the governed metadata with the candidates of new conversations.",
)

# Per batch: bring the batch's rows up to the current M* (only new columns are extracted).
refresh_rows_job = dg.define_asset_job(
    "refresh_rows_job",
    selection=dg.AssetSelection.assets("validated_rows"),
    description="Validate one batch's rows against the current governed metadata.",
)

# Per batch: write the batch's rows, pseudo-documents and graph nodes into LanceDB.
index_batch_job = dg.define_asset_job(
    "index_batch_job",
    selection=dg.AssetSelection.assets("lancedb_indices"),
    description="Replace one batch's rows in every LanceDB table.",
)

# Unpartitioned: cluster the current rows (assign new ones; refit when configured or on drift).
cluster_job = dg.define_asset_job(
    "cluster_job",
    selection=dg.AssetSelection.assets("feature_clusters"),
    description="Update the T-RAG feature clusters.",
)

# Unpartitioned: count the conversations mentioning each table value (the query module's trust in it).
value_mentions_job = dg.define_asset_job(
    "value_mentions_job",
    selection=dg.AssetSelection.assets("value_mentions"),
    description="Count how many current conversations mention each short value of the governed table.",
)


# Unpartitioned: measure which views vote in the ranking (again once the home has doubled).
ranking_calibration_job = dg.define_asset_job(
    "ranking_calibration_job",
    selection=dg.AssetSelection.assets("ranking_calibration"),
    description="Measure on the home's own conversations which views vote in its ranking.",
)


@dg.op(description="Compact the LanceDB tables and bring their indices up to date.")
def optimize_lancedb(context: dg.OpExecutionContext, sarag_home: SaragHome):
    from sarag_assets.core import publication
    from sarag_assets.core.indices.store import IndexStore

    home = sarag_home.home()
    store = IndexStore(str(home.lancedb), keep_versions_since=publication.keep_versions_since(home))
    report = store.optimize()
    context.log.info(f"optimized: {report}")


@dg.job(description="Daily LanceDB maintenance: compaction and index refresh.")
def optimize_indices_job():
    optimize_lancedb()
