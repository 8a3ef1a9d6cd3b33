"""The asset graph is the one statement of the pipeline: an asset added to a copy of the Definitions is run
by the runner of `sarag materialize`, after its upstream assets, and is not run again while nothing it
reads changed, with no other edit."""

import dagster as dg
import pytest

from sarag_assets.defs.partitions import conversation_batches
from sarag_assets.orchestration.pipeline import Pipeline
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets_tests.conftest import conversation, write_jsonl


def _latest(instance: dg.DagsterInstance, asset: str, partition: str | None = None) -> int | None:
    records = instance.fetch_materializations(dg.AssetRecordsFilter(
        asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None), limit=1).records
    return records[0].storage_id if records else None


@dg.asset(partitions_def=conversation_batches, deps=["raw_dialogues"])
def turn_tally(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    landed = _latest(context.instance, "raw_dialogues", context.partition_key) is not None
    return dg.MaterializeResult(metadata={"raw_dialogues_landed": landed})


@dg.asset(deps=["validated_rows", turn_tally])
def row_tally(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    keys = context.instance.get_dynamic_partitions(conversation_batches.name)
    structured = [k for k in keys if _latest(context.instance, "validated_rows", k) is not None]
    return dg.MaterializeResult(metadata={"batches": len(keys), "structured": len(structured)})


def with_throwaway_assets(defs: dg.Definitions) -> dg.Definitions:
    return dg.Definitions.merge(defs, dg.Definitions(assets=[turn_tally, row_tally]))


def test_the_steps_follow_the_graph_and_staleness_its_edges(defs):
    pipeline = Pipeline(with_throwaway_assets(defs))
    jobs = [step.job for step in pipeline.steps]
    assert jobs.index("govern_metadata_job") < jobs.index("refresh_rows_job") < jobs.index("index_batch_job")
    assert jobs.index("index_batch_job") < jobs.index("publish_job") < jobs.index("retrieval_evaluation_job")
    assert [step.assets for step in pipeline.steps[-2:]] == [("turn_tally",), ("row_tally",)]
    # governed_metadata feeds staged_state through the indices: only these make a new state due
    assert pipeline.upstream("staged_state") == ["feature_clusters", "lancedb_indices", "ranking_calibration",
                                                 "value_mentions"]
    assert pipeline.upstream("row_tally") == ["turn_tally", "validated_rows"]


@pytest.mark.slow  # the whole pipeline, twice
def test_an_asset_added_to_the_definitions_is_run_after_its_upstream(home, instance, defs):
    extended = with_throwaway_assets(defs)
    write_jsonl(home.inbox / "week1.jsonl", [conversation(
        f"t{i}", ("user", f"My router R{i} drops the connection every hour since the update."),
        ("agent", "Please update its firmware from the support page."), ("user", "That fixed it, thanks!"))
        for i in range(4)])

    first = land_and_process(extended, instance, raise_on_error=True)

    (batch,) = first.batches
    assert first.published and not first.failed
    assert first.redone[-2:] == ["materialized turn_tally: raw_dialogues changed (1 batch(es))",
                                 "materialized row_tally: turn_tally, validated_rows changed"]
    tally = instance.fetch_materializations(dg.AssetKey("row_tally"), limit=1).records[0]
    assert {k: v.value for k, v in tally.asset_materialization.metadata.items()} == {"batches": 1, "structured": 1}
    assert _latest(instance, "raw_dialogues", batch) < _latest(instance, "turn_tally", batch)
    assert _latest(instance, "validated_rows", batch) < _latest(instance, "turn_tally", batch) < tally.storage_id

    again = land_and_process(extended, instance, raise_on_error=True)

    assert (again.redone, again.failed) == ([], [])
    assert instance.fetch_materializations(dg.AssetKey("row_tally"), limit=1).records[0].storage_id == \
        tally.storage_id
