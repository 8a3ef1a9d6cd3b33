"""Driving the real Definitions in-process: what `sarag demo`, `sarag eval` and the tests use.

It evaluates the real inbox sensor against a real instance, registers the partitions it asks for,
and executes each run request's job in-process on that instance (so the runs, materializations and
check results show in the Dagster UI afterwards). A request whose run key already ran successfully
is skipped, as the daemon would.
"""


from dataclasses import dataclass, field

import dagster as dg

RUN_KEY_TAG = "sarag/run_key"


@dataclass
class PipelineRun:
    batches: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _already_ran(instance: dg.DagsterInstance, run_key: str) -> bool:
    runs = instance.get_runs(
        filters=dg.RunsFilter(tags={RUN_KEY_TAG: run_key}, statuses=[dg.DagsterRunStatus.SUCCESS]), limit=1
    )
    return bool(runs)


def land_and_process(
    defs: dg.Definitions, instance: dg.DagsterInstance, *, raise_on_error: bool = False
) -> PipelineRun:
    sensor = defs.resolve_sensor_def("inbox_sensor")
    with dg.build_sensor_context(instance=instance, definitions=defs, resources=defs.resources) as context:
        result = sensor(context)
    outcome = PipelineRun()
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    job = defs.resolve_job_def(sensor.job_name)
    for request in result.run_requests or []:
        if _already_ran(instance, request.run_key):
            outcome.skipped.append(request.partition_key)
            continue
        run = job.execute_in_process(
            partition_key=request.partition_key,
            instance=instance,
            tags={**request.tags, RUN_KEY_TAG: request.run_key},
            raise_on_error=raise_on_error,
        )
        (outcome.batches if run.success else outcome.failed).append(request.partition_key)
    return outcome
