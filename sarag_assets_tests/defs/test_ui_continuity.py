"""After `sarag demo` (the in-process runner), the Dagster daemon's first ticks start nothing for the data
the demo already processed: the inbox sensor (no cursor yet, as on its first tick) and the automation
sensor both request no run. Real sensor evaluations on the real instance."""

from __future__ import annotations

import warnings

import dagster as dg

from sarag_assets.defs.runner import land_and_process
from sarag_assets_tests.conftest import write_jsonl
from sarag_assets_tests.defs.test_retrieval_pipeline import chat


def inbox_requests(defs, instance) -> list[dg.RunRequest]:
    sensor = defs.resolve_sensor_def("inbox_sensor")
    with dg.build_sensor_context(instance=instance, definitions=defs, resources=defs.resources) as context:
        return list(sensor(context).run_requests or [])


def test_the_daemon_starts_no_run_for_what_the_demo_already_did(home, instance, defs):
    write_jsonl(home.inbox / "week1.jsonl", [chat(1, "my Vortex X2 printer jams on every page", "clean the roller"),
                                             chat(2, "the Lumo app crashes at login", "reinstall the app")])
    assert len(inbox_requests(defs, instance)) == 1  # before the demo there is something to land
    done = land_and_process(defs, instance, raise_on_error=True)
    assert done.batches and done.published

    assert inbox_requests(defs, instance) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert first.total_requested == 0, [(r.key, r.true_subset.size) for r in first.results if r.true_subset.size]
        assert dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor).total_requested == 0

    # A changed file is landed again (its content is new), and only it.
    write_jsonl(home.inbox / "week1.jsonl", [chat(1, "my Vortex X2 printer jams on every page", "clean the roller"),
                                             chat(3, "my Kestrel router drops wifi", "move to channel 6")])
    assert len(inbox_requests(defs, instance)) == 1


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
    for job in ("cluster_job", "value_mentions_job"):
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
