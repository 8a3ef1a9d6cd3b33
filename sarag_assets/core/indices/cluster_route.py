"""The cluster route of T-RAG (coarse: the best cluster per view; fine: personalized PageRank over a
similarity graph of the candidates) and the index a query uses.

The route (``ClusterIndex.route``): per view the cluster whose representatives have the highest mean
similarity to the query; the union of those clusters' members (current assignments, fit and assigned)
is the candidate set, capped at ``max_candidates`` (1,000) by exact semantic similarity to the query (the graph
costs O(candidates^2)); over the candidates a
similarity graph on the semantic view: each node keeps its ``top_n`` (10) most similar candidates with
cosine >= ``tau`` (0.3), made symmetric, weights = cosine. Ranking = personalized PageRank (damping 0.85,
power iteration on a scipy sparse matrix, dangling mass back to the seed, L1 tolerance 1e-8, at most 100
iterations). The seed is the query's semantic similarity sharpened by a softmax,
``exp((sim - max sim) / seed_temperature)`` with temperature 0.02 (``seed_temperature=None``: the
similarity clipped at 0, uniform if none is positive). A flat seed would let damping 0.85 hand the ranking to
the graph's hubs.
The score is then the personalized PageRank over the walk's query-independent visit rate
(`visit_baseline`: ``(1 - d) / n + d * degree / sum(degree)``), i.e. how much more the query's walk visits
a conversation than any walk does. With the personalized PageRank alone,
a candidate similar to many others would outrank the conversations the query is about. For speed the graph is built on a ``graph_dims`` (64) sketch of
the semantic vectors (top right-singular vectors of the fit rows, re-normalized); the seed similarities are
exact. ``graph_dims`` = None uses the exact vectors. The route runs with one BLAS thread (``blas_threads``):
its products are small, and thread hand-offs cost more than they save.
"""

from __future__ import annotations

import math
from typing import Mapping, NamedTuple, Sequence

import numpy as np
import polars as pl
from scipy import sparse

from sarag_assets.core.indices.clusters import (
    VIEWS,
    ClusterModel,
    _current,
    _l2_rows,
    _thread_limit,
)

# ---------------------------------------------------------------------------------------------------------
# the route


def similarity_graph(vectors: np.ndarray, tau: float = 0.3, top_n: int = 10) -> sparse.csr_matrix:
    """Symmetric weighted graph over rows of (unit) vectors: each row keeps its ``top_n`` most similar
    other rows (exactly top_n, ties broken arbitrarily) with similarity >= ``tau``; the union of both
    directions; weight = similarity."""
    n = vectors.shape[0]
    if n < 2 or top_n <= 0:
        return sparse.csr_matrix((n, n), dtype=np.float32)
    s = vectors @ vectors.T
    np.fill_diagonal(s, -np.inf)
    top_n = min(top_n, n - 1)
    best = np.argpartition(s, n - top_n, axis=1)[:, n - top_n:]
    weights = np.take_along_axis(s, best, axis=1)
    keep = weights >= tau
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    a = sparse.csr_matrix((weights[keep].astype(np.float32), best[keep], indptr), shape=(n, n))
    return a.maximum(a.T).tocsr()


def visit_baseline(adjacency: sparse.spmatrix, damping: float = 0.85) -> np.ndarray:
    """How often a walk on the graph visits each node whatever the query: ``(1 - d) / n + d * degree /
    sum(degree)`` (a random walk on a symmetric graph visits nodes in proportion to their weighted degree;
    the teleporting share is spread evenly). Uniform when the graph has no edges."""
    n = adjacency.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    degree = np.asarray(adjacency.sum(axis=1), dtype=np.float64).ravel()
    total = degree.sum()
    if total <= 0:
        return np.full(n, 1.0 / n)
    return (1.0 - damping) / n + damping * degree / total


