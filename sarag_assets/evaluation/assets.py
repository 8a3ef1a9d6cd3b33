"""The toolkit's assets on the tables: reports and training data (group "evaluation").

- table_quality_report: the four table-quality measures against the generated ground truth, for the
  pipeline's table and the two structuring ablations (core/table_quality.py).
- preference_pairs: DPO pairs (validated row vs perturbed row) for training a table generator, a file per
  batch (evaluation/preference_pairs.py, backends/llm/training_pairs.py).
"""

import time

import dagster as dg
import polars as pl

from sarag_assets.backends.llm import KINDS, CallStats
from sarag_assets.core import warehouse
from sarag_assets.core.ingest.landing import landed_manifests
from sarag_assets.core.structuring import governance
from sarag_assets.core.structuring.tables import GATES_SKIPPED, conversations_from_raw
from sarag_assets.defs.conditions import ON_DEPENDENCY_CHANGE
from sarag_assets.defs.resources import (
    DUCKDB_POOL,
    EmbedderResource,
    SaragHome,
    Structuring,
)
from sarag_assets.evaluation.preference_pairs import update_pair_files
from sarag_assets.evaluation.table_quality import (
    ablation_tables,
    find_benchmarks,
    measure_benchmark,
    summary_markdown,
    table_from_rows,
    write_reports,
)

PREFERENCE_PAIRS_DIR = "preference_pairs"
LEGACY_PAIRS_FILE = "preference_pairs.jsonl"


def _pipeline_label(metadata, rows: pl.DataFrame) -> tuple[str, str]:
    fixed = governance.is_fixed(metadata)
    ungated = rows.height > 0 and rows.filter(pl.col("semantic_reason") == GATES_SKIPPED).height > 0
    if not fixed and not ungated:
        return "governed", "the pipeline's materialized table: governed metadata, both gates"
    switches = ", ".join(s for s, on in (("SARAG_GOVERNANCE=fixed", fixed), ("SARAG_GATES=off", ungated)) if on)
    return "pipeline", f"the pipeline's materialized table, built with {switches}"


