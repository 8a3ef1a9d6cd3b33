"""Structuring stage: candidate_schemas[batch] → governed_metadata → validated_rows[batch]."""


import dagster as dg
import polars as pl

from sarag_assets.backends.llm import CallStats
from sarag_assets.core import warehouse
from sarag_assets.core.checks import metadata_rules
from sarag_assets.core.structuring import governance
from sarag_assets.core.structuring.tables import (
    candidate_schema_rows,
    conversations_from_raw,
    failure_frame,
    govern,
    metadata_version_row,
    validated_row_outcomes,
    validated_row_records,
)
from sarag_assets.defs.conditions import GOVERN_ON_NEW_CANDIDATES, ON_DEPENDENCY_CHANGE
from sarag_assets.defs.partitions import conversation_batches
from sarag_assets.defs.resources import DUCKDB_POOL, SaragHome, Structuring
from sarag_assets.settings import Settings

METADATA_FINGERPRINT = "metadata_fingerprint"
GATES = "gates"


@dg.asset(
    partitions_def=conversation_batches,
    deps=["raw_dialogues"],
    group_name="structuring",
    kinds={"duckdb"},
    pool=DUCKDB_POOL,
    description="Normalized, scored candidate columns that every conversation of the batch proposes.",
    metadata={"table": "candidate_schemas", "partition_expr": "batch_key"},
)
def candidate_schemas(context: dg.AssetExecutionContext, sarag_home: SaragHome, structuring: Structuring):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    stats = CallStats()
    backend = structuring.backend(settings, stats)
    key = context.partition_key
    with warehouse.connect(home.warehouse) as con:
        warehouse.ensure_schema(con)
        raw = warehouse.read_batch(con, "raw_dialogues", key)
    result = candidate_schema_rows(key, conversations_from_raw(raw), backend)
    with warehouse.connect(home.warehouse) as con:
        warehouse.replace_batch(con, "candidate_schemas", key, result.frame)
        warehouse.replace_failures(con, key, "candidate_schema", failure_frame(key, result.failures, backend.name))
    return dg.MaterializeResult(metadata={
        "backend": backend.name,
        "conversations": result.stats["conversations"],
        "candidate_columns": result.stats["candidate_columns"],
        "distinct_names": result.frame["column_name"].n_unique() if result.frame.height else 0,
        "failed_conversations": len(result.failures),
        "dagster/row_count": result.frame.height,
        **structuring.work_metadata(backend, stats),
    })


@dg.asset(
    deps=["candidate_schemas"],
    group_name="structuring",
    automation_condition=GOVERN_ON_NEW_CANDIDATES,
    kinds={"duckdb"},
    pool=DUCKDB_POOL,
    description="The governed metadata M*: columns evolved by KEEP/EXPAND/ADD/MERGE/DELETE from every "
    "conversation's candidates, versioned (metadata_versions, metadata_operations); with SARAG_GOVERNANCE=fixed "
    "the fixed support schema instead.",
    check_specs=[
        dg.AssetCheckSpec("within_capacity", asset="governed_metadata", blocking=True,
                          description="M* holds no more columns than its capacity"),
        dg.AssetCheckSpec("names_snake_case_unique", asset="governed_metadata", blocking=True,
                          description="column names are snake_case and unique"),
        dg.AssetCheckSpec("types_canonical", asset="governed_metadata", blocking=True,
                          description="every column has one of the canonical types"),
    ],
)
def governed_metadata(context: dg.AssetExecutionContext, sarag_home: SaragHome, structuring: Structuring):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    stats = CallStats()
    backend = structuring.backend(settings, stats)
    mode = structuring.governance_mode(settings)
    with warehouse.connect(home.warehouse) as con:
        before = structuring.current_metadata(con, settings)
        latest_version = max(before.version, warehouse.latest_metadata_version(con))
        last_governed = governance.last_governed(con) if mode == "governed" and governance.is_fixed(before) else None
        next_seq = warehouse.next_operation_seq(con)
        corpus_size = warehouse.current_dialogue_count(con)
        before = before.model_copy(update={"min_support": governance.relative_min_support(
            before.min_support, settings.min_column_share, corpus_size)})
        # Deterministic order: landing time, then batch, then dialogue; only current versions not yet governed,
        # read a chunk at a time. The fixed schema reads no candidates (they stay unseen for a later switch back).
        unseen = [] if mode == "fixed" else warehouse.ungoverned_candidates(con)
        evolution = govern(before, unseen, backend, governance_mode=mode, latest_version=latest_version,
                           last_governed=last_governed, next_seq=next_seq)
    made_by = governance.FIXED_BACKEND if mode == "fixed" else backend.name
    after = evolution.metadata
    processed = pl.DataFrame(evolution.governed, schema=["dialogue_id", "content_hash", "batch_key"], orient="row",
                             ).with_columns(pl.lit(after.version, pl.Int32).alias("metadata_version"))
    with warehouse.connect(home.warehouse) as con:
        warehouse.save_governance(
            con,
            versions=pl.DataFrame([metadata_version_row(v, made_by) for v in evolution.versions]) if evolution.versions else None,
            operations=pl.DataFrame(evolution.operations, schema=warehouse.polars_schema("metadata_operations")),
            processed=processed, version=after.version, state_json=after.model_dump_json(),
            columns=[(c.name, c.type) for c in after.columns],
        )
    fingerprint = governance.fingerprint(after)
    ops = pl.DataFrame(evolution.operations, schema=warehouse.polars_schema("metadata_operations"))
    columns_md = "\n".join(
        f"| {c.name} | {c.type} | {c.support} | {c.mean_score:.2f} | {', '.join(c.aliases)} | {c.meaning[:80]} |"
        for c in after.columns
    )
    yield dg.MaterializeResult(
        data_version=dg.DataVersion(fingerprint),
        metadata={
            "version": after.version,
            "governance": mode,
            "settings": governance_settings(settings, structuring),
            METADATA_FINGERPRINT: fingerprint,
            "columns": len(after.columns),
            "capacity": after.capacity,
            "min_support": before.min_support,
            "conversations_governed": evolution.processed,
            "operations": dict(ops.group_by("operation").len().iter_rows()) if ops.height else {},
            "failed_conversations": len(evolution.failures),
            "pending_concepts": len(after.pending),
            "metadata": dg.MetadataValue.md(
                "| column | type | support | mean score | aliases | meaning |\n|---|---|---|---|---|---|\n" + columns_md
            ),
            **structuring.work_metadata(backend, stats),
        },
    )
    for outcome in metadata_rules([c.model_dump() for c in after.columns], after.capacity):
        yield dg.AssetCheckResult(check_name=outcome.name, passed=outcome.passed, description=outcome.description,
                                  metadata=outcome.metadata)


