"""The published state a reader opens, and what a search reads from it once. No Dagster.

`published_state(home)` is the home's last published state (`core.publication`): a read-only warehouse
copy and the LanceDB table versions it pinned, whatever the pipeline is writing meanwhile.
`read_tables(path)` reads that copy's governed table, cluster model, value mentions, origins and ranking
calibration once; full-text and vector searches ask LanceDB (at the pinned versions) each time.
`warehouse_copy(state)` is the copy's path for later reads, and says when newer publications retired it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sarag_assets.core import publication, warehouse
from sarag_assets.query.fusion import DEFAULT_WEIGHTS
from sarag_assets.query.understanding import QueryError, ValueLexicon
from sarag_assets.settings import Home

SKIP_TYPES = {"boolean", "date", "datetime"}  # values that name nothing: true, 2024-01-02


class HomeNotReady(RuntimeError):
    """The home has no materialized tables or indices to search."""


class StateRetired(QueryError):
    """The published state an open reader holds is gone (retention keeps the last two)."""


def published_state(home: Home) -> publication.PublishedState:
    """The home's published state; HomeNotReady before anything was published."""
    state = publication.current(home)
    if state is not None:
        return state
    if not home.warehouse.exists():
        raise HomeNotReady(f"no warehouse at {home.warehouse}: run the pipeline first (sarag materialize)")
    raise HomeNotReady("nothing is published in this home yet: `sarag materialize` publishes the state once "
                       "every check of what it wrote has passed")


def warehouse_copy(state: publication.PublishedState) -> Path:
    """The warehouse copy of a state a reader holds; StateRetired once newer publications retired it."""
    if not state.warehouse.exists():
        raise StateRetired(f"the published state {state.id} this reader opened was retired by newer "
                           "publications; refresh() reads the newest")
    return state.warehouse


@dataclass
class PublishedTables:
    """What a search reads once from a published warehouse copy."""

    metadata_version: int | None
    columns: list[dict[str, str]]  # [{name, type, description}] of M*
    rows: dict[str, dict[str, str]]  # each conversation's non-null cells, in dialogue id order
    field_names: list[str]  # the records' own fields (`source_fields`)
    lexicon: ValueLexicon  # the short values of the entity-like columns, found in queries
    cluster_model: bytes | None  # the serialized T-RAG model; None in a home without clusters
    assignments: pl.DataFrame | None
    # value -> conversations mentioning it; none in a home built before value_mentions existed: every value
    # is then trusted fully
    mentions: dict[str, int]
    origins: dict[str, dict]  # every hit names its own: read once here
    weights: dict[str, float]  # each view's vote, as the home's own conversations measured it

    @property
    def entity_columns(self) -> list[str]:
        return entity_columns(self.columns)


def entity_columns(columns: list[dict[str, str]]) -> list[str]:
    """The columns whose values can name something a query mentions."""
    return [c["name"] for c in columns if c["type"] not in SKIP_TYPES]


def read_tables(path: Path) -> PublishedTables:
    """Everything a search needs from a published warehouse copy, read in one read-only connection."""
    with warehouse.connect(path, read_only=True) as con:
        state = warehouse.latest_governance_state(con)
        metadata_version, state_json = state if state else (None, None)
        columns = [{"name": c["name"], "type": c.get("type", "string"),
                    "description": c.get("meaning") or c.get("description") or ""}
                   for c in (json.loads(state_json)["columns"] if state_json else [])]
        names, table = warehouse.wide_rows(con, [c["name"] for c in columns])
        field_names = warehouse.source_field_names(con)
        tables = warehouse.table_names(con)
        cluster_model = warehouse.latest_cluster_model(con) if "cluster_models" in tables else None
        assignments = warehouse.cluster_assignments(con) if cluster_model else None
        mentions = warehouse.value_mention_counts(con)
        origins = warehouse.conversation_origins(con)
        calibration = warehouse.latest_ranking_calibration(con)
    if calibration:
        _, weights = calibration
    else:
        weights = dict(DEFAULT_WEIGHTS)
    rows: dict[str, dict[str, str]] = {}
    cells = []
    for dialogue_id, *values in table:
        row = {n: v for n, v in zip(names, values) if v is not None}
        rows[dialogue_id] = row
        cells.extend((dialogue_id, n, v) for n, v in row.items())
    lexicon = ValueLexicon(cells, len(rows), columns=entity_columns(columns), mentions=mentions)
    return PublishedTables(metadata_version, columns, rows, field_names, lexicon, cluster_model, assignments,
                           mentions, origins, weights)