def personalized_pagerank(adjacency: sparse.spmatrix, personalization: np.ndarray, damping: float = 0.85,
                          *, tol: float = 1e-8, max_iter: int = 100) -> np.ndarray:
    """PageRank with teleport to ``personalization`` (normalized; uniform if it sums to 0). Rows of the
    adjacency are out-edges (weights normalized per row); a node without edges sends its mass back to the
    personalization. Power iteration until the L1 change is below ``tol``; the result sums to 1."""
    n = adjacency.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    p = np.clip(np.asarray(personalization, dtype=np.float64), 0.0, None)
    p = p / p.sum() if p.sum() > 0 else np.full(n, 1.0 / n)
    a = sparse.csr_matrix(adjacency, dtype=np.float64)
    out = np.asarray(a.sum(axis=1)).ravel()
    dangling = out <= 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out))
    transition_t = (sparse.diags(inv) @ a).T.tocsr()  # column-stochastic on non-dangling columns
    r = p.copy()
    for _ in range(max_iter):
        nxt = damping * (transition_t @ r + r[dangling].sum() * p) + (1.0 - damping) * p
        nxt /= nxt.sum()
        if np.abs(nxt - r).sum() < tol:
            r = nxt
            break
        r = nxt
    return r


class RouteHit(NamedTuple):
    dialogue_id: str
    score: float
    route_info: dict


