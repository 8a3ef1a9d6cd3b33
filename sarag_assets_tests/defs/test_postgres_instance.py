"""The production instance configuration (deploy/dagster.postgres.yaml): the same definitions run with the
Dagster instance in the machine's real PostgreSQL, reached through the environment variables it names."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import dagster as dg
import pytest

from sarag_assets.defs.runner import land_and_process
from sarag_assets_tests.conftest import write_jsonl
from sarag_assets_tests.defs.test_retrieval_pipeline import chat

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def postgres_db(monkeypatch):
    psycopg2 = pytest.importorskip("psycopg2")
    try:
        admin = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres", connect_timeout=5)
    except psycopg2.OperationalError as exc:
        pytest.skip(f"no PostgreSQL at 127.0.0.1:5432 ({str(exc).strip()[:100]})")
    admin.autocommit = True
    name = "sarag_test_" + secrets.token_hex(4)
    admin.cursor().execute(f"CREATE DATABASE {name}")
    monkeypatch.setenv("DAGSTER_PG_URL", f"postgresql+psycopg2://postgres@127.0.0.1:5432/{name}")
    yield name
    admin.cursor().execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    admin.close()


def test_the_pipeline_runs_with_its_instance_in_postgres(home, defs, tmp_path, postgres_db):
    import psycopg2

    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    shutil.copyfile(REPO / "deploy" / "dagster.postgres.yaml", dagster_home / "dagster.yaml")
    instance = dg.DagsterInstance.from_config(str(dagster_home))
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    write_jsonl(home.inbox / "week1.jsonl", [chat(1, "my Vortex X2 printer jams on every page", "clean the roller"),
                                             chat(2, "the Lumo app crashes at login", "reinstall the app")])
    done = land_and_process(defs, instance, raise_on_error=True)
    assert done.published and not done.failed
    with psycopg2.connect(host="127.0.0.1", user="postgres", dbname=postgres_db) as con:
        cursor = con.cursor()
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE status = 'SUCCESS') FROM runs")
        total, succeeded = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'")
        materializations = cursor.fetchone()[0]
    assert total == succeeded == len(instance.get_runs()) >= 6  # ingest, govern, refresh, index, ..., publish
    assert materializations >= 10
    # the instance's memory survives a new process: what ran is not run again
    again = land_and_process(defs, dg.DagsterInstance.from_config(str(dagster_home)), raise_on_error=True)
    assert again.batches == [] and again.published is None
