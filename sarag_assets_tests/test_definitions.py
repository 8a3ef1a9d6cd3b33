"""The asset graph as reviewed: a snapshot of every asset spec, and the instance config loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

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


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
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
            assert all(c.description for c in schema.columns), [c.name for c in schema.columns if not c.description]


def test_every_asset_names_its_owners_from_the_settings(monkeypatch):
    from sarag_assets.definitions import build_definitions
    from sarag_assets.settings import Settings

    default = build_definitions(Settings.load()).resolve_asset_graph()
    assert {tuple(default.get(k).owners) for k in default.get_all_asset_keys()} == {("team:support-data",)}
    monkeypatch.setenv("SARAG_ASSET_OWNERS", "team:helpdesk-analytics, ana@example.com")
    chosen = build_definitions(Settings.load()).resolve_asset_graph()
    assert {tuple(chosen.get(k).owners) for k in chosen.get_all_asset_keys()} == \
        {("team:helpdesk-analytics", "ana@example.com")}


def test_kubernetes_is_the_same_graph_with_another_executor_and_a_valid_configuration(tmp_path):
    """Not run on a cluster here: the k8s executor's configuration is checked against dagster-k8s's own schema."""
    from dagster._config import process_config
    from dagster_k8s import k8s_job_executor

    from sarag_assets.definitions import build_definitions
    from sarag_assets.orchestration.executors import k8s_executor_config
    from sarag_assets.settings import Settings, SettingsError

    env = {"SARAG_HOME": str(tmp_path / "home"), "SARAG_EXECUTOR": "k8s",
           "SARAG_K8S_JOB_IMAGE": "registry.example.com/sarag:1.0"}
    settings = Settings.load(environ=env)
    on_k8s, here = build_definitions(settings), build_definitions(Settings.load(environ={"SARAG_HOME": env["SARAG_HOME"]}))
    jobs = sorted(job.name for job in here.resolve_all_job_defs())
    assert jobs and sorted(job.name for job in on_k8s.resolve_all_job_defs()) == jobs
    assert {on_k8s.resolve_job_def(name).executor_def.name for name in jobs} == {"k8s"}
    assert on_k8s.resolve_asset_graph().get_all_asset_keys() == here.resolve_asset_graph().get_all_asset_keys()
    config = k8s_executor_config(settings)
    checked = process_config(k8s_job_executor.config_schema.config_type, config)
    assert checked.success, checked.errors
    assert config["job_image"] == "registry.example.com/sarag:1.0"
    assert config["volume_mounts"][0]["mountPath"] == str((tmp_path / "home").resolve())
    assert config["volumes"][0]["persistentVolumeClaim"]["claimName"] == "sarag-home"
    with pytest.raises(SettingsError, match="k8s_job_image"):
        Settings.load(environ={**env, "SARAG_K8S_JOB_IMAGE": ""})


def test_a_kubernetes_step_pod_gets_its_settings_from_sarag_toml_alone(tmp_path, monkeypatch):
    """As docs/deployment.md sets it up: the executor in sarag.toml, only the home and the instance's URL in
    the environment of the process that launches runs. dagster-k8s reads each bare name of `env_vars` from
    that environment when a run starts (dagster's parse_env_var) and fails the run when one is missing."""
    from dagster._core.utils import parse_env_var

    from sarag_assets.orchestration.executors import k8s_executor_config
    from sarag_assets.settings import Settings

    home = tmp_path / "home"
    home.mkdir()
    (home / "sarag.toml").write_text('executor = "k8s"\nk8s_job_image = "registry.example.com/sarag:1.0"\n')
    for name in [n for n in os.environ if n.startswith("SARAG_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("DAGSTER_PG_URL", "postgresql+psycopg2://sarag@db:5432/dagster")
    settings = Settings.load(str(home))
    pod = dict(parse_env_var(entry) for entry in k8s_executor_config(settings)["env_vars"])
    assert pod == {"SARAG_HOME": str(home.resolve()), "SARAG_EXECUTOR": "k8s",
                   "SARAG_K8S_JOB_IMAGE": "registry.example.com/sarag:1.0", "SARAG_K8S_HOME_CLAIM": "sarag-home",
                   "DAGSTER_PG_URL": "postgresql+psycopg2://sarag@db:5432/dagster"}
    assert Settings.load(environ=pod).executor == "k8s"  # the pod reads the same settings back

