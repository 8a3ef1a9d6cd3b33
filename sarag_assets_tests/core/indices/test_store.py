"""The LanceDB index layer against a real LanceDB in tmp_path: batch replacement, supersession, atomicity,
concurrent writers, index creation, and the three searches. Vectors are random unit vectors (fixed seed)."""

from __future__ import annotations

import multiprocessing
import threading
import zlib
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from sarag_assets.core.indices.batch_rows import conform, normalize
from sarag_assets.core.indices.index_upkeep import ann_parameters
from sarag_assets.core.indices.store import (
    GRAPH_NODES,
    TABLE_ROWS,
    IndexStore,
    sql_string,
    vector_health,
)

DIM = 32


def unit_vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def rows(dialogues: dict[str, str], batch_key: str | None = None, seed: int = 0) -> pl.DataFrame:
    """One row per dialogue, id = dialogue id; the vector depends on the text, so a changed text moves it."""
    ids = sorted(dialogues)
    digest = {i: zlib.crc32(f"{seed}:{dialogues[i]}".encode()) for i in ids}  # stable across processes
    vectors = [unit_vectors(1, seed=digest[i])[0] for i in ids]
    data = {
        "id": ids,
        "dialogue_id": ids,
        "content_hash": [f"h-{digest[i]:08x}" for i in ids],
        "text": [dialogues[i] for i in ids],
        "vector": pl.Series([v.tolist() for v in vectors], dtype=pl.Array(pl.Float32, DIM)),
    }
    if batch_key is not None:
        data["batch_key"] = [batch_key] * len(ids)
    return pl.DataFrame(data)


def snapshot(store: IndexStore, table: str) -> dict[str, tuple]:
    handle = store._open(table)
    data = handle.to_arrow().sort_by("id").to_pylist()
    return {r["id"]: (r["batch_key"], r["text"], r["content_hash"]) for r in data}


@pytest.fixture
def store(tmp_path) -> IndexStore:
    return IndexStore(str(tmp_path / "lancedb"), dimension=DIM, ann_min_rows=300)


A = {"a1": "printer shows error 0x80070005 after update", "a2": "wifi drops every hour", "a3": "battery drains fast"}
B = {"b1": "cannot install driver on ubuntu", "b2": "screen flickers on resume"}


def test_primary_key_is_declared(store):
    store.replace_batch(TABLE_ROWS, "A", rows(A))
    field = store._open(TABLE_ROWS).schema.field("id")
    assert not field.nullable
    assert any(key.startswith(b"lance-schema:unenforced-primary-key") for key in field.metadata)


def test_second_batch_adds_only_its_rows(store):
    first = store.replace_batch(TABLE_ROWS, "A", rows(A))
    assert (first.inserted, first.updated, first.deleted) == (3, 0, 0)
    before = snapshot(store, TABLE_ROWS)
    second = store.replace_batch(TABLE_ROWS, "B", rows(B))
    assert (second.inserted, second.updated, second.deleted) == (2, 0, 0)
    after = snapshot(store, TABLE_ROWS)
    assert {k: v for k, v in after.items() if v[0] == "A"} == before
    assert store.ids(TABLE_ROWS, "B") == ["b1", "b2"]
    assert store.counts(TABLE_ROWS) == 5 and store.counts(TABLE_ROWS, "A") == 3


def test_rewriting_a_batch_leaves_exactly_the_new_rows(store):
    store.replace_batch(TABLE_ROWS, "A", rows(A))
    store.replace_batch(TABLE_ROWS, "B", rows(B))
    again = store.replace_batch(TABLE_ROWS, "A", rows(A))  # idempotent, and nothing rewritten
    assert (again.inserted, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)
    forced = store.replace_batch(TABLE_ROWS, "A", rows(A), force=True)
    assert (forced.inserted, forced.updated, forced.deleted) == (0, 3, 0)
    new_a = {"a1": A["a1"], "a2": "wifi drops every hour since firmware 2.1"}  # a3 removed, a2 changed
    result = store.replace_batch(TABLE_ROWS, "A", rows(new_a))
    assert (result.inserted, result.updated, result.deleted, result.unchanged) == (0, 1, 1, 1)
    stored = snapshot(store, TABLE_ROWS)
    assert store.ids(TABLE_ROWS, "A") == ["a1", "a2"]
    assert stored["a2"][1] == new_a["a2"]
    assert store.ids(TABLE_ROWS, "B") == ["b1", "b2"]
    assert store.counts(TABLE_ROWS) == 4


