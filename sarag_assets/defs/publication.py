"""Serving side: staged_state (copy + pin + audit, blocking checks) -> published_state (the readers' switch).

Write-audit-publish: the steps before these write in place; readers see a state only once
`published_state` has run, which Dagster runs only after `staged_state`'s blocking checks passed.
"""

import dagster as dg

from sarag_assets.core import publication
from sarag_assets.defs.conditions import ON_COMPLETE_INDICES, ON_DEPENDENCY_CHANGE
from sarag_assets.defs.resources import DUCKDB_POOL, SaragHome

@dg.asset(
    # governed_metadata for the lineage: a change of M* that matters reaches readers through the others
    deps=["lancedb_indices", "feature_clusters", "value_mentions", "ranking_calibration", "governed_metadata"],
    group_name="serving",
    kinds={"duckdb", "lancedb"},
    pool=DUCKDB_POOL,  # holds the warehouse's write lock while it copies
    automation_condition=ON_COMPLETE_INDICES,
    description="A candidate state for readers: a read-only copy of the warehouse (without the writers' caches) "
    "and the LanceDB tables' current versions, audited against each other. Not yet visible to readers.",
    check_specs=[
        dg.AssetCheckSpec("indices_match_warehouse", asset="staged_state", blocking=True,
                          description="every LanceDB table, at its pinned version, holds exactly the rows the "
                                      "copied warehouse calls for: no row missing, none superseded or unknown"),
        dg.AssetCheckSpec("no_duplicate_index_ids", asset="staged_state", blocking=True,
                          description="no id appears twice in any pinned LanceDB table"),
    ],
)
def staged_state(context: dg.AssetExecutionContext, sarag_home: SaragHome):
    home = sarag_home.home()
    state = publication.stage(home)
    yield dg.MaterializeResult(metadata={
        "state_id": state.id,
        "conversations": state.counts.get("conversations", 0),
        "lancedb_versions": state.versions,
        "rows": {t: n for t, n in state.counts.items() if t != "conversations"},
        "metadata_version": state.metadata_version if state.metadata_version is not None else -1,
        "warehouse_copy_mb": round(state.warehouse.stat().st_size / 2**20, 2),
    })
    for name, check in state.audit.items():
        yield dg.AssetCheckResult(check_name=name, passed=bool(check["passed"]), metadata={"detail": check["detail"]})


@dg.asset(
    deps=["staged_state"],
    group_name="serving",
    kinds={"python"},
    automation_condition=ON_DEPENDENCY_CHANGE,
    description="The state search, ask, sql and the service read: the newest staged state, once its blocking "
    "checks passed. Switching is one atomic rename of <home>/published/CURRENT.",
)
def published_state(context: dg.AssetExecutionContext, sarag_home: SaragHome) -> dg.MaterializeResult:
    home = sarag_home.home()
    record = context.instance.fetch_materializations(dg.AssetKey("staged_state"), limit=1).records
    if not record:
        raise dg.Failure("no staged state to publish")
    state_id = record[0].asset_materialization.metadata["state_id"].value
    try:
        state = publication.promote(home, state_id)
    except publication.NotPublishable as exc:
        raise dg.Failure(str(exc)) from None
    return dg.MaterializeResult(metadata={
        "state_id": state.id,
        "published_at": state.published_at,
        "conversations": state.counts.get("conversations", 0),
    })


publish_job = dg.define_asset_job(
    "publish_job",
    selection=dg.AssetSelection.assets("staged_state", "published_state"),
    description="Stage the current state, audit it and, when its checks pass, publish it to readers.",
)
