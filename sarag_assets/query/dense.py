"""Exact dense search over a LanceDB table's vectors held in memory. No Dagster.

The query side searches five tables with the same query vector (`conversation_passages`,
`conversation_texts`, `table_rows`, `issue_documents`, `solution_documents`). At these sizes a
matrix-vector product over all of a table's vectors, bound by memory bandwidth, is both exact and faster
than LanceDB's IVF_PQ index (docs/results.md, Latency). So each table's vectors are read once (on first
use) and searched in memory, in two steps: an int8 copy (`Int8Sketch`) is scanned for the rows that can be
among the k best, with a proven bound on its error, and only those are scored exactly, with the same ids
and scores as scoring every row (`kernels` says why the scores are equal to the bit). Without numba, every
row is scored by numpy. The sketch is built on a table's second search: a one-search process (the CLI)
scans every row instead.

`DenseIndex.search(vector, k)` means what `IndexStore.vector_search(table, vector, k)` means: the k rows
of highest cosine similarity, score = 1 - cosine distance, best first, ties broken by row id (here over
the whole table, so rows tied at the cut are chosen by id too). Scores agree with LanceDB's to float32
rounding (~1e-7).

Cost: rows x dimension x 5 bytes of memory (192 MB per 100,000 rows of 384 dimensions) and one read of
the table (~1 s per 100,000 rows here). A table holding more than `max_rows` rows (the environment's
`SARAG_EXACT_SEARCH_MAX_ROWS`, default 1,000,000: 1.9 GB) is searched through
LanceDB's ANN index instead, unless its vectors were loaded anyway (the cluster route needs
`table_rows`' in memory whatever its size).
"""

from __future__ import annotations

import functools
import threading
from typing import Sequence

import numpy as np

from sarag_assets.core.indices.store import IndexStore
from sarag_assets.query import kernels

DEFAULT_MAX_ROWS = 1_000_000