def governance_settings(settings, structuring: Structuring) -> str:
    """The settings M* is governed under: a change of one is a reason to govern again."""
    return (f"{structuring.governance_mode(settings)}, capacity {settings.metadata_capacity}, support "
            f"{settings.min_column_support}, share {settings.min_column_share:g}")


@dg.asset(
    partitions_def=conversation_batches,
    deps=["raw_dialogues", "governed_metadata"],
    group_name="structuring",
    automation_condition=ON_DEPENDENCY_CHANGE,
    kinds={"duckdb"},
    pool=DUCKDB_POOL,
    description="Every conversation's row against the current M*, each value through the semantic and the "
    "structural gate (stored long; the view conversation_table is the wide form); with SARAG_GATES=off every "
    "extracted value is kept and the gates are recorded as skipped.",
    metadata={"table": "validated_rows", "partition_expr": "batch_key"},
    check_specs=[
        dg.AssetCheckSpec("values_pass_both_gates", asset="validated_rows", blocking=True,
                          description="every stored non-null value passed the structural and the semantic gate"),
        dg.AssetCheckSpec("gate_rates", asset="validated_rows",
                          description="structural compliance and the share of values each gate nulled (information)"),
        dg.AssetCheckSpec("sparse_columns", asset="validated_rows",
                          description="columns null in 80% or more of the batch's rows, each with its share (warn)"),
        dg.AssetCheckSpec("structuring_failures", asset="validated_rows",
                          description="conversations whose structuring failed, with the reason (warn)"),
    ],
)
def validated_rows(context: dg.AssetExecutionContext, sarag_home: SaragHome, structuring: Structuring):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    stats = CallStats()
    backend = structuring.backend(settings, stats)
    key = context.partition_key
    gates = structuring.gates_on(settings)
    with warehouse.connect(home.warehouse) as con:
        metadata = structuring.current_metadata(con, settings)
        raw = warehouse.read_batch(con, "raw_dialogues", key)
        existing = warehouse.read_batch(con, "validated_rows", key)
    result = validated_row_records(key, conversations_from_raw(raw), metadata, existing, backend, gates=gates)
    with warehouse.connect(home.warehouse) as con:
        warehouse.replace_batch(con, "validated_rows", key, result.frame)
        warehouse.replace_failures(con, key, "extract_row", failure_frame(key, result.failures, backend.name))
        n_failed = warehouse.failed_conversations(con, key)
        stored = warehouse.read_batch(con, "validated_rows", key)
        warehouse.refresh_conversation_table(con, [(c.name, c.type) for c in metadata.columns])
    yield dg.MaterializeResult(metadata={
        "backend": backend.name,
        "metadata_version": metadata.version,
        METADATA_FINGERPRINT: governance.fingerprint(metadata),
        GATES: "on" if gates else "off",
        "conversations": stored["dialogue_id"].n_unique() if stored.height else 0,
        "extracted_cells": result.stats["extracted_cells"],
        "carried_over_cells": result.stats["carried_cells"],
        "non_null_values": stored.filter(pl.col("value").is_not_null()).height,
        "failed_conversations": len(result.failures),
        "dagster/row_count": stored.height,
        **structuring.work_metadata(backend, stats),
    })
    current = stored.filter(pl.col("metadata_version") == metadata.version)
    for outcome in validated_row_outcomes(current, n_failed, gates=gates):
        yield dg.AssetCheckResult(
            check_name=outcome.name, passed=outcome.passed, description=outcome.description, metadata=outcome.metadata,
            severity=dg.AssetCheckSeverity.WARN if outcome.name in ("sparse_columns", "structuring_failures")
            else dg.AssetCheckSeverity.ERROR,
        )


def stale_row_partitions(
    instance: dg.DagsterInstance, partition_keys: list[str], *, gates: bool | None = None
) -> list[str]:
    """Batches whose validated_rows were built against another M* than the current one (or never), or
    with the gates in another state than now (`gates`, default: the settings')."""
    gates_now = ("on" if Settings.load().gates else "off") if gates is None else ("on" if gates else "off")
    latest = instance.get_latest_materialization_event(dg.AssetKey("governed_metadata"))
    if latest is None:
        return []
    current = latest.asset_materialization.metadata[METADATA_FINGERPRINT].value
    stale = []
    for key in partition_keys:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("validated_rows"), asset_partitions=[key]), limit=1
        ).records
        built_against = records[0].asset_materialization.metadata.get(METADATA_FINGERPRINT) if records else None
        built_gates = records[0].asset_materialization.metadata.get(GATES) if records else None
        if built_against is None or built_against.value != current or (
                built_gates.value if built_gates is not None else "on") != gates_now:
            stale.append(key)
    return stale
