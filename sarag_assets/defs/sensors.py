"""The inbox sensor: every new or changed file in <home>/inbox becomes batch partitions and runs."""


import json

import dagster as dg

from sarag_assets.core.ingest.landing import scan_inbox
from sarag_assets.defs.jobs import ingest_batch_job
from sarag_assets.defs.partitions import conversation_batches
from sarag_assets.defs.resources import IngestConfig, SaragHome


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
    new_keys = [m.batch_key for m in scan.manifests if m.batch_key not in existing]
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(run_key=m.run_key, partition_key=m.batch_key, tags={"sarag/source_file": m.source_file})
            for m in scan.manifests
        ],
        dynamic_partitions_requests=[conversation_batches.build_add_request(new_keys)] if new_keys else [],
        cursor=json.dumps(scan.seen, sort_keys=True),
    )
