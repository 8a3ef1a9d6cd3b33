"""The DuckDB warehouse: explicit table schemas, idempotent per-batch writes, views. No Dagster imports.

Tables are declared here with their column order and types, and frames are inserted BY NAME, so a
frame with columns in another order can never shift values into the wrong column. Writing a batch
replaces exactly that batch's rows in one transaction. DuckDB allows one writer process: callers keep
connections short (`with connect(path) as con:`), and `connect` waits for a lock held by another
process (up to `LOCK_WAIT_S`) instead of failing at once.
"""

from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import duckdb
import polars as pl

# table name -> ordered (column, DuckDB type) pairs. The order is the public column order.
# A column added to a table after homes exist must be nullable and go last: `ensure_schema` adds it to
# an older table with ALTER TABLE (old rows read null), since CREATE TABLE IF NOT EXISTS leaves it as is.
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
        ("accepted", "BOOLEAN"),  # the source marks the turn as the accepted answer (null: landed before)
        ("source_fields", "VARCHAR"),  # the record's own fields as a JSON object, on each of its turns
    ],
    "quarantine": [
        ("batch_key", "VARCHAR NOT NULL"),
        ("source_file", "VARCHAR NOT NULL"),
        ("position", "BIGINT NOT NULL"),
        ("reason", "VARCHAR NOT NULL"),
        ("raw_excerpt", "VARCHAR"),
        ("landed_at", "TIMESTAMPTZ NOT NULL"),
    ],
    "candidate_schemas": [
        ("batch_key", "VARCHAR NOT NULL"),
        ("dialogue_id", "VARCHAR NOT NULL"),
        ("content_hash", "VARCHAR NOT NULL"),
        ("column_name", "VARCHAR NOT NULL"),
        ("column_type", "VARCHAR NOT NULL"),
        ("meaning", "VARCHAR"),
        ("constraints", "VARCHAR"),
        ("note", "VARCHAR"),
        ("example_value", "VARCHAR"),
        ("relevance", "DOUBLE"),
        ("answerability", "DOUBLE"),
        ("overall", "DOUBLE"),
        ("justification", "VARCHAR"),
        ("signal", "VARCHAR"),
        ("problem", "VARCHAR"),
        ("backend", "VARCHAR NOT NULL"),
    ],
    "structuring_failures": [
        ("batch_key", "VARCHAR NOT NULL"),
        ("dialogue_id", "VARCHAR NOT NULL"),
        ("content_hash", "VARCHAR"),
        ("stage", "VARCHAR NOT NULL"),
        ("reason", "VARCHAR NOT NULL"),
        ("backend", "VARCHAR"),
        ("failed_at", "TIMESTAMPTZ NOT NULL"),
    ],
    "validated_rows": [
        ("batch_key", "VARCHAR NOT NULL"),
        ("dialogue_id", "VARCHAR NOT NULL"),
        ("content_hash", "VARCHAR NOT NULL"),
        ("column_name", "VARCHAR NOT NULL"),
        ("value", "VARCHAR"),
        ("raw_value", "VARCHAR"),
        ("evidence", "VARCHAR"),
        ("semantic_passed", "BOOLEAN"),
        ("semantic_reason", "VARCHAR"),
        ("structural_passed", "BOOLEAN"),
        ("structural_reason", "VARCHAR"),
        ("metadata_version", "INTEGER NOT NULL"),
        ("backend", "VARCHAR"),
        ("span_turn", "INTEGER"),
        ("span_start", "INTEGER"),
        ("span_end", "INTEGER"),
    ],
    "pseudo_documents": [
        ("batch_key", "VARCHAR NOT NULL"),
        ("dialogue_id", "VARCHAR NOT NULL"),
        ("content_hash", "VARCHAR NOT NULL"),
        ("issue_queries", "VARCHAR NOT NULL"),  # JSON list
        ("solution_queries", "VARCHAR NOT NULL"),  # JSON list
        ("issue_document", "VARCHAR NOT NULL"),
        ("solution_document", "VARCHAR NOT NULL"),
        ("backend", "VARCHAR NOT NULL"),
    ],
    "graph_nodes": [
        ("batch_key", "VARCHAR NOT NULL"),
        ("dialogue_id", "VARCHAR NOT NULL"),
        ("content_hash", "VARCHAR NOT NULL"),
        ("node_id", "VARCHAR NOT NULL"),
        ("issue", "VARCHAR NOT NULL"),
        ("answer", "VARCHAR NOT NULL"),
        ("turn_start", "INTEGER NOT NULL"),
        ("turn_end", "INTEGER NOT NULL"),
        ("backend", "VARCHAR NOT NULL"),
    ],
    "graph_edges": [
        ("batch_key", "VARCHAR NOT NULL"),
        ("dialogue_id", "VARCHAR NOT NULL"),
        ("content_hash", "VARCHAR NOT NULL"),
        ("source", "VARCHAR NOT NULL"),
        ("target", "VARCHAR NOT NULL"),
        ("relation", "VARCHAR NOT NULL"),
        ("reason", "VARCHAR"),
        ("backend", "VARCHAR NOT NULL"),
    ],
    # Unpartitioned, replaced whole by feature_clusters.
    "cluster_assignments": [
        ("dialogue_id", "VARCHAR NOT NULL"),
        ("view", "VARCHAR NOT NULL"),
        ("cluster_id", "BIGINT NOT NULL"),
        ("distance", "DOUBLE NOT NULL"),
        ("is_representative", "BOOLEAN NOT NULL"),
        ("model_version", "VARCHAR NOT NULL"),
        ("text_hash", "VARCHAR"),  # hash of the linearized text assigned; added later, so nullable
    ],
    "clusters": [
        ("view", "VARCHAR NOT NULL"),
        ("cluster_id", "BIGINT NOT NULL"),
        ("size", "BIGINT NOT NULL"),
        ("n_representatives", "BIGINT NOT NULL"),
        ("model_version", "VARCHAR NOT NULL"),
    ],
    # Unpartitioned, replaced whole by value_mentions.
    "value_mentions": [
        ("value", "VARCHAR NOT NULL"),
        ("conversations", "BIGINT NOT NULL"),
    ],
    # Appended by ranking_calibration, one row per measurement of the views' votes (`query.calibration`).
    "ranking_calibrations": [
        ("measured_at", "TIMESTAMPTZ NOT NULL"),
        ("conversations", "BIGINT NOT NULL"),
        ("queries", "BIGINT NOT NULL"),
        ("weights_json", "VARCHAR NOT NULL"),
        ("report_json", "VARCHAR NOT NULL"),
    ],
    "cluster_models": [
        ("model_version", "VARCHAR NOT NULL"),
        ("model", "BLOB NOT NULL"),
        ("n_fit_rows", "BIGINT NOT NULL"),
        ("fitted_at", "TIMESTAMPTZ NOT NULL"),
        ("drift_report", "VARCHAR"),
    ],
    # Unpartitioned governance state (no batch_key): appended, never rewritten.
    "metadata_versions": [
        ("version", "INTEGER NOT NULL"),
        ("fingerprint", "VARCHAR NOT NULL"),
        ("n_columns", "INTEGER NOT NULL"),
        ("columns_json", "VARCHAR NOT NULL"),
        ("backend", "VARCHAR"),
        ("created_at", "TIMESTAMPTZ NOT NULL"),
    ],
    "metadata_operations": [
        ("seq", "BIGINT NOT NULL"),
        ("version", "INTEGER NOT NULL"),
        ("dialogue_id", "VARCHAR"),
        ("operation", "VARCHAR NOT NULL"),
        ("columns", "VARCHAR NOT NULL"),
        ("candidate", "VARCHAR"),
        ("relevance", "DOUBLE"),
        ("answerability", "DOUBLE"),
        ("overall", "DOUBLE"),
        ("reason", "VARCHAR"),
        ("rejected_reason", "VARCHAR"),
        ("backend", "VARCHAR"),
        ("applied_at", "TIMESTAMPTZ NOT NULL"),
    ],
    "governance_processed": [
        ("dialogue_id", "VARCHAR NOT NULL"),
        ("content_hash", "VARCHAR NOT NULL"),
        ("batch_key", "VARCHAR NOT NULL"),
        ("metadata_version", "INTEGER NOT NULL"),
    ],
    # The latest governed metadata including the pending pool, one row per materialization.
    "governance_state": [
        ("version", "INTEGER NOT NULL"),
        ("state_json", "VARCHAR NOT NULL"),
        ("saved_at", "TIMESTAMPTZ NOT NULL"),
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
        "BLOB": pl.Binary,
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


# How long a writer waits for another process's write lock before it fails. The longest holders are the
# two global steps that read or copy the whole warehouse (`value_mentions`, `staged_state`): about 290 s
# and 180 s at 1,000,000 conversations by docs/deployment.md's extrapolation. A batch step started
# meanwhile (a second `sarag materialize`, the daemon's sensors) waits for them instead of failing.
LOCK_WAIT_S = 600.0


# DuckDB's words when another process holds the file ("Could not set lock on file ...: Conflicting lock is
# held in ..."); a damaged file's message may hold "lock" too ("... in block at location 4096")
_LOCK_CONFLICT = re.compile(r"could not set lock on file|conflicting lock is held", re.I)


def is_lock_conflict(exc: BaseException) -> bool:
    """Whether DuckDB refused the file because another process holds its lock (wait), not because it is
    damaged (do not wait)."""
    return isinstance(exc, duckdb.IOException) and bool(_LOCK_CONFLICT.search(str(exc)))


@contextmanager
def connect(path: str | Path, *, read_only: bool = False,
            wait_s: float = LOCK_WAIT_S) -> Iterator[duckdb.DuckDBPyConnection]:
    deadline = time.monotonic() + wait_s
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.IOException as exc:  # another process holds the write lock
            if not is_lock_conflict(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
    try:
        yield con
    finally:
        con.close()


def ensure_schema(con: duckdb.DuckDBPyConnection, tables: list[str] | None = None) -> None:
    names = tables or list(TABLES)
    for name in names:
        cols = ", ".join(f'"{c}" {t}' for c, t in TABLES[name])
        con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({cols})")
    existing = set(con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = current_schema()"
    ).fetchall())
    for name in names:
        for column, sql in TABLES[name]:
            if (name, column) not in existing:  # a table created before the column was declared
                if "NOT NULL" in sql:
                    raise RuntimeError(f"table {name} lacks the column {column}, which is NOT NULL; "
                                       "a column added later must be nullable")
                con.execute(f'ALTER TABLE {name} ADD COLUMN "{column}" {sql}')
    for name, sql in VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")


def _replace_where(con: duckdb.DuckDBPyConnection, table: str, where: str, params: list, rows: pl.DataFrame) -> int:
    """Delete the rows matching `where` and insert `rows` (already conformed), in one transaction."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"DELETE FROM {table} WHERE {where}", params)
        if rows.height:
            con.register("_incoming", rows.to_arrow())
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
            con.unregister("_incoming")
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return rows.height


def replace_batch(con: duckdb.DuckDBPyConnection, table: str, batch_key: str, frame: pl.DataFrame) -> int:
    """Replace the rows of one batch atomically; returns the number of rows written."""
    ensure_schema(con)
    rows = conform(table, frame)
    if rows.height and rows["batch_key"].unique().to_list() != [batch_key]:
        raise ValueError(f"frame for {table} holds rows of other batches than {batch_key!r}")
    return _replace_where(con, table, "batch_key = ?", [batch_key], rows)


def replace_table(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> int:
    """Replace all rows of an unpartitioned table atomically."""
    ensure_schema(con)
    return _replace_where(con, table, "true", [], conform(table, frame))


def read_batch(con: duckdb.DuckDBPyConnection, table: str, batch_key: str) -> pl.DataFrame:
    ensure_schema(con)
    cols = ", ".join(f'"{c}"' for c, _ in TABLES[table])
    return con.execute(f"SELECT {cols} FROM {table} WHERE batch_key = ?", [batch_key]).pl()


def append_rows(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> int:
    """Append rows to an unpartitioned table (history tables are never rewritten)."""
    ensure_schema(con)
    rows = conform(table, frame)
    if rows.height:
        con.register("_incoming", rows.to_arrow())
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
        con.unregister("_incoming")
    return rows.height


_CASTS = {"int": "BIGINT", "float": "DOUBLE", "boolean": "BOOLEAN", "date": "DATE", "datetime": "TIMESTAMPTZ"}


def refresh_conversation_table(con: duckdb.DuckDBPyConnection, columns: list[tuple[str, str]]) -> None:
    """The wide view: one row per current conversation, one typed column per M* column, and last the
    record's own fields as the source gave them (`source_fields`, JSON: `source_fields->>'category'`).

    Values come from validated_rows of the conversation's current version only; a column not yet
    extracted for a conversation (stale partition) reads as null until it is backfilled.
    """
    ensure_schema(con)
    selects = []
    for name, type_name in columns:
        value = f"max(v.value) FILTER (WHERE v.column_name = '{name}')"
        cast = _CASTS.get(type_name)
        selects.append(f'TRY_CAST({value} AS {cast}) AS "{name}"' if cast else f'{value} AS "{name}"')
    body = (",\n       " + ",\n       ".join(selects)) if selects else ""
    con.execute(
        f"""CREATE OR REPLACE VIEW conversation_table AS
SELECT c.dialogue_id, c.batch_key{body},
       CAST(any_value(r.source_fields) AS JSON) AS source_fields
FROM current_dialogue_versions c
LEFT JOIN raw_dialogues r ON r.dialogue_id = c.dialogue_id AND r.batch_key = c.batch_key AND r.turn_index = 0
LEFT JOIN validated_rows v ON v.dialogue_id = c.dialogue_id AND v.batch_key = c.batch_key
GROUP BY c.dialogue_id, c.batch_key"""
    )


def replace_failures(con: duckdb.DuckDBPyConnection, batch_key: str, stage: str, frame: pl.DataFrame) -> int:
    """Replace one stage's failure records of one batch (several stages share the table)."""
    ensure_schema(con)
    return _replace_where(con, "structuring_failures", "batch_key = ? AND stage = ?", [batch_key, stage],
                          conform("structuring_failures", frame))


def wide_rows(con: duckdb.DuckDBPyConnection, columns: list[str]) -> tuple[list[str], list[tuple]]:
    """The ``columns`` that `conversation_table` has (in the order given) and its rows, in dialogue id
    order: (dialogue_id, one value as text or None per column). ([], []) before the view exists."""
    known = {r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'conversation_table'").fetchall()}
    if not known:
        return [], []
    names = [n for n in columns if n in known]
    select = "".join(f', CAST("{n}" AS VARCHAR) AS "{n}"' for n in names)
    return names, con.execute(f"SELECT dialogue_id{select} FROM conversation_table ORDER BY dialogue_id").fetchall()


def conversation_texts(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(dialogue_id, text) of every current conversation: its stored (redacted) turns joined in order."""
    return [pair for chunk in conversation_text_chunks(con) for pair in chunk]


def conversation_text_chunks(con: duckdb.DuckDBPyConnection, size: int = 5_000) -> Iterator[list[tuple[str, str]]]:
    """`conversation_texts` a chunk at a time, so a pass over every conversation holds one chunk of them."""
    cursor = con.execute(
        "SELECT dialogue_id, string_agg(text, '\n' ORDER BY turn_index) FROM current_dialogues GROUP BY 1")
    while chunk := cursor.fetchmany(size):
        yield chunk


def current_turns(con: duckdb.DuckDBPyConnection, batch_key: str) -> pl.DataFrame:
    """The stored (redacted) turns of a batch's current conversations: dialogue_id, batch_key, turn_index, text."""
    return con.execute(
        "SELECT dialogue_id, batch_key, turn_index, text FROM current_dialogues WHERE batch_key = ? "
        "ORDER BY dialogue_id, turn_index", [batch_key]).pl()


def read_table(con: duckdb.DuckDBPyConnection, table: str) -> pl.DataFrame:
    ensure_schema(con)
    cols = ", ".join(f'"{c}"' for c, _ in TABLES[table])
    return con.execute(f"SELECT {cols} FROM {table}").pl()


# --- what the stages read and write beyond whole batches ---------------------------------------------


def current_dialogue_ids(con: duckdb.DuckDBPyConnection, batch_key: str | None = None) -> set[str]:
    """Ids of the current conversation versions (in one batch, or everywhere)."""
    if batch_key is None:
        return {d for (d,) in con.execute("SELECT dialogue_id FROM current_dialogue_versions").fetchall()}
    return {d for (d,) in con.execute(
        "SELECT dialogue_id FROM current_dialogue_versions WHERE batch_key = ?", [batch_key]).fetchall()}


def landed_batch_keys(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Batches of which the warehouse holds a turn or a quarantine row (none in a new, empty warehouse)."""
    try:
        return {k for (k,) in con.execute("SELECT DISTINCT batch_key FROM raw_dialogues UNION "
                                          "SELECT DISTINCT batch_key FROM quarantine").fetchall()}
    except duckdb.CatalogException:
        return set()


def current_dialogue_count(con: duckdb.DuckDBPyConnection) -> int:
    """How many conversations are current (the corpus's size), without reading their ids."""
    return int(con.execute("SELECT count(*) FROM current_dialogue_versions").fetchone()[0])


def current_rows(con: duckdb.DuckDBPyConnection, table: str, batch_keys: list[str] | None = None) -> pl.DataFrame:
    """Rows of `table` for current conversation versions (optionally only in these batches)."""
    if table not in TABLES:
        raise ValueError(f"unknown warehouse table {table!r}")
    where = "WHERE t.batch_key IN (SELECT unnest(?))" if batch_keys is not None else ""
    return con.execute(f"SELECT t.* FROM {table} t JOIN current_dialogue_versions c USING (dialogue_id, batch_key) "
                       f"{where}", [batch_keys] if batch_keys is not None else []).pl()


def conversation_table(con: duckdb.DuckDBPyConnection, batch_key: str | None = None,
                       *, has_columns: bool = True) -> pl.DataFrame:
    """The wide conversation_table (one row per current conversation); with no governed column yet, just
    the current (dialogue_id, batch_key) pairs."""
    source = "conversation_table" if has_columns else "(SELECT dialogue_id, batch_key FROM current_dialogue_versions)"
    if batch_key is None:
        return con.execute(f"SELECT * FROM {source}").pl()
    return con.execute(f"SELECT * FROM {source} WHERE batch_key = ?", [batch_key]).pl()


def failed_conversations(con: duckdb.DuckDBPyConnection, batch_key: str) -> int:
    return con.execute(
        "SELECT count(DISTINCT dialogue_id) FROM structuring_failures WHERE batch_key = ?", [batch_key]).fetchone()[0]


def latest_cluster_model(con: duckdb.DuckDBPyConnection) -> bytes | None:
    row = con.execute("SELECT model FROM cluster_models ORDER BY fitted_at DESC LIMIT 1").fetchone()
    return row[0] if row else None


# --- governed metadata M* ------------------------------------------------------------------------------

_STATES_NEWEST_FIRST = "SELECT version, state_json FROM governance_state ORDER BY saved_at DESC, version DESC"


def latest_governance_state(con: duckdb.DuckDBPyConnection) -> tuple[int, str] | None:
    """(version, state JSON) of the newest saved M*, or None before the first governance run."""
    return con.execute(_STATES_NEWEST_FIRST + " LIMIT 1").fetchone()


def governance_states(con: duckdb.DuckDBPyConnection) -> Iterator[str]:
    """Every saved M* as JSON, newest first, fetched in small chunks."""
    cursor = con.execute(_STATES_NEWEST_FIRST)
    while rows := cursor.fetchmany(50):
        for _, state_json in rows:
            yield state_json


def latest_metadata_version(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT coalesce(max(version), 0) FROM metadata_versions").fetchone()[0]


def next_operation_seq(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT coalesce(max(seq), 0) FROM metadata_operations").fetchone()[0]


# Conversations whose candidates governance reads at a time. Read all at once, with a pydantic object for
# each, a first governance over 100,000 conversations peaked at 3.8 GB against 0.9 GB (docs/results.md).
GOVERNANCE_CHUNK = 1_000


def ungoverned_candidates(con: duckdb.DuckDBPyConnection, *,
                          conversations_per_chunk: int = GOVERNANCE_CHUNK) -> Iterator[pl.DataFrame]:
    """Candidate columns of current conversation versions that governance has not processed yet, in a
    deterministic order: landing time, then batch, then dialogue, then the better-scored column first.
    Yielded in frames of whole conversations, read one frame at a time while the caller consumes them."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE governance_queue AS
        SELECT row_number() OVER (ORDER BY v.landed_at, c.batch_key, c.dialogue_id, c.content_hash) AS position,
               c.dialogue_id, c.content_hash, c.batch_key
        FROM (SELECT DISTINCT dialogue_id, content_hash, batch_key FROM candidate_schemas) c
        JOIN current_dialogue_versions v USING (dialogue_id, batch_key)
        WHERE NOT EXISTS (SELECT 1 FROM governance_processed p
                          WHERE p.dialogue_id = c.dialogue_id AND p.content_hash = c.content_hash)
    """)
    waiting = con.execute("SELECT count(*) FROM governance_queue").fetchone()[0]  # the temp table ends with con
    for start in range(0, waiting, conversations_per_chunk):
        yield con.execute("""
            SELECT c.* FROM governance_queue q
            JOIN candidate_schemas c USING (dialogue_id, content_hash, batch_key)
            WHERE q.position > ? AND q.position <= ?
            ORDER BY q.position, c.overall DESC, c.column_name
        """, [start, start + conversations_per_chunk]).pl()


def save_governance(con: duckdb.DuckDBPyConnection, *, versions: pl.DataFrame | None, operations: pl.DataFrame,
                    processed: pl.DataFrame, version: int, state_json: str,
                    columns: list[tuple[str, str]]) -> None:
    """One governance run's results in one transaction (new M* versions, operations, the conversations it
    processed, the saved state), then the conversation_table view over the new columns."""
    con.execute("BEGIN TRANSACTION")
    try:
        if versions is not None and versions.height:
            append_rows(con, "metadata_versions", versions)
        append_rows(con, "metadata_operations", operations)
        append_rows(con, "governance_processed", processed)
        append_rows(con, "governance_state", pl.DataFrame([{
            "version": version, "state_json": state_json, "saved_at": datetime.now(timezone.utc)}]))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    refresh_conversation_table(con, columns)


# --- what the query side reads --------------------------------------------------------------------------


def table_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def latest_ranking_calibration(con: duckdb.DuckDBPyConnection) -> tuple[int, dict[str, float]] | None:
    """(conversations measured, weights per view) of the newest calibration; None before the first."""
    if "ranking_calibrations" not in table_names(con):
        return None
    row = con.execute("SELECT conversations, weights_json FROM ranking_calibrations "
                      "ORDER BY measured_at DESC LIMIT 1").fetchone()
    return (int(row[0]), json.loads(row[1])) if row else None


def value_mention_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """value -> how many conversations mention it (empty in a home built before value_mentions existed)."""
    if "value_mentions" not in table_names(con):
        return {}
    return dict(con.execute("SELECT value, conversations FROM value_mentions").fetchall())


def graph_of(con: duckdb.DuckDBPyConnection, dialogue_ids: list[str]) -> tuple[list[dict], list[tuple]]:
    """The current dialogue-graph nodes (in turn order) and edges of these conversations."""
    nodes = con.execute(
        """SELECT n.dialogue_id, n.node_id, n.issue, n.answer, n.turn_start, n.turn_end
           FROM graph_nodes n JOIN current_dialogue_versions c USING (dialogue_id, batch_key)
           WHERE n.dialogue_id IN (SELECT unnest(?)) ORDER BY n.dialogue_id, n.turn_start""",
        [dialogue_ids]).pl().to_dicts()
    edges = con.execute(
        """SELECT e.dialogue_id, e.source, e.target, e.relation
           FROM graph_edges e JOIN current_dialogue_versions c USING (dialogue_id, batch_key)
           WHERE e.dialogue_id IN (SELECT unnest(?))""", [dialogue_ids]).fetchall()
    return nodes, edges


def dialogues_with_graph_edges(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Ids of the current conversations whose dialogue graph has at least one edge."""
    return {d for (d,) in con.execute(
        """SELECT DISTINCT e.dialogue_id FROM graph_edges e
           JOIN current_dialogue_versions c USING (dialogue_id, batch_key)""").fetchall()}


def home_summary(con: duckdb.DuckDBPyConnection) -> dict:
    """What a finished run left in the warehouse: conversations per source format, quarantine reasons, M*
    with each column's filled share over current rows, structuring failures, and the rows each LanceDB
    table should hold."""
    state = latest_governance_state(con)
    current_join = "JOIN current_dialogue_versions USING (dialogue_id, batch_key)"
    n_current = con.execute("SELECT count(*) FROM current_dialogue_versions").fetchone()[0]
    documents = con.execute(f"SELECT count(*) FROM pseudo_documents {current_join}").fetchone()[0]
    return {
        "by_format": con.execute(
            "SELECT source_format, count(DISTINCT dialogue_id), count(*) FROM current_dialogues GROUP BY 1 ORDER BY 1"
        ).fetchall(),
        "quarantined": con.execute("SELECT count(*) FROM quarantine").fetchone()[0],
        "quarantine_reasons": con.execute(
            "SELECT reason, count(*) FROM quarantine GROUP BY 1 ORDER BY 2 DESC LIMIT 5").fetchall(),
        "metadata_version": state[0] if state else None,
        "columns": json.loads(state[1])["columns"] if state else [],
        "filled": dict(con.execute(
            """SELECT v.column_name, avg(CASE WHEN v.value IS NULL THEN 0 ELSE 1 END)
               FROM validated_rows v JOIN current_dialogue_versions c USING (dialogue_id, batch_key)
               GROUP BY 1""").fetchall()),
        "failed_conversations": con.execute(
            "SELECT count(DISTINCT dialogue_id) FROM structuring_failures").fetchone()[0],
        "index_sources": {
            "table_rows": n_current,
            "issue_documents": documents,
            "solution_documents": documents,
            "graph_nodes": con.execute(f"SELECT count(*) FROM graph_nodes {current_join}").fetchone()[0],
            "conversation_texts": n_current,
        },
    }


def cluster_assignments(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Every stored cluster assignment (read-only connections welcome: no schema change)."""
    return con.execute("SELECT * FROM cluster_assignments").pl()


def problem_and_resolution(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str | None, str | None]]:
    """dialogue id -> (its `problem` cell, its `resolution` cell) in conversation_table; None where M* has
    no such column or the cell is null."""
    names, rows = wide_rows(con, ["problem", "resolution"])
    out = {}
    for row in rows:
        cells = dict(zip(names, row[1:]))
        out[row[0]] = (cells.get("problem"), cells.get("resolution"))
    return out


def current_dialogue_turns(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """dialogue id -> its current (role, redacted text) turns in order."""
    out: dict[str, list[tuple[str, str]]] = {}
    for dialogue_id, role, text in con.execute(
            "SELECT dialogue_id, role, text FROM current_dialogues ORDER BY dialogue_id, turn_index").fetchall():
        out.setdefault(dialogue_id, []).append((role, text))
    return out


# The current version's turns of the dialogue ids given as the one parameter: `current_dialogues` for those
# ids alone. Through the view, the version of every conversation is worked out first (a window over all
# of raw_dialogues: 80 ms a call at 10,000 conversations); here only those of the ids asked for.
_CURRENT_TURNS_OF = """
    WITH asked AS (SELECT * FROM raw_dialogues WHERE dialogue_id IN (SELECT unnest(?))),
         newest AS (SELECT dialogue_id, batch_key, row_number() OVER (
                        PARTITION BY dialogue_id ORDER BY landed_at DESC, batch_key DESC) AS rn
                    FROM (SELECT DISTINCT dialogue_id, batch_key, landed_at FROM asked))
    SELECT asked.* FROM asked JOIN newest USING (dialogue_id, batch_key) WHERE rn = 1"""


def conversation_origins(con: duckdb.DuckDBPyConnection, dialogue_ids: list[str] | None = None) -> dict[str, dict]:
    """Where each current conversation (of `dialogue_ids`, else every one) came from and when: source file
    and format, first and last turn time (None when the source had none), when it landed, and the record's
    own fields ({} when it has none or the warehouse is from before them)."""
    fields = "any_value(source_fields)" if _has_column(con, "raw_dialogues", "source_fields") else "NULL"
    turns, parameters = ("current_dialogues", []) if dialogue_ids is None else \
        (f"({_CURRENT_TURNS_OF})", [dialogue_ids])
    rows = con.execute(
        f"""SELECT dialogue_id, any_value(source_file), any_value(source_format), min(ts), max(ts), max(landed_at),
                  count(*), {fields}
           FROM {turns} GROUP BY dialogue_id""", parameters).fetchall()
    return {d: {"source_file": f, "source_format": fmt, "started_at": first, "ended_at": last, "landed_at": landed,
                "turn_count": n, "fields": json.loads(kept) if kept else {}}
            for d, f, fmt, first, last, landed, n, kept in rows}


def _has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    """Whether `table` has `column`: a published copy of an older home is read-only, so nothing adds it."""
    return bool(con.execute("SELECT count(*) FROM duckdb_columns() WHERE table_name = ? AND column_name = ?",
                            [table, column]).fetchone()[0])


def source_field_names(con: duckdb.DuckDBPyConnection, limit: int = 20) -> list[str]:
    """The names of the records' own fields in conversation_table, the most common first."""
    if not _has_column(con, "conversation_table", "source_fields"):
        return []
    return [k for (k,) in con.execute(
        """SELECT k FROM (SELECT unnest(json_keys(source_fields)) AS k FROM conversation_table
                          WHERE source_fields IS NOT NULL)
           GROUP BY k ORDER BY count(*) DESC, k LIMIT ?""", [limit]).fetchall()]


def conversation_turns(con: duckdb.DuckDBPyConnection, dialogue_id: str) -> list[dict]:
    """The stored (redacted) turns of a current conversation, in order, each with whether the source marks
    it as the accepted answer; [] when there is none. A warehouse from before the mark reads false."""
    accepted = "coalesce(accepted, false)" if _has_column(con, "raw_dialogues", "accepted") else "false"
    return con.execute(
        f"SELECT turn_index, role, speaker, text, ts, {accepted} AS accepted FROM ({_CURRENT_TURNS_OF}) "
        "ORDER BY turn_index", [[dialogue_id]]).pl().to_dicts()


def turns_of(con: duckdb.DuckDBPyConnection, dialogue_ids: list[str]) -> dict[str, list[dict]]:
    """`conversation_turns` of several current conversations at once (an id without turns is absent)."""
    accepted = "coalesce(accepted, false)" if _has_column(con, "raw_dialogues", "accepted") else "false"
    out: dict[str, list[dict]] = {}
    for record in con.execute(
            f"SELECT dialogue_id, turn_index, role, speaker, text, {accepted} AS accepted "
            f"FROM ({_CURRENT_TURNS_OF}) ORDER BY dialogue_id, turn_index", [list(dialogue_ids)]).pl().to_dicts():
        out.setdefault(record.pop("dialogue_id"), []).append(record)
    return out
