"""Read-only SQL over the warehouse, for people and for `ask_sql`. No Dagster imports.

Two independent locks, so a statement that slips past one still meets the other:

1. The statement is parsed by DuckDB itself (`extract_statements`): exactly one statement, and it must
   be a SELECT (WITH ... SELECT, VALUES and table functions included). Anything else — INSERT, UPDATE,
   COPY, ATTACH, INSTALL/LOAD, PRAGMA, SET, CALL, EXPORT, multiple statements — is refused before it runs.
2. It runs on a connection opened read-only with `enable_external_access = false` and the configuration
   locked: no file outside the warehouse can be read (`read_csv('/etc/passwd')`, `'x.parquet'`), no
   database attached, no extension installed, and the setting cannot be switched back by the statement.

PRAGMAs (which DuckDB parses as SELECTs), the system functions that show the server's paths or
settings, and `query()` / `query_table()` (which would run a statement built from strings, past this
check) are refused by name; a result that still holds the warehouse's path is refused too. Every
statement runs within limits (`SqlLimits`, from the settings `sql_timeout_s`, `sql_memory_limit`,
`sql_max_rows`): it is interrupted after the time limit, fails when it (or the rows it returns) needs
more memory than the limit (nothing spills to disk), and returns at most the row limit.
Errors are one line and name no path on the server.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from sarag_assets.core.warehouse import is_lock_conflict

MAX_ROWS = 1_000  # rows returned; the statement may match more (`truncated` says so)
MAX_STATEMENT_CHARS = 20_000
# The statement's first keyword, past comments, opening parentheses and empty statements.
_FIRST_WORD = re.compile(r"\A(?:\s+|;|--[^\n]*(?:\n|\Z)|/\*.*?\*/|\()*([A-Za-z_]+)", re.S)
# DuckDB's functions that report the server's files, settings or environment, and those that run a
# statement built from strings (past every check here). Matched against the names DuckDB's own parser finds
# in the statement (quoted, commented or rewritten: a PRAGMA is parsed as a call of pragma_<name>).
_SYSTEM_FUNCTION = re.compile(
    r"pragma_\w+|duckdb_(?:databases|settings|extensions|temporary_files|secrets|memory|log\w*)|"
    r"current_setting|getenv|which_secret|query(?:_table)?|json_execute_serialized_sql", re.I)
# rows fetched at a time, so the result's own size is checked against the memory limit before more of it
# becomes Python objects: one, since a single row may be tens of megabytes (at most sql_max_rows calls)
FETCH_CHUNK = 1


@dataclass(frozen=True)
class SqlLimits:
    """How long, how much memory and how many rows one statement may take."""

    timeout_s: float = 10.0
    memory_limit: str = "1GB"
    max_rows: int = MAX_ROWS

    @classmethod
    def from_settings(cls, settings) -> "SqlLimits":
        return cls(settings.sql_timeout_s, settings.sql_memory_limit, settings.sql_max_rows)


class SqlError(ValueError):
    """A checked statement that failed to run (unknown table, type error, ...)."""


class SqlLimitExceeded(SqlError):
    """The statement was stopped by a limit (the message names it and the setting that raises it)."""


class SqlRefused(SqlError):
    """The statement is not a single read-only SELECT, or it tried to reach outside the warehouse."""


@dataclass
class SqlResult:
    columns: list[str]
    rows: list[tuple]
    truncated: bool = False
    statement: str = ""
    types: list[str] = field(default_factory=list)

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


def check_statement(statement: str) -> str:
    """The statement, stripped, if it is one SELECT; raises SqlRefused otherwise."""
    if not isinstance(statement, str) or not statement.strip():
        raise SqlRefused("empty statement")
    if len(statement) > MAX_STATEMENT_CHARS:
        raise SqlRefused(f"statement longer than {MAX_STATEMENT_CHARS} characters")
    try:
        statements = duckdb.extract_statements(statement)
    except duckdb.Error as exc:
        raise SqlError(f"not valid SQL: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise SqlRefused(f"exactly one statement is allowed, got {len(statements)}")
    kind = statements[0].type
    first = _FIRST_WORD.match(statement)  # past comments, parentheses and empty statements (";PRAGMA ...")
    word = first.group(1).upper() if first else kind.name
    if kind != duckdb.StatementType.SELECT or word == "PRAGMA":
        raise SqlRefused(f"only SELECT statements are allowed, got {word}")
    system = sorted(name for name in _functions_called(statements[0].query) if _SYSTEM_FUNCTION.fullmatch(name))
    if system:
        raise SqlRefused(f"refused: {system[0]} reports the server's own files or settings, or runs a "
                         "statement built from strings")
    return statement.strip().rstrip(";")


def _functions_called(statement: str) -> set[str]:
    """Every function and table function the statement calls, as DuckDB's parser reads it."""
    with duckdb.connect(":memory:") as con:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [statement]).fetchone()[0])
    if tree.get("error"):
        raise SqlError(f"not valid SQL: {tree.get('error_message', 'cannot be parsed')}")
    names: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            name = node.get("function_name")
            if isinstance(name, str):
                names.add(name.lower())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return names


