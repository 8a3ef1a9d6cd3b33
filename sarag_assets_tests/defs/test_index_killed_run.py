"""A `sarag materialize` process SIGKILLed while it writes a batch into LanceDB, then run again; and one
SIGKILLed mid-structuring. Readers meanwhile answer from the state published before the crash.

The child process is the real command on a shared home and Dagster instance. The test watches LanceDB
(no hook in the code under test): as soon as `table_rows` holds the new batch, the first of the four
tables the index step writes, it kills the child's whole process group. At that moment the other tables
do not hold the batch yet, and the run never ended (it still holds its DuckDB-writer pool slot, which is
released as Dagster's run monitoring would). Running the pipeline again through Dagster must leave
every LanceDB table equal to its DuckDB source: no duplicate ids, no row of a superseded or unknown
conversation, no missing row.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from sarag_assets.core import publication
from sarag_assets.core.indices.store import TABLE_ROWS, TABLES, IndexStore
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets_tests.conftest import write_jsonl
from sarag_assets_tests.defs.test_retrieval_pipeline import (
    assert_index_matches_warehouse,
    chat,
    index_ids,
)

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 600  # only against a hung child; the test does not depend on timing


def dialogues_in(store: IndexStore, table: str) -> set[str]:
    return {row_id.split("#")[0] for row_id, _ in index_ids(store)[table]}


def assert_reads_published_state(home, state, state_id: str, conversations: set[str]) -> None:
    """search and sql, as a user runs them, answer from the published state `state_id`, whole."""
    assert state.id == state_id
    store = state.index_store(str(home.lancedb))
    assert {table: store.counts(table) for table in TABLES} == {table: state.counts[table] for table in TABLES}
    assert all(dialogues_in(store, table) == conversations for table in TABLES if table != "graph_nodes")
    env = {**os.environ, "SARAG_HOME": str(home.root), "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    for argv, expected in ((["sql", "--json", "SELECT count(*) FROM conversation_table"], [[len(conversations)]]),
                           (["search", "--json", "--k", "3", "the Lumo app crashes at login"], None)):
        done = subprocess.run([sys.executable, "-m", "sarag_assets.cli", *argv], env=env, capture_output=True,
                              text=True, timeout=HANG_GUARD_S)
        assert done.returncode == 0, done.stderr[-2000:]
        answer = json.loads(done.stdout)
        assert answer["published_state"] == state_id
        if expected is not None:
            assert answer["rows"] == expected
        else:
            assert {h["dialogue_id"] for h in answer["hits"]} <= conversations and answer["hits"][0]["dialogue_id"] == "c2"


def _week1_published(home, tmp_path, defs):
    """A Dagster instance with the project's config under tmp_path, and three conversations published."""
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    shutil.copyfile(REPO / "dagster.yaml", dagster_home / "dagster.yaml")  # the project's instance config
    instance = dg.DagsterInstance.from_config(str(dagster_home))
    write_jsonl(home.inbox / "week1.jsonl", [
        chat(1, "my Vortex X2 printer jams on every page", "clean the paper roller"),
        chat(2, "the Lumo app crashes with error E-4410 at login", "reinstall the app"),
        chat(3, "my Kestrel router drops wifi every evening", "move to channel 6"),
    ])
    return dagster_home, instance, land_and_process(defs, instance, raise_on_error=True).published


