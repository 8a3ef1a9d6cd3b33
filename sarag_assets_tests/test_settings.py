"""The settings object (defaults < sarag.toml < environment, one-line errors) and the instance config sarag
writes for a home's Dagster instance, wherever sarag is run from."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import dagster as dg
import pytest

from sarag_assets.settings import (
    CONFIG_FILE,
    MINIMAL_INSTANCE_CONFIG,
    Settings,
    SettingsError,
    default_config,
    ensure_instance_config,
)

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


# --- the one settings object ------------------------------------------------------------------------------



def test_defaults_then_the_file_then_the_environment(tmp_path):
    assert Settings.load(tmp_path, environ={}) == Settings(home=tmp_path)
    (tmp_path / CONFIG_FILE).write_text('batch_size = 100\ngates = false\n[llm]\nmode = "json"\n')
    from_file = Settings.load(tmp_path, environ={})
    assert (from_file.batch_size, from_file.gates, from_file.llm.mode, from_file.redact) == (100, False, "json", True)
    env = {"SARAG_BATCH_SIZE": "7", "SARAG_GATES": "on", "SARAG_LLM_MODE": "Markdown_JSON", "SARAG_GOVERNANCE": "Fixed"}
    both = Settings.load(tmp_path, environ=env)
    assert (both.batch_size, both.gates, both.llm.mode, both.governance) == (7, True, "markdown-json", "fixed")
    spelled = {"SARAG_LLM_MODE": "json-schema", "SARAG_REDACT": "off", "SARAG_GATES": "yes", "SARAG_LLM_API_KEY": " "}
    assert [getattr(Settings.load(tmp_path, environ=spelled), k) for k in ("redact", "gates")] == [False, True]
    assert Settings.load(tmp_path, environ=spelled).llm.mode == "json_schema"
    assert Settings.load(tmp_path, environ=spelled).llm.api_key == "not-needed"  # blank = unset


def test_the_home_comes_from_the_argument_then_sarag_home(tmp_path):
    assert Settings.load(environ={"SARAG_HOME": str(tmp_path)}).home == tmp_path
    assert Settings.load(tmp_path / "other", environ={"SARAG_HOME": str(tmp_path)}).home == tmp_path / "other"
    assert Settings.load(environ={}).paths.warehouse.name == "warehouse.duckdb"


@pytest.mark.parametrize(
    "env,match",
    [
        ({"SARAG_BATCH_SIZE": "many"}, r"^invalid setting SARAG_BATCH_SIZE = 'many': "),
        ({"SARAG_BATCH_SIZE": "0"}, r"SARAG_BATCH_SIZE = '0'.*greater than 0"),
        ({"SARAG_GATES": "maybe"}, r"SARAG_GATES = 'maybe'"),
        # checked at start-up, not at the first statement (a bad limit read as a damaged warehouse, an
        # infinite timeout as no timeout)
        ({"SARAG_SQL_MEMORY_LIMIT": "10%"}, r"SARAG_SQL_MEMORY_LIMIT = '10%'"),
        ({"SARAG_SQL_TIMEOUT_S": "inf"}, r"SARAG_SQL_TIMEOUT_S = 'inf'.*less than or equal to 86400"),
        ({"SARAG_CELERY_QUEUE": "two words"}, r"SARAG_CELERY_QUEUE = 'two words'"),
        ({"SARAG_GOVERNANCE": "none"}, r"SARAG_GOVERNANCE = 'none'.*'governed' or 'fixed'"),
        ({"SARAG_ENCODER_RUNTIME": "jax"}, r"SARAG_ENCODER_RUNTIME"),
        ({"SARAG_LLM_MODE": "xml"}, r"SARAG_LLM_MODE = 'xml'.*tools"),
        ({"SARAG_LLM_TIMEOUT_S": "0"}, r"SARAG_LLM_TIMEOUT_S"),
        ({"SARAG_LLM_MAX_RETRIES": "-1"}, r"SARAG_LLM_MAX_RETRIES"),
        ({"SARAG_LLM_BASE_URL": "http://h/v1"}, r"SARAG_LLM_MODEL.*must be set"),
        ({"SARAG_LLM_BASE_URL": "http://h/v1", "SARAG_LLM_MODEL": "  "}, r"SARAG_LLM_MODEL.*must be set"),
    ],
)
def test_a_bad_value_is_one_line_naming_its_source(tmp_path, env, match):
    with pytest.raises(SettingsError, match=match) as caught:
        Settings.load(tmp_path, environ=env)
    assert "\n" not in str(caught.value)


def test_a_bad_file_is_one_line_naming_the_file(tmp_path):
    config = tmp_path / CONFIG_FILE
    config.write_text("batch_sise = 10\n")
    with pytest.raises(SettingsError, match=rf"{CONFIG_FILE} batch_sise.*Extra inputs"):
        Settings.load(tmp_path, environ={})
    config.write_text("[llm]\ntimeout_s = -1\n")
    with pytest.raises(SettingsError, match=r"\[llm\] timeout_s"):
        Settings.load(tmp_path, environ={})
    config.write_text("batch_size = \n")
    with pytest.raises(SettingsError, match="not a readable TOML file"):
        Settings.load(tmp_path, environ={})


def test_the_default_file_loads_to_the_defaults_and_names_every_setting(tmp_path):
    text = default_config()
    assert tomllib.loads(text) == {"llm": {}}  # all commented out
    uncommented = "\n".join(line[2:] if re.match(r"# \w+ = ", line) else line for line in text.splitlines())
    (tmp_path / CONFIG_FILE).write_text(uncommented)
    assert Settings.load(tmp_path, environ={}) == Settings(home=tmp_path)
    for name in Settings.model_fields:
        if name not in ("home", "llm"):
            assert f"# {name} = " in text and f"SARAG_{name.upper()}" in text


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
def test_an_invalid_setting_stops_the_dagster_code_location_from_loading(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "SARAG_HOME": str(tmp_path), "SARAG_METADATA_CAPACITY": "lots"}
    result = subprocess.run([sys.executable, "-c", "import sarag_assets.definitions"], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "sarag_assets.settings.SettingsError: invalid setting SARAG_METADATA_CAPACITY = 'lots': "
        "Input should be a valid integer, unable to parse string as an integer")
    env["SARAG_METADATA_CAPACITY"] = "12"
    assert subprocess.run([sys.executable, "-c", "import sarag_assets.definitions"], env=env,
                          capture_output=True, timeout=300).returncode == 0


def test_a_renamed_setting_still_works_under_its_former_name_and_the_new_name_wins(tmp_path):
    (tmp_path / CONFIG_FILE).write_text('query_runtime = "torch"\n')
    assert Settings.load(tmp_path, environ={}).encoder_runtime == "torch"
    assert Settings.load(tmp_path, environ={"SARAG_ENCODER_RUNTIME": "onnx"}).encoder_runtime == "onnx"
    (tmp_path / CONFIG_FILE).write_text("")
    assert Settings.load(tmp_path, environ={"SARAG_QUERY_RUNTIME": "torch"}).encoder_runtime == "torch"
    with pytest.raises(SettingsError, match="SARAG_QUERY_RUNTIME"):
        Settings.load(tmp_path, environ={"SARAG_QUERY_RUNTIME": "jax"})


def test_the_pipeline_encodes_with_the_runtime_the_settings_name(tmp_path):
    from sarag_assets.defs.resources import EmbedderResource

    from sarag_assets.core.encoding.embedder import runtime_choice

    by_default = Settings.load(tmp_path, environ={})
    assert by_default.encoder_runtime == "auto"
    assert EmbedderResource().embedder(by_default).runtime == runtime_choice().batches
    onnx = Settings.load(tmp_path, environ={"SARAG_ENCODER_RUNTIME": "onnx"})
    assert EmbedderResource().embedder(onnx).runtime == "onnx"
    torch = Settings.load(tmp_path, environ={"SARAG_ENCODER_RUNTIME": "torch"})
    assert EmbedderResource().embedder(torch).runtime == "torch"
    bf16 = Settings.load(tmp_path, environ={"SARAG_ENCODER_RUNTIME": "BF16"})
    assert bf16.encoder_runtime == "bf16"
    from sarag_assets.core.encoding.embedder import native_bf16

    assert EmbedderResource().embedder(bf16).runtime == ("bf16" if native_bf16() else "onnx")
