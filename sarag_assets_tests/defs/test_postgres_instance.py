"""The production instance configuration (deploy/dagster.postgres.yaml): the same definitions run with the
Dagster instance in PostgreSQL, reached through the environment variable it names. The database is the
machine's PostgreSQL where it answers, else one the test starts from the pgserver package (the scale-out
tests' `postgres_database`): the test never skips."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from sarag_assets.orchestration.runner import land_and_process
from sarag_assets_tests.conftest import write_jsonl
from sarag_assets_tests.defs.scale_out import postgres_database
from sarag_assets_tests.defs.test_retrieval_pipeline import chat

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def postgres_db(tmp_path, monkeypatch) -> str:
    """A fresh database named by DAGSTER_PG_URL; yields its libpq URI."""
    with postgres_database(tmp_path) as url:
        monkeypatch.setenv("DAGSTER_PG_URL", url)
        yield url.replace("postgresql+psycopg2://", "postgresql://", 1)


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
    with psycopg2.connect(postgres_db) as con:
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