def _kill_materialize_when(home, tmp_path, dagster_home, reached, what: str) -> None:
    """Run the real `sarag materialize` in a child process and SIGKILL its whole group once `reached()`."""
    env = {**os.environ, "SARAG_HOME": str(home.root), "DAGSTER_HOME": str(dagster_home), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-m", "sarag_assets.cli", "materialize"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + HANG_GUARD_S
    try:
        while not reached():
            assert child.poll() is None, f"materialize ended before {what}:\n" + \
                child.stdout.read().decode(errors="replace")[-3000:]
            assert time.monotonic() < deadline, f"materialize never got to: {what}"
            time.sleep(0.01)
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL


def test_killing_materialize_mid_index_write_heals_on_rerun(home, tmp_path, defs):
    dagster_home, instance, published = _week1_published(home, tmp_path, defs)
    assert_index_matches_warehouse(home)

    products = ["Orbit speaker", "Vortex X2 printer", "Kestrel router", "Lumo app", "Nimbus tablet"]
    faults = ["will not pair over bluetooth", "shows error E-51{} on start", "loses its settings after update {}",
              "drains the battery overnight", "freezes when I open the menu"]
    week2 = [chat(100 + i, f"my {products[i % 5]} {faults[(i // 5) % 5].format(i)}", f"follow fix number {i}")
             for i in range(30)]
    # c2 lands again, changed: its week-1 rows must disappear everywhere
    week2.append(chat(2, "the Lumo app crashes with error E-4410 at login since version 3.2", "clear the app cache"))
    write_jsonl(home.inbox / "week2.jsonl", week2)
    new_ids = {f"c{100 + i}" for i in range(30)}

    watcher = IndexStore.open_for_read(str(home.lancedb))  # re-reads the latest table versions on every call
    # table_rows ids are the dialogue ids
    _kill_materialize_when(home, tmp_path, dagster_home, lambda: set(watcher.ids(TABLE_ROWS)) & new_ids,
                           "it wrote the new batch")

    # Killed halfway: the new batch reached table_rows but not every other table, and its run never ended.
    written = {table: bool(dialogues_in(watcher, table) & new_ids) for table in TABLES}
    assert written[TABLE_ROWS] and not all(written.values()), written
    unfinished = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert [r.job_name for r in unfinished] == ["index_batch_job"]

    # Before any re-run, readers answer from the state published before the crash, with its full counts.
    assert_reads_published_state(home, publication.current(home), published, {"c1", "c2", "c3"})

    # The dead run still holds its slot of the duckdb_writer pool (dagster.yaml: one step at a time); the
    # next runner sees its process is gone, marks it failed and frees the slot before running anything.
    (killed,) = unfinished
    assert instance.event_log_storage.get_concurrency_info("duckdb_writer").active_run_ids == {killed.run_id}

    # Run again: the interrupted batch is indexed anew, the state heals.
    killed_batch = killed.tags["dagster/partition"]
    again = land_and_process(defs, instance, raise_on_error=True)
    assert any(killed.run_id in p for p in again.problems)
    assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE
    assert killed_batch in again.indexed and not again.failed
    store = assert_index_matches_warehouse(home)  # no duplicate ids, no orphans, counts equal, per table
    for table in TABLES:
        assert new_ids <= dialogues_in(store, table), table
    assert [row for row in index_ids(store)[TABLE_ROWS] if row[0] == "c2"] == [("c2", killed_batch)]


def _step_started(instance: dg.DagsterInstance, step: str) -> bool:
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
        for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START):
            if entry.step_key == step:
                return True
    return False


def test_killing_materialize_mid_structuring_leaves_readers_on_the_published_state(home, tmp_path, defs):
    dagster_home, instance, published = _week1_published(home, tmp_path, defs)
    write_jsonl(home.inbox / "week2.jsonl", [chat(100 + i, f"my Orbit speaker shows error E-9{i}", f"apply fix {i}")
                                              for i in range(20)])

    # the new batch's extraction has begun
    _kill_materialize_when(home, tmp_path, dagster_home, lambda: _step_started(instance, "validated_rows"),
                           "it reached validated_rows")

    # The new batch is in the warehouse (ingested, its structuring cut off); readers see none of it.
    assert_reads_published_state(home, publication.current(home), published, {"c1", "c2", "c3"})

    healed = land_and_process(defs, instance, raise_on_error=True)
    assert healed.published and not healed.failed
    assert publication.current(home).counts["conversations"] == 23
    assert_index_matches_warehouse(home)