class DenseIndex:
    """One table's vectors in memory, rows in id order, each labelled with its dialogue id."""

    def __init__(self, dialogue_ids: Sequence[str], vectors: np.ndarray, *, sketch: bool = True):
        self.dialogue_ids = list(dialogue_ids)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.dialogue_ids):
            raise ValueError("vectors must be a matrix with one row per dialogue id")
        self.vectors, self.rescaled_rows = _sanitized(self.vectors)
        norms = np.linalg.norm(self.vectors, axis=1)
        self._inverse_norms = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        self.compiled = kernels.available()
        # built on the second search: one search (the CLI) costs less scanning every row than building it
        self._sketch_wanted = sketch and self.compiled
        self._sketch: Int8Sketch | None = None
        self._searches = 0
        self._sketch_lock = threading.Lock()

    @classmethod
    def load(cls, store: IndexStore, table: str) -> "DenseIndex":
        dialogue_ids, vectors = store.vectors(table, label="dialogue_id")
        return cls(dialogue_ids, vectors)

    def __len__(self) -> int:
        return len(self.dialogue_ids)

    @property
    def nbytes(self) -> int:
        return self.vectors.nbytes + self._inverse_norms.nbytes + (self._sketch.nbytes if self._sketch else 0)

    @property
    def sketch(self) -> "Int8Sketch | None":
        """The int8 sketch, built now if it is wanted and not yet built."""
        if self._sketch is None and self._sketch_wanted:
            with self._sketch_lock:
                if self._sketch is None:
                    self._sketch = Int8Sketch(self.vectors, self._inverse_norms)
        return self._sketch

    @functools.cached_property
    def row_of(self) -> dict[str, int]:
        """Each dialogue id's row (built once; two threads asking at once build it twice, harmlessly)."""
        return {d: i for i, d in enumerate(self.dialogue_ids)}

    def unit_row(self, row: int) -> np.ndarray:
        """One row's vector scaled to norm 1 (a zero row stays zero)."""
        return self.vectors[row] * self._inverse_norms[row]

    def cosines(self, unit_vector: np.ndarray) -> np.ndarray:
        """The cosine of every row (in `dialogue_ids` order) to a unit vector."""
        return (self.vectors @ np.asarray(unit_vector, dtype=np.float32)) * self._inverse_norms

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """(dialogue id, cosine similarity) of the k nearest rows, best first, ties by row id."""
        q, q_norm = self._checked_query(vector)
        n = len(self.dialogue_ids)
        if n == 0 or k <= 0:
            return []
        rows = None  # the rows to score exactly: the sketch's candidates, or all
        self._searches += 1
        sketch = self.sketch if self._searches > 1 else self._sketch
        if sketch is not None and k < n and q_norm > 0:
            rows = sketch.candidates(q / q_norm, k)
        return self._top(q, q_norm, k, rows)

    def _checked_query(self, vector: Sequence[float]) -> tuple[np.ndarray, float]:
        """The query as float32 of the table's dimension, rescaled into the norms float32 handles, and its norm."""
        q = np.asarray(vector, dtype=np.float32).ravel()
        if q.shape[0] != self.vectors.shape[1]:
            raise ValueError(f"query vector has dimension {q.shape[0]}, the table stores {self.vectors.shape[1]}")
        if not np.isfinite(q).all():
            raise ValueError("query vector has non-finite values")
        q_norm = _norm64(q)
        if q_norm > 0 and not MIN_NORM <= q_norm <= MAX_NORM:  # cosines ignore the scale; float32 does not
            q = (q / q_norm).astype(np.float32)
            q_norm = _norm64(q)
        return q, q_norm

    def _top(self, q: np.ndarray, q_norm: float, k: int, rows: np.ndarray | None) -> list[tuple[str, float]]:
        """The k best of ``rows`` (all when None) scored exactly: rows that hold every row of the k best, ties
        included, give what scoring all of them gives."""
        if rows is not None and len(rows) > len(self.dialogue_ids) // 4:  # scanning all reads less
            rows = None
        scores = self._scores(q, rows)
        if q_norm > 0:
            scores /= q_norm
        m = len(scores)
        if k < m:
            cut = np.argpartition(-scores, k - 1)[:k]
            top = np.flatnonzero(scores >= scores[cut].min())  # every row tied at the cut, to choose by id
        else:
            top = np.arange(m)
        positions = top if rows is None else rows[top]  # rows are in id order: a row index breaks ties
        order = np.lexsort((positions, -scores[top]))[:k]
        return [(self.dialogue_ids[i], s) for i, s in zip(positions[order].tolist(), scores[top][order].tolist())]

    def _scores(self, q: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        """vector . q x inverse norm, for ``rows`` (all when None)."""
        if not self.compiled:
            return (self.vectors @ q) * self._inverse_norms
        rows = np.arange(len(self.vectors)) if rows is None else rows
        out = np.empty(len(rows), dtype=np.float32)
        kernels.row_scores(self.vectors, rows, np.ascontiguousarray(q), out)
        return out * self._inverse_norms[rows]


# Rows and queries are held to norms where float32 products neither overflow nor lose their small terms
# (a sentence embedding has norm 1); a row outside is rescaled to norm 1 when read, a query when searched.
MIN_NORM, MAX_NORM = 1e-6, 1e6


def _norm64(v: np.ndarray) -> float:
    """The norm in float64: float32 squares overflow above ~1.8e19 and vanish below ~1e-19."""
    return float(np.sqrt(np.dot(v.astype(np.float64), v.astype(np.float64))))


def _sanitized(vectors: np.ndarray, chunk: int = 16384) -> tuple[np.ndarray, int]:
    """The vectors with each row that has a non-finite value set to zeros (it then scores 0, like an empty
    row) and each row whose norm is outside [MIN_NORM, MAX_NORM] rescaled to norm 1 (a copy, only if any
    row changes), and how many rows changed."""
    fixes = []
    for start in range(0, len(vectors), chunk):
        block = vectors[start:start + chunk]
        finite = np.isfinite(block).all(axis=1)
        masked = block if finite.all() else np.where(finite[:, None], block, np.float32(0))
        norms = np.sqrt(np.einsum("ij,ij->i", masked, masked, dtype=np.float64))
        outside = finite & (norms > 0) & ((norms < MIN_NORM) | (norms > MAX_NORM))
        for i in np.flatnonzero(~finite | outside):
            fixes.append((start + int(i), float(norms[i]) if finite[i] else None))
    if not fixes:
        return vectors, 0
    vectors = vectors.copy()
    for row, norm in fixes:
        vectors[row] = 0.0 if norm is None else (vectors[row].astype(np.float64) / norm).astype(np.float32)
    return vectors, len(fixes)


class Int8Sketch:
    """Each row as int8 codes with one scale, and a bound on how far the codes' cosine to a unit query can
    be from the row's: to find the few rows an exact search must score.

    A row can be among the k best only if its approximate cosine plus its bound reaches the k-th largest
    approximate cosine minus bound; every row at or above the k-th exact score does (the exact score lies
    within the bounds), ties included. Bound: for a unit query q, x . q = s c . q + (x - s c) . q and
    |(x - s c) . q| <= |x - s c| (Cauchy-Schwarz), scaled by the row's inverse norm; plus float32 rounding
    of both products over d terms (each within d x 2^-24 of exact for unit vectors) and of the scalings,
    doubled. Rows and queries are held to norms where float32 neither overflows nor underflows (`_sanitized`,
    MIN_NORM / MAX_NORM), so the rounding bound holds."""

    ROUNDING_SLACK = 4 * 2.0 ** -24  # per term: d terms, plus 4 for the scalings and the +-

    def __init__(self, vectors: np.ndarray, inverse_norms: np.ndarray, *, chunk: int = 8192):
        n, dimension = vectors.shape
        self.codes = np.empty((n, dimension), dtype=np.int8)
        residual = np.empty(n, dtype=np.float64)
        scale = np.empty(n, dtype=np.float32)
        for start in range(0, n, chunk):  # in chunks: a float64 copy of 100,000 rows would be 300 MB
            block = vectors[start:start + chunk]
            peak = np.abs(block).max(axis=1)
            s = np.where(peak > 0, peak / 127.0, 0.0).astype(np.float32)
            codes = np.clip(np.rint(block / np.where(s > 0, s, 1.0)[:, None]), -127, 127).astype(np.int8)
            self.codes[start:start + chunk] = codes
            scale[start:start + chunk] = s
            residual[start:start + chunk] = np.linalg.norm(
                block.astype(np.float64) - codes * s.astype(np.float64)[:, None], axis=1)
        self.row_scale = (scale * inverse_norms).astype(np.float32)  # codes . unit query -> cosine
        slack = self.ROUNDING_SLACK * (dimension + 4)
        self.bound = (residual * inverse_norms + slack).astype(np.float32)  # |exact - approximate| <= bound

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.row_scale.nbytes + self.bound.nbytes

    def candidates(self, unit_query: np.ndarray, k: int) -> np.ndarray:
        """Row indices, ascending, including every row whose exact cosine to ``unit_query`` (norm 1) is
        among the k largest (ties at the k-th too)."""
        n = len(self.codes)
        if k >= n:
            return np.arange(n)
        approximate = np.empty(n, dtype=np.float32)
        kernels.int8_scores(self.codes, np.ascontiguousarray(unit_query, dtype=np.float32), approximate)
        approximate *= self.row_scale
        return within(approximate, self.bound, k)


def within(approximate: np.ndarray, bound: np.ndarray, k: int) -> np.ndarray:
    """Row indices, ascending, of the rows that can be among the k best when each exact score lies within
    ``bound`` of ``approximate``: every row whose upper bound reaches the k-th largest lower bound."""
    n = len(approximate)
    if k >= n:
        return np.arange(n)
    floor = np.partition(approximate - bound, n - k)[n - k]
    return np.flatnonzero(approximate + bound >= floor)


class DenseIndexes:
    """The dense indices of one opened home: each table's `DenseIndex` read on first use (once, also when
    several threads ask at the same time); tables above `max_rows` go to LanceDB's ANN search."""

    def __init__(self, store: IndexStore, *, max_rows: int = DEFAULT_MAX_ROWS):
        self.store = store
        self.max_rows = max_rows
        self._indices: dict[str, DenseIndex] = {}
        self._too_big: set[str] = set()  # counted once, like the loaded ones: an opened home is a snapshot
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, table: str) -> DenseIndex:
        """The table's vectors in memory, read now if they were not yet."""
        index = self._indices.get(table)
        if index is not None:
            return index
        with self._guard:
            lock = self._locks.setdefault(table, threading.Lock())
        with lock:
            if table not in self._indices:
                self._indices[table] = DenseIndex.load(self.store, table)
            return self._indices[table]

    def in_memory(self, table: str) -> bool:
        """Whether a search of the table is a search in memory now (read, and not too big to hold)."""
        return table in self._indices

    def holds(self, table: str) -> bool:
        """Whether the table's vectors are (or can be) held in memory: not too big to hold."""
        if table in self._too_big or (table not in self._indices and self.store.counts(table) > self.max_rows):
            self._too_big.add(table)
            return False
        return True

    def unit_vectors(self, table: str, dialogue_ids) -> dict[str, np.ndarray]:
        """The unit vector of each of these dialogue ids' rows in the table; none for a table too big to
        hold (a re-ranking that needs them is then not made)."""
        if not self.holds(table):
            return {}
        index = self.get(table)
        return {d: index.unit_row(r) for d in dialogue_ids if (r := index.row_of.get(d)) is not None}

    def search(self, table: str, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        if not self.holds(table):
            return [(h["dialogue_id"], float(h["score"])) for h in self.store.vector_search(table, vector, k)]
        return self.get(table).search(vector, k)

    @property
    def nbytes(self) -> int:
        return sum(index.nbytes for index in self._indices.values())