def run_select(warehouse: str | Path, statement: str, *, max_rows: int | None = None,
               limits: SqlLimits | None = None) -> SqlResult:
    """Run one checked SELECT on a locked-down read-only connection, within ``limits`` (``max_rows``
    overrides their row limit)."""
    limits = limits or SqlLimits()
    max_rows = limits.max_rows if max_rows is None else max_rows
    checked = check_statement(statement)
    if not Path(warehouse).exists():
        raise FileNotFoundError(f"no warehouse at {warehouse}: materialize the assets first")
    con = _open_read_only(warehouse, limits)
    timer = threading.Timer(limits.timeout_s, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        try:
            cursor = con.execute(checked)
            rows = _fetch(cursor, max_rows + 1, limits)
        except duckdb.InterruptException:
            raise SqlLimitExceeded(f"stopped after {limits.timeout_s:g} s, the time limit for a statement "
                                   "(setting sql_timeout_s)") from None
        except duckdb.OutOfMemoryException:
            raise SqlLimitExceeded(f"stopped: the statement needs more than {limits.memory_limit} of memory "
                                   "(setting sql_memory_limit)") from None
        except duckdb.PermissionException as exc:
            raise SqlRefused(f"refused: {_private(_first_line(exc), warehouse)}") from None
        except duckdb.Error as exc:
            message = _private(_first_line(exc), warehouse)
            if "external access" in message.lower() or "read-only" in message.lower():
                raise SqlRefused(f"refused: {message}") from None
            raise SqlError(f"the statement failed: {message}") from None
        columns = [d[0] for d in cursor.description or []]
        types = [str(d[1]) for d in cursor.description or []]
    finally:
        timer.cancel()
        con.close()
    if _shows_paths(rows, warehouse):
        raise SqlRefused("refused: the result holds the server's own file paths")
    return SqlResult(columns, rows[:max_rows], len(rows) > max_rows, checked, types)


def _fetch(cursor, n: int, limits: SqlLimits) -> list[tuple]:
    """Up to `n` rows, a few at a time: the rows become Python objects outside DuckDB's memory limit, so
    their own size is held to it here."""
    budget, used, rows = _bytes(limits.memory_limit), 0, []
    while len(rows) < n:
        chunk = cursor.fetchmany(min(FETCH_CHUNK, n - len(rows)))
        if not chunk:
            break
        rows.extend(chunk)
        used += sum(len(v) if isinstance(v, (str, bytes)) else 16 for row in chunk for v in row)
        if budget is not None and used > budget:
            raise duckdb.OutOfMemoryException("the result is larger than the memory limit")
    return rows


def _bytes(limit: str) -> int | None:
    """A DuckDB memory setting ("1GB", "512MiB") in bytes; None when it is not one of these forms."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B\s*", limit, re.I)
    if not match:
        return None
    number, unit, binary = match.groups()
    power = " KMGT".index(unit.upper() or " ")
    return int(float(number) * (1024 if binary else 1000) ** power)


def _shows_paths(rows: list[tuple], warehouse: str | Path) -> bool:
    """Whether a value of the result names the warehouse's folder on the server."""
    folder = str(Path(warehouse).resolve().parent)
    return any(isinstance(v, str) and folder in v for row in rows for v in row)


def _open_read_only(warehouse: str | Path, limits: SqlLimits):
    """The locked-down read-only connection; while a writer in another process holds the file's lock,
    tried again (backing off) until the statement's time limit."""
    config = {"enable_external_access": False, "memory_limit": limits.memory_limit, "temp_directory": "",
              "lock_configuration": True}
    deadline, delay = time.monotonic() + limits.timeout_s, 0.05
    while True:
        try:
            return duckdb.connect(str(warehouse), read_only=True, config=config)
        except duckdb.Error as exc:
            if not is_lock_conflict(exc):
                raise SqlError(f"cannot open the warehouse ({_private(_first_line(exc), warehouse)}); if it is "
                               "damaged, move it aside and rebuild it with `sarag materialize`") from None
            if time.monotonic() > deadline:
                raise SqlLimitExceeded(f"the warehouse was being written by another process for longer than "
                                       f"{limits.timeout_s:g} s (setting sql_timeout_s); try again") from None
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def _private(message: str, warehouse: str | Path) -> str:
    """``message`` without the server's paths: the warehouse's and its folder's."""
    path = Path(warehouse)
    names = {str(path.resolve()): f"<home>/{path.name}", str(path): f"<home>/{path.name}",
             str(path.resolve().parent): "<home>", str(path.parent): "<home>"}
    for shown in sorted(names, key=len, reverse=True):
        if shown not in ("", "."):
            message = message.replace(shown, names[shown])
    return message


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


# Past its time limit, a statement DuckDB has not stopped (its interrupt is seen between chunks of 2,048
# rows, and one chunk of a per-row function over long strings can take minutes) is stopped by ending the
# process that runs it, this much later.
HARD_STOP_GRACE_S = 3.0


class IsolatedSql:
    """`run_select` in child processes that are ended when a statement outlives its time limit (what a
    long-lived reader such as the service uses: a thread cannot be stopped, a process can). The children
    are started and warmed when this opens; after a hard stop, new ones replace them."""

    def __init__(self, workers: int = 2):
        self.workers = workers
        self._lock = threading.Lock()
        self._pool = self._start()

    def _start(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: the parent holds threads and native libraries (the model, uvicorn)
        pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        for warm in [pool.submit(check_statement, "SELECT 1") for _ in range(self.workers)]:
            warm.result()
        return pool

    def run(self, warehouse: str | Path, statement: str, *, max_rows: int | None = None,
            limits: SqlLimits | None = None) -> SqlResult:
        from concurrent.futures import TimeoutError as Late
        from concurrent.futures.process import BrokenProcessPool

        limits = limits or SqlLimits()
        check_statement(statement)  # refused here, without a round trip
        pool = self._pool
        future = pool.submit(run_select, str(warehouse), statement, max_rows=max_rows, limits=limits)
        try:
            return future.result(timeout=limits.timeout_s + HARD_STOP_GRACE_S)
        except Late:
            self._restart(pool)
            raise SqlLimitExceeded(f"stopped after {limits.timeout_s:g} s, the time limit for a statement "
                                   "(setting sql_timeout_s)") from None
        except BrokenProcessPool:  # another statement's hard stop ended this one's process too
            raise SqlLimitExceeded("stopped with another statement that outlived its time limit; run it "
                                   "again") from None

    def _restart(self, pool) -> None:
        with self._lock:
            if self._pool is not pool:
                return  # another request restarted it already
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()
            pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._start()

    def close(self) -> None:
        """End the child processes now, a statement in flight with them, and wait until they are gone: the
        caller may be ended right after (uvicorn re-raises SIGTERM after its shutdown, which skips the
        interpreter's exit handlers), and a child left waiting on its queue would outlive it for good."""
        processes = list(getattr(self._pool, "_processes", {}).values())
        for process in processes:
            process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)
        for process in processes:
            process.join()
