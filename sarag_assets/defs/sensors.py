"""The inbox sensor: every new or changed file in <home>/inbox becomes batch partitions and runs."""


import json

import dagster as dg

from sarag_assets.core.ingest.landing import scan_inbox
from sarag_assets.defs.jobs import ingest_batch_job
from sarag_assets.defs.partitions import conversation_batches
from sarag_assets.defs.resources import IngestConfig, SaragHome

RUN_KEY_TAGS = ("dagster/run_key", "sarag/run_key")  # the daemon's sensor runs, and the in-process runner's


def already_landed(instance: dg.DagsterInstance, run_key: str) -> bool:
    """Whether a run of this landing key (a file's content and chunk) succeeded, whoever launched it."""
    return any(instance.get_runs(filters=dg.RunsFilter(tags={tag: run_key}, statuses=[dg.DagsterRunStatus.SUCCESS]),
                                 limit=1) for tag in RUN_KEY_TAGS)


@dg.sensor(
    job=ingest_batch_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Lands new or changed files from <home>/inbox as conversation batches (run keys are content hashes).",
)
def inbox_sensor(context: dg.SensorEvaluationContext, sarag_home: SaragHome, ingest_config: IngestConfig):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    seen = json.loads(context.cursor) if context.cursor else {}
    scan = scan_inbox(home, seen, max_per_batch=ingest_config.batch_size(settings))
    for problem in scan.problems:
        context.log.warning(problem)
    existing = set(context.instance.get_dynamic_partitions(conversation_batches.name))
    # two files of the same bytes are one batch: asking Dagster to add its key twice fails every tick
    manifests = list({m.run_key: m for m in scan.manifests}.values())
    new_keys = list(dict.fromkeys(m.batch_key for m in manifests if m.batch_key not in existing))
    # Landing is idempotent by content whoever ran it (this sensor, `sarag demo`, a re-scan with no cursor):
    # Dagster itself skips only run keys this sensor launched.
    todo = [m for m in manifests if not already_landed(context.instance, m.run_key)]
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(run_key=m.run_key, partition_key=m.batch_key, tags={"sarag/source_file": m.source_file})
            for m in todo
        ],
        dynamic_partitions_requests=[conversation_batches.build_add_request(new_keys)] if new_keys else [],
        cursor=json.dumps(scan.seen, sort_keys=True),
    )
