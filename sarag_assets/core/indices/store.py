"""The LanceDB index layer: one table per retrieval view, written per batch, searched three ways. No Dagster.

Tables (`TABLES`): `table_rows` (linearized conversation rows), `issue_documents` and `solution_documents`
(SDR pseudo-documents), `graph_nodes` (dialogue-graph nodes), `conversation_passages` (turn windows of the
conversation's own text) and `conversation_texts` (its whole text). Every row carries the common columns

    id            string, the primary key (`<dialogue_id>`, `<dialogue_id>#<node_id>` for graph nodes, `<dialogue_id>#p<n>` for passages)
    dialogue_id   string
    batch_key     string, the partition that wrote the row
    content_hash  string, a hash of everything that determines the row (text, vector model, extras)
    text          string, what full-text search sees
    vector        fixed_size_list<float32>[dimension]

plus any table-specific extras the caller passes (node_id, turn_start, ...); they are stored as given.

Writing (`IndexStore.replace_batch`) is one `merge_insert` on `id`, so one transaction: afterwards the
table holds exactly the given rows for that batch, rows of other batches whose dialogue was superseded
are gone, and everything else is untouched. A crash leaves the old state or the new one, never half.
`id` is declared as the table's *unenforced primary key* (Lance field metadata, set when the table is
created), which is what makes two writers inserting the same new ids conflict and retry instead of both
committing duplicates. Rows whose `content_hash` and `batch_key` did not change are not rewritten.
An id is unique across the whole table: writing a row whose id another batch holds moves it here.
Writers of different batches, or of the same one, may run at once (threads or processes): lost commit
races, including two writers creating the same table, are retried (every write here is idempotent).

Indices (`IndexStore.ensure_indices`): a native BM25 full-text index on `text` (ICU word segmentation,
so Chinese, Japanese, Arabic are tokenized too), and an ANN vector index (IVF_PQ by default) only once the
table holds `ann_min_rows` rows (5,000): below that an exact scan is a few milliseconds and exact, and
IVF_PQ trains nothing useful under 256 rows (its codebooks need 2**8 samples). Rows written after an index
was built are still found (Lance scans the unindexed part exactly); `ensure_indices` / `optimize` fold
them into the indices so that scan stays small.

Searching: `vector_search` (cosine), `text_search` (BM25 through a `MatchQuery`, so user text is never
parsed as query syntax), `hybrid_search` (reciprocal-rank fusion of the two lists, ties broken by id).
`where` is a Lance SQL filter written by the caller's code, never by an end user.

The query side opens the store with `IndexStore.open_for_read(uri, versions=...)`: it never creates,
writes, or migrates anything, a missing store or table reads as empty, and with `versions` every table
is read at the version a publication named (`core.publication`), whatever writers commit meanwhile; a
table or version so named that is gone raises `MissingIndex` (damage, not an empty table).
Writers pass `keep_versions_since`, the commit time of the oldest version a publication still names:
no cleanup (`optimize`, `ensure_indices`) removes a version committed since then.

`uri` is anything `lancedb.connect` accepts: a local folder or an object-store URI (`s3://`, `gs://`,
`az://`, with `storage_options`). Nothing here assumes a local path.
"""

from __future__ import annotations

import math
import os
import random
import re
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

TABLE_ROWS = "table_rows"
ISSUE_DOCUMENTS = "issue_documents"
SOLUTION_DOCUMENTS = "solution_documents"
GRAPH_NODES = "graph_nodes"
CONVERSATION_PASSAGES = "conversation_passages"
CONVERSATION_TEXTS = "conversation_texts"
TABLES = (TABLE_ROWS, ISSUE_DOCUMENTS, SOLUTION_DOCUMENTS, GRAPH_NODES, CONVERSATION_PASSAGES, CONVERSATION_TEXTS)

COMMON_COLUMNS = ("id", "dialogue_id", "batch_key", "content_hash", "text", "vector")
DEFAULT_DIMENSION = 384
DEFAULT_ANN_MIN_ROWS = 5_000
IVF_PQ_MIN_ROWS = 256  # PQ trains 2**num_bits centroids per sub-vector; fewer rows and it indexes nothing
RRF_K = 60  # the constant of reciprocal-rank fusion (Cormack et al.)
MAX_QUERY_CHARS = 4_000  # longer full-text queries are cut: BM25 over thousands of terms ranks nothing better

