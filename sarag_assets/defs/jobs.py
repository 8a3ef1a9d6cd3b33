import dagster as dg


# What the inbox sensor launches for each new batch.
ingest_batch_job = dg.define_asset_job(
    "ingest_batch_job",
    selection=dg.AssetSelection.assets("raw_dialogues", "quarantine"),
    description="Parse and store one conversation batch.",
)
