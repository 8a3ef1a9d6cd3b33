"""A batch's rows as the index store writes them: the common columns typed and checked (ids unique, no nulls,
vectors finite and of the store's dimension), the extras as given, then cast to the stored table's schema,
and the one merge that writes them. The table's primary key is `id`, declared as Lance field metadata."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sarag_assets.core.indices.commits import retrying
from sarag_assets.core.indices.lance_search import sql_string

COMMON_COLUMNS = ("id", "dialogue_id", "batch_key", "content_hash", "text", "vector")

# Lance records the unenforced primary key as field metadata; a table created with it is keyed from
# its first version, so no writer can ever see it unkeyed.
_PK_POSITION = b"lance-schema:unenforced-primary-key:position"
_PK_LEGACY = b"lance-schema:unenforced-primary-key"
_STRING_COLUMNS = ("id", "dialogue_id", "batch_key", "content_hash", "text")
# merge_insert rewrites a matched row only when it changed (!= is safe: both columns are non-null)
_CHANGED = "target.content_hash != source.content_hash OR target.batch_key != source.batch_key"


def table_schema(dimension: int, extras: pa.Schema) -> pa.Schema:
    """The common columns (`id` the primary key), then the table's extras."""
    fields = [
        pa.field("id", pa.string(), nullable=False, metadata={_PK_POSITION: b"1"}),
        pa.field("dialogue_id", pa.string(), nullable=False),
        pa.field("batch_key", pa.string(), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False),
    ]
    return pa.schema(fields + list(extras))


def normalize(rows: Any, batch_key: str, dimension: int) -> pa.Table:
    """`rows` (pyarrow, polars or a list of dicts) as a table of the common columns, typed and checked, then
    the extras as given."""
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
        data = table_schema(dimension, pa.schema([])).empty_table()
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
    columns["vector"] = _vectors(data.column("vector"), dimension)
    out = pa.table({name: columns[name] for name in COMMON_COLUMNS})
    out = pa.Table.from_arrays(list(out.columns), schema=table_schema(dimension, pa.schema([])))
    for name in data.column_names:
        if name not in COMMON_COLUMNS:
            col = data.column(name).combine_chunks()
            if pa.types.is_large_string(col.type) or pa.types.is_string_view(col.type):
                col = col.cast(pa.string())
            out = out.append_column(name, col)
    return out


def _vectors(column: pa.ChunkedArray, dimension: int) -> pa.FixedSizeListArray:
    col = column.combine_chunks()
    if col.null_count:
        raise ValueError(f"column 'vector' has {col.null_count} null values")
    if len(col) == 0:
        return pa.array([], pa.list_(pa.float32(), dimension))
    if pa.types.is_fixed_size_list(col.type):
        width = col.type.list_size
    elif pa.types.is_list(col.type) or pa.types.is_large_list(col.type) or pa.types.is_list_view(col.type):
        lengths = pc.list_value_length(col)
        low, high = pc.min(lengths).as_py(), pc.max(lengths).as_py()
        if low != high:
            raise ValueError(f"vectors have lengths from {low} to {high}, expected {dimension}")
        width = low
    else:
        raise ValueError(f"column 'vector' must be a list of floats, not {col.type}")
    if width != dimension:
        raise ValueError(f"vectors have dimension {width}, this store uses {dimension}")
    values = np.asarray(pc.list_flatten(col).to_numpy(zero_copy_only=False), dtype=np.float32)
    if not np.isfinite(values).all():
        raise ValueError("vectors contain NaN or infinite values")
    return pa.FixedSizeListArray.from_arrays(pa.array(values, pa.float32()), dimension)


def conform(data: pa.Table, schema: pa.Schema, table: str) -> pa.Table:
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


def primary_key(schema: pa.Schema) -> list[str]:
    return [
        f.name
        for f in schema
        if f.metadata and (_PK_POSITION in f.metadata or f.metadata.get(_PK_LEGACY, b"").lower() in (b"1", b"true"))
    ]


def merge_batch(handle, data: pa.Table, batch_key: str, superseded_dialogue_ids: Iterable[str], *, force: bool,
                timeout) -> Any:
    """One merge_insert on `id`: the batch's rows inserted or (when changed, or `force`) updated; its rows no
    longer given, and every row of a superseded dialogue, deleted. Returns LanceDB's merge result."""
    superseded = sorted({str(d) for d in superseded_dialogue_ids if d is not None and str(d) != ""})
    stale = f"batch_key = {sql_string(batch_key)}"
    if superseded:
        stale += " OR dialogue_id IN (" + ", ".join(sql_string(d) for d in superseded) + ")"
    changed = None if force else _CHANGED
    # merge_insert retries commit races itself; one racing with the table's creation (an Overwrite
    # by a second creator) fails as "incompatible" instead, and the whole idempotent merge is rerun.
    return retrying(
        lambda: handle.merge_insert("id")
        .when_matched_update_all(where=changed)
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete(stale)
        .execute(data, timeout=timeout)
    )


def declare_primary_key(handle, table: str) -> None:
    """Declare `id` the primary key of a table made before the key was declared."""
    if primary_key(handle.schema):
        return
    try:
        handle.set_unenforced_primary_key("id")
    except RuntimeError as error:  # e.g. a nullable id column
        raise RuntimeError(
            f"table {table!r} has no primary key and cannot get one ({error}); "
            "the indices are derived data: drop the table and rebuild it"
        ) from error
