"""Driving the real Definitions in-process: what `sarag demo`, `sarag eval` and the tests use.

It evaluates the real inbox sensor against a real instance, registers the partitions it asks for,
executes each run request's job in-process on that instance, then the unpartitioned and stale
downstream assets, in the order the daemon's automation conditions would run them. The runs,
materializations and check results show in the Dagster UI afterwards. A request whose run key
already ran successfully is skipped, as the daemon would skip it.
"""


import os
import socket
from dataclasses import dataclass, field

import dagster as dg

RUN_KEY_TAG = "sarag/run_key"
# Which process executes an in-process run ("<host>:<pid>"): a run whose process is gone was killed.
RUNNER_TAG = "sarag/runner"
# In-process runs log to the console at WARNING: step-by-step DEBUG events stay in the instance (UI).
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@dataclass
class PipelineRun:
    batches: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # asked for, but already landed meanwhile
    refreshed: list[str] = field(default_factory=list)  # batches whose rows were brought up to the current M*
    indexed: list[str] = field(default_factory=list)  # batches written to LanceDB
    failed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    published: str | None = None  # the state id readers now see, when this run published one
    partitions: int = 0  # batches in the home after this run


def land_and_process(
    defs: dg.Definitions, instance: dg.DagsterInstance, *, raise_on_error: bool = False, progress=None
) -> PipelineRun:
    """Land the inbox and bring every asset up to date, in the order the daemon's automation would.
    ``progress(label)``, when given, is told each run before it starts (the CLI shows it)."""
    step = progress or (lambda label: None)
    from sarag_assets.defs.partitions import conversation_batches
    from sarag_assets.defs.sensors import already_landed
    from sarag_assets.defs.structuring import stale_row_partitions

    outcome = PipelineRun()
    outcome.problems.extend(release_dead_runs(instance))
    runner = {RUNNER_TAG: f"{socket.gethostname()}:{os.getpid()}"}
    sensor = defs.resolve_sensor_def("inbox_sensor")
    with dg.build_sensor_context(instance=instance, definitions=defs, resources=defs.resources) as context:
        result = sensor(context)
    from sarag_assets.core.ingest.landing import skipped_in_inbox

    resource = defs.resources.get("sarag_home")
    if resource is not None and hasattr(resource, "home"):
        outcome.problems.extend(skipped_in_inbox(resource.home()))
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    batch_job = defs.resolve_job_def(sensor.job_name)
    for request in result.run_requests or []:
        if already_landed(instance, request.run_key):
            outcome.skipped.append(request.partition_key)
            continue
        step(f"ingesting batch {request.partition_key}")
        run = batch_job.execute_in_process(
            partition_key=request.partition_key,
            instance=instance,
            tags={**request.tags, RUN_KEY_TAG: request.run_key, **runner},
            run_config=QUIET,
            raise_on_error=raise_on_error,
        )
        (outcome.batches if run.success else outcome.failed).append(request.partition_key)

    step("governing the metadata")
    govern = defs.resolve_job_def("govern_metadata_job").execute_in_process(
        instance=instance, run_config=QUIET, raise_on_error=raise_on_error, tags=runner
    )
    if not govern.success:
        outcome.failed.append("governed_metadata")
        return outcome
    keys = instance.get_dynamic_partitions(conversation_batches.name)
    outcome.partitions = len(keys)
    refresh = defs.resolve_job_def("refresh_rows_job")
    for key in stale_row_partitions(instance, keys):
        step(f"structuring rows of batch {key}")
        run = refresh.execute_in_process(
            partition_key=key, instance=instance, run_config=QUIET, raise_on_error=raise_on_error, tags=runner
        )
        (outcome.refreshed if run.success else outcome.failed).append(key)

    index = defs.resolve_job_def("index_batch_job")
    unindexed_text = _batches_without_text_index(defs, keys)
    for key in keys:
        if key in unindexed_text or \
                _outdated(instance, "lancedb_indices", ["validated_rows", "pseudo_documents", "dialogue_graphs"], key):
            step(f"indexing batch {key}")
            run = index.execute_in_process(
                partition_key=key, instance=instance, run_config=QUIET, raise_on_error=raise_on_error, tags=runner
            )
            (outcome.indexed if run.success else outcome.failed).append(key)
    if _outdated(instance, "feature_clusters", ["validated_rows"], None):
        step("clustering")
        run = defs.resolve_job_def("cluster_job").execute_in_process(
            instance=instance, run_config=QUIET, raise_on_error=raise_on_error, tags=runner
        )
        if not run.success:
            outcome.failed.append("feature_clusters")
    if _outdated(instance, "value_mentions", ["validated_rows"], None):
        step("counting value mentions")
        run = defs.resolve_job_def("value_mentions_job").execute_in_process(
            instance=instance, run_config=QUIET, raise_on_error=raise_on_error, tags=runner
        )
        if not run.success:
            outcome.failed.append("value_mentions")
    evaluation = ["table_quality_report", "preference_pairs"]
    if any(_outdated(instance, asset, ["validated_rows"], None) for asset in evaluation):  # M* changes refresh rows
        step("measuring table quality")
        run = defs.resolve_job_def("evaluation_job").execute_in_process(
            instance=instance, run_config=QUIET, raise_on_error=raise_on_error, tags=runner
        )
        if not run.success:
            outcome.failed.append("evaluation")
    _publish(defs, instance, outcome, step, raise_on_error=raise_on_error, tags=runner)
    if _outdated(instance, "retrieval_evaluation", ["published_state"], None):
        step("evaluating retrieval")
        run = defs.resolve_job_def("retrieval_evaluation_job").execute_in_process(
            instance=instance, run_config=QUIET, raise_on_error=raise_on_error, tags=runner
        )
        if not run.success:
            outcome.failed.append("retrieval_evaluation")
    return outcome


