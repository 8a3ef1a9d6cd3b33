"""Every read-only SQL statement runs within a time, memory and row limit, on a real DuckDB warehouse:
a limit stops it with a one-line error, the process goes on answering, and no error shows a server path."""

from __future__ import annotations

import subprocess
import sys
import time

import duckdb
import pytest

from sarag_assets.query.sql import SqlLimitExceeded, SqlLimits, SqlRefused, _private, run_select
from sarag_assets_tests.conftest import publish_as_is

CROSS_JOIN = "SELECT count(*) FROM range(100000) a, range(100000) b WHERE a.range + b.range = -1"
BIG_SORT = "SELECT range, random() AS r FROM range(100000000) ORDER BY r"


@pytest.fixture
def warehouse(tmp_path):
    path = tmp_path / "home" / "warehouse.duckdb"
    path.parent.mkdir()
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT range AS i FROM range(50)")
    return path


def test_a_long_statement_is_stopped_at_the_time_limit_and_the_next_one_runs(warehouse):
    started = time.monotonic()
    with pytest.raises(SqlLimitExceeded, match=r"stopped after 1 s, the time limit .*sql_timeout_s"):
        run_select(warehouse, CROSS_JOIN, limits=SqlLimits(timeout_s=1, memory_limit="4GB"))
    assert time.monotonic() - started < 20  # interrupted, not run to the end (10^10 pairs)
    assert run_select(warehouse, "SELECT count(*) FROM t").rows == [(50,)]


def test_a_statement_needing_more_memory_than_the_limit_is_stopped(warehouse):
    with pytest.raises(SqlLimitExceeded, match=r"more than 200MB of memory .*sql_memory_limit"):
        run_select(warehouse, BIG_SORT, limits=SqlLimits(timeout_s=600, memory_limit="200MB"))
    assert run_select(warehouse, "SELECT max(i) FROM t").rows == [(49,)]


def test_rows_beyond_the_limit_are_not_returned_and_the_answer_says_so(warehouse):
    result = run_select(warehouse, "SELECT i FROM t ORDER BY i", limits=SqlLimits(max_rows=7))
    assert [r[0] for r in result.rows] == list(range(7)) and result.truncated
    assert not run_select(warehouse, "SELECT i FROM t", limits=SqlLimits(max_rows=50)).truncated


@pytest.mark.parametrize("statement, word", [
    ("PRAGMA database_list", "PRAGMA"), ("pragma show_tables", "PRAGMA"), ("INSTALL httpfs", "INSTALL"),
    ("LOAD httpfs", "LOAD"), ("/* hi */ PRAGMA version", "PRAGMA")])
def test_pragmas_and_other_statements_are_refused_by_their_own_name(warehouse, statement, word):
    with pytest.raises(SqlRefused, match=f"only SELECT statements are allowed, got {word}$"):
        run_select(warehouse, statement)


@pytest.mark.parametrize("statement", [
    "SELECT path FROM duckdb_databases()", "SELECT * FROM pragma_database_list()",
    "SELECT * FROM duckdb_settings()", "SELECT current_setting('temp_directory')",
    # a statement built from strings would run past the check by name
    "FROM query('select path from duckdb_'||'databases')", "SELECT * FROM query_table('duckdb_'||'databases')",
    "SELECT * FROM QUERY ('select 1')",
    # the names as DuckDB's parser reads them: quoted, split by a comment, or a statement's serialized form
    "SELECT * FROM \"query\"('SELECT name, value FROM duckdb_' || 'settings()')", "SELECT * FROM query/**/('select 1')",
    "SELECT * FROM query--x\n('select 1')",
    "SELECT json_execute_serialized_sql(json_serialize_sql('SELECT current_' || 'setting(''secret_directory'')'))"])
def test_system_functions_that_show_server_paths_are_refused(warehouse, statement):
    with pytest.raises(SqlRefused, match="the server's own files or settings"):
        run_select(warehouse, statement)


@pytest.mark.parametrize("statement", [
    "SELECT name, setting FROM pg_catalog.pg_settings", "SELECT * FROM pg_settings WHERE name = 'secret_directory'",
    'SELECT * FROM "pg_settings"', "SELECT path FROM duckdb_databases", "FROM main.pragma_database_list",
    "SELECT count(*) FROM (SELECT * FROM pg_catalog.pg_settings)", "SELECT * FROM duckdb_logs"])
def test_catalog_views_that_show_settings_or_paths_are_refused(warehouse, statement):
    with pytest.raises(SqlRefused, match="the server's own files or settings"):
        run_select(warehouse, statement)
    # the rest of the catalog describes the warehouse's own tables, and stays readable
    assert run_select(warehouse, "SELECT table_name FROM information_schema.tables").rows == [("t",)]