@dg.asset(
    deps=["governed_metadata", "validated_rows"],
    group_name="evaluation",
    kinds={"duckdb"},
    pool=DUCKDB_POOL,
    automation_condition=ON_DEPENDENCY_CHANGE,
    description="Table quality against the generated benchmark(s) under <home>/generated: structural "
    "compliance, metadata effectiveness, value constraint satisfaction, semantic correctness, per column and "
    "overall, for the pipeline's table and the ablations without governance and without gates; reports in "
    "<home>/reports/table_quality.{md,json}.",
)
def table_quality_report(context: dg.AssetExecutionContext, sarag_home: SaragHome, structuring: Structuring,
                         embedder: EmbedderResource):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    benchmarks = find_benchmarks(home.root / "generated")
    if not benchmarks:
        return dg.MaterializeResult(metadata={
            "skipped": f"no generated benchmark (corpus.jsonl + truth.jsonl) under {home.root / 'generated'}: "
            "table quality needs ground truth, which user data does not have"})
    stats = CallStats()
    backend = structuring.backend(settings, stats)
    embed = embedder.embedder(settings).encode
    results, notes = [], []
    seconds = {"ablations": 0.0, "measures": 0.0}
    for benchmark in benchmarks:
        batch_keys = [m.batch_key for m in landed_manifests(home, benchmark.corpus_sha256)]
        if not batch_keys:
            notes.append(f"{benchmark.name}: its corpus was not landed in this home")
            continue
        with warehouse.connect(home.warehouse) as con:
            metadata = structuring.current_metadata(con, settings)
            raw = warehouse.current_rows(con, "raw_dialogues", batch_keys).sort("dialogue_id", "turn_index")
            rows = warehouse.current_rows(con, "validated_rows", batch_keys)
        if raw.height == 0:
            notes.append(f"{benchmark.name}: none of its conversations is current in this home")
            continue
        conversations = conversations_from_raw(raw)
        name, description = _pipeline_label(metadata, rows)
        stale = rows.filter(pl.col("metadata_version") != metadata.version)["dialogue_id"].n_unique()
        start = time.perf_counter()
        ablations = ablation_tables(conversations, metadata, backend)
        seconds["ablations"] += time.perf_counter() - start
        variants = [(name, description, metadata, table_from_rows(rows))] + [
            (key, text, ablations[key].metadata, table_from_rows(ablations[key].rows)) for key, text in (
                ("no_governance", "ablation: the fixed support schema instead of governed metadata, both gates "
                 "(core functions on the same conversations)"),
                ("no_gates", "ablation: the same metadata, every extracted value kept without the gates "
                 "(core functions on the same conversations)"))]
        run_notes = [f"{stale} conversations' rows were built against an older M* than v{metadata.version}"] \
            if stale else []
        run_notes += [f"{key}: {a.failures} conversations failed structuring" for key, a in ablations.items()
                      if a.failures]
        start = time.perf_counter()
        results.append(measure_benchmark(benchmark, variants, embed, notes=run_notes))
        seconds["measures"] += time.perf_counter() - start
    if not results:
        return dg.MaterializeResult(metadata={"skipped": "; ".join(notes)})
    md_path, json_path = write_reports(results, home.reports)
    first = results[0]
    return dg.MaterializeResult(metadata={
        "benchmarks": ", ".join(r.benchmark for r in results),
        "conversations": sum(r.conversations for r in results),
        "queries": sum(r.queries for r in results),
        "quality": dg.MetadataValue.md(summary_markdown(results)),
        **{f"{v.name}/{measure}": round(value, 4) for v in first.variants for measure, value in (
            ("structural_compliance", v.compliance["score"]), ("metadata_effectiveness", v.effectiveness),
            ("value_constraint_satisfaction", v.constraint_satisfaction),
            ("semantic_correctness", v.semantic_correctness)) if value is not None},
        "notes": "; ".join(notes) or "none",
        "report": dg.MetadataValue.path(str(md_path)),
        "report_json": dg.MetadataValue.path(str(json_path)),
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        **structuring.work_metadata(backend, stats),
    })


@dg.asset(
    deps=["governed_metadata", "validated_rows"],
    group_name="evaluation",
    kinds={"duckdb"},
    pool=DUCKDB_POOL,
    automation_condition=ON_DEPENDENCY_CHANGE,
    description="DPO-ready preference pairs for training a table generator: for every current validated row, "
    "perturbed rows (values dropped to null, random words of the conversation, swapped columns, a random "
    "sentence, a combination) as <home>/reports/preference_pairs/<batch_key>.jsonl (prompt, chosen, rejected); "
    "only the batches whose rows, M* or pair code changed are written again.",
)
def preference_pairs(context: dg.AssetExecutionContext, sarag_home: SaragHome, structuring: Structuring):
    settings = sarag_home.settings()
    home = settings.paths.ensure()
    (home.reports / LEGACY_PAIRS_FILE).unlink(missing_ok=True)  # one file for the home, before the per-batch files
    with warehouse.connect(home.warehouse) as con:
        warehouse.ensure_schema(con)
        metadata = structuring.current_metadata(con, settings)
        files = update_pair_files(con, metadata, home.reports / PREFERENCE_PAIRS_DIR)
    return dg.MaterializeResult(metadata={
        "pairs": files.pairs,
        "rows": files.rows,
        "rows_on_older_metadata": files.rows_on_older_metadata,
        "metadata_version": metadata.version,
        "pairs_per_perturbation": {kind: files.per_kind[kind] for kind in KINDS},
        "batches": files.batches,
        "batches_written": len(files.written),
        "batches_removed": len(files.removed),
        "path": dg.MetadataValue.path(str(files.directory)),
    })


# Materialized after every update of the tables (the runner, and the automation sensor via the conditions).
evaluation_job = dg.define_asset_job(
    "evaluation_job",
    selection=dg.AssetSelection.assets("table_quality_report", "preference_pairs"),
    description="Table-quality report and preference pairs from the current tables.",
)