def _publish(defs: dg.Definitions, instance: dg.DagsterInstance, outcome: PipelineRun, step, **options) -> None:
    """Stage, audit and publish what changed, unless a step failed: readers keep the last good state."""
    from sarag_assets.defs.publication import STAGED_FROM

    if outcome.failed:
        outcome.problems.append("nothing published: a step failed; readers keep the last published state")
        return
    if not (_outdated(instance, "staged_state", STAGED_FROM, None)
            or _outdated(instance, "published_state", ["staged_state"], None) or not _readable_state(defs)):
        return
    step("auditing and publishing")
    run = defs.resolve_job_def("publish_job").execute_in_process(instance=instance, run_config=QUIET, **options)
    if run.success:
        outcome.published = run.asset_materializations_for_node("published_state")[0].metadata["state_id"].value
    else:
        outcome.failed.append("published_state")
        outcome.problems.append("nothing published: the staged state failed its audit; readers keep the last "
                                "published state (see staged_state's checks in the Dagster UI)")


def _readable_state(defs: dg.Definitions) -> bool:
    """Whether the home's published state opens (a damaged or deleted one is published again)."""
    from sarag_assets.core import publication

    return publication.readable(defs.resources["sarag_home"].home())


def _batches_without_text_index(defs: dg.Definitions, keys: list[str]) -> set[str]:
    """Batches whose conversations are in `table_rows` but not in `conversation_texts`: indexed by a sarag
    from before the text indices (or cut off between the two writes). They are indexed again."""
    from sarag_assets.core.indices.store import (
        CONVERSATION_TEXTS,
        TABLE_ROWS,
        IndexStore,
    )

    resource = defs.resources.get("sarag_home")
    if resource is None or not hasattr(resource, "home"):
        return set()
    store = IndexStore.open_for_read(str(resource.home().lancedb))
    if TABLE_ROWS not in store.tables():
        return set()
    return {key for key in keys if store.counts(TABLE_ROWS, key) != store.counts(CONVERSATION_TEXTS, key)}


def release_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Runs this runner started on this host whose process is gone (killed, machine crash) still show as
    started and hold their slot of the duckdb_writer pool, so every later writer step would wait forever.
    Mark them failed and free their slots, as Dagster's run monitoring does for daemon-launched runs."""
    host = socket.gethostname()
    released = []
    for run in instance.get_runs(filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING])):
        owner = run.tags.get(RUNNER_TAG, "")
        run_host, _, pid = owner.rpartition(":")
        if run_host != host or not pid.isdigit() or _alive(int(pid)):
            continue
        instance.report_run_failed(run)
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        released.append(f"run {run.run_id} ({run.job_name}) died with its process {pid}: marked failed, slots freed")
    return released


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _latest_storage_id(instance: dg.DagsterInstance, asset: str, partition: str | None) -> int | None:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None),
        limit=1,
    ).records
    return records[0].storage_id if records else None


def _outdated(instance: dg.DagsterInstance, asset: str, deps: list[str], partition: str | None) -> bool:
    """Never materialized, or some dependency (that partition, or any partition) materialized since."""
    own = _latest_storage_id(instance, asset, partition)
    if own is None:
        return all(_latest_storage_id(instance, d, partition) is not None for d in deps)
    return any((_latest_storage_id(instance, d, partition) or 0) > own for d in deps)
