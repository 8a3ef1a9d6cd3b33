"""Every step that encodes reports its encoding work, and the home's one content-hash cache means an
unchanged re-run encodes nothing (real Dagster runs, the real model, the embedded backend)."""

from __future__ import annotations

import dagster as dg
import duckdb
import pytest

from sarag_assets.core.encoding.embedder import runtime_choice
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets_tests.conftest import conversation, write_jsonl

pytestmark = pytest.mark.slow

ENCODING_STEPS = ("candidate_schemas", "dialogue_graphs", "lancedb_indices")


def _metadata(instance, asset, partition):
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1).records
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def test_steps_report_their_encoding_and_an_unchanged_rerun_encodes_nothing(home, instance, defs):
    write_jsonl(home.inbox / "tickets.jsonl", [
        conversation("a", ("user", "Hello. My Widget A100 shows error E101 on boot since the 2.1 update."),
                     ("agent", "Please reinstall the driver from the support page."),
                     ("user", "Still the same error after reinstalling."),
                     ("agent", "Then reset it: hold the power button for ten seconds."),
                     ("user", "That worked, thanks!")),
        conversation("b", ("user", "The Widget B200 beeps three times and will not charge."),
                     ("agent", "Replace the battery; the old one is worn out.")),
    ])
    run = land_and_process(defs, instance, raise_on_error=True)
    (batch,) = run.batches
    first = {asset: _metadata(instance, asset, batch) for asset in ENCODING_STEPS}
    for asset, meta in first.items():
        # the graphs compare texts the candidate step already encoded: they may find them all in the home
        assert asset == "dialogue_graphs" or (meta["encoder_texts"] > 0 and meta["encoder_seconds"] > 0), asset
        assert "encoder_texts" in meta and not [k for k in meta if k.startswith("llm_")], f"{asset}: llm_* metadata under the embedded backend"
        assert meta["encoder_runtime"] == runtime_choice().batches  # the setting's default: auto

    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        (cached,) = con.execute("SELECT count(*) FROM embedding_cache").fetchone()
    assert cached == sum(meta["encoder_texts"] for meta in first.values())  # each distinct text once, kept

    # The same batch again, new steps with new embedders (as in a new process): every vector is in the home.
    defs.resolve_job_def("ingest_batch_job").execute_in_process(partition_key=batch, instance=instance)
    defs.resolve_job_def("index_batch_job").execute_in_process(partition_key=batch, instance=instance)
    again = {asset: _metadata(instance, asset, batch) for asset in ENCODING_STEPS}
    assert {asset: meta["encoder_texts"] for asset, meta in again.items()} == {asset: 0 for asset in ENCODING_STEPS}
    assert again["candidate_schemas"]["candidate_columns"] == first["candidate_schemas"]["candidate_columns"]
