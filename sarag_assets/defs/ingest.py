"""Ingestion stage: one landed batch → `raw_dialogues[batch]` and `quarantine[batch]`, with checks."""


import dagster as dg

from sarag_assets.core import warehouse
from sarag_assets.core.checks import raw_dialogue_rules
from sarag_assets.core.ingest.landing import BatchManifest
from sarag_assets.core.ingest.parsers import parse_file, refused_file
from sarag_assets.core.ingest.raw_dialogues import build_batch
from sarag_assets.defs.partitions import conversation_batches
from sarag_assets.defs.resources import DUCKDB_POOL, IngestConfig, SaragHome

RAW_DIALOGUE_CHECKS = [  # (name, blocking, description)
    ("records_accounted_for", True, "every record of the batch was either stored or quarantined with a reason"),
    ("turn_keys_unique", True, "(dialogue, turn index) is unique within each conversation version"),
    ("no_empty_text", True, "no stored turn is empty"),
    ("every_dialogue_has_user_turn", True, "every conversation has at least one user turn"),
    ("roles_user_or_agent", True, "every turn's role is user or agent"),
]


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "raw_dialogues",
            description="One row per turn of every landed conversation (speakers anonymized, PII redacted). "
            "Older versions of a re-landed conversation stay; the view current_dialogues shows the latest.",
            group_name="ingestion",
            kinds={"duckdb"},
            metadata={"table": "raw_dialogues", "partition_expr": "batch_key"},
        ),
        dg.AssetSpec(
            "quarantine",
            description="Every landed record that could not be parsed or broke a rule, with file, position and reason.",
            group_name="ingestion",
            kinds={"duckdb"},
            metadata={"table": "quarantine", "partition_expr": "batch_key"},
        ),
    ],
    check_specs=[dg.AssetCheckSpec(name, asset="raw_dialogues", blocking=blocking, description=description)
                 for name, blocking, description in RAW_DIALOGUE_CHECKS],
    partitions_def=conversation_batches,
    pool=DUCKDB_POOL,
)
def ingest_batch(context: dg.AssetExecutionContext, sarag_home: SaragHome, ingest_config: IngestConfig):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    manifest = BatchManifest.load(home, context.partition_key)
    if manifest.refusal:
        parsed = refused_file(home.root / manifest.snapshot, manifest.source_file, manifest.refusal)
    else:
        parsed = parse_file(
            home.root / manifest.snapshot,
            manifest.source_format,
            max_record_bytes=ingest_config.record_bytes(settings),
            source_name=manifest.source_file,
            record_range=(manifest.record_start, manifest.record_end),
        )
    batch = build_batch(parsed, manifest, redact=ingest_config.redacting(settings))

    with warehouse.connect(home.warehouse) as con:
        warehouse.replace_batch(con, "raw_dialogues", manifest.batch_key, batch.raw_dialogues)
        warehouse.replace_batch(con, "quarantine", manifest.batch_key, batch.quarantine)
        stored = warehouse.read_batch(con, "raw_dialogues", manifest.batch_key)
        stored_quarantine = warehouse.read_batch(con, "quarantine", manifest.batch_key)

    reasons = (
        stored_quarantine.group_by("reason").len().sort("len", descending=True).head(10)
        if stored_quarantine.height
        else None
    )
    yield dg.MaterializeResult(
        asset_key="raw_dialogues",
        metadata={
            "source_file": manifest.source_file,
            "source_format": batch.source_format,
            "records": f"{manifest.record_start}..{manifest.record_end} of chunk {manifest.chunk + 1}/{manifest.n_chunks}",
            "conversations": batch.conversations,
            "turns": stored.height,
            "redacted": ingest_config.redacting(settings),
            "dagster/row_count": stored.height,
        },
    )
    yield dg.MaterializeResult(
        asset_key="quarantine",
        metadata={
            "quarantined": stored_quarantine.height,
            "dagster/row_count": stored_quarantine.height,
            "top_reasons": dg.MetadataValue.md(
                "\n".join(f"- {r['len']} × {r['reason'][:160]}" for r in reasons.iter_rows(named=True))
                if reasons is not None
                else "none"
            ),
        },
    )
    for outcome in raw_dialogue_rules(stored, stored_quarantine, records_landed=batch.records_landed):
        yield dg.AssetCheckResult(
            asset_key="raw_dialogues",
            check_name=outcome.name,
            passed=outcome.passed,
            description=outcome.description,
            metadata=outcome.metadata,
        )
