"""The DuckDB warehouse against real DuckDB files: declared schemas (and their migration), per-batch
replacement by column name, the "current version" views and every read the stages and the query side
make, and the all-or-nothing governance transaction."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import duckdb
import polars as pl
import pytest

from sarag_assets.core import warehouse

T0 = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)


@pytest.fixture
def path(tmp_path):
    return tmp_path / "warehouse.duckdb"


@pytest.fixture
def con(path):
    with warehouse.connect(path) as connection:
        warehouse.ensure_schema(connection)
        yield connection


def frame(table: str, *rows: dict) -> pl.DataFrame:
    """Rows of `table` (columns not given are null), in the table's column order and types."""
    columns = [c for c, _ in warehouse.TABLES[table]]
    return pl.DataFrame([{c: r.get(c) for c in columns} for r in rows], schema=warehouse.polars_schema(table))


def dialogue(batch_key: str, dialogue_id: str, n_turns: int, *, landed_at: datetime, content_hash: str,
             source_format: str = "jsonl") -> list[dict]:
    roles = ("user", "agent")
    return [{
        "batch_key": batch_key, "dialogue_id": dialogue_id, "turn_index": i, "role": roles[i % 2],
        "speaker": f"{roles[i % 2]}1", "text": f"{dialogue_id}@{batch_key} turn {i}", "ts": None,
        "source_file": f"{batch_key}.jsonl", "source_format": source_format, "content_hash": content_hash,
        "landed_at": landed_at,
    } for i in range(n_turns)]


def land(con, batch_key: str, *dialogues: list[dict]) -> None:
    rows = [row for d in dialogues for row in d]
    warehouse.replace_batch(con, "raw_dialogues", batch_key, frame("raw_dialogues", *rows))


def history(con) -> None:
    """Four batches; d1 landed twice (b1, then b2 an hour later), so its current version is b2's.

    Current versions: d1@b2, d2@b1, d3@b0, d4@b1, d5@a9 (a9 and b1 landed at the same time).
    """
    land(con, "b0", dialogue("b0", "d3", 2, landed_at=T0 - HOUR, content_hash="h3", source_format="turn_csv"))
    land(con, "a9", dialogue("a9", "d5", 2, landed_at=T0, content_hash="h5"))
    land(con, "b1", dialogue("b1", "d1", 2, landed_at=T0, content_hash="h1-old"),
         dialogue("b1", "d2", 2, landed_at=T0, content_hash="h2"),
         dialogue("b1", "d4", 2, landed_at=T0, content_hash="h4"))
    land(con, "b2", dialogue("b2", "d1", 3, landed_at=T0 + HOUR, content_hash="h1-new"))


def hash_of(dialogue_id: str, batch_key: str) -> str:
    return {("d1", "b1"): "h1-old", ("d1", "b2"): "h1-new", ("d2", "b1"): "h2", ("d3", "b0"): "h3",
            ("d4", "b1"): "h4", ("d5", "a9"): "h5"}[(dialogue_id, batch_key)]


