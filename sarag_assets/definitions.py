"""The one Definitions object, loaded by workspace.yaml and `dagster dev`."""

import dagster as dg

from sarag_assets.defs.ingest import ingest_batch
from sarag_assets.defs.jobs import ingest_batch_job
from sarag_assets.defs.resources import IngestConfig, SaragHome
from sarag_assets.defs.sensors import inbox_sensor

defs = dg.Definitions(
    assets=[ingest_batch],
    jobs=[ingest_batch_job],
    sensors=[inbox_sensor],
    resources={"sarag_home": SaragHome(), "ingest_config": IngestConfig()},
)