def test_superseded_dialogue_is_removed_from_older_batches(store):
    def nodes(dialogue: str, batch: str, n: int, version: str) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "id": [f"{dialogue}#n{i}" for i in range(n)],
                "dialogue_id": [dialogue] * n,
                "batch_key": [batch] * n,
                "content_hash": [f"{version}{i}" for i in range(n)],
                "text": [f"{version} node {i}" for i in range(n)],
                "vector": unit_vectors(n, seed=n).tolist(),
                "node_id": [f"n{i}" for i in range(n)],
                "turn_start": list(range(n)),
                "turn_end": [i + 1 for i in range(n)],
            }
        )

    store.replace_batch(GRAPH_NODES, "A", pl.concat([nodes("d1", "A", 3, "old"), nodes("d2", "A", 2, "old")]))
    result = store.replace_batch(GRAPH_NODES, "B", nodes("d1", "B", 1, "new"), superseded_dialogue_ids=["d1"])
    assert (result.inserted, result.updated, result.deleted) == (0, 1, 2)
    assert store.ids(GRAPH_NODES, "A") == ["d2#n0", "d2#n1"]
    assert store.ids(GRAPH_NODES, "B") == ["d1#n0"]
    node = store._open(GRAPH_NODES).search().where("id = 'd1#n0'").limit(None).to_list()[0]
    assert (node["text"], node["node_id"], node["turn_end"]) == ("new node 0", "n0", 1)

    # table rows: the id is the dialogue id, so the new version simply takes the row over
    store.replace_batch(TABLE_ROWS, "A", rows(A))
    store.replace_batch(TABLE_ROWS, "B", rows({"a2": "wifi fixed by router reset"}), superseded_dialogue_ids=["a2"])
    assert store.ids(TABLE_ROWS, "A") == ["a1", "a3"] and store.ids(TABLE_ROWS, "B") == ["a2"]
    assert store.counts(TABLE_ROWS) == 3


def test_a_write_that_dies_halfway_changes_nothing_and_a_replace_repairs_everything(store):
    store.replace_batch(TABLE_ROWS, "A", rows(A))
    before = snapshot(store, TABLE_ROWS)
    handle = store._open(TABLE_ROWS)
    partial = conform(normalize(rows({"a1": "changed", "a9": "new"}), "A", store.dimension), handle.schema, TABLE_ROWS)

    def dying_stream():
        yield partial.to_batches()[0]
        raise RuntimeError("process killed")

    with pytest.raises(Exception, match="process killed"):
        (
            handle.merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete("batch_key = 'A'")
            .execute(pa.RecordBatchReader.from_batches(handle.schema, dying_stream()))
        )
    assert snapshot(store, TABLE_ROWS) == before  # one transaction: nothing half-written

    # a retried run that wrote a different row set, then the full replace: no duplicates, no orphans
    store.replace_batch(TABLE_ROWS, "A", rows({"a1": "changed", "a9": "new", "a8": "other"}))
    store.replace_batch(TABLE_ROWS, "A", rows(A))
    assert snapshot(store, TABLE_ROWS) == before
    assert store.counts(TABLE_ROWS) == 3


def test_an_empty_batch_removes_the_batch(store):
    store.replace_batch(TABLE_ROWS, "A", rows(A))
    store.replace_batch(TABLE_ROWS, "B", rows(B))
    result = store.replace_batch(TABLE_ROWS, "A", rows({}))
    assert result.deleted == 3
    assert store.ids(TABLE_ROWS) == ["b1", "b2"]


def _concurrent_rows(n: int = 40) -> pl.DataFrame:
    return rows({f"c{i:03d}": f"conversation {i} about printers" for i in range(n)})


def _write_in_child(uri: str, barrier, n: int) -> None:
    store = IndexStore(uri, dimension=DIM)
    barrier.wait()
    store.replace_batch(TABLE_ROWS, "C", _concurrent_rows(n))


def test_concurrent_writers_of_the_same_batch_never_duplicate(tmp_path):
    uri = str(tmp_path / "lancedb")
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def write():
        try:
            store = IndexStore(uri, dimension=DIM)  # one store per writer, as separate runs would have
            barrier.wait()
            store.replace_batch(TABLE_ROWS, "C", _concurrent_rows())
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=write) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ids = IndexStore.open_for_read(uri)._open(TABLE_ROWS).to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids)) == 40


def test_concurrent_processes_of_the_same_batch_never_duplicate(tmp_path):
    uri = str(tmp_path / "lancedb")
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    processes = [context.Process(target=_write_in_child, args=(uri, barrier, 30)) for _ in range(2)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(60)
    assert [p.exitcode for p in processes] == [0, 0]
    ids = IndexStore.open_for_read(uri)._open(TABLE_ROWS).to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids)) == 30


