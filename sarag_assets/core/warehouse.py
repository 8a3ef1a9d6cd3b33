"""The DuckDB warehouse: explicit table schemas, idempotent per-batch writes, views. No Dagster imports.

Tables are declared here with their column order and types, and frames are inserted BY NAME, so a
frame with columns in another order can never shift values into the wrong column. Writing a batch
replaces exactly that batch's rows in one transaction. DuckDB allows one writer process: callers keep
connections short (`with connect(path) as con:`), and `connect` waits briefly for a lock held by
another process instead of failing at once.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import polars as pl

# table name -> ordered (column, DuckDB type) pairs. The order is the public column order.
TABLES: dict[str, list[tuple[str, str]]] = {
    "raw_dialogues": [
        ("batch_key", "VARCHAR NOT NULL"),
        ("dialogue_id", "VARCHAR NOT NULL"),
        ("turn_index", "INTEGER NOT NULL"),
        ("role", "VARCHAR NOT NULL"),
        ("speaker", "VARCHAR NOT NULL"),
        ("text", "VARCHAR NOT NULL"),
        ("ts", "TIMESTAMPTZ"),
        ("source_file", "VARCHAR NOT NULL"),
        ("source_format", "VARCHAR NOT NULL"),
        ("content_hash", "VARCHAR NOT NULL"),
        ("landed_at", "TIMESTAMPTZ NOT NULL"),
    ],
    "quarantine": [
        ("batch_key", "VARCHAR NOT NULL"),
        ("source_file", "VARCHAR NOT NULL"),
        ("position", "BIGINT NOT NULL"),
        ("reason", "VARCHAR NOT NULL"),
        ("raw_excerpt", "VARCHAR"),
        ("landed_at", "TIMESTAMPTZ NOT NULL"),
    ],
}

# The latest landed version of every dialogue id; older versions stay in raw_dialogues as history.
VIEWS: dict[str, str] = {
    "current_dialogue_versions": """
        SELECT dialogue_id, batch_key, content_hash, landed_at
        FROM (
            SELECT dialogue_id, batch_key, content_hash, landed_at,
                   row_number() OVER (PARTITION BY dialogue_id ORDER BY landed_at DESC, batch_key DESC) AS rn
            FROM (SELECT DISTINCT dialogue_id, batch_key, content_hash, landed_at FROM raw_dialogues)
        ) WHERE rn = 1
    """,
    "current_dialogues": """
        SELECT r.* FROM raw_dialogues r
        JOIN current_dialogue_versions c USING (dialogue_id, batch_key)
    """,
}


def polars_schema(table: str) -> dict[str, pl.DataType]:
    mapping = {
        "VARCHAR": pl.String,
        "INTEGER": pl.Int32,
        "BIGINT": pl.Int64,
        "DOUBLE": pl.Float64,
        "BOOLEAN": pl.Boolean,
        "TIMESTAMPTZ": pl.Datetime("us", "UTC"),
    }
    return {name: mapping[sql.split()[0]] for name, sql in TABLES[table]}


def empty_frame(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(table))


def conform(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """Select the table's columns in its order with its types; a missing column is an error."""
    schema = polars_schema(table)
    missing = [c for c in schema if c not in frame.columns]
    if missing:
        raise ValueError(f"frame for {table} lacks columns {missing}")
    return frame.select([pl.col(c).cast(t) for c, t in schema.items()])


@contextmanager
def connect(path: str | Path, *, read_only: bool = False, wait_s: float = 60.0) -> Iterator[duckdb.DuckDBPyConnection]:
    deadline = time.monotonic() + wait_s
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.IOException as exc:  # another process holds the write lock
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
    try:
        yield con
    finally:
        con.close()


def ensure_schema(con: duckdb.DuckDBPyConnection, tables: list[str] | None = None) -> None:
    for name in tables or list(TABLES):
        cols = ", ".join(f'"{c}" {t}' for c, t in TABLES[name])
        con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({cols})")
    for name, sql in VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")


def replace_batch(con: duckdb.DuckDBPyConnection, table: str, batch_key: str, frame: pl.DataFrame) -> int:
    """Replace the rows of one batch atomically; returns the number of rows written."""
    ensure_schema(con)
    rows = conform(table, frame)
    if rows.height and rows["batch_key"].unique().to_list() != [batch_key]:
        raise ValueError(f"frame for {table} holds rows of other batches than {batch_key!r}")
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"DELETE FROM {table} WHERE batch_key = ?", [batch_key])
        if rows.height:
            con.register("_incoming", rows.to_arrow())
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
            con.unregister("_incoming")
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return rows.height


def read_batch(con: duckdb.DuckDBPyConnection, table: str, batch_key: str) -> pl.DataFrame:
    ensure_schema(con)
    cols = ", ".join(f'"{c}"' for c, _ in TABLES[table])
    return con.execute(f"SELECT {cols} FROM {table} WHERE batch_key = ?", [batch_key]).pl()