class ClusterIndex:
    """The in-memory matrices for routing: representatives per view (from the model), the members of
    every cluster (from the assignments of the model's version) and the rows' semantic vectors (exact, for
    the seeds; sketched for the graph)."""

    def __init__(self, model: ClusterModel, dialogue_ids: Sequence[str], semantic: np.ndarray,
                 row_clusters: dict[str, np.ndarray], *, blas_threads: int | None = 1):
        self.model = model
        self.blas_threads = blas_threads  # the route's small products lose more to thread sync than they gain
        self.dialogue_ids = list(dialogue_ids)
        self.semantic = np.ascontiguousarray(semantic, dtype=np.float32)
        self.graph_vectors = self.semantic if model.graph_components is None else \
            _l2_rows(self.semantic @ model.graph_components.T)
        self.row_clusters = row_clusters  # view -> (n,) cluster id per row, -1 when unassigned
        self.members: dict[str, list[np.ndarray]] = {}
        for name in VIEWS:
            labels = row_clusters[name]
            order = np.argsort(labels, kind="stable")
            bounds = np.searchsorted(labels[order], np.arange(model.views[name].k + 1))
            self.members[name] = [order[bounds[c]:bounds[c + 1]].astype(np.int64) for c in range(model.views[name].k)]
        self._reps = {}
        for name in VIEWS:
            v = model.views[name]
            k, m, d = v.rep_vectors.shape
            flat = np.ascontiguousarray(v.rep_vectors.reshape(k * m, d), dtype=np.float32)
            mask = (np.arange(m)[None, :] < v.rep_counts[:, None]).astype(np.float32)
            self._reps[name] = (flat, (flat.astype(np.float64) ** 2).sum(axis=1).astype(np.float32), mask,
                                np.maximum(v.rep_counts, 1).astype(np.float32))

    @classmethod
    def build(cls, model: ClusterModel, assignments: pl.DataFrame, dialogue_ids: Sequence[str],
              semantic: np.ndarray, *, blas_threads: int | None = 1) -> "ClusterIndex":
        """From a stored model, its ``cluster_assignments`` (rows of other model versions are ignored; the
        last row per dialogue and view wins) and the rows' semantic vectors aligned with ``dialogue_ids``.
        Rows with vectors but no assignment are never candidates; assignments without vectors are dropped."""
        semantic = np.asarray(semantic, dtype=np.float32)
        if semantic.shape[0] != len(dialogue_ids):
            raise ValueError("semantic vectors and dialogue_ids differ in length")
        position = {d: i for i, d in enumerate(dialogue_ids)}
        current = _current(assignments, model.model_version)
        row_clusters = {}
        for name in VIEWS:
            labels = np.full(len(dialogue_ids), -1, dtype=np.int64)
            part = current.filter(pl.col("view") == name)
            idx = np.array([position.get(d, -1) for d in part.get_column("dialogue_id").to_list()], dtype=np.int64)
            cids = part.get_column("cluster_id").to_numpy().astype(np.int64)
            ok = idx >= 0
            labels[idx[ok]] = cids[ok]
            row_clusters[name] = labels
        return cls(model, dialogue_ids, semantic, row_clusters, blas_threads=blas_threads)

    @classmethod
    def from_fit(cls, model: ClusterModel) -> "ClusterIndex":
        """Straight after ``fit_clusters`` (uses its transient fit assignments and features)."""
        if model.fit_assignments is None or model.fit_features is None:
            raise ValueError("the model carries no fit assignments; use ClusterIndex.build")
        return cls.build(model, model.fit_assignments, model.fit_features.dialogue_ids, model.fit_features.semantic)

    def __len__(self) -> int:
        return len(self.dialogue_ids)

    def route_clusters(self, query: Mapping[str, np.ndarray]) -> dict[str, tuple[int, float]]:
        """Per view: (best cluster id, the query's mean similarity to its representatives). A view whose
        query vector is all zeros (e.g. no word of the query is in the TF-IDF vocabulary) says nothing and
        is left out."""
        chosen = {}
        for name in VIEWS:
            flat, sq, mask, counts = self._reps[name]
            q = np.asarray(query[name], dtype=np.float32)
            if name != "structural" and not np.any(q):
                continue
            dots = flat @ q
            if name == "structural":
                dist = np.sqrt(np.maximum(sq - 2.0 * dots + float(q @ q), 0.0))
                sims = 1.0 / (1.0 + dist / math.sqrt(max(len(q), 1)))
            else:
                sims = dots
            k, m = mask.shape
            mean = (sims.reshape(k, m) * mask).sum(axis=1) / counts
            mean = np.where(mask[:, 0] > 0, mean, -np.inf)  # empty cluster
            best = int(np.argmax(mean))
            chosen[name] = (best, float(mean[best]))
        return chosen

    def route(self, query: Mapping[str, np.ndarray], *, top_k: int | None = 10, max_candidates: int | None = None,
              tau: float | None = None, top_n: int | None = None, damping: float | None = None) -> list[RouteHit]:
        """Rank candidates for a query's feature vectors (``query_vectors``); ``top_k=None`` returns every
        candidate. Each hit's ``route_info``: ``views`` (whose chosen cluster contained it), ``clusters``
        (view -> chosen cluster id) and ``similarity`` (exact semantic cosine to the query)."""
        if self.blas_threads is None:
            return self._route(query, top_k, max_candidates, tau, top_n, damping)
        with _thread_limit(self.blas_threads, "blas"):
            return self._route(query, top_k, max_candidates, tau, top_n, damping)

    def _route(self, query, top_k, max_candidates, tau, top_n, damping) -> list[RouteHit]:
        cfg = self.model.config
        max_candidates = cfg.max_candidates if max_candidates is None else max_candidates
        tau = cfg.tau if tau is None else tau
        top_n = cfg.top_n if top_n is None else top_n
        damping = cfg.damping if damping is None else damping

        chosen = self.route_clusters(query)
        if not chosen:
            return []
        in_union = np.zeros(len(self.dialogue_ids), dtype=bool)
        for name, (cid, _) in chosen.items():
            in_union[self.members[name][cid]] = True
        candidates = np.flatnonzero(in_union)
        if len(candidates) == 0:
            return []
        q = np.asarray(query["semantic"], dtype=np.float32)
        sims = self.semantic[candidates] @ q
        if len(candidates) > max_candidates:
            keep = np.sort(np.argpartition(-sims, max_candidates - 1)[:max_candidates])
            candidates, sims = candidates[keep], sims[keep]
        graph = similarity_graph(self.graph_vectors[candidates], tau, top_n)
        temperature = cfg.seed_temperature
        seed = np.clip(sims, 0.0, None) if temperature is None else np.exp((sims - sims.max()) / temperature)
        # relative to the walk's query-independent visits: where the query's walk goes more than any walk
        scores = personalized_pagerank(graph, seed, damping) / visit_baseline(graph, damping)
        order = np.lexsort((candidates, -scores))
        if top_k is not None:
            order = order[:top_k]
        rows = candidates[order]
        clusters = {name: cid for name, (cid, _) in chosen.items()}
        contained = {name: (self.row_clusters[name][rows] == cid).tolist() for name, cid in clusters.items()}
        ids, row_scores, row_sims = self.dialogue_ids, scores[order].tolist(), sims[order].tolist()
        hits = []
        for j, row in enumerate(rows.tolist()):
            views = [name for name in clusters if contained[name][j]]
            hits.append(RouteHit(ids[row], row_scores[j],
                                 {"views": views, "clusters": {v: clusters[v] for v in views},
                                  "similarity": row_sims[j]}))
        return hits
