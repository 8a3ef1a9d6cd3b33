"""What goes into the four LanceDB tables for one batch. No Dagster imports.

Each index row carries the ids needed to go back to DuckDB (dialogue id, batch key, node id) and a
`content_hash` of its text, so re-writing an unchanged row changes nothing and a changed text (e.g.
a row re-linearized after M* changed) is re-embedded and replaced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from sarag_assets.core.clusters import linearize
from sarag_assets.core.embedding import text_hash
from sarag_assets.core.indices import GRAPH_NODES, ISSUE_DOCUMENTS, SOLUTION_DOCUMENTS, TABLE_ROWS


@dataclass
class BatchIndexRows:
    tables: dict[str, pl.DataFrame]  # table -> rows without vectors (id, dialogue_id, batch_key, content_hash, text, extras)

    def texts(self) -> list[str]:
        return [t for frame in self.tables.values() for t in frame["text"].to_list()]


def linearized_rows(table: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """conversation_table rows → (dialogue_id, batch_key, text) with `column: value | ...` text."""
    records = table.to_dicts()
    return pl.DataFrame(
        {
            "dialogue_id": [r["dialogue_id"] for r in records],
            "batch_key": [r["batch_key"] for r in records],
            "text": [linearize(r, columns=columns) for r in records],
        },
        schema={"dialogue_id": pl.String, "batch_key": pl.String, "text": pl.String},
    )


def _with_keys(frame: pl.DataFrame, id_expr: pl.Expr) -> pl.DataFrame:
    return frame.with_columns(
        id_expr.alias("id"),
        pl.col("text").map_elements(text_hash, return_dtype=pl.String).alias("content_hash"),
    )


def batch_index_rows(
    rows: pl.DataFrame, documents: pl.DataFrame, nodes: pl.DataFrame, current_ids: set[str]
) -> BatchIndexRows:
    """Index rows of one batch, for its current conversations only (older versions live nowhere)."""
    current = list(current_ids)
    rows = rows.filter(pl.col("dialogue_id").is_in(current))
    documents = documents.filter(pl.col("dialogue_id").is_in(current))
    nodes = nodes.filter(pl.col("dialogue_id").is_in(current))
    # A row with no extracted value still has an index row, so counts match the source; its text is empty.
    table_rows = _with_keys(rows.select("dialogue_id", "batch_key", "text"), pl.col("dialogue_id"))
    issue = _with_keys(
        documents.select("dialogue_id", "batch_key", pl.col("issue_document").alias("text")), pl.col("dialogue_id")
    )
    solution = _with_keys(
        documents.select("dialogue_id", "batch_key", pl.col("solution_document").alias("text")), pl.col("dialogue_id")
    )
    node_rows = _with_keys(
        nodes.select(
            "dialogue_id", "batch_key", "node_id", "turn_start", "turn_end",
            (pl.col("issue") + pl.lit("\n") + pl.col("answer")).str.strip_chars().alias("text"),
        ),
        pl.col("dialogue_id") + pl.lit("#") + pl.col("node_id"),
    )
    return BatchIndexRows({TABLE_ROWS: table_rows, ISSUE_DOCUMENTS: issue, SOLUTION_DOCUMENTS: solution,
                           GRAPH_NODES: node_rows})


def with_vectors(frame: pl.DataFrame, vectors: np.ndarray) -> pl.DataFrame:
    return frame.with_columns(pl.Series("vector", vectors.astype(np.float32).tolist(), dtype=pl.List(pl.Float32)))
