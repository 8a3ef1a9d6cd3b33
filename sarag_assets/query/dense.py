"""Exact dense search over a LanceDB table's vectors held in memory. No Dagster.

The query side searches three tables with the same query vector (`table_rows`, `issue_documents`,
`solution_documents`). LanceDB's IVF_PQ index with `refine_factor` 40 took 45-50 ms per table at 100,000
rows on this machine (recall@50 0.998); one float32 matrix-vector product over the same 100,000 x 384
vectors takes ~5 ms on one core and is exact. So each table's vectors are read once (on first use) and
searched in numpy.

`DenseIndex.search(vector, k)` means what `IndexStore.vector_search(table, vector, k)` means: the k rows
of highest cosine similarity, score = 1 - cosine distance, best first, ties broken by row id (here over
the whole table, so rows tied at the cut are chosen by id too). Scores agree with LanceDB's to float32
rounding (~1e-7).

Cost: rows x dimension x 4 bytes of memory (154 MB per 100,000 rows of 384 dimensions) and one read of
the table (~1 s per 100,000 rows here). A table holding more than `max_rows` rows (the environment's
`SARAG_EXACT_SEARCH_MAX_ROWS`, default 1,000,000: 1.5 GB, ~50 ms per search) is searched through
LanceDB's ANN index instead, unless its vectors were loaded anyway (the cluster route needs
`table_rows`' in memory whatever its size).
"""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from sarag_assets.core.indices import IndexStore

DEFAULT_MAX_ROWS = 1_000_000


class DenseIndex:
    """One table's vectors in memory, rows in id order, each labelled with its dialogue id."""

    def __init__(self, dialogue_ids: Sequence[str], vectors: np.ndarray):
        self.dialogue_ids = list(dialogue_ids)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.dialogue_ids):
            raise ValueError("vectors must be a matrix with one row per dialogue id")
        norms = np.linalg.norm(self.vectors, axis=1)
        self._inverse_norms = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)

    @classmethod
    def load(cls, store: IndexStore, table: str) -> "DenseIndex":
        dialogue_ids, vectors = store.vectors(table, label="dialogue_id")
        return cls(dialogue_ids, vectors)

    def __len__(self) -> int:
        return len(self.dialogue_ids)

    @property
    def nbytes(self) -> int:
        return self.vectors.nbytes + self._inverse_norms.nbytes

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """(dialogue id, cosine similarity) of the k nearest rows, best first, ties by row id."""
        q = np.asarray(vector, dtype=np.float32).ravel()
        if q.shape[0] != self.vectors.shape[1]:
            raise ValueError(f"query vector has dimension {q.shape[0]}, the table stores {self.vectors.shape[1]}")
        n = len(self.dialogue_ids)
        if n == 0 or k <= 0:
            return []
        q_norm = float(np.linalg.norm(q))
        scores = (self.vectors @ q) * self._inverse_norms
        if q_norm > 0:
            scores /= q_norm
        if k < n:
            cut = np.argpartition(-scores, k - 1)[:k]
            top = np.flatnonzero(scores >= scores[cut].min())  # every row tied at the cut, to choose by id
        else:
            top = np.arange(n)
        order = top[np.lexsort((top, -scores[top]))][:k]  # rows are in id order: row index breaks ties
        return [(self.dialogue_ids[i], s) for i, s in zip(order.tolist(), scores[order].tolist())]


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

    def search(self, table: str, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        if table in self._too_big or (table not in self._indices and self.store.counts(table) > self.max_rows):
            self._too_big.add(table)
            return [(h["dialogue_id"], float(h["score"])) for h in self.store.vector_search(table, vector, k)]
        return self.get(table).search(vector, k)

    @property
    def nbytes(self) -> int:
        return sum(index.nbytes for index in self._indices.values())
