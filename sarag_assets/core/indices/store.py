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

`IndexStore` holds the connection, the open tables and their pins; the work on one table is in
`batch_rows` (rows checked and merged), `index_upkeep` (indices, compaction), `lance_search` (reading,
searching, pinned versions) and `commits` (lost commit races retried).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa

from sarag_assets.core.indices import index_upkeep, lance_search
from sarag_assets.core.indices.batch_rows import (
    COMMON_COLUMNS,
    conform,
    declare_primary_key,
    merge_batch,
    normalize,
    primary_key,
    table_schema,
)
from sarag_assets.core.indices.commits import retrying
from sarag_assets.core.indices.lance_search import (
    MissingIndex,
    checkout_pinned,
    clean_query,
    committed_version,
    read_ids,
    read_row_keys,
    read_vectors,
    sql_string,
)

TABLE_ROWS = "table_rows"
ISSUE_DOCUMENTS = "issue_documents"
SOLUTION_DOCUMENTS = "solution_documents"
GRAPH_NODES = "graph_nodes"
CONVERSATION_PASSAGES = "conversation_passages"
CONVERSATION_TEXTS = "conversation_texts"
TABLES = (TABLE_ROWS, ISSUE_DOCUMENTS, SOLUTION_DOCUMENTS, GRAPH_NODES, CONVERSATION_PASSAGES, CONVERSATION_TEXTS)

DEFAULT_DIMENSION = 384
DEFAULT_ANN_MIN_ROWS = 5_000
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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


def _is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


def _local_path(uri: str) -> str:
    return os.path.expanduser(uri[len("file://") :] if uri.startswith("file://") else uri)


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
            checkout_pinned(handle, table, self.versions[table], (self.pinned_rows or {}).get(table))
        if not self.read_only:
            declare_primary_key(handle, table)
        self._tables[table] = handle
        return handle

    def _open_or_create(self, table: str, extras: pa.Schema):
        def attempt():
            handle = self._open(table)
            if handle is None:
                # Two writers creating the same table: exist_ok opens the winner's, or the loser's
                # create (an Overwrite commit) is preempted with a retryable conflict; we then open it.
                handle = self._connect().create_table(table, schema=table_schema(self.dimension, extras), exist_ok=True)
                if not primary_key(handle.schema):
                    handle.set_unenforced_primary_key("id")
                self._tables[table] = handle
            return handle

        return retrying(attempt)

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
        data = normalize(rows, batch_key, self.dimension)
        extras = pa.schema([f for f in data.schema if f.name not in COMMON_COLUMNS])
        handle = self._open_or_create(table, extras)
        data = conform(data, handle.schema, table)
        result = merge_batch(handle, data, batch_key, superseded_dialogue_ids, force=force, timeout=self.write_timeout)
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
        done = retrying(lambda: index_upkeep.build_indices(
            handle, table, dimension=self.dimension, metric=self.metric, ann_min_rows=self.ann_min_rows,
            ann_index_type=self.ann_index_type, fts_tokenizer=self.fts_tokenizer, snapshot=self._consistency is None,
            cleanup_age=self._cleanup_age))
        done["seconds"] = round(time.perf_counter() - started, 3)
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
            report[name] = index_upkeep.optimize_table(handle, timedelta(days=cleanup_older_than_days),
                                                       self._cleanup_age)
        return report

    def _cleanup_age(self, wanted: timedelta) -> timedelta:
        return index_upkeep.cleanup_age(wanted, self.keep_versions_since)

    def version_of(self, table: str) -> tuple[int, datetime] | None:
        """The table's latest version and the time it was committed (what a publication pins), or None."""
        handle = self._open(table)
        if handle is None:
            return None
        return committed_version(handle)

    def row_keys(self, table: str) -> pa.Table:
        """Every row's id, dialogue_id and batch_key (what an audit compares with the warehouse)."""
        handle = self._open(table)
        if handle is None:
            return pa.table({"id": pa.array([], pa.string()), "dialogue_id": pa.array([], pa.string()),
                             "batch_key": pa.array([], pa.string())})
        return read_row_keys(handle)

    def index_status(self, table: str) -> dict[str, Any]:
        """Each index on the table: type, indexed and unindexed rows."""
        handle = self._open(table)
        return {} if handle is None else index_upkeep.index_status(handle)

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
        return read_ids(handle, batch_key)

    def vectors(self, table: str, batch_key: str | None = None, *, label: str = "id") -> tuple[list[str], np.ndarray]:
        """The stored vectors, as read back from the table, rows in id order: each row's `label` column
        (its id; "dialogue_id" for the conversation it belongs to) and a float32 matrix whose width is the
        width the table stores (not this store's `dimension`, so a mismatch shows)."""
        handle = self._open(table)
        if handle is None:
            return [], np.zeros((0, self.dimension), dtype=np.float32)
        return read_vectors(handle, batch_key, label)

    def vector_search(self, table: str, vector: Sequence[float], k: int, where: str | None = None) -> list[dict]:
        """The k nearest rows by cosine distance: columns (no vector), `_distance`, `score` = 1 − distance."""
        handle = self._open(table)
        if handle is None or k <= 0:
            return []
        return lance_search.vector_search(handle, vector, k, where, dimension=self.dimension, metric=self.metric,
                                          refine_factor=self.refine_factor)

    def text_search(
        self, table: str, query: str, k: int, where: str | None = None, *, columns: Sequence[str] | None = None
    ) -> list[dict]:
        """BM25 over `text`: each row's columns (no vector; only `id` and `columns` when given), `_score` and
        `score` (the same). [] for empty text."""
        handle = self._open(table)
        text = clean_query(query)
        if handle is None or k <= 0 or not text:
            return []
        return lance_search.text_search(handle, text, k, where, columns)

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
        return lance_search.fuse(by_vector, by_text, k)


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