@pytest.mark.parametrize("statement", [";PRAGMA version", " ; /* x */ PRAGMA storage_info('t')", ";;PRAGMA database_list"])
def test_an_empty_statement_before_a_pragma_hides_nothing(warehouse, statement):
    with pytest.raises(SqlRefused, match="only SELECT statements are allowed, got PRAGMA$"):
        run_select(warehouse, statement)


def test_a_damaged_block_is_named_at_once_not_waited_for_as_a_lock(tmp_path, monkeypatch):
    import os

    from sarag_assets.core import warehouse as store
    from sarag_assets.query.sql import SqlError

    path = tmp_path / "w.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT range AS i, repeat('x', 50) AS s FROM range(200000)")
    with open(path, "r+b") as f:  # a bad block: DuckDB's message says "... in block at location 4096"
        f.seek(4096)
        f.write(os.urandom(100_000))

    def waited(seconds):
        raise AssertionError("waited as for another process's lock")

    monkeypatch.setattr(time, "sleep", waited)  # both wait for a lock with time.sleep between tries
    with pytest.raises(SqlError, match="cannot open the warehouse .*Corrupt database file"):
        run_select(path, "SELECT count(*) FROM t", limits=SqlLimits(timeout_s=30))
    with pytest.raises(duckdb.IOException, match="block"):
        with store.connect(path, read_only=True, wait_s=30):
            pass


def test_a_result_holding_the_servers_path_is_refused(warehouse):
    folder = str(warehouse.resolve().parent)
    with pytest.raises(SqlRefused, match="the result holds the server's own file paths"):
        run_select(warehouse, f"SELECT '{folder}' || '/warehouse.duckdb' AS p")
    assert run_select(warehouse, "SELECT 'query' AS query").rows == [("query",)]  # a word, not the function


def test_a_result_larger_than_the_memory_limit_is_stopped(warehouse):
    # each row is small for DuckDB to compute, but 10 MB once it is a Python string
    with pytest.raises(SqlLimitExceeded, match=r"more than 100MB of memory .*sql_memory_limit"):
        run_select(warehouse, "SELECT repeat('x', 10000000) FROM range(150)",
                   limits=SqlLimits(timeout_s=600, memory_limit="100MB", max_result_bytes=10**10))
    assert run_select(warehouse, "SELECT max(i) FROM t").rows == [(49,)]


def test_a_result_larger_than_the_byte_limit_is_refused_before_it_is_fetched(warehouse):
    with pytest.raises(SqlLimitExceeded, match=r"^the result is larger than 10,000,000 bytes, the limit for a "
                                               r"result \(setting sql_max_result_bytes\)"):
        run_select(warehouse, "SELECT repeat('x', 300000000)")
    with pytest.raises(SqlLimitExceeded, match="larger than 2,000 bytes"):  # many small rows add up
        run_select(warehouse, "SELECT i, repeat('y', 100) FROM t", limits=SqlLimits(max_result_bytes=2_000))
    result = run_select(warehouse, "SELECT i, repeat('y', 100) AS y FROM t ORDER BY i DESC",
                        limits=SqlLimits(max_result_bytes=20_000))
    assert result.columns == ["i", "y"] and [r[0] for r in result.rows] == list(range(49, -1, -1))


def test_error_messages_name_no_server_path(warehouse):
    message = f"IO Error: Could not set lock on file \"{warehouse}\": Conflicting lock is held in {warehouse.parent}"
    private = _private(message, warehouse)
    assert str(warehouse.parent) not in private and "<home>" in private


def _cli_sql(warehouse, statement: str, timeout_s: int) -> subprocess.CompletedProcess:
    """`sarag sql STATEMENT` over a home publishing `warehouse`, with that statement time limit."""
    publish_as_is(warehouse.parent, copy_of=warehouse)
    env = {"SARAG_HOME": str(warehouse.parent), "SARAG_SQL_TIMEOUT_S": str(timeout_s), "PATH": "/usr/bin:/bin",
           "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "sarag_assets.cli", "sql", statement], env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_cli_stops_a_statement_at_the_configured_time_limit_with_one_line(warehouse):
    result = _cli_sql(warehouse, CROSS_JOIN, 1)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "sarag: error: stopped after 1 s, the time limit for a statement (setting sql_timeout_s)"]


# DuckDB sees an interrupt between chunks of 2,048 rows; one chunk of this takes minutes
UNINTERRUPTIBLE = "SELECT sum(levenshtein(repeat('a', 10000), repeat('b', 10000) || range::VARCHAR)) FROM range(200)"


def test_the_cli_refuses_a_result_of_300_megabytes_with_one_line(warehouse):
    result = _cli_sql(warehouse, "SELECT repeat('x', 300000000) AS big", 60)
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        "sarag: error: the result is larger than 10,000,000 bytes, the limit for a result (setting "
        "sql_max_result_bytes)"]


