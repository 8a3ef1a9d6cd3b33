"""Reading one LanceDB table: its vectors in id order, cosine search, BM25 search over `text` (user text never
parsed as query syntax), and the reciprocal-rank fusion of the two. Ties are broken by id, so every order
is deterministic."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

RRF_K = 60  # the constant of reciprocal-rank fusion (Cormack et al.)
MAX_QUERY_CHARS = 4_000  # longer full-text queries are cut: BM25 over thousands of terms ranks nothing better


class MissingIndex(RuntimeError):
    """A table or version that a pinned (published) state names is not in the LanceDB folder."""


def checkout_pinned(handle, table: str, version: int, expected_rows: int | None) -> None:
    """Read `table` at the version a publication pinned; a version gone, or holding other than the rows
    the publication recorded, is damage (`MissingIndex`), never an empty or foreign answer."""
    try:
        handle.checkout(version)
    except (ValueError, RuntimeError, OSError) as exc:
        raise MissingIndex(f"version {version} of the LanceDB table {table!r}, which the "
                           f"published state names, cannot be read ({type(exc).__name__}): the lancedb "
                           "folder was replaced or damaged") from None
    if expected_rows is not None and (held := handle.count_rows()) != expected_rows:
        # the same version number in another folder (another home's, a rebuilt one) holds other rows
        raise MissingIndex(f"the LanceDB table {table!r} holds {held} rows at version {version}, "
                           f"where the published state recorded {expected_rows}: the lancedb folder was "
                           "replaced or damaged")


def sql_string(value: str) -> str:
    """A SQL string literal (single quotes doubled), for filters built from data."""
    return "'" + str(value).replace("'", "''") + "'"


def clean_query(query: str | None) -> str:
    """Make free text safe to hand to the tokenizer: valid UTF-8, no control characters, bounded length."""
    if not query:
        return ""
    text = query.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot cross into Rust
    text = "".join(ch if ch.isprintable() or ch in " \t\n" else " " for ch in text)
    return text[:MAX_QUERY_CHARS].strip()


def committed_version(handle) -> tuple[int, datetime]:
    """The table's latest version and the time it was committed (what a publication pins)."""
    version = handle.version
    stamp = next(v["timestamp"] for v in handle.list_versions() if v["version"] == version)
    return version, stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def read_row_keys(handle) -> pa.Table:
    return handle.search().select(["id", "dialogue_id", "batch_key"]).limit(None).to_arrow()


def read_ids(handle, batch_key: str | None) -> list[str]:
    query = handle.search().select(["id"]).limit(None)
    if batch_key is not None:
        query = query.where(f"batch_key = {sql_string(batch_key)}")
    return sorted(query.to_arrow().column("id").to_pylist())


def read_vectors(handle, batch_key: str | None, label: str) -> tuple[list[str], np.ndarray]:
    """The stored vectors, as read back from the table, rows in id order: each row's `label` column
    (its id; "dialogue_id" for the conversation it belongs to) and a float32 matrix whose width is the
    width the table stores (not the store's `dimension`, so a mismatch shows)."""
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


def _columns(handle) -> list[str]:
    return [name for name in handle.schema.names if name != "vector"]


def _query_vector(vector: Sequence[float], dimension: int) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).ravel()
    if v.shape[0] != dimension:
        raise ValueError(f"query vector has dimension {v.shape[0]}, this store uses {dimension}")
    if not np.isfinite(v).all():
        raise ValueError("query vector contains NaN or infinite values")
    return v


def vector_search(handle, vector: Sequence[float], k: int, where: str | None, *, dimension: int, metric: str,
                  refine_factor: int) -> list[dict]:
    query = (
        handle.search(_query_vector(vector, dimension), vector_column_name="vector")
        .distance_type(metric)
        .refine_factor(refine_factor)  # IVF_PQ distances are approximate: re-rank k·f exactly
        .select(_columns(handle) + ["_distance"])
        .limit(k)
    )
    if where:
        query = query.where(where, prefilter=True)
    hits = query.to_list()
    for hit in hits:
        hit["score"] = 1.0 - hit["_distance"] if metric == "cosine" else -hit["_distance"]
    hits.sort(key=lambda h: (h["_distance"], h["id"]))
    return hits


def text_search(handle, text: str, k: int, where: str | None, columns: Sequence[str] | None) -> list[dict]:
    from lancedb.query import MatchQuery

    selected = _columns(handle) if columns is None else list(dict.fromkeys(["id", *columns]))
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


def fuse(by_vector: list[dict], by_text: list[dict], k: int) -> list[dict]:
    """Reciprocal-rank fusion: score = Σ 1 / (RRF_K + rank) over the lists a row appears in, ties broken by id."""
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
