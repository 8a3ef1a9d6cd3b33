"""Launching a job of the graph on the executor the settings choose: in this process, or orchestrated here
with its steps executed by `sarag worker` processes (Celery)."""

import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context

import dagster as dg

from sarag_assets.defs.resources import DUCKDB_POOL, SaragHome
from sarag_assets.orchestration.executors import check_workers
from sarag_assets.orchestration.pipeline import resource

# In-process runs log to the console at WARNING: step-by-step DEBUG events stay in the instance (UI).
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


class Launcher:
    """Runs a job of the graph, on the executor the settings choose. in_process: one run after another in
    this process. celery: each run orchestrated from the job's pointer (so workers can rebuild it), its steps
    executed by `sarag worker` processes, and up to `parallel_runs` batch runs at once, each orchestrated in
    a process of its own (Dagster's run set-up is not thread-safe: it reconfigures logging). `assets`, for
    Dagster's implicit asset job, selects what it materializes."""

    def __init__(self, defs: dg.Definitions, instance: dg.DagsterInstance, *, raise_on_error: bool, tags: dict):
        self.defs, self.instance, self.raise_on_error, self.tags = defs, instance, raise_on_error, tags
        settings = resource(defs, "sarag_home", SaragHome).settings()
        self.on_workers = settings.executor == "celery"
        self.parallel = settings.parallel_runs if self.on_workers else 1
        self.retries = settings.run_retries if self.on_workers else 0
        self.retried: list[str] = []
        self._pool = None  # the processes that orchestrate batch runs at once, kept for the whole pipeline
        if self.on_workers:
            check_workers(settings)
            # Dagster creates a pool's limit row when a run first claims the pool. Runs that do it at the
            # same moment on PostgreSQL race: the loser's INSERT fails and its fallback UPDATE runs in the
            # aborted transaction, so the run fails (seen). One claim before the runs start avoids it.
            storage = instance.event_log_storage
            if DUCKDB_POOL not in storage.get_concurrency_keys():  # as Dagster's own claim does: once
                storage.initialize_concurrency_limit_to_default(DUCKDB_POOL)

    def run(self, job_name: str, partition_key: str | None = None, tags: dict | None = None,
            assets: tuple[dg.AssetKey, ...] | None = None):
        tags = {**self.tags, **(tags or {})}
        if not self.on_workers:
            return self.defs.resolve_job_def(job_name).execute_in_process(
                partition_key=partition_key, instance=self.instance, tags=tags, run_config=QUIET,
                raise_on_error=self.raise_on_error, asset_selection=assets)
        return self._seen(run_on_workers(self.instance, job_name, partition_key, tags, self.raise_on_error,
                                         self.retries, assets))

    def _seen(self, run: "WorkerRun") -> "WorkerRun":
        attempts = [*run.failed_runs, run.run_id]
        self.retried.extend(f"{failed} -> {then}" for failed, then in zip(attempts, attempts[1:]))
        return run

    def each(self, job_name: str, items: list, partition_of, label, step, tags=lambda item: {},
             assets: tuple[dg.AssetKey, ...] | None = None):
        """(item, result) for a run of `job_name` per item, in the items' order; runs overlap on workers."""
        def counted(n: int, item) -> str:
            return f"{label(item)} ({n} of {len(items)})" if len(items) > 1 else label(item)

        if self.parallel == 1 or len(items) < 2:
            for n, item in enumerate(items, start=1):
                step(counted(n, item))
                yield item, self.run(job_name, partition_of(item), tags(item), assets)
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.parallel, mp_context=get_context("spawn"))
        ref = self.instance.get_ref()
        futures = [self._pool.submit(run_on_workers, ref, job_name, partition_of(item), {**self.tags, **tags(item)},
                                     self.raise_on_error, self.retries, assets) for item in items]
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
                   retries: int = 0, assets: tuple[dg.AssetKey, ...] | None = None) -> WorkerRun:
    """Orchestrate one run whose steps the Celery workers execute (`instance` may be its ref, from a pool).
    A failed run is re-executed from its failure up to `retries` times (Dagster's re-execution: the steps
    that succeeded are kept, the failed one and those after it run again), so a worker lost mid-step costs
    a retry of its step. The daemon's run retries do not apply: it retries only runs it launched itself."""
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
                            raise_on_error=raise_on_error and attempt == retries,
                            asset_selection=None if options else assets) as result:
            if result.success:
                return WorkerRun(result.run_id, True, failed)
            # A step whose worker process died never reported its end, so its pool slot would stay taken and
            # every later writing step wait for it. The run is over and none of its steps still runs.
            instance.event_log_storage.free_concurrency_slots_for_run(result.run_id)
            failed.append(result.run_id)
            options = dg.ReexecutionOptions.from_failure(result.run_id, instance)
    return WorkerRun(failed[-1], False, failed[:-1])
