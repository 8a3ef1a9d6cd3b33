"""After `sarag demo` (the real command, in a subprocess, with the three bundled samples), the Dagster
daemon's first ticks start nothing for the data the demo already processed, and the UI shows no asset as
stale ("Unsynced"). The ticks are the daemon's own (sensor daemon and asset daemon iterations) on the home's
DAGSTER_HOME instance, with the code location loaded from workspace.yaml as `make ui` loads it."""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import StaleStatus
from dagster._core.definitions.partitions.context import partition_loading_context
from dagster._core.scheduler.instigation import TickStatus
from dagster._core.test_utils import freeze_time
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster._daemon.asset_daemon import AssetDaemon
from dagster._daemon.controller import create_daemon_grpc_server_registry
from dagster._daemon.sensor import execute_sensor_iteration
from dagster._time import get_current_datetime

from sarag_assets.cli import FIXTURE_FILES
from sarag_assets_tests.conftest import write_jsonl
from sarag_assets_tests.defs.test_retrieval_pipeline import chat

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def inbox_requests(defs, instance) -> list[dg.RunRequest]:
    sensor = defs.resolve_sensor_def("inbox_sensor")
    with dg.build_sensor_context(instance=instance, definitions=defs, resources=defs.resources) as context:
        return list(sensor(context).run_requests or [])


