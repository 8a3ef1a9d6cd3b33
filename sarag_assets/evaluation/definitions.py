"""The toolkit extends the runtime's Definitions with its own assets (group "evaluation"): they read what
the runtime materialized and published; nothing in the runtime knows them. `sarag eval` and the pipeline
benchmark run the whole graph through this object, as the code location does."""

import functools

import dagster as dg

from sarag_assets.defs.catalog import catalogued
from sarag_assets.defs.runtime import build_runtime_definitions, owners
from sarag_assets.evaluation.assets import evaluation_job, preference_pairs, table_quality_report
from sarag_assets.evaluation.retrieval_assets import retrieval_evaluation, retrieval_evaluation_job
from sarag_assets.orchestration.executors import executor_for
from sarag_assets.settings import Settings


def build_definitions(settings: Settings) -> dg.Definitions:
    """The runtime's graph, then the toolkit's assets and jobs (the order the UI and the runs list them),
    run by the executor the settings choose (in_process or celery)."""
    toolkit = dg.Definitions(
        assets=catalogued([table_quality_report, preference_pairs, retrieval_evaluation], owners=owners(settings)),
        jobs=[evaluation_job, retrieval_evaluation_job],
    )
    return dg.Definitions.merge(build_runtime_definitions(settings), toolkit,
                                dg.Definitions(executor=executor_for(settings)))


@functools.cache
def process_definitions() -> dg.Definitions:
    """The one object of this process (the code location's `defs` too), built at the first call with the
    settings then in force."""
    return build_definitions(Settings.load())
