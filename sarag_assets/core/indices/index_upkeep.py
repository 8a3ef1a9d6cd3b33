"""The indices of one LanceDB table: BM25 full text on `text`, created at once; a vector index (IVF_PQ by
default) once the table holds enough rows; new rows folded in by `optimize` (see the store's docstring)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from sarag_assets.core.indices.commits import retrying

IVF_PQ_MIN_ROWS = 256  # PQ trains 2**num_bits centroids per sub-vector; fewer rows and it indexes nothing


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


def build_indices(handle, table: str, *, dimension: int, metric: str, ann_min_rows: int, ann_index_type: str,
                  fts_tokenizer: str, snapshot: bool, cleanup_age: Callable[[timedelta], timedelta]) -> dict[str, Any]:
    """One attempt of `IndexStore.ensure_indices` on an open table (`snapshot`: the handle never looks for
    newer versions on its own)."""
    from lancedb.index import FTS, HnswSq, IvfPq

    if snapshot:
        handle.checkout_latest()  # see indices another writer built (the retry after a conflict depends on it)
    rows = handle.count_rows()
    done: dict[str, Any] = {"table": table, "exists": True, "rows": rows, "fts": "present", "ann": "present"}
    fts, ann = find_indices(handle)
    if fts is None:
        handle.create_index(
            "text",
            config=FTS(base_tokenizer=fts_tokenizer, with_position=False, stem=True, remove_stop_words=True),
            replace=False,
        )
        done["fts"] = "created"
    threshold = max(ann_min_rows, IVF_PQ_MIN_ROWS if ann_index_type == "IVF_PQ" else 1)
    if ann is None:
        if rows >= threshold:
            params = ann_parameters(rows, dimension)
            if ann_index_type == "IVF_PQ":
                config = IvfPq(distance_type=metric, **params)
            else:
                params = {"num_partitions": params["num_partitions"]}
                config = HnswSq(distance_type=metric, **params)
            handle.create_index("vector", config=config, replace=False)
            done["ann"] = f"created {ann_index_type} " + ", ".join(f"{k}={v}" for k, v in params.items())
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
        handle.optimize(cleanup_older_than=cleanup_age(timedelta(days=7)))  # Lance's own default
        done["optimized"] = True
    return done


def optimize_table(handle, wanted: timedelta, cleanup_age: Callable[[timedelta], timedelta]) -> dict[str, Any]:
    """Compact the table, fold new rows into its indices, drop versions older than `cleanup_age(wanted)`."""
    started = time.perf_counter()
    before = handle.stats()
    version = handle.version
    age = cleanup_age(wanted)
    retrying(lambda: handle.optimize(cleanup_older_than=age))
    after = handle.stats()
    return {
        "rows": after["num_rows"],
        "version_before": version,
        "version_after": handle.version,
        "fragments_before": before["fragment_stats"]["num_fragments"],
        "fragments_after": after["fragment_stats"]["num_fragments"],
        "seconds": round(time.perf_counter() - started, 3),
    }


def cleanup_age(wanted: timedelta, keep_versions_since: datetime | None) -> timedelta:
    """`wanted`, stretched so that no version committed since `keep_versions_since` is removed."""
    if keep_versions_since is None:
        return wanted
    since = keep_versions_since
    if since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    return max(wanted, datetime.now(timezone.utc) - since + timedelta(minutes=1))


def index_status(handle) -> dict[str, Any]:
    """Each index on the table: type, indexed and unindexed rows."""
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


def find_indices(handle) -> tuple[str | None, str | None]:
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
