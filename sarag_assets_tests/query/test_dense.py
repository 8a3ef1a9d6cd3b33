"""Exact dense search over vectors held in memory, against brute force and against LanceDB on real tables."""

from __future__ import annotations

import threading

import numpy as np
import polars as pl
import pytest

from sarag_assets.core.indices.store import (
    GRAPH_NODES,
    ISSUE_DOCUMENTS,
    SOLUTION_DOCUMENTS,
    TABLE_ROWS,
    IndexStore,
)
from sarag_assets.query import dense, kernels
from sarag_assets.query.dense import DenseIndex, DenseIndexes, Int8Sketch

DIM = 48
N = 1500


def frame(ids: list[str], dialogue_ids: list[str], vectors: np.ndarray) -> pl.DataFrame:
    return pl.DataFrame({
        "id": ids, "dialogue_id": dialogue_ids, "content_hash": [f"h{i}" for i in range(len(ids))],
        "text": [f"row {i}" for i in ids],
        "vector": pl.Series(vectors.tolist(), dtype=pl.Array(pl.Float32, DIM)),
    })


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A LanceDB table of N rows written in three batches (so three fragments, rows not in id order):
    clustered vectors, some not of unit norm, and a group of exact duplicates (ties)."""
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(12, DIM))
    vectors = centers[rng.integers(0, 12, N)] + 0.4 * rng.normal(size=(N, DIM))
    vectors[:: 7] *= 3.0  # cosine ignores the norm
    vectors[100:110] = vectors[100]  # ten rows tied with each other
    vectors = vectors.astype(np.float32)
    ids = [f"d{int(i):05d}" for i in rng.permutation(N)]  # storage order is not id order
    store = IndexStore(str(tmp_path_factory.mktemp("dense") / "lancedb"), dimension=DIM)
    for b, part in enumerate(np.array_split(np.arange(N), 3)):
        store.replace_batch(ISSUE_DOCUMENTS, f"b{b}", frame([ids[i] for i in part], [ids[i] for i in part], vectors[part]))
    return store, ids, vectors


def brute_force(ids: list[str], vectors: np.ndarray, q: np.ndarray, k: int) -> list[tuple[str, float]]:
    x = vectors.astype(np.float64)
    norms = np.linalg.norm(x, axis=1) * np.linalg.norm(q.astype(np.float64))
    cos = np.divide(x @ q.astype(np.float64), norms, out=np.zeros(len(x)), where=norms > 0)  # a zero row: 0
    order = sorted(range(len(ids)), key=lambda i: (-round(cos[i], 6), ids[i]))[:k]
    return [(ids[i], float(cos[i])) for i in order]


def queries(vectors: np.ndarray, n: int = 25) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    picks = [vectors[i] + 0.2 * rng.normal(size=DIM) for i in rng.integers(0, len(vectors), n)]
    return [np.asarray(q, dtype=np.float32) for q in picks] + [vectors[100].copy()]  # the last hits the ties


def test_exact_search_equals_brute_force(table):
    store, ids, vectors = table
    index = DenseIndex.load(store, ISSUE_DOCUMENTS)
    assert index.dialogue_ids == sorted(ids) and index.vectors.shape == (N, DIM)
    for q in queries(vectors):
        for k in (1, 10, 50):
            got = index.search(q, k)
            want = brute_force(ids, vectors, q, k)
            assert [d for d, _ in got] == [d for d, _ in want]
            np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-6)
        everything = index.search(q, N + 5)  # k beyond the table: every row once, best first
        assert sorted(d for d, _ in everything) == sorted(ids)
        assert all(a[1] >= b[1] for a, b in zip(everything, everything[1:]))


def test_rows_tied_at_the_cut_are_chosen_by_id(table):
    store, ids, vectors = table
    index = DenseIndex.load(store, ISSUE_DOCUMENTS)
    tied = sorted(ids[100:110])
    hits = index.search(vectors[100], 4)  # ten rows share the best score; the four smallest ids win
    assert [d for d, _ in hits] == tied[:4]
    assert len({round(s, 6) for _, s in hits}) == 1


def test_same_ids_and_scores_as_lancedb_exact_search(table):
    store, ids, vectors = table  # below ann_min_rows: LanceDB itself searches exactly (a flat scan)
    index = DenseIndex.load(store, ISSUE_DOCUMENTS)
    assert queries(vectors)[:-1]
    for q in queries(vectors)[:-1]:  # (LanceDB picks among rows tied at the cut by storage order)
        ours = index.search(q, 50)
        theirs = store.vector_search(ISSUE_DOCUMENTS, q, 50)
        assert [d for d, _ in ours] == [h["dialogue_id"] for h in theirs]
        np.testing.assert_allclose([s for _, s in ours], [h["score"] for h in theirs], atol=1e-6)


def test_deterministic_across_loads_and_calls(table):
    store, _, vectors = table
    a, b = DenseIndex.load(store, ISSUE_DOCUMENTS), DenseIndex.load(store, ISSUE_DOCUMENTS)
    assert queries(vectors)
    for q in queries(vectors):
        assert a.search(q, 30) == a.search(q, 30) == b.search(q, 30)


@pytest.fixture(scope="module")
def sentence_like():
    """Vectors shaped like sentence embeddings (384 dimensions, clustered, unit norm) with what makes a
    bound tight or loose: exact copies, near-copies one rounding step apart, non-unit norms, a zero row."""
    rng = np.random.default_rng(11)
    n, d = 6000, 384
    centers = rng.normal(size=(40, d))
    x = centers[rng.integers(0, 40, n)] + 0.8 * rng.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x[200:220] = x[200]  # exact copies
    x[300:320] = x[300] + 1e-7 * rng.normal(size=(20, d))  # copies within float32 rounding
    x[::13] *= 2.5
    x[5] = 0.0
    return [f"c{i:05d}" for i in range(n)], x.astype(np.float32)


def sentence_queries(x: np.ndarray, n: int = 40) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    picks = [x[i] + 0.05 * rng.normal(size=x.shape[1]) for i in rng.integers(0, len(x), n)]
    return [np.asarray(q, dtype=np.float32) for q in picks] + [x[200].copy(), x[300].copy(), -x[7]]


@pytest.mark.skipif(not kernels.available(), reason=f"numba: {kernels.unavailable}")
def test_the_sketch_bounds_every_cosine_and_keeps_every_row_of_the_top_k(sentence_like):
    _, x = sentence_like
    norms = np.linalg.norm(x, axis=1)
    inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    sketch = Int8Sketch(x, inverse)
    assert sketch.codes.dtype == np.int8 and sketch.nbytes < x.nbytes / 3
    narrowed = 0
    for q in sentence_queries(x):
        unit = q / np.linalg.norm(q)
        exact = (x.astype(np.float64) @ unit.astype(np.float64)) * inverse
        approximate = np.empty(len(x), dtype=np.float32)
        kernels.int8_scores(sketch.codes, unit.astype(np.float32), approximate)
        approximate *= sketch.row_scale
        searched = np.empty(len(x), dtype=np.float32)  # the float32 scores the search ranks by
        kernels.row_scores(x, np.arange(len(x)), unit.astype(np.float32), searched)
        for scores in (exact, searched * inverse):
            assert np.all(np.abs(approximate - scores) <= sketch.bound)
        for k in (1, 10, 50):
            kth = np.sort(exact)[-k]
            must = np.flatnonzero(exact >= kth - 1e-6)  # the top k and everything tied with its last
            found = sketch.candidates(unit, k)
            assert set(must) <= set(found) and np.all(np.diff(found) > 0)
            narrowed += len(found) < len(x) // 20
    assert narrowed > 100  # the sketch leaves most searches a small fraction of the rows to score


@pytest.mark.skipif(not kernels.available(), reason=f"numba: {kernels.unavailable}")
def test_a_sketched_search_gives_the_full_scans_ids_and_scores(sentence_like):
    ids, x = sentence_like
    sketched, full = DenseIndex(ids, x), DenseIndex(ids, x, sketch=False)
    first = sentence_queries(x)[0]
    assert sketched.search(first, 50) == full.search(first, 50)
    assert sketched.nbytes == full.nbytes  # one search scans every row: no sketch built for it
    for q in sentence_queries(x):
        for k in (1, 7, 50, 400):
            assert sketched.search(q, k) == full.search(q, k)  # equal floats: each row scored by the same loop
        got, want = sketched.search(q, 50), brute_force(ids, x, q, 50)  # ids may differ only where scores tie to 1e-6
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-6)
    assert sketched.nbytes > full.nbytes  # built on the second search
    tied = sketched.search(x[200], 5)
    assert [d for d, _ in tied] == ids[200:205]  # twenty exact copies: the smallest ids win


def test_extreme_magnitudes_are_searched_by_cosine_and_bad_values_refused(sentence_like):
    ids, x = sentence_like
    x = x.copy()
    x[10] *= 1e-22  # float32 squares of these vanish
    x[11] *= 3e20  # and of these overflow
    x[12, 0] = np.nan
    x[13, 5] = np.inf
    before = x.copy()
    sketched, full = DenseIndex(ids, x), DenseIndex(ids, x, sketch=False)
    assert sketched.rescaled_rows == 4 and np.array_equal(x, before, equal_nan=True)  # the caller's array kept
    unit = before[[10, 11]] / np.linalg.norm(before[[10, 11]].astype(np.float64), axis=1, keepdims=True)
    np.testing.assert_allclose(sketched.vectors[[10, 11]], unit, atol=1e-6)
    assert not sketched.vectors[[12, 13]].any()  # non-finite rows score 0, like empty ones
    for q in [x[10] * 1e-3, x[11], 1e-20 * sentence_queries(x)[1], 1e25 * sentence_queries(x)[2]]:
        for _ in range(2):  # the first search scans, the second uses the sketch
            got = sketched.search(q, 20)
            assert got == full.search(q, 20)
            assert all(np.isfinite(s) and -1.0 - 1e-6 <= s <= 1.0 + 1e-6 for _, s in got)
    assert sketched.search(x[10], 1)[0][0] == ids[10]  # its own direction, whatever its scale
    with pytest.raises(ValueError, match="non-finite"):
        sketched.search(np.full(x.shape[1], np.nan, dtype=np.float32), 5)


def test_without_numba_the_search_is_the_same(sentence_like, monkeypatch):
    ids, x = sentence_like
    monkeypatch.setattr(kernels, "available", lambda: False)
    plain = DenseIndex(ids, x)
    assert plain.sketch is None and not plain.compiled
    for q in sentence_queries(x)[:10]:
        got, want = plain.search(q, 20), brute_force(ids, x, q, 20)
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-6)


def test_kernels_that_cannot_compile_leave_the_search_to_numpy(sentence_like, monkeypatch):
    def broken(*args):
        raise RuntimeError("no LLVM target for this CPU")

    monkeypatch.setattr(kernels, "_KERNELS", None)
    monkeypatch.setattr(kernels, "unavailable", None)
    monkeypatch.setattr(kernels, "_compile", lambda: (broken, broken))
    assert not kernels.available() and "RuntimeError: no LLVM target" in kernels.unavailable
    ids, x = sentence_like
    index = DenseIndex(ids, x)
    assert not index.compiled and index.sketch is None
    q = sentence_queries(x)[0]
    np.testing.assert_allclose([s for _, s in index.search(q, 5)], [s for _, s in brute_force(ids, x, q, 5)], atol=1e-6)


def test_rows_map_to_their_dialogue_ids(tmp_path):
    """Graph nodes: several rows per dialogue (`<dialogue>#<node>`); hits name the dialogue, ordered by row id."""
    store = IndexStore(str(tmp_path / "lancedb"), dimension=DIM)
    v = np.zeros((4, DIM), dtype=np.float32)
    v[:, 0] = 1.0
    v[1, 1] = v[3, 1] = 0.5
    store.replace_batch(GRAPH_NODES, "b", frame(["c2#n1", "c1#n2", "c1#n1", "c10#n1"], ["c2", "c1", "c1", "c10"], v))
    index = DenseIndex.load(store, GRAPH_NODES)
    assert index.dialogue_ids == ["c1", "c1", "c10", "c2"]  # rows in id order: c1#n1, c1#n2, c10#n1, c2#n1
    q = np.zeros(DIM, dtype=np.float32)
    q[0] = 1.0
    assert [d for d, _ in index.search(q, 4)] == ["c1", "c2", "c1", "c10"]  # c1#n1 and c2#n1 tie, then the rest


def test_empty_and_bad_queries():
    index = DenseIndex([], np.zeros((0, DIM), dtype=np.float32))
    assert index.search(np.ones(DIM), 5) == []
    index = DenseIndex(["a", "b"], np.eye(2, DIM, dtype=np.float32))
    assert index.search(np.ones(DIM), 0) == []
    assert [s for _, s in index.search(np.zeros(DIM), 2)] == [0.0, 0.0]
    with pytest.raises(ValueError, match="dimension"):
        index.search(np.ones(DIM + 1), 2)


def test_tables_above_the_limit_go_to_lancedb_and_the_rest_load_once(table, monkeypatch):
    store, _, vectors = table
    q = queries(vectors)[0]
    above = DenseIndexes(store, max_rows=N - 1)
    counted = []
    monkeypatch.setattr(store, "counts", lambda t, _real=store.counts: counted.append(t) or _real(t))
    assert above.search(ISSUE_DOCUMENTS, q, 20) == [(h["dialogue_id"], h["score"])
                                                     for h in store.vector_search(ISSUE_DOCUMENTS, q, 20)]
    assert above.search(ISSUE_DOCUMENTS, q, 20) == above.search(ISSUE_DOCUMENTS, q, 20)
    assert counted == [ISSUE_DOCUMENTS]  # rows counted once, not on every search
    assert above.nbytes == 0  # nothing held in memory
    assert above.search(SOLUTION_DOCUMENTS, q, 5) == []  # a missing table reads as empty

    loads = []
    real = DenseIndex.load.__func__
    monkeypatch.setattr(dense.DenseIndex, "load", classmethod(lambda cls, s, t: loads.append(t) or real(cls, s, t)))
    indexes = DenseIndexes(store)
    results = []
    threads = [threading.Thread(target=lambda: results.append(indexes.search(ISSUE_DOCUMENTS, q, 20)))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loads == [ISSUE_DOCUMENTS] and len(results) == 6 and all(r == results[0] for r in results)
    assert [d for d, _ in results[0]] == [d for d, _ in above.search(ISSUE_DOCUMENTS, q, 20)]
    assert indexes.nbytes >= N * DIM * 4


def test_engine_dense_channels_match_lancedb_on_the_built_home(engine, generated_queries):
    """The home the real pipeline built (240 conversations: LanceDB scans exactly, no ANN index)."""
    for query in generated_queries[:10]:
        vector = engine.embed(engine.understand(query["turns"]))
        for table in (TABLE_ROWS, ISSUE_DOCUMENTS, SOLUTION_DOCUMENTS):
            ours = engine.channels.search_dense(table, vector, 50)
            theirs = engine.store.vector_search(table, vector, 50)
            assert [d for d, _ in ours] == [h["dialogue_id"] for h in theirs]
            np.testing.assert_allclose([s for _, s in ours], [h["score"] for h in theirs], atol=1e-6)
    route = engine.channels.cluster_index()  # shares table_rows' matrix with the dense channel
    assert route.semantic is engine.dense.get(TABLE_ROWS).vectors

