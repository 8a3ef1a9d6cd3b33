"""A cache of validated LLM answers. No Dagster imports.

One row per call key (sha256 of model, messages, output schema and mode, computed by the client):

    llm_call_cache(key VARCHAR PRIMARY KEY, model VARCHAR, task VARCHAR, response_json VARCHAR,
                   prompt_tokens INT, completion_tokens INT, created_at TIMESTAMP)

A cache on a path is a SQLite file of its own (`Home.llm_cache`) in WAL mode: many processes (the steps
of Celery workers) read and write it at once, each write a short transaction, and a writer waits for
another's commit instead of failing. It opens one connection at its first use and holds it until
`close()`, so a call costs a lookup and an insert. Within one process a lock per database serializes the
operations, so worker threads can share a cache. A cache over a connection factory (a DuckDB connection,
e.g. dagster-duckdb's resource) opens a connection per operation instead.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Union

import duckdb

TABLE = "llm_call_cache"

_DDL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    key VARCHAR PRIMARY KEY,
    model VARCHAR,
    task VARCHAR,
    response_json VARCHAR,
    prompt_tokens INT,
    completion_tokens INT,
    created_at TIMESTAMP
)
"""

# A zero-argument callable returning either a DuckDB connection (closed after each use) or a context
# manager yielding one (e.g. dagster-duckdb's `DuckDBResource.get_connection`).
ConnectionFactory = Callable[[], Union[duckdb.DuckDBPyConnection, ContextManager[duckdb.DuckDBPyConnection]]]

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(name: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(name, threading.Lock())


def _is_local_path(target: str) -> bool:
    return "://" not in target and not target.startswith("md:")


class CallCache:
    """`CallCache("data/llm_cache.sqlite")` or `CallCache(lambda: resource.get_connection())`."""

    def __init__(self, path_or_connection_factory: "str | os.PathLike[str] | ConnectionFactory", *, lock_wait_s: float = 30.0):
        self.lock_wait_s = lock_wait_s
        self._ready = False
        if callable(path_or_connection_factory):
            self.path: str | None = None
            self._factory: ConnectionFactory | None = path_or_connection_factory
            self._lock = threading.Lock()
        else:
            target = os.fspath(path_or_connection_factory)
            if target.strip() in ("", ":memory:") or target.startswith(":memory:"):
                raise ValueError(
                    "CallCache needs a database file (an in-memory database would be a new, empty one "
                    "on every short-lived connection); pass a path or a connection factory"
                )
            self.path = target
            self._factory = None
            if _is_local_path(target):
                Path(target).parent.mkdir(parents=True, exist_ok=True)
                target = str(Path(target).resolve())
            self._lock = _lock_for(target)
        self._held: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"CallCache({self.path!r})" if self.path else "CallCache(<connection factory>)"

    # -- connections -------------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        assert self.path is not None
        con = sqlite3.connect(self.path, timeout=self.lock_wait_s, check_same_thread=False, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer; writers queue briefly
        return con

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        with self._lock:
            if self._factory is None:
                if self._held is None:
                    self._held = self._open()
                    self._held.execute(_DDL)
                yield self._held
                return
            opened = self._factory()
            # a DuckDB connection is its own context manager (closes on exit); so is get_connection()
            with opened as con:
                if not self._ready:
                    con.execute(_DDL)
                    self._ready = True
                yield con

    def close(self) -> None:
        """Release the held connection (the next operation opens it again)."""
        with self._lock:
            if self._held is not None:
                self._held.close()
                self._held = None

    # -- operations --------------------------------------------------------------------------------

    def get(self, key: str) -> str | None:
        """The cached response JSON for `key`, or None."""
        with self._connection() as con:
            row = con.execute(f"SELECT response_json FROM {TABLE} WHERE key = ?", [key]).fetchone()
        return None if row is None else row[0]

    def put(
        self,
        key: str,
        *,
        model: str,
        task: str,
        response_json: str,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        """Store (or replace) the validated answer for `key`."""
        created_at = datetime.now(timezone.utc).replace(tzinfo=None).isoformat(sep=" ")
        with self._connection() as con:
            con.execute(
                f"INSERT OR REPLACE INTO {TABLE} "
                "(key, model, task, response_json, prompt_tokens, completion_tokens, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [key, model, task, response_json, int(prompt_tokens), int(completion_tokens), created_at],
            )

    def count(self) -> int:
        with self._connection() as con:
            return int(con.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])

    def entry(self, key: str) -> dict[str, Any] | None:
        """The whole row for `key` (for inspection and tests), or None."""
        with self._connection() as con:
            cur = con.execute(f"SELECT * FROM {TABLE} WHERE key = ?", [key])
            row = cur.fetchone()
            if row is None:
                return None
            return dict(zip([d[0] for d in cur.description], row))
