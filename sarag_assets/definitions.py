"""The one Definitions object, loaded by workspace.yaml and `dagster dev`."""

import dagster as dg

from sarag_assets.defs.automation import (
    automation_sensor,
    cluster_refit_schedule,
    optimize_indices_schedule,
    stale_rows_backfill,
)
from sarag_assets.defs.catalog import catalogued
from sarag_assets.defs.evaluation import (
    evaluation_job,
    preference_pairs,
    table_quality_report,
)
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
from sarag_assets.defs.retrieval_evaluation import (
    retrieval_evaluation,
    retrieval_evaluation_job,
)
from sarag_assets.defs.sensors import inbox_sensor
from sarag_assets.defs.structuring import (
    candidate_schemas,
    governed_metadata,
    validated_rows,
)
from sarag_assets.orchestration.executors import executor_for
from sarag_assets.settings import Settings


def build_definitions(settings: Settings) -> dg.Definitions:
    """The graph, with the executor the settings choose (in_process or celery): one graph for one
    machine and for many."""
    return dg.Definitions(
        assets=catalogued([
            ingest_batch, candidate_schemas, governed_metadata, validated_rows, pseudo_documents, dialogue_graphs,
            feature_clusters, value_mentions, ranking_calibration, lancedb_indices, staged_state, published_state,
            table_quality_report, preference_pairs, retrieval_evaluation,
        ], owners=[o.strip() for o in settings.asset_owners.split(",")]),
        # the runner's order where the asset graph leaves steps free (orchestration/pipeline.py)
        jobs=[ingest_batch_job, govern_metadata_job, refresh_rows_job, index_batch_job, cluster_job, value_mentions_job,
              ranking_calibration_job, evaluation_job, publish_job, retrieval_evaluation_job, optimize_indices_job],
        sensors=[inbox_sensor, automation_sensor],
        schedules=[stale_rows_backfill, cluster_refit_schedule, optimize_indices_schedule],
        resources={
            "sarag_home": SaragHome(),
            "ingest_config": IngestConfig(),
            "structuring": Structuring(),
            "embedder": EmbedderResource(),
        },
        executor=executor_for(settings),
    )


def job_named(name: str) -> dg.JobDefinition:
    """A job of the graph as the settings now in force build it: what a Celery worker (and a run
    started for the workers) reconstructs from its pointer (`build_reconstructable_job`)."""
    return build_definitions(Settings.load()).resolve_job_def(name)


# An invalid setting stops the code location from loading, with the one-line reason, rather than failing
# the first run; each run reads the settings again when it starts (defs/resources.py).
defs = build_definitions(Settings.load())
