"""The asset graph as reviewed: a snapshot of every asset spec, and the instance config loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

SNAPSHOT = Path(__file__).parent / "data" / "asset_graph_snapshot.json"
ROOT = Path(__file__).parent.parent


def graph_snapshot(defs: dg.Definitions) -> dict:
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "partitions": type(node.partitions_def).__name__ if node.partitions_def else None,
            "group": node.group_name,
            "checks": sorted(
                f"{c.name}{' (blocking)' if graph.get(c).blocking else ''}" for c in node.check_keys
            ),
            "automation": node.automation_condition.get_label() if node.automation_condition else None,
        }
    return {
        "assets": assets,
        "jobs": sorted(j.name for j in defs.resolve_all_job_defs() if not j.name.startswith("__")),
        "sensors": sorted(s.name for s in defs.sensors or []),
        "schedules": sorted(s.name for s in defs.schedules or []),
    }


def test_asset_graph_matches_the_reviewed_snapshot(defs):
    current = graph_snapshot(defs)
    if os.environ.get("SARAG_UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    assert current == json.loads(SNAPSHOT.read_text()), (
        "the asset graph changed; if on purpose, rerun with SARAG_UPDATE_SNAPSHOT=1 and review the diff"
    )


def test_workspace_and_instance_config_load(tmp_path):
    (tmp_path / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", str(ROOT / "workspace.yaml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        assert instance.run_coordinator is not None


def test_every_check_is_described_and_every_table_asset_carries_its_columns(defs):
    from sarag_assets.core import warehouse
    from sarag_assets.defs.catalog import TABLE_OF

    graph = defs.resolve_asset_graph()
    checks = [graph.get(c) for key in graph.get_all_asset_keys() for c in graph.get(key).check_keys]
    assert len(checks) >= 20 and all(c.description and len(c.description) > 15 for c in checks), \
        [c.key.name for c in checks if not c.description]
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.code_version, key
        name = key.to_user_string()
        if name in TABLE_OF:
            schema = node.metadata["dagster/column_schema"]
            assert [c.name for c in schema.columns] == [c for c, _ in warehouse.TABLES[TABLE_OF[name]]]