def test_concurrent_index_builders_all_succeed(tmp_path):
    uri = str(tmp_path / "lancedb")
    IndexStore(uri, dimension=DIM).replace_batch(TABLE_ROWS, "A", rows({f"d{i}": f"text {i}" for i in range(300)}))
    barrier = threading.Barrier(3)
    reports, errors = [], []

    def build():
        store = IndexStore(uri, dimension=DIM, ann_min_rows=300)
        barrier.wait()
        try:
            reports.append(store.ensure_indices(TABLE_ROWS))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors  # the losers of the CreateIndex race retried and found the index
    status = IndexStore.open_for_read(uri).index_status(TABLE_ROWS)
    assert sorted(s["type"] for s in status.values()) == ["FTS", "IvfPq"]


def test_full_text_finds_a_word_in_a_new_row(store):
    store.replace_batch(TABLE_ROWS, "A", rows(A))
    assert store.ensure_indices(TABLE_ROWS)["fts"] == "created"
    store.replace_batch(TABLE_ROWS, "B", rows({"b7": "the zeppelin updater crashed with kernel panic"}))
    assert [h["id"] for h in store.text_search(TABLE_ROWS, "zeppelin", 5)] == ["b7"]  # unindexed rows are scanned
    done = store.ensure_indices(TABLE_ROWS)
    assert done["fts"] == "present" and done["optimized"]
    assert all(s["unindexed_rows"] == 0 for s in store.index_status(TABLE_ROWS).values())
    assert [h["id"] for h in store.text_search(TABLE_ROWS, "Zeppelin", 5)] == ["b7"]
    assert [h["id"] for h in store.text_search(TABLE_ROWS, "0x80070005", 5)] == ["a1"]


def test_the_three_searches_find_the_expected_row(store):
    corpus = {f"d{i:02d}": f"routine note number {i}" for i in range(30)}
    corpus["d07"] = "bluetooth headset pairing fails on laptop"
    data = rows(corpus)
    store.replace_batch(TABLE_ROWS, "A", data)
    store.ensure_indices(TABLE_ROWS)
    target = np.asarray(data.filter(pl.col("id") == "d07")["vector"][0], dtype=np.float32)
    nearby = target + 0.05 * unit_vectors(1, seed=99)[0]

    vector_hits = store.vector_search(TABLE_ROWS, nearby, 3)
    assert vector_hits[0]["id"] == "d07" and "vector" not in vector_hits[0]
    assert vector_hits[0]["score"] > 0.9
    assert [h["id"] for h in store.text_search(TABLE_ROWS, "bluetooth pairing", 3)] == ["d07"]
    hybrid = store.hybrid_search(TABLE_ROWS, "headset pairing", nearby, 5)
    assert hybrid[0]["id"] == "d07" and hybrid[0]["vector_rank"] == 1 and hybrid[0]["text_rank"] == 1
    assert hybrid == store.hybrid_search(TABLE_ROWS, "headset pairing", nearby, 5)  # deterministic
    # a filter applies before ranking
    assert store.vector_search(TABLE_ROWS, nearby, 3, where="id != 'd07'")[0]["id"] != "d07"
    assert store.text_search(TABLE_ROWS, "bluetooth", 3, where=f"batch_key = {sql_string('B')}") == []
    # ties in the text ranking are ordered by id
    tied = store.text_search(TABLE_ROWS, "routine", 5)
    assert [h["id"] for h in tied] == sorted(h["id"] for h in tied)
    # only the columns asked for (and the id, which orders ties), same ranking
    narrow = store.text_search(TABLE_ROWS, "routine", 5, columns=["dialogue_id"])
    assert set(narrow[0]) == {"id", "dialogue_id", "_score", "score"}
    assert [(h["id"], h["score"]) for h in narrow] == [(h["id"], h["score"]) for h in tied]


def test_vector_index_only_above_the_threshold(store):
    many = {f"r{i:04d}": f"row {i}" for i in range(299)}
    store.replace_batch(TABLE_ROWS, "A", rows(many))
    first = store.ensure_indices(TABLE_ROWS)
    assert first["ann"].startswith("skipped") and first["fts"] == "created"
    store.replace_batch(TABLE_ROWS, "B", rows({"r9999": "row 9999"}))
    second = store.ensure_indices(TABLE_ROWS)
    assert second["ann"].startswith("created IVF_PQ")
    kinds = {s["type"] for s in store.index_status(TABLE_ROWS).values()}
    assert "IvfPq" in kinds and "FTS" in kinds
    target = np.asarray(rows(many).filter(pl.col("id") == "r0123")["vector"][0], dtype=np.float32)
    assert store.vector_search(TABLE_ROWS, target, 1)[0]["id"] == "r0123"  # refine_factor re-ranks exactly
    assert store.ensure_indices(TABLE_ROWS)["ann"] == "present"


