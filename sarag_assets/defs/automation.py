"""Schedules and automation: keep derived assets in step with new batches and with M*."""

import dagster as dg

from sarag_assets.defs.jobs import cluster_job, optimize_indices_job, refresh_rows_job
from sarag_assets.defs.partitions import conversation_batches
from sarag_assets.defs.structuring import stale_row_partitions


@dg.schedule(
    job=refresh_rows_job,
    cron_schedule="0 3 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Daily: backfill every batch whose validated rows were built against an older M*.",
)
def stale_rows_backfill(context: dg.ScheduleEvaluationContext):
    keys = context.instance.get_dynamic_partitions(conversation_batches.name)
    stale = stale_row_partitions(context.instance, keys)
    if not stale:
        return dg.SkipReason("every batch is up to date with the current governed metadata")
    tick = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else "manual"
    return [dg.RunRequest(run_key=f"{key}@{tick}", partition_key=key) for key in stale]


cluster_refit_schedule = dg.ScheduleDefinition(
    name="cluster_refit_daily",
    job=cluster_job,
    cron_schedule="30 3 * * *",
    run_config={"ops": {"feature_clusters": {"config": {"refit": True}}}},
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Daily: refit the feature clusters from scratch (between refits new rows join the nearest centroid).",
)

optimize_indices_schedule = dg.ScheduleDefinition(
    name="optimize_indices_daily",
    job=optimize_indices_job,
    cron_schedule="0 4 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Daily: LanceDB compaction and index refresh (optimize()).",
)


automation_sensor = dg.AutomationConditionSensorDefinition(
    "sarag_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Evaluates the assets' automation conditions (on by default, unlike Dagster's own).",
)
