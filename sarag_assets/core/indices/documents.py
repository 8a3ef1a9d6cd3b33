"""What goes into the LanceDB tables for one batch. No Dagster imports.

The conversation's own text: `conversation_passages` (turn windows the model reads whole,
`core.passages`; one vector each) and `conversation_texts` (the whole redacted text, for BM25; its vector
is the normalized mean of its passages' vectors, so nothing is encoded twice). The structured views:
`table_rows`, `issue_documents`, `solution_documents`, `graph_nodes`.

Each index row carries the ids needed to go back to DuckDB (dialogue id, batch key, node id) and a
`content_hash` of its text, so re-writing an unchanged row changes nothing and a changed text (e.g.
a row re-linearized after M* changed) is re-embedded and replaced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from sarag_assets.core.encoding.embedder import text_hash
from sarag_assets.core.indices.clusters import linearize
from sarag_assets.core.indices.passages import conversation_passages
from sarag_assets.core.indices.store import (
    CONVERSATION_PASSAGES,
    CONVERSATION_TEXTS,
    GRAPH_NODES,
    ISSUE_DOCUMENTS,
    SOLUTION_DOCUMENTS,
    TABLE_ROWS,
)


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


def text_index_rows(turns: pl.DataFrame, fits=None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(conversation_passages, conversation_texts) rows, without vectors, from the batch's current turns
    (dialogue_id, batch_key, turn_index, text). ``fits(text)``: whether the model reads a text whole."""
    passages, texts = [], []
    ordered = turns.sort("dialogue_id", "turn_index")
    for (dialogue_id, batch_key), group in ordered.group_by(["dialogue_id", "batch_key"], maintain_order=True):
        said = [t or "" for t in group["text"].to_list()]
        texts.append({"id": dialogue_id, "dialogue_id": dialogue_id, "batch_key": batch_key,
                      "text": "\n".join(said)})
        for p in conversation_passages(said, fits):
            passages.append({"id": f"{dialogue_id}#p{p.index}", "dialogue_id": dialogue_id, "batch_key": batch_key,
                             "passage": p.index, "turn_start": p.turn_start, "turn_end": p.turn_end, "text": p.text})
    schema = {"id": pl.String, "dialogue_id": pl.String, "batch_key": pl.String}
    passage_frame = pl.DataFrame(passages, schema=schema | {"passage": pl.Int32, "turn_start": pl.Int32,
                                                            "turn_end": pl.Int32, "text": pl.String})
    text_frame = pl.DataFrame(texts, schema=schema | {"text": pl.String})
    hashed = pl.col("text").map_elements(text_hash, return_dtype=pl.String).alias("content_hash")
    # a passage's row is its text and where it stands: the same text moved to other turns is rewritten
    placed = (pl.format("{}:{}:{}", "turn_start", "turn_end", "text")
              .map_elements(text_hash, return_dtype=pl.String).alias("content_hash"))
    return passage_frame.with_columns(placed), text_frame.with_columns(hashed)


def batch_index_rows(
    rows: pl.DataFrame, documents: pl.DataFrame, nodes: pl.DataFrame, current_ids: set[str],
    turns: pl.DataFrame | None = None, fits=None,
) -> BatchIndexRows:
    """Index rows of one batch, for its current conversations only (older versions live nowhere)."""
    current = list(current_ids)
    tables: dict[str, pl.DataFrame] = {}
    if turns is not None:
        tables[CONVERSATION_PASSAGES], tables[CONVERSATION_TEXTS] = text_index_rows(
            turns.filter(pl.col("dialogue_id").is_in(current)), fits)
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
    tables.update({TABLE_ROWS: table_rows, ISSUE_DOCUMENTS: issue, SOLUTION_DOCUMENTS: solution,
                   GRAPH_NODES: node_rows})
    return BatchIndexRows(tables)


def encode_tables(rows: BatchIndexRows, encode) -> dict[str, pl.DataFrame]:
    """Every table's rows with their vectors. ``encode(texts) -> unit vectors``. A conversation's text
    vector is the normalized mean of its passages' (one with no passage: its own, empty, text encoded)."""
    out: dict[str, pl.DataFrame] = {}
    passage_vectors: dict[str, list[np.ndarray]] = {}
    names = [name for name in rows.tables if name != CONVERSATION_TEXTS]
    # every table's texts in one call: the encoder runs texts of similar length together, and texts of the
    # same length from all tables make fewer runs with less padding than each table's alone (docs/results.md)
    texts = [text for name in names for text in rows.tables[name]["text"].to_list()]
    encoded = np.asarray(encode(texts), dtype=np.float32)
    start = 0
    for name in names:
        frame = rows.tables[name]
        vectors = encoded[start:start + frame.height]
        start += frame.height
        out[name] = with_vectors(frame, vectors)
        if name == CONVERSATION_PASSAGES:
            for dialogue_id, vector in zip(frame["dialogue_id"].to_list(), vectors):
                passage_vectors.setdefault(dialogue_id, []).append(vector)
    if CONVERSATION_TEXTS in rows.tables:
        frame = rows.tables[CONVERSATION_TEXTS]
        ids, texts = frame["dialogue_id"].to_list(), frame["text"].to_list()
        vectors = []
        for dialogue_id, text in zip(ids, texts):
            own = passage_vectors.get(dialogue_id)
            mean = np.mean(own, axis=0) if own else np.asarray(encode([text])[0], dtype=np.float32)
            norm = float(np.linalg.norm(mean))
            vectors.append(mean / norm if norm > 0 else mean)
        out[CONVERSATION_TEXTS] = with_vectors(frame, np.asarray(vectors, dtype=np.float32) if vectors
                                               else np.asarray(encode([]), dtype=np.float32))
    return out


def with_vectors(frame: pl.DataFrame, vectors: np.ndarray) -> pl.DataFrame:
    return frame.with_columns(pl.Series("vector", vectors.astype(np.float32).tolist(), dtype=pl.List(pl.Float32)))
