"""Ingestion through the real Definitions: sensor evaluation, materializations, DuckDB contents, checks."""

from __future__ import annotations

import json

import dagster as dg
import duckdb
import pytest

from sarag_assets.core import warehouse
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets_tests.conftest import conversation, write_jsonl


def evaluate_sensor(defs, instance, cursor=None):
    sensor = defs.resolve_sensor_def("inbox_sensor")
    with dg.build_sensor_context(instance=instance, definitions=defs, resources=defs.resources, cursor=cursor) as context:
        return sensor(context)


def query(home, sql, params=None):
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def test_sensor_turns_new_and_changed_files_into_partitions_with_content_run_keys(home, instance, defs):
    write_jsonl(
        home.inbox / "forum dump [v1], part|a.jsonl",
        [conversation("d1", ("user", "my printer jams"), ("agent", "clean the roller"))],
    )
    first = evaluate_sensor(defs, instance)
    assert len(first.run_requests) == 1
    request = first.run_requests[0]
    key = request.partition_key
    assert not any(ch in key for ch in "|,[] "), key
    assert first.dynamic_partitions_requests[0].partition_keys == [key]
    assert request.run_key.endswith(":0")

    unchanged = evaluate_sensor(defs, instance, cursor=first.cursor)
    assert unchanged.run_requests == []

    # Without a cursor the same bytes give the same run key, which Dagster never runs twice.
    again = evaluate_sensor(defs, instance)
    assert [r.run_key for r in again.run_requests] == [request.run_key]

    write_jsonl(
        home.inbox / "forum dump [v1], part|a.jsonl",
        [conversation("d1", ("user", "my printer jams often"), ("agent", "clean the roller"))],
    )
    changed = evaluate_sensor(defs, instance, cursor=first.cursor)
    assert len(changed.run_requests) == 1
    assert changed.run_requests[0].run_key != request.run_key
    assert changed.run_requests[0].partition_key != key


@pytest.mark.slow
def test_large_file_is_split_into_batches(home, instance, defs, monkeypatch):
    monkeypatch.setenv("SARAG_BATCH_SIZE", "3")
    write_jsonl(
        home.inbox / "big.jsonl",
        [conversation(f"c{i}", ("customer", f"question {i}"), ("agent", f"answer {i}")) for i in range(7)],
    )
    run = land_and_process(defs, instance, raise_on_error=True)
    assert len(run.batches) == 3 and all("of003" in k for k in run.batches)
    assert sorted(instance.get_dynamic_partitions("conversation_batches")) == sorted(run.batches)
    per_batch = query(home, "SELECT batch_key, count(DISTINCT dialogue_id) FROM raw_dialogues GROUP BY 1 ORDER BY 1")
    assert [n for _, n in per_batch] == [3, 3, 1]


