"""Driving the real Definitions in-process: what `sarag demo`, `sarag eval` and the tests use.

It evaluates the real inbox sensor against a real instance, registers the partitions it asks for,
executes each run request's job on that instance, then the unpartitioned and stale downstream assets, in
the order the daemon's automation conditions would run them. With the `executor` setting at `celery`, the
runs' steps go to `sarag worker` processes and the jobs are rebuilt from `sarag_assets.definitions` (what
the workers load), not from the `defs` passed in. The runs,
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
    retried: list[str] = field(default_factory=list)  # "<failed run> -> <its re-execution>", on workers
    published: str | None = None  # the state id readers now see, when this run published one
    partitions: int = 0  # batches in the home after this run
    redone: list[str] = field(default_factory=list)  # each step this run took, with why, in one line


def land_and_process(
    defs: dg.Definitions, instance: dg.DagsterInstance, *, raise_on_error: bool = False, progress=None
) -> PipelineRun:
    """Land the inbox and bring every asset up to date, in the order the daemon's automation would.
    ``progress(label)``, when given, is told each run before it starts (the CLI shows it)."""
    launch = Launcher(defs, instance, raise_on_error=raise_on_error,
                      tags={RUNNER_TAG: f"{socket.gethostname()}:{os.getpid()}"})
    try:
        outcome = _land_and_process(defs, instance, launch, progress)
        outcome.retried = list(launch.retried)
        return outcome
    finally:
        launch.close()


def _land_and_process(defs: dg.Definitions, instance: dg.DagsterInstance, launch: "Launcher", progress) -> PipelineRun:
    step = progress or (lambda label: None)
    from sarag_assets.defs.partitions import conversation_batches
    from sarag_assets.defs.sensors import already_landed
    from sarag_assets.defs.structuring import stale_row_partitions

    outcome = PipelineRun()
    outcome.problems.extend(release_dead_runs(instance))
    sensor = defs.resolve_sensor_def("inbox_sensor")
    with dg.build_sensor_context(instance=instance, definitions=defs, resources=defs.resources) as context:
        result = sensor(context)
    from sarag_assets.core.ingest.landing import skipped_in_inbox

    resource = defs.resources.get("sarag_home")
    if resource is not None and hasattr(resource, "home"):
        outcome.problems.extend(skipped_in_inbox(resource.home()))
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    wanted = []
    for request in result.run_requests or []:
        if already_landed(instance, request.run_key):
            outcome.skipped.append(request.partition_key)
        else:
            wanted.append(request)
    if wanted:
        outcome.redone.append(f"ingested {len(wanted)} batch(es): new or changed files in the inbox")
    for request, run in launch.each(
            sensor.job_name, wanted, lambda r: r.partition_key, lambda r: f"ingesting batch {r.partition_key}", step,
            tags=lambda r: {**r.tags, RUN_KEY_TAG: r.run_key}):
        (outcome.batches if run.success else outcome.failed).append(request.partition_key)

    # A warehouse moved aside or replaced has lost batches the instance landed: land them again from their
    # snapshots (replace-by-batch), then structure and index them whatever their data versions say.
    lost = _batches_missing_from_warehouse(defs, instance, [
        key for key in instance.get_dynamic_partitions(conversation_batches.name)
        if key not in outcome.batches and key not in outcome.failed])
    if lost:
        outcome.problems.append(f"{len(lost)} landed batches were missing from the warehouse: ingested again from "
                                "their landed files")
    for key, run in launch.each("ingest_batch_job", lost, str, lambda k: f"ingesting batch {k} again", step):
        (outcome.batches if run.success else outcome.failed).append(key)

    why = _governance_due(defs, instance)
    if why:
        step("governing the metadata")
        outcome.redone.append(f"governed the metadata: {why}")
        if not launch.run("govern_metadata_job").success:
            outcome.failed.append("governed_metadata")
            return outcome
    keys = instance.get_dynamic_partitions(conversation_batches.name)
    outcome.partitions = len(keys)
    stale = stale_row_partitions(instance, keys)
    stale += [key for key in lost if key not in stale]
    if stale:
        outcome.redone.append(f"structured the rows of {len(stale)} batch(es): built against another M* or "
                              "gate setting, or never")
    for key, run in launch.each("refresh_rows_job", stale, str, lambda k: f"structuring rows of batch {k}", step):
        (outcome.refreshed if run.success else outcome.failed).append(key)

    unindexed_text = _batches_without_text_index(defs, keys)
    to_index = [key for key in keys if key in unindexed_text or key in lost or _outdated(
        instance, "lancedb_indices", ["validated_rows", "pseudo_documents", "dialogue_graphs"], key)]
    if to_index:
        outcome.redone.append(f"indexed {len(to_index)} batch(es): their rows, documents or graphs changed")
    for key, run in launch.each("index_batch_job", to_index, str, lambda k: f"indexing batch {k}", step):
        (outcome.indexed if run.success else outcome.failed).append(key)
    if _outdated(instance, "feature_clusters", ["validated_rows"], None):
        step("clustering")
        outcome.redone.append("clustered the rows: they changed")
        if not launch.run("cluster_job").success:
            outcome.failed.append("feature_clusters")
    if _outdated(instance, "value_mentions", ["validated_rows"], None):
        step("counting value mentions")
        outcome.redone.append("counted value mentions: the rows changed")
        if not launch.run("value_mentions_job").success:
            outcome.failed.append("value_mentions")
    if _outdated(instance, "ranking_calibration", ["raw_dialogues"], None):
        step("measuring the ranking's views")
        outcome.redone.append("looked whether the ranking's views are due a measurement: conversations landed")
        if not launch.run("ranking_calibration_job").success:
            outcome.failed.append("ranking_calibration")
    evaluation = ["table_quality_report", "preference_pairs"]
    if any(_outdated(instance, asset, ["validated_rows"], None) for asset in evaluation):  # M* changes refresh rows
        step("measuring table quality")
        outcome.redone.append("measured table quality and wrote preference pairs: the rows changed")
        if not launch.run("evaluation_job").success:
            outcome.failed.append("evaluation")
    _publish(defs, instance, outcome, step, launch)
    if _outdated(instance, "retrieval_evaluation", ["published_state"], None):
        step("evaluating retrieval")
        outcome.redone.append("evaluated retrieval: a new state was published")
        if not launch.run("retrieval_evaluation_job").success:
            outcome.failed.append("retrieval_evaluation")
    return outcome


class Launcher:
    """Runs a job of the graph, on the executor the settings choose. in_process: one run after another in
    this process. celery: each run orchestrated from the job's pointer (so workers can rebuild it), its steps
    executed by `sarag worker` processes, and up to `parallel_runs` batch runs at once, each orchestrated in
    a process of its own (Dagster's run set-up is not thread-safe: it reconfigures logging)."""

    def __init__(self, defs: dg.Definitions, instance: dg.DagsterInstance, *, raise_on_error: bool, tags: dict):
        self.defs, self.instance, self.raise_on_error, self.tags = defs, instance, raise_on_error, tags
        resource = defs.resources.get("sarag_home")
        settings = resource.settings() if resource is not None and hasattr(resource, "settings") else None
        self.on_workers = settings is not None and settings.executor == "celery"
        self.parallel = settings.parallel_runs if self.on_workers else 1
        self.retries = settings.run_retries if self.on_workers else 0
        self.retried: list[str] = []
        self._pool = None  # the processes that orchestrate batch runs at once, kept for the whole pipeline
        if self.on_workers:
            from sarag_assets.orchestration.executors import check_workers

            check_workers(settings)
            # Dagster creates a pool's limit row when a run first claims the pool. Runs that do it at the
            # same moment on PostgreSQL race: the loser's INSERT fails and its fallback UPDATE runs in the
            # aborted transaction, so the run fails (seen). One claim before the runs start avoids it.
            from sarag_assets.defs.resources import DUCKDB_POOL

            storage = instance.event_log_storage
            if DUCKDB_POOL not in storage.get_concurrency_keys():  # as Dagster's own claim does: once
                storage.initialize_concurrency_limit_to_default(DUCKDB_POOL)

    def run(self, job_name: str, partition_key: str | None = None, tags: dict | None = None):
        tags = {**self.tags, **(tags or {})}
        if not self.on_workers:
            return self.defs.resolve_job_def(job_name).execute_in_process(
                partition_key=partition_key, instance=self.instance, tags=tags, run_config=QUIET,
                raise_on_error=self.raise_on_error)
        return self._seen(run_on_workers(self.instance, job_name, partition_key, tags, self.raise_on_error,
                                         self.retries))

    def _seen(self, run: "WorkerRun") -> "WorkerRun":
        attempts = [*run.failed_runs, run.run_id]
        self.retried.extend(f"{failed} -> {then}" for failed, then in zip(attempts, attempts[1:]))
        return run

    def each(self, job_name: str, items: list, partition_of, label, step, tags=lambda item: {}):
        """(item, result) for a run of `job_name` per item, in the items' order; runs overlap on workers."""
        def counted(n: int, item) -> str:
            return f"{label(item)} ({n} of {len(items)})" if len(items) > 1 else label(item)

        if self.parallel == 1 or len(items) < 2:
            for n, item in enumerate(items, start=1):
                step(counted(n, item))
                yield item, self.run(job_name, partition_of(item), tags(item))
            return
        if self._pool is None:
            from concurrent.futures import ProcessPoolExecutor
            from multiprocessing import get_context

            self._pool = ProcessPoolExecutor(max_workers=self.parallel, mp_context=get_context("spawn"))
        ref = self.instance.get_ref()
        futures = [self._pool.submit(run_on_workers, ref, job_name, partition_of(item), {**self.tags, **tags(item)},
                                     self.raise_on_error, self.retries) for item in items]
        for n, (item, future) in enumerate(zip(items, futures), start=1):
            step(counted(n, item))
            yield item, self._seen(future.result())

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


@dataclass(frozen=True)
class WorkerRun:
    """What the runner needs to know of a run orchestrated for the workers."""

    run_id: str  # the last attempt: the run itself, or its last re-execution
    success: bool
    failed_runs: list[str] = field(default_factory=list)  # the attempts that failed before it, in order


def run_on_workers(instance, job_name: str, partition_key: str | None, tags: dict, raise_on_error: bool,
                   retries: int = 0) -> WorkerRun:
    """Orchestrate one run whose steps the Celery workers execute (`instance` may be its ref, from a pool).
    A failed run is re-executed from its failure up to `retries` times (Dagster's re-execution: the steps
    that succeeded are kept, the failed one and those after it run again), so a worker lost mid-step costs
    a retry of its step. The daemon's run retries do not apply: it retries only runs it launched itself."""
    import warnings

    # dagster-celery declares its step task again for every step it submits; Celery warns each time
    warnings.filterwarnings("ignore", message=".*already registered to a different callable.*")
    if not isinstance(instance, dg.DagsterInstance):
        instance = dg.DagsterInstance.from_ref(instance)
    if partition_key is not None:
        tags = {**tags, "dagster/partition": partition_key}
    job = dg.build_reconstructable_job("sarag_assets.definitions", "job_named", reconstructable_args=(job_name,))
    failed, options = [], None
    for attempt in range(retries + 1):
        with dg.execute_job(job, instance, run_config=QUIET, tags=tags, reexecution_options=options,
                            raise_on_error=raise_on_error and attempt == retries) as result:
            if result.success:
                return WorkerRun(result.run_id, True, failed)
            # A step whose worker process died never reported its end, so its pool slot would stay taken and
            # every later writing step wait for it. The run is over and none of its steps still runs.
            instance.event_log_storage.free_concurrency_slots_for_run(result.run_id)
            failed.append(result.run_id)
            options = dg.ReexecutionOptions.from_failure(result.run_id, instance)
    return WorkerRun(failed[-1], False, failed[:-1])


def _publish(defs: dg.Definitions, instance: dg.DagsterInstance, outcome: PipelineRun, step, launch: Launcher) -> None:
    """Stage, audit and publish what changed, unless a step failed: readers keep the last good state."""
    from sarag_assets.defs.publication import STAGED_FROM

    if outcome.failed:
        outcome.problems.append("nothing published: a step failed; readers keep the last published state")
        return
    if _outdated(instance, "staged_state", STAGED_FROM, None):
        why = "the indices, clusters, value mentions or ranking calibration changed"
    elif _outdated(instance, "published_state", ["staged_state"], None):
        why = "a staged state was not published yet"
    elif not _readable_state(defs):
        why = "the published state does not open"
    else:
        return
    step("auditing and publishing")
    outcome.redone.append(f"audited and published a state: {why}")
    resource = defs.resources.get("sarag_home")
    if resource is not None and hasattr(resource, "home"):
        # a batch whose index is out of step with the warehouse (an index step killed between two tables'
        # writes, a table damaged by hand) would fail the audit at every run: none of its inputs changed,
        # so nothing else indexes it again
        from sarag_assets.core import publication
        from sarag_assets.defs.partitions import conversation_batches

        partitions = set(instance.get_dynamic_partitions(conversation_batches.name))
        heal = [key for key in publication.batches_out_of_step(resource.home()) if key in partitions]
        for key, again in launch.each("index_batch_job", heal, str,
                                      lambda k: f"indexing batch {k} again (its index and warehouse disagreed)",
                                      step):
            (outcome.indexed if again.success else outcome.failed).append(key)
        if outcome.failed:
            outcome.problems.append("nothing published: a step failed; readers keep the last published state")
            return
        if heal:
            step("auditing and publishing")
    run = launch.run("publish_job")
    if run.success:
        outcome.published = _published_id(instance, run.run_id)
    else:
        outcome.failed.append("published_state")
        outcome.problems.append("nothing published: the staged state failed its audit; readers keep the last "
                                "published state (see staged_state's checks in the Dagster UI)")


def _governance_due(defs: dg.Definitions, instance: dg.DagsterInstance) -> str | None:
    """Why governed_metadata must run now, in a few words; None when M* is up to date."""
    from sarag_assets.defs.structuring import governance_settings

    latest = instance.get_latest_materialization_event(dg.AssetKey("governed_metadata"))
    if latest is None:
        return "never governed yet"
    if _outdated(instance, "governed_metadata", ["candidate_schemas"], None):
        return "new candidate columns"
    recorded = latest.asset_materialization.metadata.get("settings")
    now = governance_settings(defs.resources["sarag_home"].settings(), defs.resources["structuring"])
    if recorded is None or recorded.value != now:
        return f"its settings changed (now {now})"
    return None


def _published_id(instance: dg.DagsterInstance, run_id: str) -> str:
    """The state id the run's published_state materialization names."""
    records = instance.fetch_materializations(dg.AssetKey("published_state"), limit=1).records
    record = next(r for r in records if r.run_id == run_id)
    return record.asset_materialization.metadata["state_id"].value


def _readable_state(defs: dg.Definitions) -> bool:
    """Whether the home's published state opens (a damaged or deleted one is published again)."""
    from sarag_assets.core import publication

    return publication.readable(defs.resources["sarag_home"].home())


def _batches_missing_from_warehouse(defs: dg.Definitions, instance: dg.DagsterInstance, keys: list[str]) -> list[str]:
    """Batches that landed (their ingest run succeeded) and of which the warehouse holds neither a turn nor
    a quarantine row: it was moved aside, replaced or lost."""
    from sarag_assets.core import warehouse

    if not keys:
        return []
    home = defs.resources["sarag_home"].home()
    held: set[str] = set()
    if home.warehouse.is_file():
        with warehouse.connect(home.warehouse, read_only=True) as con:
            held = warehouse.landed_batch_keys(con)
    return [key for key in keys if key not in held and instance.get_runs(filters=dg.RunsFilter(
        job_name="ingest_batch_job", tags={"dagster/partition": key}, statuses=[dg.DagsterRunStatus.SUCCESS]),
        limit=1)]


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
