"""The runtime's Definitions: the pipeline and the state it publishes, without the evaluation toolkit
(`evaluation.definitions` adds the toolkit's assets; `sarag_assets.definitions` is the code location)."""

import dagster as dg

from sarag_assets.defs.automation import (
    automation_sensor,
    cluster_refit_schedule,
    optimize_indices_schedule,
    stale_rows_backfill,
)
from sarag_assets.defs.catalog import catalogued
from sarag_assets.defs.indices import feature_clusters, lancedb_indices, ranking_calibration, value_mentions
from sarag_assets.defs.ingest import ingest_batch
from sarag_assets.defs.jobs import (
    cluster_job,
    govern_metadata_job,
    index_batch_job,
    ingest_batch_job,
    optimize_indices_job,
    ranking_calibration_job,
    refresh_rows_job,
    value_mentions_job,
)
from sarag_assets.defs.publication import publish_job, published_state, staged_state
from sarag_assets.defs.refinement import dialogue_graphs, pseudo_documents
from sarag_assets.defs.resources import (
    EmbedderResource,
    IngestConfig,
    SaragHome,
    Structuring,
)
from sarag_assets.defs.sensors import inbox_sensor
from sarag_assets.defs.structuring import (
    candidate_schemas,
    governed_metadata,
    validated_rows,
)
from sarag_assets.settings import Settings


def build_runtime_definitions(settings: Settings) -> dg.Definitions:
    """The graph (the executor the settings choose is added above, with `orchestration.executors`: one
    graph for one machine and for many)."""
    return dg.Definitions(
        assets=catalogued([
            ingest_batch, candidate_schemas, governed_metadata, validated_rows, pseudo_documents, dialogue_graphs,
            feature_clusters, value_mentions, ranking_calibration, lancedb_indices, staged_state, published_state,
        ], owners=owners(settings)),
        # the runner's order where the asset graph leaves steps free (orchestration/pipeline.py)
        jobs=[ingest_batch_job, govern_metadata_job, refresh_rows_job, index_batch_job, cluster_job, value_mentions_job,
              ranking_calibration_job, optimize_indices_job, publish_job],
        sensors=[inbox_sensor, automation_sensor],
        schedules=[stale_rows_backfill, cluster_refit_schedule, optimize_indices_schedule],
        resources={
            "sarag_home": SaragHome(),
            "ingest_config": IngestConfig(),
            "structuring": Structuring(),
            "embedder": EmbedderResource(),
        },
    )


def owners(settings: Settings) -> list[str]:
    return [o.strip() for o in settings.asset_owners.split(",")]
