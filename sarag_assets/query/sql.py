"""Read-only SQL over the warehouse, for people and for `ask_sql`. No Dagster imports.

Two independent locks, so a statement that slips past one still meets the other:

1. The statement is parsed by DuckDB itself (`extract_statements`): exactly one statement, and it must
   be a SELECT (WITH ... SELECT, VALUES and table functions included). Anything else — INSERT, UPDATE,
   COPY, ATTACH, INSTALL/LOAD, PRAGMA, SET, CALL, EXPORT, multiple statements — is refused before it runs.
2. It runs on a connection opened read-only with `enable_external_access = false` and the configuration
   locked: no file outside the warehouse can be read (`read_csv('/etc/passwd')`, `'x.parquet'`), no
   database attached, no extension installed, and the setting cannot be switched back by the statement.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

MAX_ROWS = 1_000  # rows returned; the statement may match more (`truncated` says so)
MAX_STATEMENT_CHARS = 20_000


class SqlError(ValueError):
    """A checked statement that failed to run (unknown table, type error, ...)."""


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
    if kind != duckdb.StatementType.SELECT:
        raise SqlRefused(f"only SELECT statements are allowed, got {kind.name}")
    return statement.strip().rstrip(";")


def run_select(warehouse: str | Path, statement: str, *, max_rows: int = MAX_ROWS) -> SqlResult:
    """Run one checked SELECT on a locked-down read-only connection."""
    checked = check_statement(statement)
    if not Path(warehouse).exists():
        raise FileNotFoundError(f"no warehouse at {warehouse}: materialize the assets first")
    con = duckdb.connect(str(warehouse), read_only=True,
                         config={"enable_external_access": False, "lock_configuration": True})
    try:
        try:
            cursor = con.execute(checked)
            rows = cursor.fetchmany(max_rows + 1)
        except duckdb.PermissionException as exc:
            raise SqlRefused(f"refused: {_first_line(exc)}") from None
        except duckdb.Error as exc:
            message = _first_line(exc)
            if "external access" in message.lower() or "read-only" in message.lower():
                raise SqlRefused(f"refused: {message}") from None
            raise SqlError(f"the statement failed: {message}") from None
        columns = [d[0] for d in cursor.description or []]
        types = [str(d[1]) for d in cursor.description or []]
    finally:
        con.close()
    return SqlResult(columns, rows[:max_rows], len(rows) > max_rows, checked, types)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
