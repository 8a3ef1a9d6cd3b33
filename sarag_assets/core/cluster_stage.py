"""feature_clusters logic: fit once, then assign new rows incrementally, refit on drift or on request.

No Dagster imports. Rows are the linearized conversation rows of the current conversations.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from sarag_assets.core.clusters import (
    ClusterModel,
    assign,
    clusters_frame,
    drift_report,
    fit_clusters,
)


@dataclass
class ClusterUpdate:
    model: ClusterModel
    assignments: pl.DataFrame  # every current conversation, every view
    clusters: pl.DataFrame
    action: str  # "fit", "refit", "assign" or "unchanged"
    reasons: list[str]
    new_rows: int


def update_clusters(
    previous: ClusterModel | None,
    rows: pl.DataFrame,
    previous_assignments: pl.DataFrame,
    *,
    refit: bool = False,
    k: int | None = None,
    embedder=None,
) -> ClusterUpdate:
    """`rows`: (dialogue_id, text) of the current conversations; assignments of conversations no longer
    current are dropped; new ones are assigned to the nearest centroid unless a (re)fit is due."""
    rows = rows.filter(pl.col("dialogue_id").is_not_null()).unique("dialogue_id", keep="last").sort("dialogue_id")
    current_ids = rows["dialogue_id"].to_list()
    if previous is None or refit:
        model = fit_clusters(rows, k=k, embedder=embedder)
        reasons = ["first fit"] if previous is None else ["refit requested"]
        return ClusterUpdate(model, model.fit_assignments, clusters_frame(model), "fit" if previous is None else "refit",
                             reasons, rows.height)
    kept = previous_assignments.filter(
        pl.col("dialogue_id").is_in(current_ids) & (pl.col("model_version") == previous.model_version)
    )
    new = rows.filter(~pl.col("dialogue_id").is_in(kept["dialogue_id"].unique().to_list()))
    if new.height == 0:
        return ClusterUpdate(previous, kept, clusters_frame(previous, kept), "unchanged", [], 0)
    added = assign(previous, new, embedder=embedder)
    report = drift_report(previous)
    if report["needs_refit"]:
        model = fit_clusters(rows, k=k, embedder=embedder)
        return ClusterUpdate(model, model.fit_assignments, clusters_frame(model), "refit", report["reasons"], new.height)
    assignments = pl.concat([kept, added], how="vertical")
    return ClusterUpdate(previous, assignments, clusters_frame(previous, assignments), "assign", [], new.height)
