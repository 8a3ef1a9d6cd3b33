"""The one Definitions object, loaded by workspace.yaml and `dagster dev`."""

import dagster as dg

from sarag_assets.defs.automation import automation_sensor, stale_rows_backfill
from sarag_assets.defs.ingest import ingest_batch
from sarag_assets.defs.jobs import govern_metadata_job, ingest_batch_job, refresh_rows_job
from sarag_assets.defs.resources import IngestConfig, SaragHome, Structuring
from sarag_assets.defs.sensors import inbox_sensor
from sarag_assets.defs.structuring import candidate_schemas, governed_metadata, validated_rows

defs = dg.Definitions(
    assets=[ingest_batch, candidate_schemas, governed_metadata, validated_rows],
    jobs=[ingest_batch_job, govern_metadata_job, refresh_rows_job],
    sensors=[inbox_sensor, automation_sensor],
    schedules=[stale_rows_backfill],
    resources={"sarag_home": SaragHome(), "ingest_config": IngestConfig(), "structuring": Structuring()},
)