def test_ann_parameters():
    assert ann_parameters(300, 384) == {"num_partitions": 1, "num_sub_vectors": 24}
    assert ann_parameters(10_000, 384) == {"num_partitions": 39, "num_sub_vectors": 24}
    assert ann_parameters(1_000_000, 384)["num_partitions"] == 1000
    assert ann_parameters(5_000, 100)["num_sub_vectors"] == 5  # must divide the dimension


FOREIGN = {"z1": "打印机 无法 连接 网络", "z2": "الطابعة لا تعمل"}
NASTY = [
    '"unbalanced quote',
    "error: (code) AND NOT [x] OR {y} ~2 ^3 *",
    "'; DROP TABLE x; --",
    "x" * 10_000,
    "word " * 2_000,
    "",
    "   ",
    "打印机无法连接网络",
    "الطابعة لا تعمل",
    "nul\x00byte and \ud800 lone surrogate",
    "\\",
]


@pytest.mark.parametrize("query", NASTY, ids=range(len(NASTY)))
def test_queries_never_raise(store, query):
    store.replace_batch(TABLE_ROWS, "A", rows({**A, **FOREIGN}))
    for indexed in (False, True):
        if indexed:
            store.ensure_indices(TABLE_ROWS)
        hits = store.text_search(TABLE_ROWS, query, 5)
        store.hybrid_search(TABLE_ROWS, query, unit_vectors(1, 3)[0], 5)
        if not query.strip():
            assert hits == []


def test_non_english_text_is_found(store):
    store.replace_batch(TABLE_ROWS, "A", rows({**A, **FOREIGN}))
    store.ensure_indices(TABLE_ROWS)
    assert [h["id"] for h in store.text_search(TABLE_ROWS, "打印机", 3)] == ["z1"]
    assert [h["id"] for h in store.text_search(TABLE_ROWS, "الطابعة", 3)] == ["z2"]


def test_reader_never_writes_and_sees_new_rows(tmp_path):
    uri = str(tmp_path / "lancedb")
    missing = IndexStore.open_for_read(uri, dimension=DIM)
    assert missing.counts(TABLE_ROWS) == 0 and missing.text_search(TABLE_ROWS, "printer", 3) == []
    assert missing.vector_search(TABLE_ROWS, unit_vectors(1, 0)[0], 3) == [] and missing.tables() == []
    assert not Path(uri).exists()
    with pytest.raises(PermissionError):
        missing.replace_batch(TABLE_ROWS, "A", rows(A))
    with pytest.raises(PermissionError):
        missing.ensure_indices(TABLE_ROWS)

    writer = IndexStore(uri, dimension=DIM)
    writer.replace_batch(TABLE_ROWS, "A", rows(A))
    reader = IndexStore.open_for_read(uri, dimension=DIM)
    assert reader.counts(TABLE_ROWS) == 3
    writer.replace_batch(TABLE_ROWS, "B", rows(B))
    assert reader.counts(TABLE_ROWS) == 5  # read_consistency_interval 0: the open handle sees the new version
    assert reader.index_status(TABLE_ROWS) == {}  # and it built nothing


def test_rows_are_validated(store):
    with pytest.raises(ValueError, match="not unique"):
        store.replace_batch(TABLE_ROWS, "A", pl.concat([rows(A), rows(A)]))
    with pytest.raises(ValueError, match="batch_key"):
        store.replace_batch(TABLE_ROWS, "A", rows(A, batch_key="B"))
    wrong = rows(A).with_columns(pl.Series("vector", unit_vectors(3, 0)[:, : DIM - 1].tolist()))
    with pytest.raises(ValueError, match="dimension"):
        store.replace_batch(TABLE_ROWS, "A", wrong)
    with pytest.raises(ValueError, match="lack"):
        store.replace_batch(TABLE_ROWS, "A", rows(A).drop("content_hash"))
    assert store.tables() == []  # nothing was created by a refused write


