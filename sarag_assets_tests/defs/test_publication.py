"""Publish, then read: readers see only a published state whose checks passed, whatever is being written.

Everything here is real: the pipeline through Dagster on a temporary instance, the DuckDB and LanceDB
files, the CLI in separate reader processes. A half-built index is made the way a crash makes one: by
removing rows from a LanceDB table behind the pipeline's back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import lancedb
import pytest

from sarag_assets.cli import main
from sarag_assets.core import publication
from sarag_assets.core.indices.store import TABLES, IndexStore
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets.query.engine import HomeNotReady, Sarag, StateRetired
from sarag_assets.query.sql import run_select
from sarag_assets.settings import Home
from sarag_assets_tests.conftest import write_jsonl
from sarag_assets_tests.defs.test_retrieval_pipeline import chat

REPO = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 1200  # only against a hung child; nothing here depends on timing

WEEK1 = [
    chat(1, "my Vortex X2 printer jams on every page", "clean the paper roller"),
    chat(2, "the Lumo app crashes with error E-4410 at login", "reinstall the app"),
    chat(3, "my Kestrel router drops wifi every evening", "move to channel 6"),
]


def week2(n: int = 12) -> list[dict]:
    products = ["Orbit speaker", "Vortex X2 printer", "Kestrel router", "Lumo app"]
    return [chat(100 + i, f"my {products[i % 4]} fails with code E-{700 + i}", f"apply fix number {i}")
            for i in range(n)]


def conversations_in(state: publication.PublishedState) -> int:
    return run_select(state.warehouse, "SELECT count(*) FROM conversation_table").rows[0][0]


def pinned_counts(home, state: publication.PublishedState) -> dict[str, int]:
    store = state.index_store(str(home.lancedb))
    return {table: store.counts(table) for table in TABLES}


def test_nothing_is_read_before_a_state_is_published(home):
    with pytest.raises(HomeNotReady, match="sarag materialize"):
        Sarag(home)


@pytest.mark.slow
def test_a_failed_audit_leaves_the_published_state_untouched(home, instance, defs, capsys):
    write_jsonl(home.inbox / "week1.jsonl", WEEK1)
    first = land_and_process(defs, instance, raise_on_error=True)
    assert first.published
    before = publication.current(home)
    assert before.id == first.published and before.counts["conversations"] == 3
    assert before.passed and pinned_counts(home, before) == {t: before.counts[t] for t in TABLES}

    # A crash between two tables' writes: issue_documents lost a conversation the warehouse holds.
    lancedb.connect(str(home.lancedb)).open_table("issue_documents").delete("dialogue_id = 'c2'")
    run = defs.resolve_job_def("publish_job").execute_in_process(instance=instance, raise_on_error=False)
    assert not run.success
    evaluations = {e.check_name: e for e in run.get_asset_check_evaluations()}
    assert evaluations["no_duplicate_index_ids"].passed
    evaluation = evaluations["indices_match_warehouse"]
    assert not evaluation.passed
    assert "issue_documents: 0 rows the warehouse does not call for, 1 missing" in evaluation.metadata["detail"].value
    assert not run.asset_materializations_for_node("published_state")

    # Readers still get the published state, whole: its id, its counts, its answers.
    after = publication.current(home)
    assert after.id == before.id and after.as_dict() == before.as_dict()
    with Sarag(home) as engine:
        result = engine.retrieve("the Lumo app crashes at login", 3)
        assert result.published_state == before.id
        assert result.hits[0].dialogue_id == "c2"
        assert engine.publication.counts == before.counts
    assert pinned_counts(home, after)["issue_documents"] == 3
    assert main(["sql", "--home", str(home.root), "--json", "SELECT count(*) FROM conversation_table"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["published_state"] == before.id and printed["rows"] == [[3]]

    # The failed stage is kept for inspection but never promoted, even when asked to directly.
    failed = max(publication.kept(home), key=lambda s: s.id)
    assert failed.id != before.id and not failed.passed and failed.published_at is None
    with pytest.raises(publication.NotPublishable, match="issue_documents"):
        publication.promote(home, failed.id)
    assert publication.current(home).id == before.id

    # The next run finds the batch whose index and warehouse disagree, indexes it again (none of its inputs
    # changed, so nothing else would), and publishes: new batches are not held back by an old failure.
    batch = instance.get_dynamic_partitions("conversation_batches")[0]
    assert publication.batches_out_of_step(home) == [batch]
    healed = land_and_process(defs, instance, raise_on_error=True)
    assert healed.published and healed.published != before.id and healed.indexed == [batch]
    assert publication.batches_out_of_step(home) == []
    assert publication.current(home).counts == before.counts
    assert not any(s.id == failed.id for s in publication.kept(home))


@pytest.mark.slow
def test_an_open_reader_keeps_its_state_until_it_refreshes(home, instance, defs):
    write_jsonl(home.inbox / "week1.jsonl", WEEK1)
    first = land_and_process(defs, instance, raise_on_error=True)
    engine, stale = Sarag(home), Sarag(home)
    try:
        write_jsonl(home.inbox / "week2.jsonl", week2(4))
        second = land_and_process(defs, instance, raise_on_error=True)
        assert second.published and second.published != first.published
        # opened before the publication: the same state, whole, while the files on disk moved on
        assert engine.publication.id == first.published
        assert len(engine.rows) == 3
        assert {h.dialogue_id for h in engine.search("Orbit speaker fails with code E-700", 10)} <= {"c1", "c2", "c3"}
        assert engine.refresh() is True
        assert engine.publication.id == second.published and len(engine.rows) == 7
        assert engine.search("Orbit speaker fails with code E-700", 1)[0].dialogue_id == "c100"
        assert engine.refresh() is False
    finally:
        engine.close()

    # A third publication retires the first: two states are kept, and LanceDB keeps their versions.
    write_jsonl(home.inbox / "week3.jsonl", [chat(200, "my Nimbus tablet will not charge", "replace the cable")])
    third = land_and_process(defs, instance, raise_on_error=True)
    kept = publication.kept(home)
    assert [s.id for s in kept] == [second.published, third.published]
    assert not (publication.folder(home) / f"{first.published}.duckdb").exists()
    # a reader still holding the retired state is told so, in one line, and refreshes onto the newest
    with pytest.raises(StateRetired, match=f"state {first.published} .* retired"):
        stale.sql("SELECT count(*) FROM current_dialogues")
    with pytest.raises(StateRetired):  # reading a hit's origin or its conversation, too
        stale.origins(["c1"])
    with pytest.raises(StateRetired):
        stale.conversation("c1")
    assert stale.refresh() is True
    assert stale.sql("SELECT count(DISTINCT dialogue_id) FROM current_dialogues").rows == [(8,)]
    stale.close()
    oldest = min(pinned["committed_at"] for s in kept for pinned in s.lancedb.values())
    since = publication.keep_versions_since(home)
    assert since.isoformat() == oldest
    # A version a kept state names survives compaction and the most eager cleanup...
    state = publication.staged(home, second.published)
    IndexStore(str(home.lancedb), keep_versions_since=since).optimize(cleanup_older_than_days=0)
    assert pinned_counts(home, state) == {t: state.counts[t] for t in TABLES}
    # ...which, told nothing of the publications, would have removed it.
    IndexStore(str(home.lancedb)).optimize(cleanup_older_than_days=0)
    with pytest.raises(Exception, match="(?i)not found|version"):
        pinned_counts(home, state)


@pytest.mark.slow
def test_a_damaged_publication_gives_one_line_and_materialize_publishes_again(home, instance, defs, capsys):
    write_jsonl(home.inbox / "week1.jsonl", WEEK1)
    land_and_process(defs, instance, raise_on_error=True)
    capsys.readouterr()  # what the build printed (a model's loading bar, when this machine encodes on torch)
    pointer = publication.folder(home) / publication.CURRENT
    for damage in (b"missing-state\n", b"../../etc\n", b"", b"\x00\xff garbage\n"):
        pointer.write_bytes(damage)
        for argv in (["search", "--home", str(home.root), "printer"], ["ask", "--home", str(home.root), "printer"],
                     ["show", "--home", str(home.root), "w1-0"], ["sql", "--home", str(home.root), "SELECT 1"]):
            assert main(argv) == 2, (damage, argv)
            err = capsys.readouterr().err.strip()
            assert err.count("\n") == 0 and err.startswith("sarag: error: ") and "sarag materialize" in err, err
    again = land_and_process(defs, instance, raise_on_error=True)  # after the last damage: bytes, not text
    assert again.published and publication.current(home).id == again.published


def _answers(home) -> tuple:
    with Sarag(home) as reader:
        return (reader.sql("SELECT count(*) FROM current_dialogue_versions").rows,
                [h.dialogue_id for h in reader.search("my printer jams on every page", k=3)])


@pytest.mark.slow
def test_the_advice_for_a_damaged_home_works_moving_its_stores_aside_rebuilds_them(home, instance, defs, capsys):
    """What every damage message says to run: move warehouse.duckdb and lancedb/ aside, `sarag materialize`."""
    import shutil

    write_jsonl(home.inbox / "week1.jsonl", WEEK1)
    first = land_and_process(defs, instance, raise_on_error=True)
    before = _answers(home)
    aside = home.root.parent / "aside"
    aside.mkdir()
    shutil.move(str(home.warehouse), str(aside / "warehouse.duckdb"))
    shutil.move(str(home.lancedb), str(aside / "lancedb"))
    rebuilt = land_and_process(defs, instance, raise_on_error=True)
    assert not rebuilt.failed and rebuilt.published and rebuilt.published != first.published
    assert rebuilt.batches == first.batches  # landed again from their snapshots, by the same keys
    assert any("missing from the warehouse" in p for p in rebuilt.problems)
    assert _answers(home) == before
    again = land_and_process(defs, instance, raise_on_error=True)  # and then nothing is redone
    assert not again.batches and not again.indexed and not again.published


@pytest.mark.slow
def test_a_lancedb_folder_from_elsewhere_is_named_not_served(home, instance, defs, tmp_path, monkeypatch, capsys):
    """Another home's LanceDB folder has the same table versions but other rows: the published state's
    record says how many rows each pinned version holds, and readers check it."""
    import shutil

    write_jsonl(home.inbox / "week1.jsonl", WEEK1)
    land_and_process(defs, instance, raise_on_error=True)
    other = Home(tmp_path / "other").ensure()
    monkeypatch.setenv("SARAG_HOME", str(other.root))
    write_jsonl(other.inbox / "week1.jsonl", WEEK1[:2])
    with dg.instance_for_test() as elsewhere:
        land_and_process(defs, elsewhere, raise_on_error=True)
    monkeypatch.setenv("SARAG_HOME", str(home.root))
    shutil.rmtree(home.lancedb)
    shutil.copytree(other.lancedb, home.lancedb)
    for argv in (["search", "--home", str(home.root), "printer"], ["ask", "--home", str(home.root), "printer"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "replaced or damaged" in err and "sarag materialize" in err, err


def _materialize(home, dagster_home: Path) -> subprocess.Popen:
    env = {**os.environ, "SARAG_HOME": str(home.root), "DAGSTER_HOME": str(dagster_home), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "sarag_assets.cli", "materialize"], cwd=dagster_home, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def _shared_instance(tmp_path: Path) -> tuple[dg.DagsterInstance, Path]:
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text())
    return dg.DagsterInstance.from_config(str(dagster_home)), dagster_home


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
def test_a_stage_killed_while_copying_leaves_no_part_file_after_the_next_run(tmp_path):
    from sarag_assets.core import warehouse

    home = Home(tmp_path / "home").ensure()
    with warehouse.connect(home.warehouse) as con:
        warehouse.ensure_schema(con)  # and a table big enough that its copy takes a while to kill it in
        con.execute("CREATE TABLE ballast AS SELECT range AS i, repeat('x', 200) || range::VARCHAR AS s "
                    "FROM range(1500000)")
    stager = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from sarag_assets.core import publication; "
         "from sarag_assets.settings import Home; publication.stage(Home(Path(sys.argv[1])))", str(home.root)],
        env={**os.environ, "PYTHONPATH": str(REPO)})
    folder = publication.folder(home)
    deadline = time.monotonic() + HANG_GUARD_S
    while not list(folder.glob("*.duckdb.part.wal")):  # DuckDB's log of the copy being written
        assert stager.poll() is None, "the stage ended before it could be killed while copying"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    stager.kill()
    stager.wait(timeout=60)
    assert {p.name.split(".", 1)[1] for p in folder.glob("*.part*")} >= {"duckdb.part", "duckdb.part.wal"}

    staged = publication.stage(home)  # the next run
    assert sorted(p.name for p in folder.iterdir()) == [f"{staged.id}.duckdb", f"{staged.id}.json"]


@pytest.mark.slow
def test_twenty_reader_processes_during_a_materialization_never_fail(home, tmp_path, defs):
    instance, dagster_home = _shared_instance(tmp_path)
    write_jsonl(home.inbox / "week1.jsonl", WEEK1)
    first = land_and_process(defs, instance, raise_on_error=True).published
    write_jsonl(home.inbox / "week2.jsonl", week2(12))
    write_jsonl(home.inbox / "week2b.jsonl", week2(16)[12:])

    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    readers, logs = [], []
    for i in range(20):
        mode = "search" if i % 2 else "sql"
        logs.append((mode, tmp_path / f"reader{i}.jsonl"))
        readers.append(subprocess.Popen(
            [sys.executable, "-m", "sarag_assets_tests.defs.publication_reader", str(home.root), mode, str(stop),
             str(logs[-1][1])], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + HANG_GUARD_S
    while not all(log.exists() and log.read_text() for _, log in logs):  # every reader has its model loaded
        assert time.monotonic() < deadline and all(r.poll() is None for r in readers)
        time.sleep(0.2)
    started = time.time()
    writer = _materialize(home, dagster_home)
    try:
        output, _ = writer.communicate(timeout=HANG_GUARD_S)
        written = time.time()
        assert writer.returncode == 0, output.decode(errors="replace")[-3000:]
    finally:
        stop.touch()
        for reader in readers:
            reader.wait(timeout=HANG_GUARD_S)
        if writer.poll() is None:
            writer.kill()
    second = publication.current(home)
    assert second.id != first and second.counts["conversations"] == 3 + 16
    states = {s.id: s for s in publication.kept(home)}
    conversations = {sid: {r[0] for r in run_select(s.warehouse, "SELECT dialogue_id FROM conversation_table",
                                                    max_rows=100).rows} for sid, s in states.items()}
    answers = [(mode, json.loads(line)) for mode, log in logs for line in log.read_text().splitlines()]
    failures = [a for _, a in answers if a["rc"] != 0]
    assert not failures, failures[:3]
    assert len(answers) >= 40  # every reader answered at least once while the writer ran, and once after
    for mode, answer in answers:
        assert answer["state"] in states, answer  # a published state, never the live files
        if mode == "sql":
            assert answer["answer"] == states[answer["state"]].counts["conversations"], answer
        else:
            assert answer["answer"] and set(answer["answer"]) <= conversations[answer["state"]], answer
    during = [a for _, a in answers if started < a["t"] < written]
    assert len(during) >= 20, (len(during), written - started)  # the writer ran under the readers' load
    for _, log in logs:  # each reader, asked after the writer ended, saw the new state
        assert json.loads(log.read_text().splitlines()[-1])["state"] == second.id


@pytest.mark.slow
def test_the_service_answers_every_search_while_a_materialization_publishes(home, tmp_path, defs):
    import requests

    from sarag_assets_tests.query.test_service import Service

    instance, dagster_home = _shared_instance(tmp_path)
    write_jsonl(home.inbox / "week1.jsonl", WEEK1)
    first = land_and_process(defs, instance, raise_on_error=True).published
    write_jsonl(home.inbox / "week2.jsonl", week2(12))
    service = Service(home.root)
    answers = []
    try:
        writer = _materialize(home, dagster_home)
        deadline = time.monotonic() + HANG_GUARD_S
        while True:
            done = writer.poll() is not None
            response = requests.post(service.url + "/api/search", json={"query": "my Orbit speaker fails", "k": 3},
                                     timeout=120)
            answers.append((response.status_code, response.json()))
            if done:
                break
            assert time.monotonic() < deadline
        assert writer.returncode == 0, writer.stdout.read().decode(errors="replace")[-3000:]
        second = publication.current(home)
        # the service picks the new state up by itself (it looks every 2 s)
        while requests.get(service.url + "/api/health", timeout=30).json()["published_state"] != second.id:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        after = requests.post(service.url + "/api/search", json={"query": "my Orbit speaker fails with code E-700",
                                                                  "k": 3}, timeout=120).json()
    finally:
        service.stop()
    assert len(answers) > 10 and [status for status, _ in answers] == [200] * len(answers)
    states = {first, second.id}
    assert all(body["published_state"] in states for _, body in answers)
    assert all({h["dialogue_id"] for h in body["hits"]} <= {"c1", "c2", "c3"}
               for _, body in answers if body["published_state"] == first)
    assert after["published_state"] == second.id and after["hits"][0]["dialogue_id"] == "c100"