# Lance records the unenforced primary key as field metadata; a table created with it is keyed from
# its first version, so no writer can ever see it unkeyed.
_PK_POSITION = b"lance-schema:unenforced-primary-key:position"
_PK_LEGACY = b"lance-schema:unenforced-primary-key"
_STRING_COLUMNS = ("id", "dialogue_id", "batch_key", "content_hash", "text")
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# merge_insert rewrites a matched row only when it changed (!= is safe: both columns are non-null)
_CHANGED = "target.content_hash != source.content_hash OR target.batch_key != source.batch_key"


@dataclass(frozen=True)
class WriteResult:
    table: str
    batch_key: str
    rows: int  # rows given for the batch
    inserted: int
    updated: int
    deleted: int  # rows of this batch no longer given, plus superseded rows of other batches
    unchanged: int  # rows whose content_hash and batch_key were already stored
    version: int
    attempts: int  # >1 when a concurrent writer forced a retry
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sql_string(value: str) -> str:
    """A SQL string literal (single quotes doubled), for filters built from data."""
    return "'" + str(value).replace("'", "''") + "'"


def _is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


def _local_path(uri: str) -> str:
    return os.path.expanduser(uri[len("file://") :] if uri.startswith("file://") else uri)


def _clean_query(query: str | None) -> str:
    """Make free text safe to hand to the tokenizer: valid UTF-8, no control characters, bounded length."""
    if not query:
        return ""
    text = query.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot cross into Rust
    text = "".join(ch if ch.isprintable() or ch in " \t\n" else " " for ch in text)
    return text[:MAX_QUERY_CHARS].strip()


def _largest_divisor_at_most(n: int, limit: int) -> int:
    for d in range(max(1, limit), 0, -1):
        if n % d == 0:
            return d
    return 1


