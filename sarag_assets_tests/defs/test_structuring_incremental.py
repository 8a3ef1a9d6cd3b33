"""Incremental structuring with the embedded backend through real Dagster runs: a batch that brings no new
column re-extracts nothing old; one that brings a new column re-extracts only that column elsewhere."""

from __future__ import annotations

import json

import dagster as dg
import duckdb
import pytest

from sarag_assets.orchestration.runner import land_and_process
from sarag_assets_tests.conftest import conversation, write_jsonl

pytestmark = pytest.mark.slow


def widget_chat(i: int, extra: str = "") -> dict:
    return conversation(
        f"w{i}",
        ("user", f"Hello, my Widget W{100 + i} shows error E{500 + i} after the update to version 2.{i}.{extra}"),
        ("agent", "Please reinstall the driver from the support page."),
        ("user", "That fixed it, thanks!"),
    )


def column_sets(home) -> list[set[str]]:
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        versions = con.execute("SELECT columns_json FROM metadata_versions ORDER BY version").fetchall()
    return [{c["name"] for c in json.loads(v)} | {a for c in json.loads(v) for a in c["aliases"]} for (v,) in versions]


def rows_meta(instance, partition):
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("validated_rows"), asset_partitions=[partition]), limit=10
    ).records
    return [{k: v.value for k, v in r.asset_materialization.metadata.items()} for r in records]


def current_columns(home) -> list[str]:
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        (state,) = con.execute("SELECT state_json FROM governance_state ORDER BY saved_at DESC LIMIT 1").fetchone()
    return [c["name"] for c in json.loads(state)["columns"]]


def test_new_batches_reextract_only_new_columns(home, instance, defs, monkeypatch):
    write_jsonl(home.inbox / "week1.jsonl", [widget_chat(i) for i in range(4)])
    first = land_and_process(defs, instance, raise_on_error=True)
    (batch1,) = first.batches
    columns_after_1 = current_columns(home)
    assert columns_after_1, "the first batch yields a governed metadata"
    assert len(rows_meta(instance, batch1)) == 1

    # Same kind of conversations: no new column, so batch 1 is not touched again.
    write_jsonl(home.inbox / "week2.jsonl", [widget_chat(i) for i in range(4, 8)])
    second = land_and_process(defs, instance, raise_on_error=True)
    (batch2,) = second.batches
    assert current_columns(home) == columns_after_1
    assert second.refreshed == [batch2]  # its own rows only
    assert len(rows_meta(instance, batch1)) == 1

    # Conversations that all state a new recurring fact: M* gains columns; old batches extract only those.
    write_jsonl(home.inbox / "week3.jsonl", [
        widget_chat(i, extra=" Warranty tier: gold. Purchase channel: online store.") for i in range(8, 12)
    ])
    before = set(current_columns(home))
    third = land_and_process(defs, instance, raise_on_error=True)
    after = current_columns(home)
    old_names = column_sets(home)[-2] if len(column_sets(home)) > 1 else set()
    new_columns = [c for c in after if c not in before and c not in old_names]
    assert new_columns, f"no new column from the week-3 facts: {after}"
    assert set(third.refreshed) == {batch1, batch2, *third.batches}
    latest = rows_meta(instance, batch1)[0]
    assert latest["extracted_cells"] == 4 * len(new_columns)
    assert latest["carried_over_cells"] == 4 * (len(after) - len(new_columns))
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM conversation_table").fetchone() == (12,)

    # The checks that only inform are recorded as warnings, not errors (the UI marks them with its warning icon).
    for check in ("sparse_columns", "structuring_failures"):
        key = dg.AssetCheckKey(dg.AssetKey("validated_rows"), check)
        (record,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
        assert record.event.dagster_event.event_specific_data.severity == dg.AssetCheckSeverity.WARN, check

    # Nothing new (a second `make demo`): no step runs, governance included, and the state stays.
    governed = instance.get_latest_materialization_event(dg.AssetKey("governed_metadata")).run_id
    runs = len(instance.get_run_records())
    again = land_and_process(defs, instance, raise_on_error=True)
    assert (again.redone, again.published, again.batches) == ([], None, [])
    assert len(instance.get_run_records()) == runs
    assert instance.get_latest_materialization_event(dg.AssetKey("governed_metadata")).run_id == governed

    # A governance setting that changed is a reason to govern again, said in one line.
    monkeypatch.setenv("SARAG_METADATA_CAPACITY", "19")
    changed = land_and_process(defs, instance, raise_on_error=True)
    assert changed.redone[0] == "governed the metadata: its settings changed (now governed, capacity 19, support 2, " \
                                "share 0.05)"
