"""Scale-out on Dagster's own engines (issue 22): the same definitions, with the Dagster instance in
PostgreSQL and every step executed by `sarag worker` processes (dagster-celery), against the machine's
broker. Two worker processes, batch runs launched at once; the result must equal an in-process run of the
same corpus, and a worker killed mid-step must cost a retry, not a row."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from sarag_assets.core import publication
from sarag_assets.core.indices.store import TABLE_ROWS, TABLES, IndexStore
from sarag_assets.core.ingest.landing import copy_into_inbox
from sarag_assets.orchestration.executors import WORKER_LOST_AFTER_S
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets.evaluation.synthetic import write_corpus
from sarag_assets.query import Sarag
from sarag_assets.settings import Home
from sarag_assets_tests.defs.scale_out import SARAG, broker, instance_home, postgres_database, workers

BATCH = 5  # conversations per batch partition (8 partitions: enough to overlap, little to compute)


def _worker_env(root: Path, dagster_home: Path, pg_url: str, celery: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SARAG_", "DAGSTER_"))}
    return env | celery | {"SARAG_HOME": str(root), "DAGSTER_HOME": str(dagster_home), "DAGSTER_PG_URL": pg_url,
                           "SARAG_EXECUTOR": "celery", "SARAG_BATCH_SIZE": str(BATCH)}


def _use(monkeypatch, env: dict[str, str]) -> None:
    for name in list(os.environ):
        if name.startswith(("SARAG_", "DAGSTER_")) and name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        if name.startswith(("SARAG_", "DAGSTER_")):
            monkeypatch.setenv(name, value)


def _landed_home(root: Path, instance_dir: Path, pg_url: str, celery: dict[str, str], corpus_file: Path, monkeypatch):
    """A home with `corpus_file` in its inbox, this process set up as its workers will be, and the
    PostgreSQL instance: (the workers' environment, the instance)."""
    dagster_home = instance_home(instance_dir)
    env = _worker_env(root, dagster_home, pg_url, celery)
    _use(monkeypatch, env)
    copy_into_inbox(Home(root).ensure(), corpus_file)
    return env, dg.DagsterInstance.from_config(str(dagster_home))


def _step_spans(instance: dg.DagsterInstance) -> list[tuple[float, float, str, str, int]]:
    """(start, end, partition, step, pid) of every successful step, from the event log."""
    spans = []
    for run in instance.get_runs():
        started = {}
        for entry in instance.all_logs(run.run_id, of_type={dg.DagsterEventType.STEP_START,
                                                             dg.DagsterEventType.STEP_SUCCESS}):
            if entry.dagster_event_type == dg.DagsterEventType.STEP_START:
                started[entry.step_key] = (entry.timestamp, entry.dagster_event.pid)
            else:
                begin, pid = started[entry.step_key]
                spans.append((begin, entry.timestamp, run.tags.get("dagster/partition", ""), entry.step_key, pid))
    return spans


def _celery_workers(instance: dg.DagsterInstance, run_ids: list[str] | None = None) -> set[str]:
    """The Celery workers that executed steps of the runs (all runs by default)."""
    names = set()
    for run_id in run_ids if run_ids is not None else [run.run_id for run in instance.get_runs()]:
        for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
            worker = entry.dagster_event.engine_event_data.metadata.get("Celery worker")
            if worker is not None:
                names.add(worker.value)
    return names


# The warehouse tables a batch writes, and the key a row of each is unique by.
KEYS = {"raw_dialogues": "batch_key, dialogue_id, turn_index",
        "candidate_schemas": "batch_key, dialogue_id, column_name",
        "validated_rows": "batch_key, dialogue_id, column_name, metadata_version",
        "pseudo_documents": "batch_key, dialogue_id",
        "graph_nodes": "batch_key, dialogue_id, node_id",
        "graph_edges": "batch_key, dialogue_id, source, target, relation",
        "cluster_assignments": "dialogue_id, view, model_version",
        "value_mentions": "value"}


def _rows(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, int]]:
    """(rows, distinct keys) of every table a batch writes, and of the current conversations' turns."""
    counts = {table: con.execute(f"SELECT count(*), count(DISTINCT ({key})) FROM {table}").fetchone()
              for table, key in KEYS.items()}
    counts["current_dialogues"] = con.execute(
        "SELECT count(*), count(DISTINCT (dialogue_id, turn_index)) FROM current_dialogues").fetchone()
    return counts


