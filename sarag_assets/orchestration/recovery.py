"""Recovering from runs whose process died: a run the runner started stays "started" in the instance when
its process is killed, and holds its slot of the duckdb_writer pool."""

import os
import socket

import dagster as dg

# Which process executes an in-process run ("<host>:<pid>"): a run whose process is gone was killed.
RUNNER_TAG = "sarag/runner"


def runner_tag() -> dict[str, str]:
    """The tag that names this process as the one executing a run."""
    return {RUNNER_TAG: f"{socket.gethostname()}:{os.getpid()}"}


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
