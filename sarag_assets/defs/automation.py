"""Schedules and automation: keep derived assets in step with new batches and with M*."""

import dagster as dg

from sarag_assets.defs.jobs import refresh_rows_job
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


automation_sensor = dg.AutomationConditionSensorDefinition(
    "sarag_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Evaluates the assets' automation conditions (on by default, unlike Dagster's own).",
)
