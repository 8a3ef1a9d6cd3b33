"""Write, audit, publish: readers see only a complete state whose checks passed. No Dagster imports.

The pipeline writes the warehouse and the LanceDB tables in place, batch by batch. Readers (`search`,
`ask`, `sql`, the service) never read those directly: they read the last *published state*, under
`<home>/published/`:

    <id>.duckdb   a read-only copy of the warehouse (its tables and views, without the writers' caches),
                  made while holding the warehouse's write lock, so it is one transaction's view
    <id>.json     the record: the LanceDB version of every table, the counts, the audit's findings
    CURRENT       the id of the published state, replaced atomically (write, fsync, rename)

`stage` makes the copy, pins the LanceDB tables' latest versions and audits the pair: every table holds
exactly the rows its warehouse source calls for (one per current conversation, pseudo-document or graph
node; passages for every conversation with text), no id twice, nothing of a superseded or unknown
conversation. `promote` publishes a staged state only when its audit passed. A crash at any moment
leaves CURRENT naming the previous state, whose files nothing changes: the copy is never written again,
and LanceDB keeps every version a kept publication names (`keep_versions_since`). The last `KEEP`
published states are kept, so a reader that opened the previous one goes on reading it.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sarag_assets.settings import Home

KEEP = 2  # published states kept: the current one and the one before (readers may still hold it)
CURRENT = "CURRENT"
# Caches of the writing steps: no reader needs them, and they are most of the warehouse's bytes.
WRITER_ONLY_TABLES = frozenset({"embedding_cache"})


class PublicationError(RuntimeError):
    """A published state is missing or damaged."""


class NotPublishable(RuntimeError):
    """A staged state failed its audit and is not published."""


@dataclass
class PublishedState:
    id: str
    folder: Path
    staged_at: str
    published_at: str | None
    lancedb: dict[str, dict[str, Any]]  # table -> {"version", "committed_at", "rows"}
    counts: dict[str, int]
    audit: dict[str, dict[str, Any]]  # check -> {"passed", "detail"}
    metadata_version: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def warehouse(self) -> Path:
        return self.folder / f"{self.id}.duckdb"

    @property
    def record_path(self) -> Path:
        return self.folder / f"{self.id}.json"

    @property
    def passed(self) -> bool:
        return all(check["passed"] for check in self.audit.values())

    @property
    def versions(self) -> dict[str, int]:
        return {table: int(pinned["version"]) for table, pinned in self.lancedb.items()}

    def index_store(self, uri: str, **kwargs):
        """The LanceDB tables as this state pinned them, for reading."""
        from sarag_assets.core.indices.store import IndexStore

        rows = {table: info["rows"] for table, info in self.lancedb.items() if isinstance(info.get("rows"), int)}
        return IndexStore.open_for_read(uri, versions=self.versions, pinned_rows=rows, read_consistency_interval_s=None,
                                        **kwargs)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "staged_at": self.staged_at, "published_at": self.published_at,
                "lancedb": self.lancedb, "counts": self.counts, "audit": self.audit,
                "metadata_version": self.metadata_version, **self.extra}

    def summary(self) -> dict[str, Any]:
        """What an answer reports about the state it came from."""
        return {"id": self.id, "published_at": self.published_at, "conversations": self.counts.get("conversations")}


def folder(home: Home) -> Path:
    return home.root / "published"


def _new_id() -> str:
    # sortable by time; the random tail keeps two stages in one second apart
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _read_record(path: Path) -> PublishedState:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return PublishedState(
            id=data["id"], folder=path.parent, staged_at=data["staged_at"], published_at=data.get("published_at"),
            lancedb=data["lancedb"], counts=data["counts"], audit=data["audit"],
            metadata_version=data.get("metadata_version"))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PublicationError(f"the publication record {path.name} cannot be read ({type(exc).__name__}: "
                               f"{str(exc)[:120]})") from None


def _write_atomically(path: Path, text: str) -> None:
    part = path.with_name(path.name + ".part")
    with open(part, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(part, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _write_record(state: PublishedState) -> None:
    _write_atomically(state.record_path, json.dumps(state.as_dict(), indent=1, sort_keys=True, default=str))


# ---- reading -----------------------------------------------------------------------------------------


def current(home: Home) -> PublishedState | None:
    """The published state readers use, or None when nothing was ever published."""
    pointer = folder(home) / CURRENT
    if home.root.exists() and not home.root.is_dir():
        raise home.unusable(f"{home.root} is not a folder; point --home (or SARAG_HOME) at a folder")
    try:
        state_id = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PublicationError(f"the published state's pointer cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise PublicationError(f"the published state's pointer ({pointer.name}) is damaged (not text)") from None
    if not state_id or "/" in state_id or state_id.startswith(".") or not state_id.isprintable():
        raise PublicationError(f"the published state's pointer ({pointer.name}) is damaged")
    record = folder(home) / f"{state_id}.json"
    if not record.is_file():
        raise PublicationError(f"the published state {state_id} has no record")
    state = _read_record(record)
    if not state.warehouse.is_file():
        raise PublicationError(f"the published state {state_id} has lost its warehouse copy")
    return state


def readable(home: Home) -> bool:
    """Whether the published state opens: its warehouse copy answers, and each LanceDB table it pins holds
    the rows it recorded (else it is published again)."""
    import duckdb

    try:
        state = current(home)
        if state is None:
            return False
        with duckdb.connect(str(state.warehouse), read_only=True) as con:
            con.execute("SELECT count(*) FROM current_dialogue_versions").fetchone()
        store = state.index_store(str(home.lancedb))
        for table in state.versions:
            store.counts(table)
        return True
    except (PublicationError, duckdb.Error, OSError, ValueError, RuntimeError):  # MissingIndex is a RuntimeError
        return False


def staged(home: Home, state_id: str) -> PublishedState:
    return _read_record(folder(home) / f"{state_id}.json")


def kept(home: Home) -> list[PublishedState]:
    """Every state on disk whose record reads, oldest first."""
    states = []
    for path in sorted(folder(home).glob("*.json")):
        try:
            states.append(_read_record(path))
        except PublicationError:
            continue
    return states


def keep_versions_since(home: Home) -> datetime | None:
    """The commit time of the oldest LanceDB version a kept state names: cleanup must spare it and
    everything since (see `IndexStore.keep_versions_since`)."""
    times = [datetime.fromisoformat(pinned["committed_at"])
             for state in kept(home) for pinned in state.lancedb.values() if pinned.get("committed_at")]
    return min(times) if times else None


# ---- writing -------------------------------------------------------------------------------------


def stage(home: Home) -> PublishedState:
    """Copy the warehouse, pin the LanceDB tables' latest versions and audit the pair. The state is
    recorded (not published) whatever the audit found; see `promote`."""
    from sarag_assets.core import warehouse
    from sarag_assets.core.indices.store import TABLES, IndexStore

    out = folder(home)
    out.mkdir(parents=True, exist_ok=True)
    # a stage or a record's write killed midway: the copy, DuckDB's log of it (.part.wal), a record or
    # CURRENT being replaced. Staging and publishing run one at a time, so none of them is being written now
    for leftover in out.glob("*.part*"):
        leftover.unlink(missing_ok=True)
    for copy in out.glob("*.duckdb"):  # killed between the copy and its record
        if not copy.with_suffix(".json").exists():
            copy.unlink(missing_ok=True)
    state_id = _new_id()
    part = out / f"{state_id}.duckdb.part"
    with warehouse.connect(home.warehouse) as con:  # the write lock: no writer changes it meanwhile
        warehouse.ensure_schema(con)
        _copy_warehouse(con, part)
        # pinned while the lock is held. On one machine the duckdb_writer pool (1) keeps an index step from
        # writing LanceDB meanwhile; with workers (a larger pool) one can, and the audit then refuses the state
        store = IndexStore.open_for_read(str(home.lancedb))
        pinned = {table: version for table in TABLES if (version := store.version_of(table)) is not None}
    os.chmod(part, 0o444)
    os.replace(part, out / f"{state_id}.duckdb")
    state = PublishedState(
        id=state_id, folder=out, staged_at=_now(), published_at=None,
        lancedb={table: {"version": v, "committed_at": t.isoformat()} for table, (v, t) in pinned.items()},
        counts={}, audit={})
    _audit(state, home)
    _write_record(state)
    _drop_unpublished(home, but=state.id)
    return state


def _copy_warehouse(con, target: Path) -> None:
    """The warehouse's tables and views, without the writers' caches, into a new DuckDB file."""
    con.execute("CHECKPOINT")
    source = con.execute("SELECT current_database()").fetchone()[0]
    con.execute(f"ATTACH '{_sql_path(target)}' AS published_copy")
    try:
        tables = [name for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main' "
            "ORDER BY table_name", [source]).fetchall() if name not in WRITER_ONLY_TABLES]
        for name in tables:
            con.execute(f'CREATE TABLE published_copy.main."{name}" AS FROM "{source}".main."{name}"')
        views = con.execute("SELECT view_name, sql FROM duckdb_views() WHERE database_name = ? AND NOT internal "
                            "AND schema_name = 'main'", [source]).fetchall()
        con.execute("USE published_copy")
        try:
            _create_views(con, views)
        finally:
            con.execute(f'USE "{source}"')
    finally:
        con.execute("DETACH published_copy")


def _create_views(con, views: list[tuple[str, str]]) -> None:
    """Views in an order their dependencies allow (a view is bound when it is created)."""
    import duckdb

    waiting = list(views)
    while waiting:
        failed = []
        for name, sql in waiting:
            try:
                con.execute(sql)
            except duckdb.CatalogException:
                failed.append((name, sql))
        if len(failed) == len(waiting):
            raise RuntimeError(f"the views {[n for n, _ in failed]} cannot be copied")
        waiting = failed


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _called_for(con) -> tuple[dict[str, set[tuple[str, str]]], set[str]]:
    """What a warehouse calls for in each LanceDB table, as (row id, batch) pairs (a row's id is its dialogue
    id, or "<dialogue>#<node>"), and the current conversations that have text (each has passages)."""
    from sarag_assets.core.indices.store import (
        CONVERSATION_TEXTS,
        GRAPH_NODES,
        ISSUE_DOCUMENTS,
        SOLUTION_DOCUMENTS,
        TABLE_ROWS,
    )

    conversations = set(con.execute("SELECT dialogue_id, batch_key FROM current_dialogue_versions").fetchall())
    documents = set(con.execute(
        "SELECT dialogue_id, batch_key FROM pseudo_documents JOIN current_dialogue_versions "
        "USING (dialogue_id, batch_key)").fetchall())
    nodes = set(con.execute(
        "SELECT dialogue_id || '#' || node_id, batch_key FROM graph_nodes JOIN current_dialogue_versions "
        "USING (dialogue_id, batch_key)").fetchall())
    with_text = {d for (d,) in con.execute(
        "SELECT DISTINCT dialogue_id FROM current_dialogues WHERE trim(text) <> ''").fetchall()}
    return ({TABLE_ROWS: conversations, CONVERSATION_TEXTS: conversations, ISSUE_DOCUMENTS: documents,
             SOLUTION_DOCUMENTS: documents, GRAPH_NODES: nodes}, with_text)


def batches_out_of_step(home: Home) -> list[str]:
    """The batches whose rows in the home's LanceDB tables differ from what its warehouse calls for (an index
    step killed between two tables' writes, a table damaged by hand). Indexing them again heals the next
    audit; nothing else would run them, since none of their inputs changed."""
    from sarag_assets.core import warehouse
    from sarag_assets.core.indices.store import CONVERSATION_PASSAGES, TABLE_ROWS, IndexStore

    with warehouse.connect(home.warehouse, read_only=True) as con:
        expected, with_text = _called_for(con)
    store = IndexStore.open_for_read(str(home.lancedb))
    batch_of = dict(expected[TABLE_ROWS])
    out: set[str] = set()
    for table, want in expected.items():
        keys = store.row_keys(table)
        held = set(zip(keys.column("id").to_pylist(), keys.column("batch_key").to_pylist()))
        out |= {batch for _, batch in held ^ want}
    keys = store.row_keys(CONVERSATION_PASSAGES)
    held = set(zip(keys.column("dialogue_id").to_pylist(), keys.column("batch_key").to_pylist()))
    out |= {batch for dialogue, batch in held if batch_of.get(dialogue) != batch}
    out |= {batch_of[d] for d in with_text - {d for d, _ in held} if d in batch_of}
    return sorted(out)


def _audit(state: PublishedState, home: Home) -> None:
    """Fill `state.counts` and `state.audit`: do the pinned LanceDB tables hold exactly what the copied
    warehouse calls for?"""
    import duckdb

    from sarag_assets.core.indices.store import CONVERSATION_PASSAGES, TABLE_ROWS, TABLES

    with duckdb.connect(str(state.warehouse), read_only=True) as con:
        expected, with_text = _called_for(con)
        state.metadata_version = (con.execute("SELECT max(version) FROM governance_state").fetchone() or [None])[0]
    conversations = expected[TABLE_ROWS]
    store = state.index_store(str(home.lancedb))
    mismatched, duplicated = {}, {}
    state.counts = {"conversations": len(conversations)}
    for table in TABLES:  # an absent table holds nothing: right only when nothing is called for
        keys = store.row_keys(table)
        ids = keys.column("id").to_pylist()
        state.counts[table] = len(ids)
        if table in state.lancedb:
            state.lancedb[table]["rows"] = len(ids)
        if len(set(ids)) != len(ids):
            duplicated[table] = len(ids) - len(set(ids))
        if table == CONVERSATION_PASSAGES:
            held = set(zip(keys.column("dialogue_id").to_pylist(), keys.column("batch_key").to_pylist()))
            stray = held - conversations
            uncovered = {d for d, _ in conversations if d in with_text} - {d for d, _ in held}
            if stray or uncovered:
                mismatched[table] = f"{len(stray)} rows of no current conversation, {len(uncovered)} conversations " \
                                    "without a passage"
            continue
        held = set(zip(ids, keys.column("batch_key").to_pylist()))
        want = expected[table]  # (row id, batch): a row's id is its dialogue id, or "<dialogue>#<node>"
        if held != want:
            mismatched[table] = f"{len(held - want)} rows the warehouse does not call for, {len(want - held)} missing"
    state.audit = {
        "indices_match_warehouse": {
            "passed": not mismatched,
            "detail": "; ".join(f"{t}: {m}" for t, m in mismatched.items())
                      or f"every table holds exactly its warehouse rows ({len(conversations)} conversations)"},
        "no_duplicate_index_ids": {
            "passed": not duplicated,
            "detail": ", ".join(f"{t}: {n} ids twice" for t, n in duplicated.items()) or "no id appears twice"},
    }


def promote(home: Home, state_id: str) -> PublishedState:
    """Publish a staged state (readers switch to it on their next open or refresh). Refused, and nothing
    changed, when its audit failed or its files are gone."""
    state = staged(home, state_id)
    if not state.passed:
        failed = "; ".join(f"{name}: {check['detail']}" for name, check in state.audit.items() if not check["passed"])
        raise NotPublishable(f"state {state_id} is not published: {failed}")
    if not state.warehouse.is_file():
        raise NotPublishable(f"state {state_id} is not published: its warehouse copy is gone")
    state.published_at = _now()
    _write_record(state)
    _write_atomically(folder(home) / CURRENT, state.id + "\n")
    _retire(home, state)
    return state


def _remove(state: PublishedState) -> None:
    state.warehouse.unlink(missing_ok=True)  # a reader holding it open keeps reading (POSIX)
    state.record_path.unlink(missing_ok=True)


def _drop_unpublished(home: Home, *, but: str) -> None:
    """States staged before `but` and never published (their audit failed, or a crash came first)."""
    for state in kept(home):
        if state.published_at is None and state.id < but:
            _remove(state)


def _retire(home: Home, published: PublishedState) -> None:
    """Keep the last `KEEP` published states and nothing staged before the newest."""
    done = sorted((s for s in kept(home) if s.published_at), key=lambda s: (s.published_at, s.id))
    keep = {s.id for s in done[-KEEP:]} | {published.id}
    for state in kept(home):
        if state.id not in keep and (state.published_at or state.id < published.id):
            _remove(state)