@pytest.mark.slow
def test_materialized_batch_is_stored_redacted_with_quarantine_and_passing_checks(home, instance, defs):
    lines = [
        json.dumps(conversation(
            "t1",
            ("customer", "Hi, I'm locked out. Mail me at jane.doe@example.com or call (977) 625-2661"),
            ("agent", "Sure, I reset the password for account 3348917502."),
        )),
        '{"dialogue_id": "t2", "turns": [',  # truncated JSON
        json.dumps({"dialogue_id": "t3"}),  # no turns
        json.dumps(conversation("t4", ("user", "router 10.0.0.1 keeps rebooting"), ("support", "update firmware"))),
    ]
    (home.inbox / "tickets.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = land_and_process(defs, instance, raise_on_error=True)
    assert len(run.batches) == 1
    batch = run.batches[0]

    rows = query(home, "SELECT dialogue_id, turn_index, role, speaker, text FROM raw_dialogues ORDER BY 1, 2")
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("t1", 0, "user", "user1"), ("t1", 1, "agent", "agent1"),
        ("t4", 0, "user", "user1"), ("t4", 1, "agent", "agent1"),
    ]
    first_text = rows[0][4]
    assert "jane.doe@example.com" not in first_text and "625-2661" not in first_text
    assert "3348917502" in rows[1][4]  # an account number is not a phone number
    assert "10.0.0.1" not in rows[2][4]

    quarantined = query(home, "SELECT position, reason FROM quarantine ORDER BY position")
    assert [p for p, _ in quarantined] == [2, 3]
    assert "json" in quarantined[0][1].lower() and "turns" in quarantined[1][1].lower()

    checks = {}
    for run_record in instance.get_runs():
        for record in instance.all_logs(run_record.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
            evaluation = record.dagster_event.event_specific_data
            if evaluation.asset_key == dg.AssetKey("raw_dialogues"):
                checks[evaluation.check_name] = evaluation
    assert set(checks) == {
        "records_accounted_for", "turn_keys_unique", "no_empty_text", "every_dialogue_has_user_turn", "roles_user_or_agent",
    }
    assert all(c.passed for c in checks.values())
    accounted = checks["records_accounted_for"].metadata
    assert accounted["records_landed"].value == 4 and accounted["quarantined"].value == 2

    materialization = instance.get_latest_materialization_event(dg.AssetKey("raw_dialogues")).asset_materialization
    assert materialization.partition == batch
    assert materialization.metadata["conversations"].value == 2


@pytest.mark.slow
def test_rematerializing_a_batch_replaces_its_rows(home, instance, defs):
    write_jsonl(home.inbox / "a.jsonl", [conversation("x", ("user", "hello?"), ("agent", "hi"))])
    run = land_and_process(defs, instance, raise_on_error=True)
    job = defs.resolve_job_def("ingest_batch_job")
    job.execute_in_process(partition_key=run.batches[0], instance=instance)
    assert query(home, "SELECT count(*) FROM raw_dialogues") == [(2,)]
    # The run key already succeeded: the sensor asks for no run of it again, whoever ran it.
    again = land_and_process(defs, instance)
    assert again.batches == [] and not again.failed


@pytest.mark.slow
def test_relanded_conversation_supersedes_the_old_version_and_keeps_history(home, instance, defs):
    write_jsonl(home.inbox / "week1.jsonl", [
        conversation("d1", ("user", "wifi drops every hour"), ("agent", "try channel 6")),
        conversation("d2", ("user", "cannot print"), ("agent", "reinstall the driver")),
    ])
    land_and_process(defs, instance, raise_on_error=True)
    write_jsonl(home.inbox / "week2.jsonl", [
        conversation("d1", ("user", "wifi drops every hour"), ("agent", "try channel 6"), ("user", "that fixed it")),
    ])
    land_and_process(defs, instance, raise_on_error=True)

    assert query(home, "SELECT count(DISTINCT batch_key) FROM raw_dialogues WHERE dialogue_id = 'd1'") == [(2,)]
    current = dict(query(home, "SELECT dialogue_id, count(*) FROM current_dialogues GROUP BY 1"))
    assert current == {"d1": 3, "d2": 2}


@pytest.mark.slow
def test_files_that_are_not_conversations_are_quarantined_and_the_rest_still_lands(home, instance, defs):
    (home.inbox / "photo.jsonl").write_bytes(bytes(range(256)) * 40)
    (home.inbox / "empty.jsonl").write_bytes(b"")
    write_jsonl(home.inbox / "good.jsonl", [conversation("g", ("user", "help"), ("agent", "done"))])
    run = land_and_process(defs, instance, raise_on_error=True)
    assert len(run.batches) == 3 and not run.failed
    reasons = dict(query(home, "SELECT source_file, reason FROM quarantine"))
    assert "binary" in reasons["photo.jsonl"].lower()
    assert "empty" in reasons["empty.jsonl"].lower()
    assert query(home, "SELECT DISTINCT dialogue_id FROM raw_dialogues") == [("g",)]


@pytest.mark.slow
def test_every_file_in_the_inbox_is_landed_or_quarantined_with_a_reason(home, instance, defs):
    """Names the scanner skips, dropped straight into the inbox (not through `sarag land`, which refuses
    them): once they stopped changing, each has its quarantine row; a path-like name lands inside the inbox."""
    import os
    import time

    from sarag_assets.core.ingest.landing import SETTLED_AFTER_S

    chat = [conversation("c1", ("user", "my printer jams"), ("agent", "clean the roller"))]
    for name in ("notes~", "export.tmp", ".hidden", "x.jsonl.part", "..%2f..%2fevil.jsonl", "a%2f..%2fevil.jsonl",
                 "good.jsonl"):
        write_jsonl(home.inbox / name, [conversation(f"{name}-1", ("user", "help"), ("agent", "done"))])
    write_jsonl(home.inbox / "fresh.jsonl.part", chat)  # still being written: not yet
    # the same bytes under two names: one batch (the second file's content has landed with the first)
    write_jsonl(home.inbox / "copyA.jsonl", chat)
    write_jsonl(home.inbox / "copyB.jsonl", chat)
    # what the scanner never reads: a link (its target may be any file of the server) and a pipe
    secret = write_jsonl(home.root.parent / "secret.jsonl", [conversation("s1", ("user", "root:x:0:0 secret"))])
    (home.inbox / "link.jsonl").symlink_to(secret)
    (home.inbox / "dangling.jsonl").symlink_to(home.root.parent / "gone.jsonl")
    (home.inbox / "linked-folder").symlink_to(home.root.parent, target_is_directory=True)
    os.mkfifo(home.inbox / "pipe.jsonl")
    settled = time.time() - SETTLED_AFTER_S - 5
    for path in home.inbox.iterdir():
        if path.name != "fresh.jsonl.part":
            os.utime(path, (settled, settled), follow_symlinks=False)
    run = land_and_process(defs, instance, raise_on_error=True)
    assert not run.failed
    reasons = dict(query(home, "SELECT source_file, reason FROM quarantine"))
    for name in ("notes~", "export.tmp", ".hidden", "x.jsonl.part", "..%2f..%2fevil.jsonl"):  # the last: hidden
        assert reasons[name].startswith("not landed: ") and "rename the file" in reasons[name], reasons
    for name in ("link.jsonl", "dangling.jsonl", "linked-folder"):
        assert reasons[name].startswith("not landed: a symbolic link, which the inbox scanner does not follow")
    assert reasons["pipe.jsonl"].startswith("not landed: not a regular file")
    assert not any("secret" in excerpt for (excerpt,) in query(home, "SELECT raw_excerpt FROM quarantine"))
    assert "fresh.jsonl.part" not in reasons and any("inbox/fresh.jsonl.part" in p for p in run.problems)
    landed = {f for (f,) in query(home, "SELECT DISTINCT source_file FROM raw_dialogues")}
    assert landed == {"good.jsonl", "a%2f..%2fevil.jsonl", "copyA.jsonl"}
    assert not list(home.root.parent.glob("evil*"))  # the name stayed a name
    accounted = landed | set(reasons) | {"fresh.jsonl.part", "copyB.jsonl"}  # copyB: copyA's bytes
    assert (home.inbox / "copyB.jsonl").read_bytes() == (home.inbox / "copyA.jsonl").read_bytes()
    assert {p.name for p in home.inbox.iterdir()} == accounted
    again = land_and_process(defs, instance, raise_on_error=True)  # quarantined once, not at every scan
    assert not again.batches


def test_warehouse_rejects_a_frame_with_rows_of_another_batch(home):
    import polars as pl
    import pytest

    frame = warehouse.empty_frame("quarantine").vstack(
        pl.DataFrame(
            {"batch_key": ["b2"], "source_file": ["f"], "position": [1], "reason": ["r"], "raw_excerpt": ["x"],
             "landed_at": [None]},
            schema=warehouse.polars_schema("quarantine"),
        )
    )
    with warehouse.connect(home.warehouse) as con, pytest.raises(ValueError, match="other batches"):
        warehouse.replace_batch(con, "quarantine", "b1", frame)