def ann_parameters(num_rows: int, dimension: int) -> dict[str, int]:
    """IVF partitions and PQ sub-vectors for a table of `num_rows` vectors.

    Partitions: sqrt(rows) (Lance's own default), capped so every partition keeps at least 256 rows
    to train on. Sub-vectors: dimension / 16 (24 for 384 dimensions), or the largest divisor of the
    dimension below that, since PQ splits each vector into equal parts.
    """
    partitions = max(1, min(int(round(math.sqrt(num_rows))), num_rows // IVF_PQ_MIN_ROWS))
    sub_vectors = _largest_divisor_at_most(dimension, max(1, dimension // 16))
    return {"num_partitions": partitions, "num_sub_vectors": sub_vectors}


class MissingIndex(RuntimeError):
    """A table or version that a pinned (published) state names is not in the LanceDB folder."""


class IndexStore:
    """The LanceDB tables under one `uri`; see the module docstring for the contract.

    `read_consistency_interval_s`: 0 (default) re-checks the latest table version on every read, so a
    long-lived store sees other writers at once; None never re-checks (fastest, for a snapshot);
    a positive number re-checks at most that often.
    `ann_min_rows`: rows a table needs before `ensure_indices` builds a vector index (never below 256
    for IVF_PQ). `ann_index_type`: "IVF_PQ" (default: cheap to refresh as rows arrive) or "IVF_HNSW_SQ"
    (faster to build and exact without re-ranking, but folding new rows in can take far longer).
    `refine_factor`: an IVF_PQ search re-ranks k × this many candidates by exact distance; PQ with 24
    sub-vectors alone keeps only ~80% of the true top 10 on 100k clustered 384-d vectors, 40 restores
    ~99.6% for a few milliseconds.
    """

    def __init__(
        self,
        uri: str,
        *,
        dimension: int = DEFAULT_DIMENSION,
        read_consistency_interval_s: float | None = 0,
        read_only: bool = False,
        metric: str = "cosine",
        ann_min_rows: int = DEFAULT_ANN_MIN_ROWS,
        ann_index_type: str = "IVF_PQ",
        fts_tokenizer: str = "icu",
        refine_factor: int = 40,
        write_timeout_s: float = 120.0,
        storage_options: dict[str, str] | None = None,
        versions: dict[str, int] | None = None,
        pinned_rows: dict[str, int] | None = None,
        keep_versions_since: datetime | None = None,
    ):
        if ann_index_type not in ("IVF_PQ", "IVF_HNSW_SQ"):
            raise ValueError(f"ann_index_type must be IVF_PQ or IVF_HNSW_SQ, not {ann_index_type!r}")
        self.uri = str(uri)
        self.dimension = int(dimension)
        self.read_only = read_only
        self.metric = metric
        self.ann_min_rows = int(ann_min_rows)
        self.ann_index_type = ann_index_type
        self.fts_tokenizer = fts_tokenizer
        self.refine_factor = refine_factor
        self.write_timeout = timedelta(seconds=write_timeout_s)
        self._consistency = (
            None if read_consistency_interval_s is None else timedelta(seconds=read_consistency_interval_s)
        )
        self._storage_options = storage_options
        if versions is not None and not read_only:
            raise ValueError("a store pinned to table versions is for reading only")
        self.versions = dict(versions) if versions is not None else None
        self.pinned_rows = dict(pinned_rows) if pinned_rows is not None else None  # what each pinned version holds
        self.keep_versions_since = keep_versions_since
        self._db = None
        self._tables: dict[str, Any] = {}

    @classmethod
    def open_for_read(cls, uri: str, **kwargs: Any) -> "IndexStore":
        """A store that never writes: no table, folder, index or key is ever created or changed.
        ``versions={table: version}`` pins each table at that version; a table not named reads as absent."""
        return cls(uri, read_only=True, **kwargs)

    # ---- connection and tables ----------------------------------------------------------------

    def _connect(self):
        if self._db is None:
            import lancedb

            if self.read_only and _is_local(self.uri) and not os.path.isdir(_local_path(self.uri)):
                return None  # lancedb.connect would create the folder; a reader must not
            self._db = lancedb.connect(
                self.uri, read_consistency_interval=self._consistency, storage_options=self._storage_options
            )
        return self._db

    def _check_writable(self) -> None:
        if self.read_only:
            raise PermissionError(f"IndexStore({self.uri!r}) was opened for reading")

    @staticmethod
    def _check_name(table: str) -> None:
        if not _TABLE_NAME.match(table or ""):
            raise ValueError(f"bad table name {table!r}")

    def _open(self, table: str):
        """The table handle, or None when the table does not exist (yet)."""
        self._check_name(table)
        if table in self._tables:
            return self._tables[table]
        if self.versions is not None and table not in self.versions:
            return None
        db = self._connect()
        if db is None:
            if self.versions is not None:  # a pinned state names this table: reading it as empty would lie
                raise MissingIndex(f"the LanceDB folder is missing (the published state names table {table!r})")
            return None
        try:
            handle = db.open_table(table)
        except ValueError:  # "Table '...' was not found"
            if self.versions is not None:
                raise MissingIndex(f"the LanceDB table {table!r} of the published state is missing") from None
            return None
        if self.versions is not None:
            try:
                handle.checkout(self.versions[table])
            except (ValueError, RuntimeError, OSError) as exc:
                raise MissingIndex(f"version {self.versions[table]} of the LanceDB table {table!r}, which the "
                                   f"published state names, cannot be read ({type(exc).__name__}): the lancedb "
                                   "folder was replaced or damaged") from None
            expected = (self.pinned_rows or {}).get(table)
            if expected is not None and (held := handle.count_rows()) != expected:
                # the same version number in another folder (another home's, a rebuilt one) holds other rows
                raise MissingIndex(f"the LanceDB table {table!r} holds {held} rows at version {self.versions[table]}, "
                                   f"where the published state recorded {expected}: the lancedb folder was "
                                   "replaced or damaged")
        if not self.read_only and not _primary_key(handle.schema):
            try:  # a table made before the key was declared
                handle.set_unenforced_primary_key("id")
            except RuntimeError as error:  # e.g. a nullable id column
                raise RuntimeError(
                    f"table {table!r} has no primary key and cannot get one ({error}); "
                    "the indices are derived data: drop the table and rebuild it"
                ) from error
        self._tables[table] = handle
        return handle

    def _schema(self, extras: pa.Schema) -> pa.Schema:
        fields = [
            pa.field("id", pa.string(), nullable=False, metadata={_PK_POSITION: b"1"}),
            pa.field("dialogue_id", pa.string(), nullable=False),
            pa.field("batch_key", pa.string(), nullable=False),
            pa.field("content_hash", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), self.dimension), nullable=False),
        ]
        return pa.schema(fields + list(extras))

    def _open_or_create(self, table: str, extras: pa.Schema):
        def attempt():
            handle = self._open(table)
            if handle is None:
                # Two writers creating the same table: exist_ok opens the winner's, or the loser's
                # create (an Overwrite commit) is preempted with a retryable conflict; we then open it.
                handle = self._connect().create_table(table, schema=self._schema(extras), exist_ok=True)
                if not _primary_key(handle.schema):
                    handle.set_unenforced_primary_key("id")
                self._tables[table] = handle
            return handle

        return _retrying(attempt)

    def tables(self) -> list[str]:
        return [name for name in TABLES if self._open(name) is not None]

    # ---- writing ------------------------------------------------------------------------------

    def replace_batch(
        self,
        table: str,
        batch_key: str,
        rows: Any,
        *,
        superseded_dialogue_ids: Iterable[str] = (),
        force: bool = False,
    ) -> WriteResult:
        """Make `table` hold exactly `rows` for `batch_key`, and nothing of the superseded dialogues elsewhere.

        `rows`: a pyarrow Table/RecordBatch, a polars DataFrame, or a list of dicts, with the common
        columns (`batch_key` may be omitted; if given it must equal `batch_key`) and any extras. Idempotent;
        an empty `rows` removes the batch. One transaction; concurrent writers of the same ids retry rather
        than duplicate (the table's primary key). A stored row with the same id, `content_hash` and
        `batch_key` is left as it is unless `force` (e.g. after changing the embedding model without
        folding its name into `content_hash`).
        """
        self._check_writable()
        self._check_name(table)
        if not batch_key:
            raise ValueError("batch_key must be a non-empty string")
        started = time.perf_counter()
        data = self._normalize(rows, batch_key)
        extras = pa.schema([f for f in data.schema if f.name not in COMMON_COLUMNS])
        handle = self._open_or_create(table, extras)
        data = self._conform(data, handle.schema, table)
        superseded = sorted({str(d) for d in superseded_dialogue_ids if d is not None and str(d) != ""})
        stale = f"batch_key = {sql_string(batch_key)}"
        if superseded:
            stale += " OR dialogue_id IN (" + ", ".join(sql_string(d) for d in superseded) + ")"
        changed = None if force else _CHANGED
        # merge_insert retries commit races itself; one racing with the table's creation (an Overwrite
        # by a second creator) fails as "incompatible" instead, and the whole idempotent merge is rerun.
        result = _retrying(
            lambda: handle.merge_insert("id")
            .when_matched_update_all(where=changed)
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(stale)
            .execute(data, timeout=self.write_timeout)
        )
        return WriteResult(
            table=table,
            batch_key=batch_key,
            rows=data.num_rows,
            inserted=result.num_inserted_rows,
            updated=result.num_updated_rows,
            deleted=result.num_deleted_rows,
            unchanged=data.num_rows - result.num_inserted_rows - result.num_updated_rows,
            version=result.version,
            attempts=result.num_attempts,
            seconds=round(time.perf_counter() - started, 4),
        )

    def _normalize(self, rows: Any, batch_key: str) -> pa.Table:
        if isinstance(rows, pa.RecordBatch):
            data = pa.Table.from_batches([rows])
        elif isinstance(rows, pa.Table):
            data = rows
        elif hasattr(rows, "to_arrow"):  # polars
            data = rows.to_arrow()
        elif isinstance(rows, list):
            data = pa.Table.from_pylist(rows) if rows else pa.table({})
        else:
            raise TypeError(f"rows must be a pyarrow or polars table or a list of dicts, not {type(rows).__name__}")
        if data.num_rows == 0 and data.num_columns == 0:
            data = self._schema(pa.schema([])).empty_table()
        names = set(data.column_names)
        if "batch_key" not in names:
            data = data.append_column("batch_key", pa.array([batch_key] * data.num_rows, pa.string()))
        missing = [c for c in COMMON_COLUMNS if c not in data.column_names]
        if missing:
            raise ValueError(f"rows lack the columns {missing}")
        columns: dict[str, pa.Array] = {}
        for name in _STRING_COLUMNS:
            col = data.column(name).cast(pa.string()).combine_chunks()
            if name == "text":
                col = pc.fill_null(col, "")
            if col.null_count:
                raise ValueError(f"column {name!r} has {col.null_count} null values")
            columns[name] = col
        if data.num_rows and pc.any(pc.not_equal(columns["batch_key"], batch_key)).as_py():
            raise ValueError(f"rows carry a batch_key other than {batch_key!r}")
        if pc.count_distinct(columns["id"]).as_py() != data.num_rows:
            counts = pc.value_counts(columns["id"])
            dups = [v["values"] for v in counts.to_pylist() if v["counts"] > 1][:5]
            raise ValueError(f"ids are not unique within the batch, e.g. {dups}")
        columns["vector"] = self._vectors(data.column("vector"))
        out = pa.table({name: columns[name] for name in COMMON_COLUMNS})
        out = pa.Table.from_arrays(list(out.columns), schema=self._schema(pa.schema([])))
        for name in data.column_names:
            if name not in COMMON_COLUMNS:
                col = data.column(name).combine_chunks()
                if pa.types.is_large_string(col.type) or pa.types.is_string_view(col.type):
                    col = col.cast(pa.string())
                out = out.append_column(name, col)
        return out

    def _vectors(self, column: pa.ChunkedArray) -> pa.FixedSizeListArray:
        col = column.combine_chunks()
        if col.null_count:
            raise ValueError(f"column 'vector' has {col.null_count} null values")
        if len(col) == 0:
            return pa.array([], pa.list_(pa.float32(), self.dimension))
        if pa.types.is_fixed_size_list(col.type):
            width = col.type.list_size
        elif pa.types.is_list(col.type) or pa.types.is_large_list(col.type) or pa.types.is_list_view(col.type):
            lengths = pc.list_value_length(col)
            low, high = pc.min(lengths).as_py(), pc.max(lengths).as_py()
            if low != high:
                raise ValueError(f"vectors have lengths from {low} to {high}, expected {self.dimension}")
            width = low
        else:
            raise ValueError(f"column 'vector' must be a list of floats, not {col.type}")
        if width != self.dimension:
            raise ValueError(f"vectors have dimension {width}, this store uses {self.dimension}")
        values = np.asarray(pc.list_flatten(col).to_numpy(zero_copy_only=False), dtype=np.float32)
        if not np.isfinite(values).all():
            raise ValueError("vectors contain NaN or infinite values")
        return pa.FixedSizeListArray.from_arrays(pa.array(values, pa.float32()), self.dimension)

    def _conform(self, data: pa.Table, schema: pa.Schema, table: str) -> pa.Table:
        """Cast `data` to the stored schema: stored extras the batch lacks become nulls; new ones are refused."""
        vector_type = schema.field("vector").type
        if vector_type != data.schema.field("vector").type:
            written = data.schema.field("vector").type
            raise ValueError(f"table {table!r} stores {vector_type}, this store writes {written}")
        unknown = [n for n in data.column_names if n not in schema.names]
        if unknown:
            raise ValueError(
                f"columns {unknown} are not in table {table!r} (columns: {schema.names}); "
                "the indices are derived data: drop the table and rebuild to change its columns"
            )
        arrays = []
        for field in schema:
            if field.name in data.column_names:
                arrays.append(data.column(field.name).cast(field.type))
            elif field.nullable:
                arrays.append(pa.nulls(data.num_rows, field.type))
            else:
                raise ValueError(f"rows lack the column {field.name!r} of table {table!r}")
        return pa.Table.from_arrays(arrays, schema=schema)

    # ---- indices ------------------------------------------------------------------------------

    def ensure_indices(self, table: str) -> dict[str, Any]:
        """Create what is missing and fold new rows into what exists. Returns what it did.

        FTS on `text`: created if absent. ANN on `vector`: created once the table has `ann_min_rows`
        rows (IVF_PQ: at least 256), partitions and sub-vectors from `ann_parameters`. If any index has
        unindexed rows, `Table.optimize()` compacts and adds them (Lance's incremental index update).
        Safe to run from several writers at once: a writer that loses the race to create an index
        (a retryable commit conflict) looks again, finds the index, and moves on.
        """
        self._check_writable()
        started = time.perf_counter()
        handle = self._open(table)
        if handle is None:
            return {"table": table, "exists": False}
        done = _retrying(lambda: self._ensure_indices_once(handle, table))
        done["seconds"] = round(time.perf_counter() - started, 3)
        return done

    def _ensure_indices_once(self, handle, table: str) -> dict[str, Any]:
        from lancedb.index import FTS, HnswSq, IvfPq

        if self._consistency is None:
            handle.checkout_latest()  # see indices another writer built (the retry after a conflict depends on it)
        rows = handle.count_rows()
        done: dict[str, Any] = {"table": table, "exists": True, "rows": rows, "fts": "present", "ann": "present"}
        fts, ann = _find_indices(handle)
        if fts is None:
            handle.create_index(
                "text",
                config=FTS(base_tokenizer=self.fts_tokenizer, with_position=False, stem=True, remove_stop_words=True),
                replace=False,
            )
            done["fts"] = "created"
        threshold = max(self.ann_min_rows, IVF_PQ_MIN_ROWS if self.ann_index_type == "IVF_PQ" else 1)
        if ann is None:
            if rows >= threshold:
                params = ann_parameters(rows, self.dimension)
                if self.ann_index_type == "IVF_PQ":
                    config = IvfPq(distance_type=self.metric, **params)
                else:
                    params = {"num_partitions": params["num_partitions"]}
                    config = HnswSq(distance_type=self.metric, **params)
                handle.create_index("vector", config=config, replace=False)
                done["ann"] = f"created {self.ann_index_type} " + ", ".join(f"{k}={v}" for k, v in params.items())
            else:
                done["ann"] = f"skipped: {rows} rows < {threshold}"
        unindexed = {
            name: stats.num_unindexed_rows
            for name in (fts, ann)
            if name is not None and (stats := handle.index_stats(name)) is not None
        }
        done["unindexed_rows"] = unindexed
        done["optimized"] = False
        if any(unindexed.values()):
            handle.optimize(cleanup_older_than=self._cleanup_age(timedelta(days=7)))  # Lance's own default
            done["optimized"] = True
        return done

    def optimize(self, table: str | None = None, *, cleanup_older_than_days: float = 7.0) -> dict[str, Any]:
        """Compact small fragments, fold new rows into every index, drop versions older than the given age.

        For a schedule. Keep `cleanup_older_than_days` well above the longest read or write: a version
        removed under a running reader makes that reader fail.
        """
        self._check_writable()
        report: dict[str, Any] = {}
        for name in [table] if table else self.tables():
            handle = self._open(name)
            if handle is None:
                report[name] = {"exists": False}
                continue
            started = time.perf_counter()
            before = handle.stats()
            version = handle.version
            age = self._cleanup_age(timedelta(days=cleanup_older_than_days))
            _retrying(lambda: handle.optimize(cleanup_older_than=age))
            after = handle.stats()
            report[name] = {
                "rows": after["num_rows"],
                "version_before": version,
                "version_after": handle.version,
                "fragments_before": before["fragment_stats"]["num_fragments"],
                "fragments_after": after["fragment_stats"]["num_fragments"],
                "seconds": round(time.perf_counter() - started, 3),
            }
        return report

    def _cleanup_age(self, wanted: timedelta) -> timedelta:
        """`wanted`, stretched so that no version committed since `keep_versions_since` is removed."""
        if self.keep_versions_since is None:
            return wanted
        since = self.keep_versions_since
        if since.tzinfo is None:
            since = since.replace(tzinfo=timezone.utc)
        return max(wanted, datetime.now(timezone.utc) - since + timedelta(minutes=1))

    def version_of(self, table: str) -> tuple[int, datetime] | None:
        """The table's latest version and the time it was committed (what a publication pins), or None."""
        handle = self._open(table)
        if handle is None:
            return None
        version = handle.version
        stamp = next(v["timestamp"] for v in handle.list_versions() if v["version"] == version)
        return version, stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)

    def row_keys(self, table: str) -> pa.Table:
        """Every row's id, dialogue_id and batch_key (what an audit compares with the warehouse)."""
        handle = self._open(table)
        if handle is None:
            return pa.table({"id": pa.array([], pa.string()), "dialogue_id": pa.array([], pa.string()),
                             "batch_key": pa.array([], pa.string())})
        return handle.search().select(["id", "dialogue_id", "batch_key"]).limit(None).to_arrow()

    def index_status(self, table: str) -> dict[str, Any]:
        """Each index on the table: type, indexed and unindexed rows."""
        handle = self._open(table)
        if handle is None:
            return {}
        out = {}
        for config in handle.list_indices():
            stats = handle.index_stats(config.name)
            out[config.name] = {
                "type": config.index_type,
                "columns": list(config.columns),
                "indexed_rows": stats.num_indexed_rows if stats else None,
                "unindexed_rows": stats.num_unindexed_rows if stats else None,
            }
        return out

    # ---- reading ------------------------------------------------------------------------------

    def counts(self, table: str, batch_key: str | None = None) -> int:
        handle = self._open(table)
        if handle is None:
            return 0
        return handle.count_rows(None if batch_key is None else f"batch_key = {sql_string(batch_key)}")

    def ids(self, table: str, batch_key: str | None = None) -> list[str]:
        handle = self._open(table)
        if handle is None:
            return []
        query = handle.search().select(["id"]).limit(None)
        if batch_key is not None:
            query = query.where(f"batch_key = {sql_string(batch_key)}")
        return sorted(query.to_arrow().column("id").to_pylist())

    def vectors(self, table: str, batch_key: str | None = None, *, label: str = "id") -> tuple[list[str], np.ndarray]:
        """The stored vectors, as read back from the table, rows in id order: each row's `label` column
        (its id; "dialogue_id" for the conversation it belongs to) and a float32 matrix whose width is the
        width the table stores (not this store's `dimension`, so a mismatch shows)."""
        handle = self._open(table)
        if handle is None:
            return [], np.zeros((0, self.dimension), dtype=np.float32)
        width = handle.schema.field("vector").type.list_size
        query = handle.search().select(sorted({"id", label, "vector"})).limit(None)
        if batch_key is not None:
            query = query.where(f"batch_key = {sql_string(batch_key)}")
        data = query.to_arrow()
        # Sorted in numpy, each chunk copied once to its rows' places (Table.sort_by took 1.5 of the 2 s
        # it took to read 100k x 384 vectors).
        order = pc.sort_indices(data.column("id")).to_numpy()
        place = np.empty_like(order)
        place[order] = np.arange(len(order))
        matrix = np.empty((len(order), width), dtype=np.float32)
        start = 0
        for chunk in data.column("vector").chunks:
            values = np.asarray(chunk.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
            matrix[place[start : start + len(chunk)]] = values.reshape(len(chunk), width)
            start += len(chunk)
        return data.column(label).take(order).to_pylist(), matrix

    def _columns(self, handle) -> list[str]:
        return [name for name in handle.schema.names if name != "vector"]

    def _query_vector(self, vector: Sequence[float]) -> np.ndarray:
        v = np.asarray(vector, dtype=np.float32).ravel()
        if v.shape[0] != self.dimension:
            raise ValueError(f"query vector has dimension {v.shape[0]}, this store uses {self.dimension}")
        if not np.isfinite(v).all():
            raise ValueError("query vector contains NaN or infinite values")
        return v

    def vector_search(self, table: str, vector: Sequence[float], k: int, where: str | None = None) -> list[dict]:
        """The k nearest rows by cosine distance: columns (no vector), `_distance`, `score` = 1 − distance."""
        handle = self._open(table)
        if handle is None or k <= 0:
            return []
        query = (
            handle.search(self._query_vector(vector), vector_column_name="vector")
            .distance_type(self.metric)
            .refine_factor(self.refine_factor)  # IVF_PQ distances are approximate: re-rank k·f exactly
            .select(self._columns(handle) + ["_distance"])
            .limit(k)
        )
        if where:
            query = query.where(where, prefilter=True)
        hits = query.to_list()
        for hit in hits:
            hit["score"] = 1.0 - hit["_distance"] if self.metric == "cosine" else -hit["_distance"]
        hits.sort(key=lambda h: (h["_distance"], h["id"]))
        return hits

    def text_search(
        self, table: str, query: str, k: int, where: str | None = None, *, columns: Sequence[str] | None = None
    ) -> list[dict]:
        """BM25 over `text`: each row's columns (no vector; only `id` and `columns` when given), `_score` and
        `score` (the same). [] for empty text."""
        from lancedb.query import MatchQuery

        handle = self._open(table)
        text = _clean_query(query)
        if handle is None or k <= 0 or not text:
            return []
        selected = self._columns(handle) if columns is None else list(dict.fromkeys(["id", *columns]))
        search = (
            handle.search(MatchQuery(text, "text"), query_type="fts")
            .select(selected + ["_score"])
            .limit(k + 10)  # a little deeper, so rows tied at the cut are chosen by id, not by storage order
        )
        if where:
            search = search.where(where, prefilter=True)
        hits = search.to_list()
        for hit in hits:
            hit["score"] = hit["_score"]
        hits.sort(key=lambda h: (-h["_score"], h["id"]))
        return hits[:k]

    def hybrid_search(
        self,
        table: str,
        query: str,
        vector: Sequence[float],
        k: int,
        where: str | None = None,
        *,
        candidates: int | None = None,
    ) -> list[dict]:
        """Reciprocal-rank fusion of `vector_search` and `text_search` (each asked for `candidates`, 4k by default).

        score = Σ 1 / (60 + rank) over the lists a row appears in; ties broken by id, so the order is
        deterministic. Each hit has `score`, `vector_rank` and `text_rank` (None when absent from a list).
        """
        if k <= 0:
            return []
        depth = candidates or max(4 * k, 20)
        by_vector = self.vector_search(table, vector, depth, where)
        by_text = self.text_search(table, query, depth, where)
        fused: dict[str, dict] = {}
        for leg, hits in (("vector_rank", by_vector), ("text_rank", by_text)):
            for rank, hit in enumerate(hits, start=1):
                row = fused.setdefault(hit["id"], {**hit, "vector_rank": None, "text_rank": None, "score": 0.0})
                row[leg] = rank
                row["score"] += 1.0 / (RRF_K + rank)
                for column in ("_distance", "_score"):
                    if column in hit:
                        row[column] = hit[column]
        ranked = sorted(fused.values(), key=lambda h: (-h["score"], h["id"]))
        return ranked[:k]


def vector_health(vectors: np.ndarray, dimension: int, tolerance: float = 1e-3) -> dict[str, Any]:
    """Whether stored vectors have `dimension` columns, are finite and have unit norm (within `tolerance`).

    Returns `passed`, the stored `dimension`, `rows`, `min_norm` / `max_norm` (None without rows) and
    `off_norm` (rows whose norm is off by more than the tolerance, or not finite). No rows pass.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    width = int(vectors.shape[1]) if vectors.ndim == 2 else 0
    if vectors.ndim != 2 or len(vectors) == 0:
        return {"passed": width in (0, dimension), "dimension": width, "rows": 0, "min_norm": None,
                "max_norm": None, "off_norm": 0}
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    off = ~np.isfinite(norms) | (np.abs(norms - 1.0) > tolerance)
    finite = norms[np.isfinite(norms)]
    return {
        "passed": width == dimension and not off.any(),
        "dimension": width,
        "rows": int(len(vectors)),
        "min_norm": float(finite.min()) if len(finite) else None,
        "max_norm": float(finite.max()) if len(finite) else None,
        "off_norm": int(off.sum()),
    }


def _is_conflict(error: BaseException) -> bool:
    # Lance reports a lost optimistic-concurrency race inside a generic RuntimeError, as "Retryable commit
    # conflict ... Please retry" or "Incompatible transaction ... concurrent transaction"; the message is
    # the only handle on it. Only idempotent actions are retried.
    text = str(error).lower()
    return (
        "commit conflict" in text
        or "please retry" in text
        or ("incompatible transaction" in text and "concurrent transaction" in text)
    )


def _retrying(action, attempts: int = 6):
    """Run `action`, again after a short random pause when another writer won a commit race."""
    for attempt in range(attempts):
        try:
            return action()
        except RuntimeError as error:
            if attempt == attempts - 1 or not _is_conflict(error):
                raise
            time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
    raise AssertionError("unreachable")


def _primary_key(schema: pa.Schema) -> list[str]:
    return [
        f.name
        for f in schema
        if f.metadata and (_PK_POSITION in f.metadata or f.metadata.get(_PK_LEGACY, b"").lower() in (b"1", b"true"))
    ]


def _find_indices(handle) -> tuple[str | None, str | None]:
    """Names of the FTS index on `text` and of the vector index on `vector`, if any."""
    fts = ann = None
    for config in handle.list_indices():
        columns = list(config.columns)
        kind = str(config.index_type).upper()
        if columns == ["text"] and kind in ("FTS", "INVERTED"):
            fts = config.name
        elif columns == ["vector"]:
            ann = config.name
    return fts, ann
