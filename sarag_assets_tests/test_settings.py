"""The instance config sarag writes for a home's Dagster instance, wherever sarag is run from."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from sarag_assets.settings import MINIMAL_INSTANCE_CONFIG, ensure_instance_config

PROJECT_CONFIG = Path(__file__).resolve().parents[1] / "dagster.yaml"


def test_the_project_config_is_copied_even_from_another_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no dagster.yaml here: `sarag eval` run from elsewhere
    config = ensure_instance_config(tmp_path / "home" / "dagster_home")
    assert config.read_text() == PROJECT_CONFIG.read_text()
    config.write_text(MINIMAL_INSTANCE_CONFIG)  # an operator's edit survives
    assert ensure_instance_config(config.parent).read_text() == MINIMAL_INSTANCE_CONFIG


def test_both_configs_give_an_instance_without_telemetry_and_one_duckdb_writer(tmp_path):
    for name, text in (("project", PROJECT_CONFIG.read_text()), ("minimal", MINIMAL_INSTANCE_CONFIG)):
        home = tmp_path / name
        home.mkdir()
        (home / "dagster.yaml").write_text(text)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert instance.telemetry_enabled is False, name
            assert instance.get_concurrency_config().pool_config.default_pool_limit == 1, name
