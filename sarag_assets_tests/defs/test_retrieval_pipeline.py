"""The retrieval side through real Dagster runs: LanceDB tables match DuckDB, batches are replaced exactly,
superseded conversations disappear from the index, an interrupted write heals on re-run."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from sarag_assets.core import publication, warehouse
from sarag_assets.core.encoding.embedder import default_embedder
from sarag_assets.core.indices.documents import text_index_rows
from sarag_assets.core.indices.store import TABLES, IndexStore
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets.query.engine import Sarag, SearchSettings
from sarag_assets_tests.conftest import conversation, write_jsonl

pytestmark = pytest.mark.slow

SOURCES = {
    "table_rows": "SELECT dialogue_id, batch_key FROM current_dialogue_versions",
    "issue_documents": "SELECT dialogue_id, batch_key FROM pseudo_documents JOIN current_dialogue_versions USING (dialogue_id, batch_key)",
    "solution_documents": "SELECT dialogue_id, batch_key FROM pseudo_documents JOIN current_dialogue_versions USING (dialogue_id, batch_key)",
    "graph_nodes": "SELECT dialogue_id || '#' || node_id, batch_key FROM graph_nodes JOIN current_dialogue_versions USING (dialogue_id, batch_key)",
    "conversation_texts": "SELECT dialogue_id, batch_key FROM current_dialogue_versions",
}


def passage_ids(con) -> set[tuple[str, str]]:
    """The passages the current turns make (computed here from DuckDB, not read back from LanceDB)."""
    batches = [b for (b,) in con.execute("SELECT DISTINCT batch_key FROM current_dialogue_versions").fetchall()]
    out = set()
    for batch in batches:
        passages, _ = text_index_rows(warehouse.current_turns(con, batch), default_embedder().fits)
        out |= set(zip(passages["id"].to_list(), passages["batch_key"].to_list()))
    return out


def chat(i: int, problem: str, fix: str) -> dict:
    return conversation(
        f"c{i}",
        ("user", f"Hi, {problem}"),
        ("agent", f"Please {fix}."),
        ("user", "How do I do that exactly?"),
        ("agent", f"Open the settings page, then {fix}."),
        ("user", "That fixed it, thanks!"),
    )


def long_thread(i: int) -> dict:
    """A forum thread about a coffee machine that ends, 40 turns later, on a garage door remote."""
    turns = [("user", "My Brava coffee machine shows a descale warning every morning.")]
    for n in range(20):
        turns += [("agent", f"Step {n}: run the descaling cycle again with fresh solution and rinse the tank twice."),
                  ("user", f"Tried step {n}, the descale light still blinks after the rinse.")]
    turns += [("agent", "Unrelated, but your other post: the garage door remote needed re-pairing by holding the "
                        "learn button on the opener for five seconds."),
              ("user", "That worked for the garage door, thanks.")]
    return conversation(f"c{i}", *turns)


def source_ids(home) -> dict[str, set[tuple[str, str]]]:
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        out = {}
        for table, sql in SOURCES.items():
            rows = con.execute(sql).fetchall()
            if table != "graph_nodes":
                rows = [(d, b) for d, b in rows]
            out[table] = set(rows)
        out["conversation_passages"] = passage_ids(con)
        return out


def index_ids(store: IndexStore) -> dict[str, list[tuple[str, str]]]:
    out = {}
    for table in TABLES:
        hits = store.vector_search(table, np.ones(384, dtype=np.float32) / np.sqrt(384), k=10_000)
        out[table] = sorted((h["id"], h["batch_key"]) for h in hits)
    return out


def assert_index_matches_warehouse(home):
    store = IndexStore.open_for_read(str(home.lancedb))
    indexed, expected = index_ids(store), source_ids(home)
    for table in TABLES:
        assert len(indexed[table]) == len(set(indexed[table])), f"duplicate ids in {table}"
        assert set(indexed[table]) == expected[table], table
    return store


def test_index_follows_batches_versions_and_interrupted_runs(home, instance, defs):
    write_jsonl(home.inbox / "week1.jsonl", [
        chat(1, "my Vortex X2 printer jams on every page", "clean the paper roller"),
        chat(2, "the Lumo app crashes with error E-4410 at login", "reinstall the app"),
        chat(3, "my Kestrel router drops wifi every evening", "move to channel 6"),
        long_thread(5),
    ])
    first = land_and_process(defs, instance, raise_on_error=True)
    assert first.indexed == first.batches
    store = assert_index_matches_warehouse(home)

    # A thread far longer than the model reads is several passages, and what it says last is found.
    passages = [i for i, _ in index_ids(store)["conversation_passages"] if i.startswith("c5#")]
    assert len(passages) > 2
    with Sarag(home) as engine:
        late = "the garage door remote needed re-pairing by holding the learn button"
        assert engine.search(late, 3, settings=SearchSettings.only("passages"))[0].dialogue_id == "c5"
        assert engine.search(late, 3)[0].dialogue_id == "c5"

    # The tables answer vector, full-text and hybrid queries.
    query = "printer paper jam"
    vector = default_embedder().encode_one(query)
    assert store.vector_search("issue_documents", vector, k=1)[0]["dialogue_id"] == "c1"
    assert store.text_search("table_rows", "E-4410", k=3)[0]["dialogue_id"] == "c2"
    assert store.hybrid_search("solution_documents", "channel 6 wifi", default_embedder().encode_one(
        "channel 6 wifi"), k=1)[0]["dialogue_id"] == "c3"

    # A second batch writes only its rows; a changed version of c2 replaces c2's rows everywhere.
    week1_rows = {t: [r for r in index_ids(store)[t] if not r[0].startswith("c2")] for t in TABLES}
    write_jsonl(home.inbox / "week2.jsonl", [
        chat(4, "the Orbit speaker will not pair over bluetooth", "reset the pairing list"),
        chat(2, "the Lumo app crashes with error E-4410 at login since version 3.2", "clear the app cache"),
    ])
    second = land_and_process(defs, instance, raise_on_error=True)
    (batch2,) = second.batches
    store = assert_index_matches_warehouse(home)
    after = index_ids(store)
    for table in TABLES:
        kept_from_week1 = [r for r in after[table] if r[1] != batch2]
        assert kept_from_week1 == week1_rows[table], table
        assert any(r[0].startswith("c2") and r[1] == batch2 for r in after[table]), table

    # An interrupted write (only part of a batch reached one table) heals when the batch is indexed again.
    writer = IndexStore(str(home.lancedb))
    partial = writer.vector_search("graph_nodes", vector, k=100, where=f"batch_key = '{batch2}'")[:1]
    writer.replace_batch("graph_nodes", batch2, [
        {**{k: v for k, v in partial[0].items() if k in ("id", "dialogue_id", "content_hash", "text")},
         "content_hash": "interrupted", "vector": vector, "node_id": "n9", "turn_start": 0, "turn_end": 0},
    ])
    defs.resolve_job_def("index_batch_job").execute_in_process(partition_key=batch2, instance=instance)
    assert_index_matches_warehouse(home)

    # A batch missing from a text index (indexed before it existed, or cut off) is indexed again on the
    # next run, nothing else redone; readers meanwhile keep the published state, which still holds it.
    import lancedb

    land_and_process(defs, instance, raise_on_error=True)
    published = publication.current(home)
    db = lancedb.connect(str(home.lancedb))
    db.open_table("conversation_texts").delete("dialogue_id = 'c1'")
    with Sarag(home) as engine:
        assert engine.publication.id == published.id
        text_hits = engine.search("printer paper jam", 3, settings=SearchSettings.only("conversation_text"))
        assert text_hits[0].dialogue_id == "c1"
    for table in ("conversation_passages", "conversation_texts"):
        db.drop_table(table)
    upgraded = land_and_process(defs, instance, raise_on_error=True)
    assert sorted(upgraded.indexed) == sorted(instance.get_dynamic_partitions("conversation_batches"))
    assert upgraded.published and upgraded.published != published.id
    assert_index_matches_warehouse(home)
    assert not land_and_process(defs, instance, raise_on_error=True).indexed
    with Sarag(home) as engine:
        assert engine.publication.id == upgraded.published
        assert engine.search("printer paper jam", 3)[0].dialogue_id == "c1"
