"""The one Definitions object, loaded by workspace.yaml and `dagster dev`: the runtime's graph with the
evaluation toolkit's assets (`evaluation.definitions` composes them)."""

import dagster as dg

from sarag_assets.evaluation.definitions import build_definitions, process_definitions
from sarag_assets.settings import Settings

__all__ = ["build_definitions", "defs", "job_named"]


def job_named(name: str) -> dg.JobDefinition:
    """A job of the graph as the settings now in force build it: what a Celery worker (and a run
    started for the workers) reconstructs from its pointer (`build_reconstructable_job`)."""
    return build_definitions(Settings.load()).resolve_job_def(name)


# An invalid setting stops the code location from loading, with the one-line reason, rather than failing
# the first run; each run reads the settings again when it starts (defs/resources.py).
defs = process_definitions()