def _snapshot(root: Path, queries: list[dict]) -> dict:
    """What a reader of the home sees: conversations, validated cells, rows per table, LanceDB ids, search
    results."""
    state = publication.current(Home(root))
    with duckdb.connect(str(state.warehouse), read_only=True) as con:
        rows = _rows(con)
        conversations = sorted(con.execute(
            "SELECT DISTINCT dialogue_id, content_hash FROM current_dialogues").fetchall())
        # every field of a validated row but its batch key (the same bytes land under the same key anyway)
        cells = sorted(con.execute(
            "SELECT dialogue_id, content_hash, column_name, coalesce(value, ''), coalesce(raw_value, ''), "
            "coalesce(evidence, ''), semantic_passed, coalesce(semantic_reason, ''), structural_passed, "
            "coalesce(structural_reason, ''), metadata_version, backend FROM validated_rows v "
            "WHERE metadata_version = (SELECT max(metadata_version) FROM validated_rows) "
            "AND (dialogue_id, batch_key) IN (SELECT dialogue_id, batch_key FROM current_dialogue_versions)").fetchall())
        mentions = sorted(con.execute("SELECT value, conversations FROM value_mentions").fetchall())
    store = IndexStore.open_for_read(str(Home(root).lancedb), versions=state.versions)
    ids = {table: sorted(store.ids(table)) for table in store.tables()}
    lance_rows = {table: store.counts(table) for table in store.tables()}
    with Sarag(root) as engine:
        found = [[hit.dialogue_id for hit in engine.search(q["turns"], k=10)] for q in queries]
    return {"conversations": conversations, "cells": cells, "rows": rows, "ids": ids, "lance_rows": lance_rows,
            "search": found, "mentions": mentions}


def _assert_no_duplicates(view: dict) -> None:
    """Counted without DISTINCT: every table's rows are unique by its key, every LanceDB id is there once."""
    doubled = {table: n for table, n in view["rows"].items() if n[0] != n[1]}
    assert not doubled, f"warehouse rows duplicated (rows, distinct keys): {doubled}"
    for table, ids in view["ids"].items():
        assert view["lance_rows"][table] == len(ids) == len(set(ids)), f"{table} holds duplicate ids"


def _every_asset_materialized(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, str]:
    """The assets that lack a materialization: for each partition (partitioned ones), at all (global ones)."""
    graph = defs.resolve_asset_graph()
    partitions = set(instance.get_dynamic_partitions("conversation_batches"))
    missing = {}
    for key in graph.materializable_asset_keys:
        if graph.get(key).partitions_def is not None:
            lacking = partitions - instance.get_materialized_partitions(key)
            if lacking or not partitions:
                missing[key.to_user_string()] = f"partitions {sorted(lacking)}"
        elif instance.get_latest_materialization_event(key) is None:
            missing[key.to_user_string()] = "never"
    return missing