def sarag_demo(home, n: int) -> None:
    """`make demo` on a small generated corpus: the CLI in the repository, DAGSTER_HOME under the home."""
    env = {**os.environ, "SARAG_HOME": str(home.root), "DAGSTER_HOME": str(home.dagster_home)}
    done = subprocess.run([sys.executable, "-m", "sarag_assets.cli", "demo", "--n", str(n)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]


@contextlib.contextmanager
def daemon_workspace(instance: dg.DagsterInstance):
    """The workspace `dagster dev -w workspace.yaml` (and `dagster-daemon run`) loads: a code server process."""
    target = WorkspaceFileTarget(paths=[str(ROOT / "workspace.yaml")])
    with create_daemon_grpc_server_registry(instance) as registry, WorkspaceProcessContext(
            instance, target, grpc_server_registry=registry) as context:
        yield context


def sensors_by_name(context) -> dict:
    request = context.create_request_context()
    return {sensor.name: sensor for entry in request.get_code_location_entries().values()
            for repo in entry.code_location.get_repositories().values() for sensor in repo.get_sensors()}


def only_tick(instance, sensor):
    ticks = instance.get_ticks(sensor.get_remote_origin_id(), sensor.selector_id)
    assert len(ticks) == 1, ticks
    return ticks[0]


def requested_by_automation_tick(context, instance, sensor) -> list:
    """One asset daemon iteration; what its new tick of `sensor` requested: runs, or assets its evaluated
    automation conditions selected."""
    AssetDaemon(settings=instance.get_auto_materialize_settings(), pre_sensor_interval_seconds=30)._run_iteration_impl(
        context, threadpool_executor=None, amp_tick_futures={}, debug_crash_flags={})
    tick = instance.get_ticks(sensor.get_remote_origin_id(), sensor.selector_id, limit=1)[0]
    assert tick.status in (TickStatus.SKIPPED, TickStatus.SUCCESS), (tick.status, tick.error)
    records = instance.schedule_storage.get_auto_materialize_evaluations_for_evaluation_id(
        tick.automation_condition_evaluation_id)
    assert records  # the conditions were evaluated
    with partition_loading_context(get_current_datetime(), instance):
        selected = [(r.key.to_user_string(), r.get_evaluation_with_run_ids().evaluation.true_subset.size)
                    for r in records]
    return list(tick.run_ids) + sorted(tick.requested_asset_keys, key=str) + [s for s in selected if s[1]]


def stale_assets(context, instance) -> list:
    """Every asset (and partition) the UI would show as stale ("Unsynced"), with Dagster's root causes."""
    request = context.create_request_context()
    loader, graph = request.stale_status_loader, request.asset_graph
    stale = []
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        partitions = (node.partitions_def.get_partition_keys(dynamic_partitions_store=instance)
                      if node.partitions_def else [None])
        for partition in partitions:
            if loader.get_status(key, partition) != StaleStatus.FRESH:
                stale.append((key.to_user_string(), partition, [(c.key, c.category.name, c.reason)
                                                                for c in loader.get_stale_root_causes(key, partition)]))
    return stale


def test_the_daemon_starts_no_run_for_what_the_demo_already_did(home, monkeypatch, defs):
    sarag_demo(home, n=24)
    monkeypatch.setenv("DAGSTER_HOME", str(home.dagster_home))
    with dg.DagsterInstance.from_config(str(home.dagster_home)) as instance:
        batches = instance.get_dynamic_partitions("conversation_batches")
        for sample in FIXTURE_FILES:  # the bundled real samples were landed too
            assert any(b.startswith(Path(sample).stem + "-") for b in batches), (sample, batches)
        assert any(b.startswith("synthetic-n24-seed7-") for b in batches), batches
        evaluation = instance.get_latest_materialization_event(dg.AssetKey("retrieval_evaluation"))
        assert evaluation is not None and evaluation.asset_materialization.metadata["evaluated"].value is True
        runs = {run.run_id for run in instance.get_runs()}

        with daemon_workspace(instance) as context:
            sensors = sensors_by_name(context)
            # The sensor daemon's first tick: the inbox sensor has no cursor yet and sees every file again.
            list(execute_sensor_iteration(context, logging.getLogger("SensorDaemon"), threadpool_executor=None,
                                          submit_threadpool_executor=None))
            inbox = sensors["inbox_sensor"]
            tick = only_tick(instance, inbox)
            assert tick.status == TickStatus.SKIPPED and not tick.run_ids, (tick.status, tick.run_ids, tick.error)
            # ... having seen this home's inbox (its cursor names every file the demo landed)
            state = instance.get_instigator_state(inbox.get_remote_origin_id(), inbox.selector_id)
            cursor = state.instigator_data.cursor
            for name in [Path(sample).name for sample in FIXTURE_FILES] + ["synthetic-n24-seed7.jsonl"]:
                assert name in cursor, (name, cursor)
            # The asset daemon's first two ticks of the sarag_automation sensor (the second one compares
            # with what the first saw, a minute later).
            automation = sensors["sarag_automation"]
            assert requested_by_automation_tick(context, instance, automation) == []
            with freeze_time(get_current_datetime() + datetime.timedelta(seconds=60)):
                assert requested_by_automation_tick(context, instance, automation) == []
            assert len(instance.get_ticks(automation.get_remote_origin_id(), automation.selector_id)) == 2
            assert {run.run_id for run in instance.get_runs()} == runs  # nothing submitted, not even queued

            # Nothing shows as Unsynced, retrieval_evaluation included ...
            assert stale_assets(context, instance) == []
            # ... which the check would see: a new published state makes retrieval_evaluation stale.
            instance.report_runless_asset_event(dg.AssetMaterialization(
                "published_state", tags={"dagster/data_version": "a-newer-state"}))
            assert [s[0] for s in stale_assets(context, instance)] == ["retrieval_evaluation"]

        # A changed file is landed again (its content is new), and only it.
        write_jsonl(home.inbox / "week1.jsonl", [chat(1, "my Vortex X2 printer jams on every page", "clean the roller"),
                                                 chat(3, "my Kestrel router drops wifi", "move to channel 6")])
        assert [r.tags["sarag/source_file"] for r in inbox_requests(defs, instance)] == ["week1.jsonl"]


def test_no_state_is_staged_while_a_batch_lacks_its_index(home, instance, defs):
    write_jsonl(home.inbox / "a.jsonl", [chat(1, "my Vortex X2 printer jams on every page", "clean the roller")])
    write_jsonl(home.inbox / "b.jsonl", [chat(2, "the Lumo app crashes at login", "reinstall the app")])
    sensor = defs.resolve_sensor_def("inbox_sensor")
    with dg.build_sensor_context(instance=instance, definitions=defs, resources=defs.resources) as context:
        result = sensor(context)
    for request in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    batches = sorted(r.partition_key for r in result.run_requests)
    for key in batches:
        defs.resolve_job_def("ingest_batch_job").execute_in_process(partition_key=key, instance=instance)
    defs.resolve_job_def("govern_metadata_job").execute_in_process(instance=instance)
    for key in batches:
        defs.resolve_job_def("refresh_rows_job").execute_in_process(partition_key=key, instance=instance)
    for job in ("cluster_job", "value_mentions_job", "ranking_calibration_job"):
        defs.resolve_job_def(job).execute_in_process(instance=instance)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        before = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        defs.resolve_job_def("index_batch_job").execute_in_process(partition_key=batches[0], instance=instance)
        one_indexed = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=before.cursor)
        staged = dg.AssetKey("staged_state")
        assert one_indexed.get_num_requested(staged) == 0
        defs.resolve_job_def("index_batch_job").execute_in_process(partition_key=batches[1], instance=instance)
        both_indexed = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=one_indexed.cursor)
        assert both_indexed.get_num_requested(staged) == 1
