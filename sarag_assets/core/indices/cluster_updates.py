"""feature_clusters logic: fit once, then assign new rows incrementally, refit on drift or on request.

No Dagster imports. Rows are the linearized conversation rows of the current conversations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

import polars as pl

from sarag_assets.core.encoding.embedder import text_hash
from sarag_assets.core.indices.clusters import (
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
    new_rows: int  # rows (re)assigned or fitted this time, changed ones included
    changed_rows: int = 0  # of those, conversations whose text differs from what their assignment was made from


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
    current are dropped; new ones are assigned to the nearest centroid unless a (re)fit is due.

    An assignment is kept only while its `text_hash` equals the hash of the conversation's current text:
    a conversation that landed again with other content (or whose row changed under a new M*) is
    assigned again, like a new one. Assignments without a hash (written before the column existed)
    cannot be trusted and are redone the same way (often a refit, as they are many)."""
    rows = rows.filter(pl.col("dialogue_id").is_not_null()).unique("dialogue_id", keep="last").sort("dialogue_id")
    texts = rows["text"].fill_null("").to_list()
    current = pl.DataFrame({"dialogue_id": rows["dialogue_id"], "text_hash": [text_hash(t) for t in texts]},
                           schema={"dialogue_id": pl.String, "text_hash": pl.String})
    if previous is None or refit:
        model = fit_clusters(rows, k=k, embedder=embedder)
        reasons = ["first fit"] if previous is None else ["refit requested"]
        return ClusterUpdate(model, model.fit_assignments, clusters_frame(model), "fit" if previous is None else "refit",
                             reasons, rows.height)
    if "text_hash" not in previous_assignments.columns:
        previous_assignments = previous_assignments.with_columns(pl.lit(None, pl.String).alias("text_hash"))
    of_model = previous_assignments.filter(pl.col("model_version") == previous.model_version)
    kept = of_model.join(current, on=["dialogue_id", "text_hash"], how="semi")
    new = rows.filter(~pl.col("dialogue_id").is_in(kept["dialogue_id"].unique().to_list()))
    changed = new.filter(pl.col("dialogue_id").is_in(of_model["dialogue_id"].unique().to_list())).height
    if new.height == 0:
        return ClusterUpdate(previous, kept, clusters_frame(previous, kept), "unchanged", [], 0)
    added = assign(previous, new, embedder=embedder)
    report = drift_report(previous)
    if report["needs_refit"]:
        model = fit_clusters(rows, k=k, embedder=embedder)
        return ClusterUpdate(model, model.fit_assignments, clusters_frame(model), "refit", report["reasons"],
                             new.height, changed)
    assignments = pl.concat([kept, added], how="vertical")
    return ClusterUpdate(previous, assignments, clusters_frame(previous, assignments), "assign", [], new.height,
                         changed)


def save_cluster_update(con, update: ClusterUpdate) -> None:
    """Store an update in the warehouse: a new model version (unless nothing changed), then every current
    assignment and cluster."""
    from sarag_assets.core import warehouse

    if update.action != "unchanged":
        warehouse.append_rows(con, "cluster_models", pl.DataFrame([{
            "model_version": update.model.model_version, "model": update.model.to_bytes(),
            "n_fit_rows": update.model.n_fit_rows, "fitted_at": datetime.now(timezone.utc),
            "drift_report": json.dumps(update.reasons)}]))
    warehouse.replace_table(con, "cluster_assignments", update.assignments)
    warehouse.replace_table(con, "clusters", update.clusters)