def _sql_cli(root: Path, statement: str) -> list[list]:
    """`sarag sql --json` on the home, in a process of its own, with nothing of the test's environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SARAG_", "DAGSTER_"))}
    done = subprocess.run([SARAG, "sql", "--home", str(root), "--json", statement], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)["rows"]


COUNT_SQL = "SELECT count(*) AS turns, count(DISTINCT dialogue_id) AS conversations FROM current_dialogues"


@pytest.fixture
def corpus(tmp_path) -> Path:
    generated = tmp_path / "generated"
    write_corpus(generated, n=8 * BATCH, seed=11)
    return generated


@pytest.mark.slow
def test_celery_workers_build_the_same_home_as_one_process(tmp_path, corpus, defs, monkeypatch):
    queries = [json.loads(line) for line in (corpus / "queries.jsonl").read_text().splitlines()[:20]]
    assert len(queries) == 20

    with postgres_database(tmp_path) as pg_url, broker("redis") as celery:
        root = tmp_path / "scaled"
        env, instance = _landed_home(root, tmp_path / "scaled-instance", pg_url, celery,
                                     corpus / "corpus.jsonl", monkeypatch)
        with workers(env, tmp_path / "logs"):
            scaled = land_and_process(defs, instance)
        assert not scaled.failed and scaled.published, scaled.problems
        assert len(scaled.batches) == scaled.partitions == 8

        spans = _step_spans(instance)
        partition_steps = [s for s in spans if s[2]]
        overlapping = [(a, b) for a in partition_steps for b in partition_steps
                       if a[2] != b[2] and a[4] != b[4] and a[0] < b[1] and b[0] < a[1]]
        assert overlapping, "no two partitions' steps ran at the same time on different workers"
        assert len({s[4] for s in spans}) >= 2 and len(_celery_workers(instance)) == 2
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert len(instance.get_dynamic_partitions("conversation_batches")) == 8
        assert _every_asset_materialized(defs, instance) == {}
        scaled_view = _snapshot(root, queries)
    scaled_sql = _sql_cli(root, COUNT_SQL)

    reference = tmp_path / "one-process"
    _use(monkeypatch, {"SARAG_HOME": str(reference), "SARAG_BATCH_SIZE": str(BATCH)})
    copy_into_inbox(Home(reference).ensure(), corpus / "corpus.jsonl")
    with dg.instance_for_test() as local:
        alone = land_and_process(defs, local, raise_on_error=True)
    assert alone.partitions == 8 and alone.published
    reference_view = _snapshot(reference, queries)
    reference_sql = _sql_cli(reference, COUNT_SQL)

    assert len(scaled_view["conversations"]) == 8 * BATCH
    assert scaled_sql == reference_sql and scaled_sql[0][1] == 8 * BATCH
    _assert_no_duplicates(scaled_view)
    assert scaled_view["rows"] == reference_view["rows"]
    assert scaled_view["conversations"] == reference_view["conversations"]
    assert scaled_view["cells"] == reference_view["cells"] and scaled_view["cells"]
    assert len(scaled_view["ids"]) == len(TABLES) and all(scaled_view["ids"].values())  # nothing compared empty
    assert scaled_view["lance_rows"] == reference_view["lance_rows"]
    assert scaled_view["ids"] == reference_view["ids"]
    assert len(scaled_view["search"]) == 20 and all(len(found) == 10 for found in scaled_view["search"])
    assert scaled_view["search"] == reference_view["search"]
    assert scaled_view["mentions"] == reference_view["mentions"] and scaled_view["mentions"]  # a global asset


def _running_step(instance: dg.DagsterInstance, step_key: str) -> tuple[str, int] | None:
    """(run id, pid of the worker's pool process) of a step that has started and not ended."""
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
        events = instance.all_logs(run.run_id, of_type={dg.DagsterEventType.STEP_START,
                                                         dg.DagsterEventType.STEP_SUCCESS,
                                                         dg.DagsterEventType.STEP_FAILURE})
        mine = [e for e in events if e.step_key == step_key]
        if mine and mine[-1].dagster_event_type == dg.DagsterEventType.STEP_START:
            return run.run_id, mine[-1].dagster_event.pid
    return None


def _group_is_gone(pgid: int, wait_s: float = 10.0) -> bool:
    """No process of the group is left, but zombies (dead, not yet reaped by whoever inherited them)."""
    import psutil

    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for process in psutil.process_iter(["status"]):
            try:
                if os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE:
                    left.append(process.pid)
            except (ProcessLookupError, psutil.NoSuchProcess):
                pass
        if not left or time.monotonic() > deadline:
            return not left
        time.sleep(0.5)


@pytest.mark.slow
def test_a_worker_killed_mid_step_costs_a_retry_not_a_row(tmp_path, defs, monkeypatch):
    """The whole `sarag worker` (its main process and its pool process) is SIGKILLed while its index step
    writes: once the step's batch is in the first LanceDB table it writes. The run fails within the
    executor's lost-worker wait instead of waiting forever, `sarag materialize` re-executes it from its
    failure (Dagster's re-execution) on the other worker and publishes, and the home equals an in-process
    run."""
    generated = tmp_path / "generated"
    write_corpus(generated, n=3 * BATCH, seed=12)
    queries = [json.loads(line) for line in (generated / "queries.jsonl").read_text().splitlines()[:5]]
    with postgres_database(tmp_path) as pg_url, broker("rabbitmq") as celery:
        root = tmp_path / "home"
        env, instance = _landed_home(root, tmp_path / "instance", pg_url, celery,
                                     generated / "corpus.jsonl", monkeypatch)
        with workers(env, tmp_path / "logs") as started:
            names = {process.pid: f"w{i + 1}@{socket.gethostname()}" for i, process in enumerate(started)}
            materialize = subprocess.Popen([SARAG, "materialize"], env=env, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
            try:
                deadline, target = time.monotonic() + 600, None
                while target is None and materialize.poll() is None and time.monotonic() < deadline:
                    target = _running_step(instance, "lancedb_indices")
                    time.sleep(0.2)
                assert target is not None, "no index step was seen running"
                run_id, pid = target
                victim = next(p for p in started if p.pid == os.getpgid(pid))  # each worker is its own group
                batch = instance.get_run_by_id(run_id).tags["dagster/partition"]
                # killed mid-write: as soon as the step's batch reached table_rows, the first table it writes
                # (the watcher re-reads the latest table versions on every call)
                watcher = IndexStore.open_for_read(str(Home(root).lancedb))
                while not (TABLE_ROWS in watcher.tables() and watcher.ids(TABLE_ROWS, batch_key=batch)):
                    assert materialize.poll() is None and time.monotonic() < deadline, "the step never wrote"
                    time.sleep(0.01)
                killed_at = time.time()
                os.killpg(victim.pid, signal.SIGKILL)  # the worker's main process and its pool process
                written = {t: bool(t in watcher.tables() and watcher.ids(t, batch_key=batch)) for t in TABLES}
                print(f"killed with the batch written to: {sorted(t for t, done in written.items() if done)}")
                victim.wait(timeout=30)
                assert _group_is_gone(victim.pid)
                output, _ = materialize.communicate(timeout=900)
            finally:
                if materialize.poll() is None:
                    os.killpg(materialize.pid, signal.SIGKILL)
            assert materialize.returncode == 0, output
            failed = instance.get_run_by_id(run_id)
            assert failed.status == dg.DagsterRunStatus.FAILURE
            # failed promptly, and saying why: the executor stopped waiting for the lost worker
            ended = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)[-1].timestamp
            print(f"the run failed {ended - killed_at:.1f} s after the worker was killed")
            assert ended - killed_at < WORKER_LOST_AFTER_S + 60, f"the run failed {ended - killed_at:.0f} s after the kill"
            said = " ".join(str(e.dagster_event.event_specific_data) for e in instance.all_logs(run_id)
                            if e.dagster_event is not None and e.dagster_event.event_specific_data is not None)
            assert f"{names[victim.pid]} running step lancedb_indices has not answered" in said

            # Dagster's own retry: the failed run re-executed from its failure, on the worker that is left
            retries = [r for r in instance.get_runs(filters=dg.RunsFilter(job_name="index_batch_job"))
                       if r.parent_run_id == run_id]
            assert len(retries) == 1 and retries[0].status == dg.DagsterRunStatus.SUCCESS
            assert retries[0].tags["dagster/partition"] == failed.tags["dagster/partition"]
            survivor = next(names[p.pid] for p in started if p is not victim)
            assert _celery_workers(instance, [retries[0].run_id]) == {survivor}
            assert f"re-executed from its failure: {run_id} -> {retries[0].run_id}" in output
            assert f"published state: {publication.current(Home(root)).id} " in output  # published by that run
            index_runs = len(instance.get_runs(filters=dg.RunsFilter(job_name="index_batch_job")))
            again = subprocess.run([SARAG, "materialize"], env=env, capture_output=True, text=True, timeout=600)
            assert again.returncode == 0, again.stdout + again.stderr
            # the retry completed the batch: nothing was indexed again
            assert len(instance.get_runs(filters=dg.RunsFilter(job_name="index_batch_job"))) == index_runs
    retried_view = _snapshot(root, queries)

    _assert_no_duplicates(retried_view)
    assert len(retried_view["conversations"]) == 3 * BATCH
    current = {dialogue_id for dialogue_id, _ in retried_view["conversations"]}
    for table, ids in retried_view["ids"].items():
        assert {i.split("#")[0] for i in ids} == current, f"{table} lacks or keeps other conversations"

    # nothing missing either: the same rows, cells and ids as one process building the same corpus
    reference = tmp_path / "one-process"
    _use(monkeypatch, {"SARAG_HOME": str(reference), "SARAG_BATCH_SIZE": str(BATCH)})
    copy_into_inbox(Home(reference).ensure(), generated / "corpus.jsonl")
    with dg.instance_for_test() as local:
        assert land_and_process(defs, local, raise_on_error=True).published
    reference_view = _snapshot(reference, queries)
    for part in ("rows", "conversations", "cells", "ids", "lance_rows", "search", "mentions"):
        assert retried_view[part] == reference_view[part], part


@pytest.mark.slow
def test_materialize_on_celery_without_a_worker_or_broker_says_so_in_one_line(tmp_path):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SARAG_", "DAGSTER_"))}
    base |= {"SARAG_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(tmp_path / "dagster_home"),
             "SARAG_EXECUTOR": "celery"}
    cases = [({"SARAG_CELERY_BROKER": "redis://127.0.0.1:1/0"}, "does not answer")]  # nothing listens on port 1
    with broker("redis") as celery:
        cases.append((celery, "no `sarag worker` answers"))
        for settings, said in cases:
            done = subprocess.run([SARAG, "materialize"], env=base | settings, capture_output=True, text=True,
                                  timeout=300)
            assert done.returncode == 2, done.stdout + done.stderr
            assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        # a worker on another queue (another home's) answers the broker's ping, but never takes these steps
        other = base | celery | {"SARAG_CELERY_QUEUE": celery["SARAG_CELERY_QUEUE"] + "-other"}
        with workers(other, tmp_path / "logs", n=1):
            done = subprocess.run([SARAG, "materialize"], env=base | celery, capture_output=True, text=True,
                                  timeout=300)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.strip().splitlines() == [
            f"sarag: error: no `sarag worker` takes the queue '{celery['SARAG_CELERY_QUEUE']}' on "
            f"{celery['SARAG_CELERY_BROKER']}: start one with this home's settings (docs/deployment.md)"]


class _FakeResult:
    id, state, info = "t1", "STARTED", {"hostname": "w1@host", "pid": 1}

    def ready(self):
        return False


class _FakeApp:
    """A Celery app whose control channel reports what `held` says about the step."""

    def __init__(self):
        self.held, self.asked = True, 0
        self.control = self

    def inspect(self, destination, timeout, limit):
        assert destination == ["w1@host"]
        return self

    def query_task(self, task_id):
        self.asked += 1
        return {"w1@host": {task_id: ["active", {}]}} if self.held else None


def test_a_step_whose_worker_stops_answering_fails_after_the_wait_not_before():
    from sarag_assets.orchestration.executors import WatchedStep, WorkerLost

    app = _FakeApp()
    step = WatchedStep(_FakeResult(), app, "lancedb_indices", lost_after_s=0.3, check_every_s=0.0)
    assert not step.ready() and app.asked == 1  # the worker holds it
    app.held = False
    assert not step.ready()  # silent since now: not yet lost
    time.sleep(0.35)
    assert step.ready()
    with pytest.raises(WorkerLost, match="w1@host running step lancedb_indices has not answered"):
        step.get()