def count(con, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# --- schema ----------------------------------------------------------------------------------------------


def _duckdb_type(declared: str) -> str:
    base = declared.split()[0]
    return "TIMESTAMP WITH TIME ZONE" if base == "TIMESTAMPTZ" else base


def test_ensure_schema_creates_every_declared_table_with_its_columns_types_and_nullability(path):
    with warehouse.connect(path) as con:
        assert not set(warehouse.TABLES) & warehouse.table_names(con)
        warehouse.ensure_schema(con)
        assert set(warehouse.TABLES) | set(warehouse.VIEWS) <= warehouse.table_names(con)
        for table, declared in warehouse.TABLES.items():
            described = [(name, type_, null) for name, type_, null, *_ in con.execute(f"DESCRIBE {table}").fetchall()]
            expected = [(name, _duckdb_type(sql), "NO" if "NOT NULL" in sql else "YES") for name, sql in declared]
            assert described == expected, table


def test_ensure_schema_is_idempotent_and_keeps_rows(con):
    warehouse.append_rows(con, "value_mentions", frame("value_mentions", {"value": "x", "conversations": 3}))
    warehouse.ensure_schema(con)
    warehouse.ensure_schema(con)
    assert con.execute("SELECT value, conversations FROM value_mentions").fetchall() == [("x", 3)]


def test_ensure_schema_adds_a_nullable_column_missing_from_an_older_table(path):
    old = [(c, t) for c, t in warehouse.TABLES["cluster_assignments"] if c != "text_hash"]
    with warehouse.connect(path) as con:  # the table as a home made before text_hash existed has it
        con.execute("CREATE TABLE cluster_assignments (" + ", ".join(f'"{c}" {t}' for c, t in old) + ")")
        con.execute("INSERT INTO cluster_assignments VALUES ('d1', 'semantic', 4, 0.25, true, 'm1')")
    with warehouse.connect(path) as con:
        warehouse.ensure_schema(con)
        columns = [r[0] for r in con.execute("DESCRIBE cluster_assignments").fetchall()]
        assert columns == [c for c, _ in warehouse.TABLES["cluster_assignments"]]
        assert warehouse.read_table(con, "cluster_assignments").rows() == [
            ("d1", "semantic", 4, 0.25, True, "m1", None)]


def test_ensure_schema_refuses_to_add_a_missing_not_null_column(path):
    with warehouse.connect(path) as con:
        con.execute("CREATE TABLE value_mentions (value VARCHAR NOT NULL)")
        with pytest.raises(RuntimeError, match="value_mentions lacks the column conversations"):
            warehouse.ensure_schema(con)


# --- frames ----------------------------------------------------------------------------------------------


def test_polars_schema_and_empty_frame_follow_the_declared_tables():
    types = {"VARCHAR": pl.String, "INTEGER": pl.Int32, "BIGINT": pl.Int64, "DOUBLE": pl.Float64,
             "BOOLEAN": pl.Boolean, "TIMESTAMPTZ": pl.Datetime("us", "UTC"), "BLOB": pl.Binary}
    assert warehouse.TABLES
    for table, declared in warehouse.TABLES.items():
        schema = warehouse.polars_schema(table)
        assert list(schema.items()) == [(c, types[sql.split()[0]]) for c, sql in declared], table
        empty = warehouse.empty_frame(table)
        assert empty.height == 0 and dict(empty.schema) == schema


def test_conform_orders_casts_and_drops_extra_columns():
    given = pl.DataFrame({"extra": ["dropped"], "landed_at": [T0], "reason": ["bad json"], "position": [7],
                          "raw_excerpt": [None], "source_file": ["f.jsonl"], "batch_key": ["b1"]})
    rows = warehouse.conform("quarantine", given)
    assert rows.columns == [c for c, _ in warehouse.TABLES["quarantine"]]
    assert dict(rows.schema) == warehouse.polars_schema("quarantine")
    assert rows.row(0) == ("b1", "f.jsonl", 7, "bad json", None, T0)

    with pytest.raises(ValueError, match=r"lacks columns \['reason'\]"):
        warehouse.conform("quarantine", given.drop("reason"))


# --- per-batch writes ------------------------------------------------------------------------------------


def quarantine_rows(batch_key: str, *positions: int, reason: str = "bad json") -> pl.DataFrame:
    return frame("quarantine", *({"batch_key": batch_key, "source_file": f"{batch_key}.jsonl", "position": p,
                                  "reason": reason, "raw_excerpt": f"line {p}", "landed_at": T0} for p in positions))


def test_replace_batch_replaces_exactly_one_batchs_rows(con):
    assert warehouse.replace_batch(con, "quarantine", "b1", quarantine_rows("b1", 1, 2, 3)) == 3
    warehouse.replace_batch(con, "quarantine", "b2", quarantine_rows("b2", 9))

    assert warehouse.replace_batch(con, "quarantine", "b1", quarantine_rows("b1", 5, reason="no turns")) == 1
    assert con.execute("SELECT batch_key, position, reason FROM quarantine ORDER BY 1, 2").fetchall() == [
        ("b1", 5, "no turns"), ("b2", 9, "bad json")]

    assert warehouse.replace_batch(con, "quarantine", "b1", warehouse.empty_frame("quarantine")) == 0
    assert con.execute("SELECT batch_key, position FROM quarantine").fetchall() == [("b2", 9)]


def test_replace_batch_inserts_by_column_name(con):
    rows = quarantine_rows("b1", 4)
    shuffled = rows.select(list(reversed(rows.columns)))
    assert shuffled.columns[0] == "landed_at"
    warehouse.replace_batch(con, "quarantine", "b1", shuffled)
    stored = warehouse.read_batch(con, "quarantine", "b1")
    assert stored.rows(named=True) == [{"batch_key": "b1", "source_file": "b1.jsonl", "position": 4,
                                        "reason": "bad json", "raw_excerpt": "line 4", "landed_at": T0}]


def test_replace_batch_inserts_by_name_into_a_table_whose_columns_are_stored_in_another_order(path):
    with warehouse.connect(path) as con:
        declared = warehouse.TABLES["quarantine"]
        con.execute("CREATE TABLE quarantine (" + ", ".join(f'"{c}" {t}' for c, t in reversed(declared)) + ")")
        warehouse.replace_batch(con, "quarantine", "b1", quarantine_rows("b1", 4))
        assert con.execute("SELECT * FROM quarantine").fetchall() == [(T0, "line 4", "bad json", 4, "b1.jsonl", "b1")]
        assert warehouse.read_batch(con, "quarantine", "b1").row(0) == ("b1", "b1.jsonl", 4, "bad json", "line 4", T0)


def test_a_failed_replacement_leaves_the_batch_as_it_was(con):
    warehouse.replace_batch(con, "quarantine", "b1", quarantine_rows("b1", 1, 2))
    broken = quarantine_rows("b1", 3).with_columns(pl.lit(None, pl.String).alias("reason"))  # NOT NULL
    with pytest.raises(duckdb.ConstraintException):
        warehouse.replace_batch(con, "quarantine", "b1", broken)
    assert con.execute("SELECT position FROM quarantine ORDER BY 1").fetchall() == [(1,), (2,)]
    with pytest.raises(ValueError, match="other batches"):
        warehouse.replace_batch(con, "quarantine", "b1", quarantine_rows("b2", 8))
    assert count(con, "quarantine") == 2


# --- connections -----------------------------------------------------------------------------------------


def test_a_read_only_connection_reads_but_cannot_write(con, path):
    warehouse.append_rows(con, "value_mentions", frame("value_mentions", {"value": "x", "conversations": 1}))
    con.close()
    with warehouse.connect(path, read_only=True) as ro:
        assert warehouse.value_mention_counts(ro) == {"x": 1}
        with pytest.raises(duckdb.InvalidInputException, match="read-only"):
            ro.execute("INSERT INTO value_mentions VALUES ('y', 2)")
        with pytest.raises(duckdb.InvalidInputException, match="read-only"):
            warehouse.append_rows(ro, "value_mentions", frame("value_mentions", {"value": "y", "conversations": 2}))
    with warehouse.connect(path, read_only=True) as ro:
        assert warehouse.value_mention_counts(ro) == {"x": 1}
    with pytest.raises(duckdb.ConnectionException):  # the context closed it
        ro.execute("SELECT 1")


def test_connect_waits_for_a_lock_held_by_another_process(path):
    holder = subprocess.Popen(
        [sys.executable, "-c", ("import duckdb, sys, time; c = duckdb.connect(sys.argv[1]);"
                                " print('locked', flush=True); time.sleep(1.5); c.close()"), str(path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(duckdb.IOException, match="lock"), warehouse.connect(path, wait_s=0.1):
            pass
        started = time.monotonic()
        with warehouse.connect(path, wait_s=60) as con:
            assert con.execute("SELECT 42").fetchone() == (42,)
        assert time.monotonic() - started > 0.3  # it did wait for the other process
    finally:
        holder.wait(timeout=30)


# --- current versions ------------------------------------------------------------------------------------


def test_current_dialogue_ids_are_the_latest_landed_versions(con):
    history(con)
    assert warehouse.current_dialogue_ids(con) == {"d1", "d2", "d3", "d4", "d5"}
    assert warehouse.current_dialogue_ids(con, "b1") == {"d2", "d4"}  # d1 moved on to b2
    assert warehouse.current_dialogue_ids(con, "b2") == {"d1"}
    assert warehouse.current_dialogue_ids(con, "nope") == set()
    assert warehouse.current_dialogue_count(con) == 5
    assert con.execute("SELECT count(*) FROM current_dialogues WHERE dialogue_id = 'd1'").fetchone() == (3,)


def test_conversation_texts_come_in_chunks_of_current_conversations(con):
    history(con)
    whole = dict(warehouse.conversation_texts(con))
    assert set(whole) == warehouse.current_dialogue_ids(con)
    chunks = list(warehouse.conversation_text_chunks(con, size=2))
    assert [len(c) for c in chunks] == [2, 2, 1]
    assert dict(pair for chunk in chunks for pair in chunk) == whole


def test_a_landing_time_tie_goes_to_the_later_batch_key(con):
    land(con, "x2", dialogue("x2", "d", 1, landed_at=T0, content_hash="two"))
    land(con, "x1", dialogue("x1", "d", 1, landed_at=T0, content_hash="one"))
    assert warehouse.current_dialogue_ids(con, "x2") == {"d"} and warehouse.current_dialogue_ids(con, "x1") == set()


def validated(batch_key: str, dialogue_id: str, column: str, value: str | None) -> dict:
    return {"batch_key": batch_key, "dialogue_id": dialogue_id, "content_hash": hash_of(dialogue_id, batch_key),
            "column_name": column, "value": value, "raw_value": value, "metadata_version": 1}


def store_validated(con) -> None:
    warehouse.replace_batch(con, "validated_rows", "b1", frame(
        "validated_rows", validated("b1", "d1", "amount", "99"), validated("b1", "d2", "amount", "not a number"),
        validated("b1", "d2", "product", "P2")))
    warehouse.replace_batch(con, "validated_rows", "b2", frame(
        "validated_rows", validated("b2", "d1", "amount", "12.5"), validated("b2", "d1", "product", "X1")))


def test_current_rows_keep_only_current_versions(con):
    history(con)
    store_validated(con)
    rows = warehouse.current_rows(con, "validated_rows")
    assert rows.columns == [c for c, _ in warehouse.TABLES["validated_rows"]]
    assert sorted(rows.select("batch_key", "dialogue_id", "column_name", "value").rows()) == [
        ("b1", "d2", "amount", "not a number"), ("b1", "d2", "product", "P2"),
        ("b2", "d1", "amount", "12.5"), ("b2", "d1", "product", "X1")]
    assert set(warehouse.current_rows(con, "validated_rows", ["b1"])["dialogue_id"]) == {"d2"}
    assert warehouse.current_rows(con, "validated_rows", []).height == 0
    with pytest.raises(ValueError, match="unknown warehouse table"):
        warehouse.current_rows(con, "validated_rows; DROP TABLE raw_dialogues")


def test_conversation_table_is_one_typed_row_per_current_conversation(con):
    history(con)
    store_validated(con)
    pairs = warehouse.conversation_table(con, has_columns=False)
    assert pairs.columns == ["dialogue_id", "batch_key"]
    assert sorted(pairs.rows()) == [("d1", "b2"), ("d2", "b1"), ("d3", "b0"), ("d4", "b1"), ("d5", "a9")]

    warehouse.refresh_conversation_table(con, [("amount", "float"), ("product", "string"), ("resolved", "boolean")])
    table = warehouse.conversation_table(con).sort("dialogue_id")
    assert table.columns == ["dialogue_id", "batch_key", "amount", "product", "resolved", "source_fields"]
    assert table.schema["amount"] == pl.Float64 and table.schema["resolved"] == pl.Boolean
    assert table.rows() == [
        ("d1", "b2", 12.5, "X1", None, None),  # the current version's values, not b1's 99
        ("d2", "b1", None, "P2", None, None),  # a value that does not cast reads as null
        ("d3", "b0", None, None, None, None), ("d4", "b1", None, None, None, None),
        ("d5", "a9", None, None, None, None)]
    assert sorted(warehouse.conversation_table(con, "b1")["dialogue_id"]) == ["d2", "d4"]
    assert sorted(warehouse.conversation_table(con, "b1", has_columns=False)["dialogue_id"]) == ["d2", "d4"]


def test_conversation_table_ends_with_the_current_versions_fields_as_json(con):
    old = dialogue("b1", "d1", 2, landed_at=T0, content_hash="h1-old")
    new = dialogue("b2", "d1", 3, landed_at=T0 + HOUR, content_hash="h1-new")
    for rows, fields in ((old, '{"queue": "Mail"}'), (new, '{"queue": "Printers", "tags": "jam, tray"}')):
        for row in rows:
            row["source_fields"] = fields
    land(con, "b1", old, dialogue("b1", "d2", 2, landed_at=T0, content_hash="h2"))
    land(con, "b2", new)
    warehouse.refresh_conversation_table(con, [("product", "string")])
    assert con.execute("SELECT dialogue_id, source_fields->>'queue', source_fields->>'tags' FROM conversation_table "
                       "ORDER BY dialogue_id").fetchall() == [("d1", "Printers", "jam, tray"), ("d2", None, None)]
    # one row per conversation however many turns carry the fields
    assert count(con, "conversation_table") == 2


def test_failed_conversations_counts_distinct_dialogues_of_a_batch(con):
    failure = lambda b, d, stage: {"batch_key": b, "dialogue_id": d, "stage": stage, "reason": "boom",  # noqa: E731
                                   "failed_at": T0}
    warehouse.replace_failures(con, "b1", "extract", frame("structuring_failures", failure("b1", "d1", "extract"),
                                                           failure("b1", "d2", "extract")))
    warehouse.replace_failures(con, "b1", "judge", frame("structuring_failures", failure("b1", "d1", "judge")))
    warehouse.replace_failures(con, "b2", "extract", frame("structuring_failures", failure("b2", "d9", "extract")))
    assert warehouse.failed_conversations(con, "b1") == 2
    assert warehouse.failed_conversations(con, "b2") == 1
    assert warehouse.failed_conversations(con, "b3") == 0


def test_landed_batch_keys_are_those_holding_a_turn_or_a_quarantine_row(con, path, tmp_path):
    land(con, "b1", dialogue("b1", "d1", 2, landed_at=T0, content_hash="h1"))
    warehouse.replace_batch(con, "quarantine", "b2", quarantine_rows("b2", 0))
    warehouse.replace_batch(con, "raw_dialogues", "b3", frame("raw_dialogues"))
    assert warehouse.landed_batch_keys(con) == {"b1", "b2"}
    with warehouse.connect(tmp_path / "new.duckdb") as empty:
        assert warehouse.landed_batch_keys(empty) == set()


def test_latest_cluster_model_is_the_most_recently_fitted(con):
    assert warehouse.latest_cluster_model(con) is None

    def model(blob: bytes, at: datetime) -> dict:
        return {"model_version": blob.decode(), "model": blob, "n_fit_rows": 1, "fitted_at": at}

    warehouse.append_rows(con, "cluster_models", frame("cluster_models", model(b"new", T0 + HOUR), model(b"old", T0)))
    assert warehouse.latest_cluster_model(con) == b"new"


# --- governance ------------------------------------------------------------------------------------------


def state(version: int, saved_at: datetime) -> dict:
    return {"version": version, "state_json": json.dumps({"v": version}), "saved_at": saved_at}


def test_governance_states_are_newest_first_by_saved_at_then_version(con):
    assert warehouse.latest_governance_state(con) is None
    assert list(warehouse.governance_states(con)) == []
    warehouse.append_rows(con, "governance_state", frame(
        "governance_state", state(1, T0), state(3, T0), state(2, T0 + HOUR), state(4, T0 - HOUR)))
    assert warehouse.latest_governance_state(con) == (2, json.dumps({"v": 2}))
    assert [json.loads(s)["v"] for s in warehouse.governance_states(con)] == [2, 3, 1, 4]


def test_governance_states_are_read_past_one_chunk(con):
    warehouse.append_rows(con, "governance_state", frame(
        "governance_state", *(state(v, T0 + v * timedelta(seconds=1)) for v in range(1, 121))))
    assert [json.loads(s)["v"] for s in warehouse.governance_states(con)] == list(range(120, 0, -1))


def test_latest_metadata_version_and_operation_seq_start_at_zero(con):
    assert warehouse.latest_metadata_version(con) == 0
    assert warehouse.next_operation_seq(con) == 0
    warehouse.append_rows(con, "metadata_versions", frame("metadata_versions", *(
        {"version": v, "fingerprint": f"f{v}", "n_columns": v, "columns_json": "[]", "created_at": T0}
        for v in (2, 5, 3))))
    warehouse.append_rows(con, "metadata_operations", frame("metadata_operations", *(
        {"seq": s, "version": 1, "operation": "ADD", "columns": "a", "applied_at": T0} for s in (7, 41, 12))))
    assert warehouse.latest_metadata_version(con) == 5
    assert warehouse.next_operation_seq(con) == 41


def candidate(batch_key: str, dialogue_id: str, column: str, overall: float) -> dict:
    return {"batch_key": batch_key, "dialogue_id": dialogue_id, "content_hash": hash_of(dialogue_id, batch_key),
            "column_name": column, "column_type": "string", "overall": overall, "backend": "test"}


def processed(dialogue_id: str, content_hash: str, batch_key: str = "b1") -> dict:
    return {"dialogue_id": dialogue_id, "content_hash": content_hash, "batch_key": batch_key, "metadata_version": 1}


def test_ungoverned_candidates_are_current_unprocessed_versions_in_landing_order(con):
    history(con)
    for batch_key, rows in {
        "b0": [candidate("b0", "d3", "serial", 0.6)],
        "a9": [candidate("a9", "d5", "plan", 0.4)],
        "b1": [candidate("b1", "d4", "os", 0.8), candidate("b1", "d1", "stale", 0.99),
               candidate("b1", "d2", "product", 0.5), candidate("b1", "d2", "amount", 0.9),
               candidate("b1", "d2", "currency", 0.5)],
        "b2": [candidate("b2", "d1", "error_code", 0.7)],
    }.items():
        warehouse.replace_batch(con, "candidate_schemas", batch_key, frame("candidate_schemas", *rows))

    def order(chunk: int = warehouse.GOVERNANCE_CHUNK) -> list[tuple[str, str]]:
        return [row for frame in warehouse.ungoverned_candidates(con, conversations_per_chunk=chunk)
                for row in frame.select("dialogue_id", "column_name").rows()]

    # landed_at first (b0 before a9 although "a9" < "b0"), then batch (a9 before b1 at the same time), then
    # dialogue, then the better score, then the name; d1's old version in b1 is never a candidate
    assert order() == [("d3", "serial"), ("d5", "plan"), ("d2", "amount"), ("d2", "currency"), ("d2", "product"),
                       ("d4", "os"), ("d1", "error_code")]
    # read in chunks, the order is the same and no conversation is split between two chunks
    for chunk in (1, 2, 3):
        assert order(chunk) == order()
        frames = list(warehouse.ungoverned_candidates(con, conversations_per_chunk=chunk))
        assert [f["dialogue_id"].n_unique() for f in frames] == [chunk] * (5 // chunk) + [5 % chunk] * (5 % chunk > 0)
    assert all(f.columns == [c for c, _ in warehouse.TABLES["candidate_schemas"]]
               for f in warehouse.ungoverned_candidates(con))

    warehouse.append_rows(con, "governance_processed", frame(
        "governance_processed", processed("d2", "h2"), processed("d1", "h1-old"), processed("d3", "h3", "b0")))
    # d1 was processed only in its old version: its current one still waits
    assert order() == [("d5", "plan"), ("d4", "os"), ("d1", "error_code")]


def governance_run(version: int, *, operations: pl.DataFrame | None = None, processed_rows: list[dict] | None = None):
    return {
        "versions": frame("metadata_versions", {"version": version, "fingerprint": f"fp{version}", "n_columns": 1,
                                                 "columns_json": "[]", "created_at": T0}),
        "operations": operations if operations is not None else frame("metadata_operations", {
            "seq": version, "version": version, "dialogue_id": "d2", "operation": "ADD", "columns": f"col{version}",
            "applied_at": T0}),
        "processed": frame("governance_processed", *(processed_rows or [processed("d2", "h2")])),
        "version": version,
        "state_json": json.dumps({"columns": [{"name": f"col{version}", "type": "string"}]}),
        "columns": [(f"col{version}", "string")],
    }


GOVERNANCE_TABLES = ("metadata_versions", "metadata_operations", "governance_processed", "governance_state")


def test_save_governance_writes_every_table_and_the_wide_view(con):
    history(con)
    warehouse.save_governance(con, **governance_run(1))
    assert {t: count(con, t) for t in GOVERNANCE_TABLES} == dict.fromkeys(GOVERNANCE_TABLES, 1)
    assert warehouse.latest_governance_state(con)[0] == 1
    assert warehouse.latest_metadata_version(con) == 1 and warehouse.next_operation_seq(con) == 1
    assert warehouse.conversation_table(con).columns == ["dialogue_id", "batch_key", "col1", "source_fields"]

    no_new_version = governance_run(2) | {"versions": None}
    warehouse.save_governance(con, **no_new_version)
    assert count(con, "metadata_versions") == 1 and count(con, "governance_state") == 2
    assert warehouse.latest_governance_state(con)[0] == 2


@pytest.mark.parametrize("broken", ["operation of the wrong type", "processed row without its NOT NULL hash"])
def test_save_governance_is_all_or_nothing(con, broken):
    history(con)
    warehouse.save_governance(con, **governance_run(1))
    before = {t: warehouse.read_table(con, t).rows() for t in GOVERNANCE_TABLES}

    if broken == "operation of the wrong type":
        bad_operations = pl.DataFrame({c: ["x"] for c, _ in warehouse.TABLES["metadata_operations"]})  # seq "x"
        run = governance_run(2, operations=bad_operations)
        error = pl.exceptions.PolarsError
    else:
        run = governance_run(2, processed_rows=[processed("d4", "h4"), processed("d5", None, "a9")])
        error = duckdb.ConstraintException
    with pytest.raises(error):
        warehouse.save_governance(con, **run)

    # the metadata version appended before the failure is gone too, and the view was not refreshed
    assert {t: warehouse.read_table(con, t).rows() for t in GOVERNANCE_TABLES} == before
    assert warehouse.conversation_table(con).columns == ["dialogue_id", "batch_key", "col1", "source_fields"]
    warehouse.save_governance(con, **governance_run(2))  # the connection is still usable
    assert warehouse.latest_metadata_version(con) == 2


# --- what the query side reads ---------------------------------------------------------------------------


def test_value_mention_counts_are_empty_without_the_table(path):
    with warehouse.connect(path) as con:
        assert warehouse.value_mention_counts(con) == {}
        assert "value_mentions" not in warehouse.table_names(con)  # reading did not create it
        warehouse.replace_table(con, "value_mentions", frame(
            "value_mentions", {"value": "docker 24.0", "conversations": 2}, {"value": "works", "conversations": 3}))
        assert warehouse.value_mention_counts(con) == {"docker 24.0": 2, "works": 3}
        warehouse.replace_table(con, "value_mentions", frame("value_mentions", {"value": "x1", "conversations": 1}))
        assert warehouse.value_mention_counts(con) == {"x1": 1}


def node(batch_key: str, dialogue_id: str, node_id: str, turn_start: int) -> dict:
    return {"batch_key": batch_key, "dialogue_id": dialogue_id, "content_hash": hash_of(dialogue_id, batch_key),
            "node_id": node_id, "issue": f"issue {node_id}@{batch_key}", "answer": f"answer {node_id}",
            "turn_start": turn_start, "turn_end": turn_start + 1, "backend": "test"}


def edge(batch_key: str, dialogue_id: str, source: str, target: str, relation: str) -> dict:
    return {"batch_key": batch_key, "dialogue_id": dialogue_id, "content_hash": hash_of(dialogue_id, batch_key),
            "source": source, "target": target, "relation": relation, "backend": "test"}


def store_graphs(con) -> None:
    warehouse.replace_batch(con, "graph_nodes", "b1", frame(
        "graph_nodes", node("b1", "d1", "n0", 0), node("b1", "d2", "n0", 0)))
    warehouse.replace_batch(con, "graph_nodes", "b2", frame(
        "graph_nodes", node("b2", "d1", "n1", 2), node("b2", "d1", "n0", 0)))
    warehouse.replace_batch(con, "graph_edges", "b1", frame("graph_edges", edge("b1", "d1", "n9", "n0", "elaborates")))
    warehouse.replace_batch(con, "graph_edges", "b2", frame("graph_edges", edge("b2", "d1", "n1", "n0", "refines")))


def test_graph_of_returns_the_current_graphs_in_turn_order(con):
    history(con)
    store_graphs(con)
    nodes, edges = warehouse.graph_of(con, ["d1"])
    assert nodes == [
        {"dialogue_id": "d1", "node_id": "n0", "issue": "issue n0@b2", "answer": "answer n0",
         "turn_start": 0, "turn_end": 1},
        {"dialogue_id": "d1", "node_id": "n1", "issue": "issue n1@b2", "answer": "answer n1",
         "turn_start": 2, "turn_end": 3},
    ]
    assert edges == [("d1", "n1", "n0", "refines")]  # not the old version's edge

    nodes, edges = warehouse.graph_of(con, ["d2", "d1", "d3"])
    assert [(n["dialogue_id"], n["issue"]) for n in nodes] == [
        ("d1", "issue n0@b2"), ("d1", "issue n1@b2"), ("d2", "issue n0@b1")]
    assert edges == [("d1", "n1", "n0", "refines")]
    assert warehouse.graph_of(con, []) == ([], [])


def test_home_summary_of_an_empty_warehouse(con):
    summary = warehouse.home_summary(con)
    assert summary == {
        "by_format": [], "quarantined": 0, "quarantine_reasons": [], "metadata_version": None, "columns": [],
        "filled": {}, "failed_conversations": 0,
        "index_sources": {"table_rows": 0, "issue_documents": 0, "solution_documents": 0, "graph_nodes": 0,
                          "conversation_texts": 0},
    }


def test_home_summary_counts_current_rows_only(con):
    history(con)
    store_validated(con)
    store_graphs(con)
    warehouse.replace_batch(con, "quarantine", "b1", quarantine_rows("b1", 1, 2).vstack(
        quarantine_rows("b1", 3, reason="no turns")))
    warehouse.replace_batch(con, "quarantine", "b2", quarantine_rows("b2", 7))
    warehouse.replace_failures(con, "b1", "extract", frame("structuring_failures", *(
        {"batch_key": "b1", "dialogue_id": d, "stage": "extract", "reason": "boom", "failed_at": T0}
        for d in ("d2", "d4"))))
    warehouse.replace_failures(con, "b1", "judge", frame("structuring_failures", {
        "batch_key": "b1", "dialogue_id": "d2", "stage": "judge", "reason": "boom", "failed_at": T0}))

    def document(b: str, d: str) -> dict:
        return {"batch_key": b, "dialogue_id": d, "content_hash": hash_of(d, b), "issue_queries": "[]",
                "solution_queries": "[]", "issue_document": "i", "solution_document": "s", "backend": "test"}

    warehouse.replace_batch(con, "pseudo_documents", "b1", frame(
        "pseudo_documents", document("b1", "d1"), document("b1", "d2")))
    warehouse.replace_batch(con, "pseudo_documents", "b2", frame("pseudo_documents", document("b2", "d1")))
    run = governance_run(3)
    warehouse.save_governance(con, **run)

    summary = warehouse.home_summary(con)
    assert summary["by_format"] == [("jsonl", 4, 3 + 2 + 2 + 2), ("turn_csv", 1, 2)]
    assert summary["quarantined"] == 4
    assert summary["quarantine_reasons"] == [("bad json", 3), ("no turns", 1)]
    assert summary["metadata_version"] == 3
    assert summary["columns"] == json.loads(run["state_json"])["columns"]
    # over current rows: d1@b2 has an amount, d2 has one too (b1's old d1 value does not count)
    assert summary["filled"] == {"amount": 1.0, "product": 1.0}
    assert summary["failed_conversations"] == 2
    assert summary["index_sources"] == {"table_rows": 5, "issue_documents": 2, "solution_documents": 2,
                                        "graph_nodes": 3, "conversation_texts": 5}


def test_home_summary_filled_share_counts_nulls(con):
    history(con)
    warehouse.replace_batch(con, "validated_rows", "b1", frame(
        "validated_rows", validated("b1", "d2", "os", "linux"), validated("b1", "d4", "os", None),
        validated("b1", "d1", "os", "old version")))
    warehouse.replace_batch(con, "validated_rows", "b2", frame("validated_rows", validated("b2", "d1", "os", None)))
    assert warehouse.home_summary(con)["filled"] == {"os": pytest.approx(1 / 3)}


def test_a_conversations_turns_say_which_the_source_accepted_and_an_older_warehouse_reads_none(con, path, tmp_path):
    turns = dialogue("b1", "d1", 3, landed_at=datetime(2024, 1, 1, tzinfo=timezone.utc), content_hash="h1")
    turns[1]["accepted"] = True
    land(con, "b1", turns)
    assert [t["accepted"] for t in warehouse.conversation_turns(con, "d1")] == [False, True, False]
    # a published copy of a home from before the column (read-only: nothing adds it)
    old = tmp_path / "old.duckdb"
    columns = [(c, t) for c, t in warehouse.TABLES["raw_dialogues"] if c not in ("accepted", "source_fields")]
    with warehouse.connect(old) as writer:
        writer.execute("CREATE TABLE raw_dialogues (" + ", ".join(f'"{c}" {t}' for c, t in columns) + ")")
        writer.execute("INSERT INTO raw_dialogues VALUES ('b1', 'd1', 0, 'user', 'user1', 'hi', NULL, 'f', 'jsonl', "
                       "'h1', TIMESTAMPTZ '2024-01-01 00:00:00+00')")
        for name, sql in warehouse.VIEWS.items():
            writer.execute(f"CREATE VIEW {name} AS {sql}")
    with warehouse.connect(old, read_only=True) as reader:
        assert [(t["text"], t["accepted"]) for t in warehouse.conversation_turns(reader, "d1")] == [("hi", False)]