def test_extras_pass_through_and_must_stay_stable(store):
    store.replace_batch(TABLE_ROWS, "A", rows(A).with_columns(pl.lit("billing").alias("topic")))
    store.replace_batch(TABLE_ROWS, "B", rows(B))  # a stored extra the batch lacks becomes null
    hits = {h["id"]: h for h in store.vector_search(TABLE_ROWS, unit_vectors(1, 0)[0], 10)}
    assert hits["a1"]["topic"] == "billing" and hits["b1"]["topic"] is None
    with pytest.raises(ValueError, match="not in table"):
        store.replace_batch(TABLE_ROWS, "C", rows({"c1": "x"}).with_columns(pl.lit(1).alias("surprise")))


def test_optimize_compacts(store):
    for i in range(5):
        store.replace_batch(TABLE_ROWS, f"B{i}", rows({f"x{i}": f"note {i}"}))
    store.ensure_indices(TABLE_ROWS)
    report = store.optimize()
    assert report[TABLE_ROWS]["fragments_after"] < report[TABLE_ROWS]["fragments_before"]
    assert report[TABLE_ROWS]["rows"] == 5
    assert store.counts(TABLE_ROWS) == 5


def test_vectors_are_read_back_as_stored(store):
    store.replace_batch(TABLE_ROWS, "A", rows(A))
    store.replace_batch(TABLE_ROWS, "B", rows(B))
    written = rows(A).sort("id")
    ids, vectors = store.vectors(TABLE_ROWS, "A")
    assert ids == ["a1", "a2", "a3"] and vectors.shape == (3, DIM) and vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, np.asarray(written["vector"].to_list(), dtype=np.float32))
    assert store.vectors(TABLE_ROWS)[1].shape == (5, DIM)
    assert store.vectors(TABLE_ROWS, "missing")[1].shape == (0, DIM)
    assert store.vectors(GRAPH_NODES, "A")[1].shape == (0, DIM)  # no table yet


def test_vector_health_judges_what_is_stored(store):
    store.replace_batch(TABLE_ROWS, "A", rows(A))
    assert vector_health(store.vectors(TABLE_ROWS, "A")[1], DIM) == {
        "passed": True, "dimension": DIM, "rows": 3, "min_norm": pytest.approx(1, abs=1e-6),
        "max_norm": pytest.approx(1, abs=1e-6), "off_norm": 0}
    assert not vector_health(store.vectors(TABLE_ROWS, "A")[1], DIM + 1)["passed"]  # not the model's dimension
    # the store writes any finite vector it is given: a row encoded without normalization is caught on read
    scaled = rows({"b1": B["b1"]}).with_columns(
        pl.Series("vector", (unit_vectors(1, 5) * 2).tolist(), dtype=pl.Array(pl.Float32, DIM)))
    store.replace_batch(TABLE_ROWS, "B", pl.concat([rows({"b2": B["b2"]}), scaled]).sort("id"))
    health = vector_health(store.vectors(TABLE_ROWS, "B")[1], DIM)
    assert not health["passed"] and health["off_norm"] == 1 and health["max_norm"] == pytest.approx(2, abs=1e-5)
    assert vector_health(np.zeros((0, DIM)), DIM)["passed"]
    assert not vector_health(np.full((1, DIM), np.nan), DIM)["passed"]


def test_a_pinned_reader_refuses_a_table_or_version_that_is_gone(tmp_path):
    """A published state names its tables and versions; one missing is damage, never an empty table."""
    import shutil

    from sarag_assets.core.indices.store import MissingIndex

    uri = str(tmp_path / "lancedb")
    writer = IndexStore(uri, dimension=DIM)
    writer.replace_batch(TABLE_ROWS, "A", rows(A))
    version = writer._open(TABLE_ROWS).version
    pinned = IndexStore.open_for_read(uri, dimension=DIM, versions={TABLE_ROWS: version})
    assert pinned.counts(TABLE_ROWS) == 3
    assert pinned.counts(GRAPH_NODES) == 0  # a table the state does not name holds nothing, rightly
    with pytest.raises(MissingIndex, match="version 999"):
        IndexStore.open_for_read(uri, dimension=DIM, versions={TABLE_ROWS: 999}).counts(TABLE_ROWS)
    shutil.rmtree(Path(uri) / f"{TABLE_ROWS}.lance")
    with pytest.raises(MissingIndex, match="table 'table_rows'"):
        IndexStore.open_for_read(uri, dimension=DIM, versions={TABLE_ROWS: version}).counts(TABLE_ROWS)
    shutil.rmtree(uri)
    with pytest.raises(MissingIndex, match="folder is missing"):
        IndexStore.open_for_read(uri, dimension=DIM, versions={TABLE_ROWS: version}).counts(TABLE_ROWS)
    assert not Path(uri).exists()  # and the reader created nothing