def test_the_cli_ends_a_statement_duckdb_cannot_interrupt_with_the_same_line(warehouse):
    result = _cli_sql(warehouse, UNINTERRUPTIBLE, 1)  # the subprocess's own timeout (300 s) guards a hang
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        "sarag: error: stopped after 1 s, the time limit for a statement (setting sql_timeout_s)"]


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
def test_a_long_lived_reader_ends_such_a_statement_and_goes_on_answering(warehouse):
    from concurrent.futures import ThreadPoolExecutor

    from sarag_assets.query.sql import IsolatedSql

    isolated = IsolatedSql()
    try:
        with ThreadPoolExecutor(1) as waiting:  # the caller's own wait guards a hang
            stuck = waiting.submit(isolated.run, warehouse, UNINTERRUPTIBLE, limits=SqlLimits(timeout_s=1))
            with pytest.raises(SqlLimitExceeded, match="stopped after 1 s"):
                stuck.result(timeout=120)
        assert isolated.run(warehouse, "SELECT count(*) FROM t").rows == [(50,)]  # fresh processes answer
        with pytest.raises(SqlRefused, match="got PRAGMA"):
            isolated.run(warehouse, "PRAGMA version")
    finally:
        isolated.close()


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
def test_a_runaway_statement_fails_no_statement_that_kept_to_its_limit(warehouse):
    """Four statements DuckDB cannot interrupt and one quick count, sent at once: the runaways are ended, each
    with its own process; the count, whose limit is shorter than its wait for a process, answers."""
    from concurrent.futures import ThreadPoolExecutor

    from sarag_assets.query.sql import IsolatedSql

    isolated = IsolatedSql()
    try:
        with ThreadPoolExecutor(5) as callers:  # the callers' own waits guard a hang
            runaways = [callers.submit(isolated.run, warehouse, UNINTERRUPTIBLE, limits=SqlLimits(timeout_s=2))
                        for _ in range(4)]
            quick = callers.submit(isolated.run, warehouse, "SELECT count(*) FROM t", limits=SqlLimits(timeout_s=2))
            assert quick.result(timeout=300).rows == [(50,)]
            for runaway in runaways:
                with pytest.raises(SqlLimitExceeded, match="stopped after 2 s"):
                    runaway.result(timeout=300)
        assert isolated.run(warehouse, "SELECT max(i) FROM t").rows == [(49,)]
    finally:
        isolated.close()


def test_a_reader_waits_for_a_writer_in_another_process_and_then_answers(warehouse):
    writer = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time\n"
         f"con = duckdb.connect({str(warehouse)!r})\nprint('locked', flush=True)\ntime.sleep(2)\ncon.close()"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "locked"
        with pytest.raises(SqlLimitExceeded, match="being written by another process"):
            run_select(warehouse, "SELECT count(*) FROM t", limits=SqlLimits(timeout_s=0.2))
        assert run_select(warehouse, "SELECT count(*) FROM t", limits=SqlLimits(timeout_s=60)).rows == [(50,)]
    finally:
        writer.wait(timeout=60)


def test_the_cli_stops_a_sort_over_a_hundred_million_rows_with_one_line(warehouse):
    """With the default memory limit (1GB) and a 2 s time limit, whichever limit comes first stops it."""
    result = _cli_sql(warehouse, BIG_SORT, 2)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[0] in (
        "sarag: error: stopped after 2 s, the time limit for a statement (setting sql_timeout_s)",
        "sarag: error: stopped: the statement needs more than 1GB of memory (setting sql_memory_limit)")
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_cli_prints_control_characters_in_cells_as_escapes(warehouse):
    """A quarantined record's excerpt keeps what the file held; a terminal must not obey its ESC."""
    with duckdb.connect(str(warehouse)) as con:
        con.execute("CREATE TABLE excerpt AS SELECT 'ok' || chr(27) || '[2J' || chr(8238) || 'txet' AS raw")
    result = _cli_sql(warehouse, "SELECT raw FROM excerpt", 60)
    assert result.returncode == 0, result.stderr
    assert "ok\\x1b[2J\\u202etxet" in result.stdout
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout


def test_a_reader_that_stops_reading_gets_no_traceback(warehouse):
    """`sarag sql ... | head -1`: the rest of the output has nowhere to go, and that is no error to show."""
    publish_as_is(warehouse.parent, copy_of=warehouse)
    env = {"SARAG_HOME": str(warehouse.parent), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    wide = ", ".join(f"repeat('x', 60) AS c{i}" for i in range(20))
    reader = subprocess.Popen([sys.executable, "-m", "sarag_assets.cli", "sql", f"SELECT {wide} FROM range(1000)"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert reader.stdout.readline().startswith("c0 | c1")
    reader.stdout.close()
    stderr = reader.stderr.read()
    assert reader.wait(timeout=120) == 1
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
