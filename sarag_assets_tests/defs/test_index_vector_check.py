"""The `vectors_unit_norm` check of lancedb_indices judges the vectors LanceDB holds, read back after the
write, not the ones the run just encoded: a stored vector that the write leaves in place (its content did
not change) is still checked."""

from __future__ import annotations

import polars as pl
import pytest

from sarag_assets.core.indices.store import GRAPH_NODES, IndexStore
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets_tests.conftest import conversation, write_jsonl

pytestmark = pytest.mark.slow


def unit_norm_check(result):
    (evaluation,) = [e for e in result.get_asset_check_evaluations() if e.check_name == "vectors_unit_norm"]
    return evaluation.passed, {k: v.value for k, v in evaluation.metadata.items()}


def test_vectors_unit_norm_reads_the_stored_vectors(home, instance, defs):
    write_jsonl(home.inbox / "week1.jsonl", [
        conversation("v1", ("user", "Hi, my Vortex X2 printer jams on every page"), ("agent", "Please clean the roller."),
                     ("user", "How do I do that?"), ("agent", "Open the back panel, then clean the roller.")),
        conversation("v2", ("user", "The Lumo app crashes with error E-4410"), ("agent", "Reinstall the app."),
                     ("user", "Done, it works now, thanks")),
    ])
    (batch,) = land_and_process(defs, instance, raise_on_error=True).indexed
    index_job = defs.resolve_job_def("index_batch_job")
    passed, metadata = unit_norm_check(index_job.execute_in_process(partition_key=batch, instance=instance))
    assert passed
    assert metadata["model_dimension"] == 384
    assert set(metadata["stored_dimension"].values()) == {384}
    assert set(metadata["off_norm_rows"].values()) == {0}

    # Scale one stored graph-node vector by 2 without changing its content hash: the next write of the
    # batch leaves that row untouched (unchanged content is not rewritten), so only a check that reads
    # LanceDB can see it.
    writer = IndexStore(str(home.lancedb))
    stored = pl.from_arrow(writer._open(GRAPH_NODES).search().where(f"batch_key = '{batch}'").limit(None).to_arrow())
    assert stored.height >= 2
    first = stored["id"].sort()[0]
    corrupted = stored.with_columns(
        pl.when(pl.col("id") == first).then(pl.col("vector").arr.eval(pl.element() * 2)).otherwise(pl.col("vector"))
        .alias("vector")
    )
    writer.replace_batch(GRAPH_NODES, batch, corrupted, force=True)

    result = index_job.execute_in_process(partition_key=batch, instance=instance)
    assert result.success  # a warning, not blocking
    passed, metadata = unit_norm_check(result)
    assert not passed
    assert metadata["off_norm_rows"][GRAPH_NODES] == 1
    assert sum(metadata["off_norm_rows"].values()) == 1
    assert abs(metadata["max_norm"] - 2.0) < 1e-4
