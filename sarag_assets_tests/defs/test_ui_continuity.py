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
        assert first.total_requested == 0, [(r.asset_key, r.true_subset.size) for r in first.results
                                            if r.true_subset.size]
        assert dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor).total_requested == 0

    # A changed file is landed again (its content is new), and only it.
    write_jsonl(home.inbox / "week1.jsonl", [chat(1, "my Vortex X2 printer jams on every page", "clean the roller"),
                                             chat(3, "my Kestrel router drops wifi", "move to channel 6")])
    assert len(inbox_requests(defs, instance)) == 1
