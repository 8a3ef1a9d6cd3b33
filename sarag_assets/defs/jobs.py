"""Jobs: what the inbox sensor, the schedules and the in-process runner launch."""

import dagster as dg

# Per new batch, launched by the inbox sensor: parse, store, propose candidate columns.
ingest_batch_job = dg.define_asset_job(
    "ingest_batch_job",
    selection=dg.AssetSelection.assets("raw_dialogues", "quarantine", "candidate_schemas"),
    description="Parse and store one conversation batch and propose its candidate columns.",
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
