"""T-RAG: three feature views per row, KMeans per view, incremental assignment with drift, and the cluster
route (``cluster_route``). No Dagster.

Input: linearized rows, one text per conversation ("product: Netwave AX3000 | version: 1.2.2 | ...") with
its ``dialogue_id`` (a Polars frame with ``dialogue_id`` and ``text`` columns, dicts, or (id, text) pairs).

Feature views (every row gets all three):

- ``semantic``: the sentence embedding (all-MiniLM-L6-v2, 384-d, unit norm). Similarity = dot product.
- ``structural``: shape statistics of the text (``STRUCTURAL_FEATURES``: log length in characters and
  tokens, mean word length, share of digits / uppercase / punctuation, filled ``key: value`` fields and
  their share, type-token ratio, a token-shape histogram: lower, Title, UPPER, digits, dotted numbers
  like 1.2.2, mixed alphanumerics like AX3000, hyphenated codes like E-1234, punctuation, other),
  standardized with the fit-time mean and standard deviation and clipped to +-5. Similarity =
  ``1 / (1 + euclidean / sqrt(dims))``: magnitudes matter here, so not a cosine.
- ``heuristic``: TF-IDF over word unigrams and bigrams (sublinear tf, L2 rows; the fitted vocabulary and
  idf are kept so new rows are transformed, never refitted), reduced with TruncatedSVD to ``svd_dims``
  (128) and L2-normalized again (LSA), so KMeans stays fast at 100k rows. Similarity = dot product.

KMeans runs per view (euclidean; on unit vectors this ranks like cosine). Rules:

- k (when not given): ``clamp(round(sqrt(n / 2)), k_min=2, k_max=64)``, never above n (``choose_k``).
  The T-RAG reference code used a fixed k = 3; pass ``k=3`` for that.
- Determinism: ``random_state=seed`` and a fixed ``n_init`` (1, k-means++); the TruncatedSVD and the
  route sketch use the same seed. Labels are recomputed as nearest centroid so fit and ``assign`` agree.
- Threads: the fit runs with ``threads`` (1) BLAS/OpenMP threads. On a shared machine OpenMP
  spin-waits make multi-threaded KMeans and the SVD slower than one thread. ``threads=None`` leaves the library defaults for a dedicated machine.
- Representatives: per cluster the ``n_representatives`` (50, as in the reference code) members closest
  to the centroid; their vectors are stored in the model (coarse routing needs nothing else). They are
  updated only by a refit (``fit_clusters`` again, which also makes a new ``model_version``).
- Drift: ``assign`` puts new rows on the nearest existing centroid per view and accumulates, per view,
  their mean distance to it. ``drift ratio = mean assigned distance / mean fit-time distance``, where the
  fit-time distance of a member is its leave-one-out distance ``d * s / (s - 1)`` (s = its cluster's fit
  size), so in-distribution new rows give a ratio near 1 and rows of an unseen topic well above it. A refit is due (``needs_refit``)
  when, with at least ``drift_min_rows`` (20) rows assigned since the fit, any view's ratio reaches
  ``drift_threshold`` (1.3), or when the rows assigned since the fit reach ``max_new_share`` (0.5) of the
  fit rows.

Storage and use: ``ClusterModel.to_bytes`` / ``from_bytes`` (one .npz, no pickle: arrays plus a JSON
header with the config, vocabulary, representatives and drift counters); ``assign`` changes the drift
counters, so store the model again after it. ``fit_clusters`` leaves the fit rows' ``cluster_assignments``
frame in ``model.fit_assignments`` (not serialized: it is a table); ``clusters_frame`` gives the
``clusters`` table and ``oversized_clusters`` the clusters holding more than half of their view (a warning
check). A query module rebuilds ``ClusterIndex.build(model, assignments, dialogue_ids, semantic_vectors)``.
Limits: rows assigned after the fit are seen through the fit-time standardization, vocabulary, SVD and
graph sketch (a new topic's own words are unknown until a refit); the fit holds all three views in memory
(~1.5 KB per row for the embedding alone).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import re
import warnings
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import polars as pl
from scipy import sparse

from sarag_assets.core.encoding.embedder import text_hash

VIEWS: tuple[str, ...] = ("semantic", "structural", "heuristic")

CLUSTER_ASSIGNMENTS_SCHEMA: dict[str, pl.DataType] = {
    "dialogue_id": pl.String,
    "view": pl.String,
    "cluster_id": pl.Int64,
    "distance": pl.Float64,
    "is_representative": pl.Boolean,
    "model_version": pl.String,
    # text_hash(the linearized text) the assignment was computed from: a conversation that lands again
    # with other content gets another text and is reassigned (null in rows written before the column)
    "text_hash": pl.String,
}
CLUSTERS_SCHEMA: dict[str, pl.DataType] = {
    "view": pl.String,
    "cluster_id": pl.Int64,
    "size": pl.Int64,
    "n_representatives": pl.Int64,
    "model_version": pl.String,
}

_FORMAT = "sarag-clusters/1"


@dataclass(frozen=True)
class ClusterConfig:
    k: int | None = None  # None: choose_k(n, k_min, k_max)
    k_min: int = 2
    k_max: int = 64
    n_representatives: int = 50
    n_init: int = 1
    max_iter: int = 100
    svd_dims: int = 128
    tfidf_max_features: int = 32768
    tfidf_min_df: int | None = None  # None: 1 below 1,000 rows, else 2
    drift_threshold: float = 1.3
    drift_min_rows: int = 20
    max_new_share: float = 0.5
    max_candidates: int = 1000
    tau: float = 0.3
    top_n: int = 10
    damping: float = 0.85
    seed_temperature: float | None = 0.02  # None: seed = similarity clipped at 0
    graph_dims: int | None = 64
    threads: int | None = 1  # BLAS/OpenMP threads for fit and assign; None: the libraries' defaults

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ClusterConfig":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def choose_k(n: int, k_min: int = 2, k_max: int = 64) -> int:
    """``clamp(round(sqrt(n / 2)), k_min, k_max)``, never more than n (and at least 1)."""
    if n <= 0:
        raise ValueError("cannot cluster an empty corpus")
    k = int(math.floor(math.sqrt(n / 2.0) + 0.5))
    return max(1, min(n, max(k_min, min(k_max, k))))


_CONTROLLER = None


def _thread_limit(threads: int | None, user_api: str | None = None):
    """Limit the BLAS / OpenMP thread pools for a block (None: leave them alone). The controller is built
    once (it inspects the loaded libraries)."""
    if threads is None:
        return contextlib.nullcontext()
    global _CONTROLLER
    if _CONTROLLER is None:
        import scipy.linalg  # noqa: F401  (scipy's own OpenBLAS and sklearn's OpenMP must be loaded
        import sklearn.cluster  # noqa: F401  before the controller looks for thread pools)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=threads, user_api=user_api)


# ---------------------------------------------------------------------------------------------------------
# rows and linearization

_EMPTY_VALUES = {"", "null", "none", "n/a", "na", "nan", "-", "unknown", "?"}


def linearize(record: Mapping[str, Any], *, columns: Sequence[str] | None = None,
              skip: Iterable[str] = ("dialogue_id", "batch_key", "content_hash")) -> str:
    """``key: value | key: value`` over the record's non-null values (columns in the given order)."""
    skipped = set(skip)
    names = list(columns) if columns is not None else [c for c in record if c not in skipped]
    parts = []
    for name in names:
        value = record.get(name)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        text = str(value).strip()
        if text.lower() in _EMPTY_VALUES:
            continue
        parts.append(f"{name}: {' '.join(text.split())}")
    return " | ".join(parts)


def _rows(rows: Any, text_column: str) -> tuple[list[str], list[str]]:
    if isinstance(rows, pl.DataFrame):
        if "dialogue_id" not in rows.columns or text_column not in rows.columns:
            raise ValueError(f"rows need columns dialogue_id and {text_column}, got {rows.columns}")
        ids = [str(x) for x in rows.get_column("dialogue_id").to_list()]
        texts = [x if isinstance(x, str) else "" for x in rows.get_column(text_column).to_list()]
        return ids, texts
    ids, texts = [], []
    for row in rows:
        if isinstance(row, Mapping):
            ids.append(str(row["dialogue_id"]))
            text = row.get(text_column)
        else:
            did, text = row
            ids.append(str(did))
        texts.append(text if isinstance(text, str) else "")
    return ids, texts


# ---------------------------------------------------------------------------------------------------------
# structural view

_SHAPES = ("lower", "title", "upper", "digits", "number", "alnum", "code", "punct", "other")
STRUCTURAL_FEATURES: tuple[str, ...] = (
    "log_chars", "log_tokens", "mean_word_len", "digit_share", "upper_share", "punct_share",
    "filled_fields", "filled_field_share", "type_token_ratio",
) + tuple(f"shape_{s}" for s in _SHAPES)

_TOKEN = re.compile(
    r"(?P<other>\S+@\S+\.\w+|https?://\S+|www\.\S+)"
    r"|(?P<code>\w+(?:[-_]\w+)+)"
    r"|(?P<number>\d+(?:[.,:/]\d+)+)"
    r"|(?P<alnum>(?=[^\W_]*\d)(?=[^\W_]*[^\W\d_])[^\W_]+)"
    r"|(?P<digits>\d+)"
    r"|(?P<word>[^\W\d_]+)"
    r"|(?P<punct>[^\w\s])"
    r"|(?P<rest>\w+)"
)
_FIELD = re.compile(r"^\s*([^\W\d][\w ./-]{0,48}?)\s*:\s*(.*)$", re.S)
_SEGMENT_SPLIT = re.compile(r"\s*(?:\||\n|;)\s*")


def structural_raw(text: str) -> np.ndarray:
    """The unstandardized structural features of one text, in ``STRUCTURAL_FEATURES`` order."""
    counts = dict.fromkeys(_SHAPES, 0)
    n_tokens = 0
    word_chars = 0
    n_words = 0
    vocab = set()
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        token = m.group()
        n_tokens += 1
        if kind == "word":
            kind = "lower" if token.islower() else "upper" if (token.isupper() and len(token) > 1) else \
                "title" if token[:1].isupper() and (len(token) == 1 or token[1:].islower()) else "other"
        elif kind == "rest":
            kind = "other"
        counts[kind] += 1
        if kind != "punct":
            word_chars += len(token)
            n_words += 1
            vocab.add(token.lower())
    n_chars = len(text)
    letters = sum(1 for c in text if c.isalpha())
    digits = sum(1 for c in text if c.isdigit())
    upper = sum(1 for c in text if c.isupper())
    nonspace = n_chars - sum(1 for c in text if c.isspace())
    punct = nonspace - letters - digits
    total_fields = filled = 0
    for segment in _SEGMENT_SPLIT.split(text):
        m = _FIELD.match(segment)
        if m:
            total_fields += 1
            if m.group(2).strip().lower() not in _EMPTY_VALUES:
                filled += 1
    shares = [counts[s] / n_tokens if n_tokens else 0.0 for s in _SHAPES]
    return np.array([
        math.log1p(n_chars),
        math.log1p(n_tokens),
        word_chars / n_words if n_words else 0.0,
        digits / nonspace if nonspace else 0.0,
        upper / letters if letters else 0.0,
        punct / nonspace if nonspace else 0.0,
        float(filled),
        filled / total_fields if total_fields else 0.0,
        len(vocab) / n_words if n_words else 0.0,
        *shares,
    ], dtype=np.float64)


def _structural_matrix(texts: Sequence[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, len(STRUCTURAL_FEATURES)), dtype=np.float64)
    return np.stack([structural_raw(t) for t in texts])


def _standardize(raw: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    return np.clip((raw - mean) / std, -5.0, 5.0).astype(np.float32)


# ---------------------------------------------------------------------------------------------------------
# heuristic view (TF-IDF -> SVD), transformed with the fitted vocabulary only

_TFIDF_ARGS = dict(lowercase=True, ngram_range=(1, 2), token_pattern=r"(?u)\b\w\w+\b", dtype=np.float32)


def _l2_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms > 0, norms, 1.0)).astype(np.float32)


@dataclass(eq=False)
class _Heuristic:
    vocabulary: list[str]
    idf: np.ndarray  # (n_terms,) float32
    components: np.ndarray | None  # (svd_dims, n_terms) float32, or None: dense tf-idf is the view
    _counter: Any = field(default=None, repr=False, compare=False)

    @property
    def dims(self) -> int:
        return int(self.components.shape[0]) if self.components is not None else len(self.vocabulary)

    def tfidf(self, texts: Sequence[str]) -> sparse.csr_matrix:
        if not self.vocabulary or not len(texts):
            return sparse.csr_matrix((len(texts), len(self.vocabulary)), dtype=np.float32)
        if self._counter is None:
            from sklearn.feature_extraction.text import CountVectorizer

            self._counter = CountVectorizer(vocabulary={t: i for i, t in enumerate(self.vocabulary)}, **_TFIDF_ARGS)
        x = self._counter.transform(list(texts)).astype(np.float32).tocsr()
        x.data = (np.log(x.data) + 1.0).astype(np.float32)  # sublinear tf
        x.data *= self.idf[x.indices]
        from sklearn.preprocessing import normalize

        return normalize(x, norm="l2", copy=False)

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        x = self.tfidf(texts)
        if self.components is None:
            return np.asarray(x.todense(), dtype=np.float32)
        return _l2_rows(np.asarray(x @ self.components.T, dtype=np.float32))


def _fit_heuristic(texts: Sequence[str], config: ClusterConfig, seed: int) -> _Heuristic:
    from sklearn.feature_extraction.text import TfidfVectorizer

    min_df = config.tfidf_min_df if config.tfidf_min_df is not None else (1 if len(texts) < 1000 else 2)
    vectorizer = TfidfVectorizer(sublinear_tf=True, norm="l2", min_df=min_df,
                                 max_features=config.tfidf_max_features, **_TFIDF_ARGS)
    try:
        x = vectorizer.fit_transform(list(texts))
    except ValueError:  # empty vocabulary (no word of two characters anywhere)
        return _Heuristic([], np.zeros(0, dtype=np.float32), None)
    vocab = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get)
    idf = vectorizer.idf_.astype(np.float32)
    n_comp = min(config.svd_dims, x.shape[1] - 1, x.shape[0] - 1)
    if x.shape[1] <= config.svd_dims or n_comp < 1:
        return _Heuristic(vocab, idf, None)
    from sklearn.decomposition import TruncatedSVD

    svd = TruncatedSVD(n_components=n_comp, algorithm="randomized", n_iter=5, random_state=seed)
    svd.fit(x)
    return _Heuristic(vocab, idf, svd.components_.astype(np.float32))


# ---------------------------------------------------------------------------------------------------------
# features


@dataclass(eq=False)
class FeatureViews:
    """The three views of some rows, aligned with ``dialogue_ids``."""

    dialogue_ids: list[str]
    semantic: np.ndarray
    structural: np.ndarray
    heuristic: np.ndarray

    def view(self, name: str) -> np.ndarray:
        return getattr(self, name)

    def __len__(self) -> int:
        return len(self.dialogue_ids)


def _semantic(texts: Sequence[str], embeddings: np.ndarray | None, embedder: Any) -> np.ndarray:
    if embeddings is not None:
        vectors = np.asarray(embeddings, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(f"embeddings shape {vectors.shape} does not match {len(texts)} rows")
        return _l2_rows(vectors)
    if embedder is None:
        from sarag_assets.core.encoding.embedder import default_embedder

        embedder = default_embedder()
    return np.asarray(embedder.encode(list(texts)), dtype=np.float32)


# ---------------------------------------------------------------------------------------------------------
# the model


@dataclass(eq=False)
class ViewModel:
    centroids: np.ndarray  # (k, d) float32
    fit_sizes: np.ndarray  # (k,) int64
    fit_mean_distance: float
    representatives: list[list[str]]  # per cluster, closest first
    rep_vectors: np.ndarray  # (k, m, d) float32, zero-padded
    rep_counts: np.ndarray  # (k,) int64
    n_assigned: int = 0
    assigned_distance_sum: float = 0.0

    @property
    def k(self) -> int:
        return int(self.centroids.shape[0])

    @property
    def drift_ratio(self) -> float | None:
        if self.n_assigned == 0 or self.fit_mean_distance <= 0:
            return None
        return (self.assigned_distance_sum / self.n_assigned) / self.fit_mean_distance


@dataclass(eq=False)
class ClusterModel:
    config: ClusterConfig
    seed: int
    model_version: str
    n_fit_rows: int
    embedding_model: str | None
    struct_mean: np.ndarray
    struct_std: np.ndarray
    heuristic: _Heuristic
    graph_components: np.ndarray | None  # (graph_dims, 384) float32 or None (exact graph)
    views: dict[str, ViewModel]
    # transient, never serialized: what the fit computed, for the caller to store
    fit_assignments: pl.DataFrame | None = field(default=None, repr=False, compare=False)
    fit_features: FeatureViews | None = field(default=None, repr=False, compare=False)

    @property
    def n_assigned(self) -> int:
        return max((v.n_assigned for v in self.views.values()), default=0)

    # serialization: one .npz (no pickle) holding arrays plus a JSON header
    def to_bytes(self) -> bytes:
        meta = {
            "format": _FORMAT,
            "config": asdict(self.config),
            "seed": self.seed,
            "model_version": self.model_version,
            "n_fit_rows": self.n_fit_rows,
            "embedding_model": self.embedding_model,
            "vocabulary": self.heuristic.vocabulary,
            "views": {
                name: {
                    "fit_mean_distance": v.fit_mean_distance,
                    "representatives": v.representatives,
                    "n_assigned": v.n_assigned,
                    "assigned_distance_sum": v.assigned_distance_sum,
                }
                for name, v in self.views.items()
            },
        }
        arrays = {
            "meta": np.frombuffer(json.dumps(meta, ensure_ascii=False).encode("utf-8"), dtype=np.uint8),
            "struct_mean": self.struct_mean,
            "struct_std": self.struct_std,
            "idf": self.heuristic.idf,
        }
        if self.heuristic.components is not None:
            arrays["svd_components"] = self.heuristic.components
        if self.graph_components is not None:
            arrays["graph_components"] = self.graph_components
        for name, v in self.views.items():
            arrays[f"{name}.centroids"] = v.centroids
            arrays[f"{name}.fit_sizes"] = v.fit_sizes
            arrays[f"{name}.rep_vectors"] = v.rep_vectors
            arrays[f"{name}.rep_counts"] = v.rep_counts
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "ClusterModel":
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
        if meta.get("format") != _FORMAT:
            raise ValueError(f"not a sarag cluster model: {meta.get('format')!r}")
        views = {}
        for name, v in meta["views"].items():
            views[name] = ViewModel(
                centroids=arrays[f"{name}.centroids"],
                fit_sizes=arrays[f"{name}.fit_sizes"],
                fit_mean_distance=float(v["fit_mean_distance"]),
                representatives=[list(r) for r in v["representatives"]],
                rep_vectors=arrays[f"{name}.rep_vectors"],
                rep_counts=arrays[f"{name}.rep_counts"],
                n_assigned=int(v["n_assigned"]),
                assigned_distance_sum=float(v["assigned_distance_sum"]),
            )
        return cls(
            config=ClusterConfig.from_dict(meta["config"]),
            seed=int(meta["seed"]),
            model_version=meta["model_version"],
            n_fit_rows=int(meta["n_fit_rows"]),
            embedding_model=meta.get("embedding_model"),
            struct_mean=arrays["struct_mean"],
            struct_std=arrays["struct_std"],
            heuristic=_Heuristic(list(meta["vocabulary"]), arrays["idf"], arrays.get("svd_components")),
            graph_components=arrays.get("graph_components"),
            views=views,
        )


def compute_features(model: ClusterModel, rows: Any, *, text_column: str = "text",
                     embeddings: np.ndarray | None = None, embedder: Any = None) -> FeatureViews:
    """The three views of rows under a fitted model (its standardization, vocabulary and SVD)."""
    ids, texts = _rows(rows, text_column)
    return FeatureViews(
        ids,
        _semantic(texts, embeddings, embedder),
        _standardize(_structural_matrix(texts), model.struct_mean, model.struct_std),
        model.heuristic.transform(texts),
    )


def query_vectors(model: ClusterModel, text: str, *, embedding: np.ndarray | None = None,
                  embedder: Any = None) -> dict[str, np.ndarray]:
    """A query's three feature vectors (pass ``embedding`` when the query is already embedded)."""
    features = compute_features(model, [("query", text)],
                                embeddings=None if embedding is None else np.asarray(embedding)[None, :],
                                embedder=embedder)
    return {name: features.view(name)[0] for name in VIEWS}


def _nearest(x: np.ndarray, centroids: np.ndarray, chunk: int = 16384) -> tuple[np.ndarray, np.ndarray]:
    """(label, euclidean distance) of each row's nearest centroid; ties go to the lower cluster id."""
    n = x.shape[0]
    labels = np.empty(n, dtype=np.int64)
    dists = np.empty(n, dtype=np.float64)
    c = centroids.astype(np.float32)
    c_sq = (c.astype(np.float64) ** 2).sum(axis=1)
    for start in range(0, n, chunk):
        block = x[start:start + chunk].astype(np.float32)
        d2 = c_sq[None, :] - 2.0 * (block @ c.T).astype(np.float64) + (block.astype(np.float64) ** 2).sum(axis=1)[:, None]
        lab = np.argmin(d2, axis=1)
        labels[start:start + chunk] = lab
        dists[start:start + chunk] = np.sqrt(np.maximum(d2[np.arange(len(block)), lab], 0.0))
    return labels, dists


def _kmeans(x: np.ndarray, k: int, config: ClusterConfig, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    if k <= 1 or x.shape[1] == 0:
        return x.mean(axis=0, keepdims=True).astype(np.float32) if k <= 1 else np.zeros((k, x.shape[1]), np.float32)
    km = KMeans(n_clusters=k, n_init=config.n_init, max_iter=config.max_iter, random_state=seed, algorithm="lloyd")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # fewer distinct points than k: empty clusters
        km.fit(x)
    return km.cluster_centers_.astype(np.float32)


def _view_model(x: np.ndarray, ids: Sequence[str], k: int, m: int, config: ClusterConfig,
                seed: int) -> tuple[ViewModel, np.ndarray, np.ndarray, np.ndarray]:
    centroids = _kmeans(x, k, config, seed)
    labels, dists = _nearest(x, centroids)
    k = centroids.shape[0]
    order = np.lexsort((np.arange(len(labels)), dists, labels))  # by cluster, then distance, then row
    sorted_labels = labels[order]
    starts = np.searchsorted(sorted_labels, np.arange(k), side="left")
    ends = np.searchsorted(sorted_labels, np.arange(k), side="right")
    sizes = (ends - starts).astype(np.int64)
    rep_counts = np.minimum(sizes, m).astype(np.int64)
    rep_vectors = np.zeros((k, max(m, 1), x.shape[1]), dtype=np.float32)
    representatives: list[list[str]] = []
    is_rep = np.zeros(len(labels), dtype=bool)
    for c in range(k):
        rows = order[starts[c]:starts[c] + rep_counts[c]]
        rep_vectors[c, :len(rows)] = x[rows]
        representatives.append([ids[i] for i in rows])
        is_rep[rows] = True
    # the fit-time baseline for drift: each member's leave-one-out distance (to its centroid computed
    # without it, d * s / (s - 1)), so the baseline is not flattered by the member pulling the centroid
    member_sizes = sizes[labels]
    multi = member_sizes > 1
    loo = dists[multi] * member_sizes[multi] / (member_sizes[multi] - 1)
    baseline = float(loo.mean()) if len(loo) else (float(dists.mean()) if len(dists) else 0.0)
    model = ViewModel(centroids, sizes, baseline, representatives, rep_vectors, rep_counts)
    return model, labels, dists, is_rep


def _assignment_frame(ids: Sequence[str], view: str, labels: np.ndarray, dists: np.ndarray,
                      is_rep: np.ndarray, version: str, hashes: Sequence[str | None]) -> pl.DataFrame:
    n = len(ids)
    return pl.DataFrame({
        "dialogue_id": list(ids),
        "view": [view] * n,
        "cluster_id": labels.astype(np.int64),
        "distance": dists.astype(np.float64),
        "is_representative": is_rep.astype(bool),
        "model_version": [version] * n,
        "text_hash": list(hashes),
    }, schema=CLUSTER_ASSIGNMENTS_SCHEMA)


def _graph_sketch(semantic: np.ndarray, dims: int | None, seed: int) -> np.ndarray | None:
    if dims is None or dims >= semantic.shape[1] or semantic.shape[0] < 2:
        return None
    from sklearn.utils.extmath import randomized_svd

    rng = np.random.default_rng(seed)
    sample = semantic if semantic.shape[0] <= 20000 else semantic[np.sort(rng.choice(semantic.shape[0], 20000, replace=False))]
    n_comp = min(dims, sample.shape[0] - 1)
    _, _, vt = randomized_svd(sample.astype(np.float32), n_components=n_comp, n_iter=4, random_state=seed)
    return vt.astype(np.float32)


def fit_clusters(rows: Any, *, k: int | None = None, seed: int = 0, config: ClusterConfig | None = None,
                 text_column: str = "text", embeddings: np.ndarray | None = None, embedder: Any = None) -> ClusterModel:
    """Fit the three views and KMeans per view. ``k`` overrides ``config.k``; ``embeddings`` (aligned with
    rows) skip the embedder. The returned model carries ``fit_assignments`` (a ``cluster_assignments``
    frame for the fit rows) and ``fit_features``; neither is serialized."""
    config = config or ClusterConfig()
    ids, texts = _rows(rows, text_column)
    n = len(ids)
    if n == 0:
        raise ValueError("cannot cluster an empty corpus")
    if len(set(ids)) != n:
        raise ValueError("dialogue_id must be unique among the rows to fit")
    k_eff = k if k is not None else config.k
    k_eff = min(n, max(1, int(k_eff))) if k_eff is not None else choose_k(n, config.k_min, config.k_max)
    m = config.n_representatives

    semantic = _semantic(texts, embeddings, embedder)
    with _thread_limit(config.threads):
        raw = _structural_matrix(texts)
        mean = raw.mean(axis=0)
        std = raw.std(axis=0)
        std = np.where(std > 1e-9, std, 1.0)
        structural = _standardize(raw, mean, std)
        heuristic_model = _fit_heuristic(texts, config, seed)
        heuristic = heuristic_model.transform(texts)
        features = FeatureViews(ids, semantic, structural, heuristic)

        views: dict[str, ViewModel] = {}
        per_view: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for name in VIEWS:
            views[name], labels, dists, is_rep = _view_model(features.view(name), ids, k_eff, m, config, seed)
            per_view[name] = (labels, dists, is_rep)
        graph_components = _graph_sketch(semantic, config.graph_dims, seed)

    digest = hashlib.sha256()
    digest.update(json.dumps([asdict(config), seed, k_eff], sort_keys=True).encode())
    digest.update("\x1f".join(ids).encode("utf-8"))
    for name in VIEWS:
        digest.update(np.ascontiguousarray(views[name].centroids).tobytes())
    version = "c" + digest.hexdigest()[:12]

    embedding_model = None
    if embeddings is None:
        embedding_model = getattr(embedder, "model_name", None)
        if embedder is None:
            from sarag_assets.core.encoding.embedder import default_embedder

            embedding_model = default_embedder().model_name
    model = ClusterModel(
        config=config, seed=seed, model_version=version, n_fit_rows=n, embedding_model=embedding_model,
        struct_mean=mean, struct_std=std, heuristic=heuristic_model,
        graph_components=graph_components, views=views,
    )
    hashes = [text_hash(t) for t in texts]
    model.fit_assignments = pl.concat(
        [_assignment_frame(ids, name, *per_view[name], version, hashes) for name in VIEWS], how="vertical"
    )
    model.fit_features = features
    return model


def assign(model: ClusterModel, new_rows: Any, *, text_column: str = "text", embeddings: np.ndarray | None = None,
           embedder: Any = None, features: FeatureViews | None = None) -> pl.DataFrame:
    """Put new rows on the nearest existing centroid per view (no refit) and update the model's drift
    counters in place. Returns a ``cluster_assignments`` frame (``is_representative`` is always false:
    representatives change only on refit)."""
    if features is None:
        features = compute_features(model, new_rows, text_column=text_column, embeddings=embeddings, embedder=embedder)
    by_id = dict(zip(*_rows(new_rows, text_column)))
    hashes = [text_hash(by_id[d]) if d in by_id else None for d in features.dialogue_ids]
    frames = []
    for name in VIEWS:
        view = model.views[name]
        with _thread_limit(model.config.threads, "blas"):
            labels, dists = _nearest(features.view(name), view.centroids)
        view.n_assigned += len(labels)
        view.assigned_distance_sum += float(dists.sum())
        frames.append(_assignment_frame(features.dialogue_ids, name, labels, dists,
                                        np.zeros(len(labels), dtype=bool), model.model_version, hashes))
    return pl.concat(frames, how="vertical")


def drift_report(model: ClusterModel, threshold: float | None = None, *, max_new_share: float | None = None,
                 min_rows: int | None = None) -> dict[str, Any]:
    """Per view: fit-time and assigned mean distance and their ratio; overall: new-row share, the verdict
    and its reasons. See the module docstring for the rule."""
    cfg = model.config
    threshold = cfg.drift_threshold if threshold is None else threshold
    max_new_share = cfg.max_new_share if max_new_share is None else max_new_share
    min_rows = cfg.drift_min_rows if min_rows is None else min_rows
    reasons = []
    per_view = {}
    for name, v in model.views.items():
        ratio = v.drift_ratio
        per_view[name] = {
            "fit_mean_distance": v.fit_mean_distance,
            "assigned_mean_distance": (v.assigned_distance_sum / v.n_assigned) if v.n_assigned else None,
            "ratio": ratio,
            "n_assigned": v.n_assigned,
        }
        if ratio is not None and v.n_assigned >= min_rows and ratio >= threshold:
            reasons.append(f"{name} drift ratio {ratio:.2f} >= {threshold}")
    share = model.n_assigned / model.n_fit_rows if model.n_fit_rows else 0.0
    if share >= max_new_share:
        reasons.append(f"{share:.0%} of the fit rows assigned since the fit (>= {max_new_share:.0%})")
    return {"model_version": model.model_version, "views": per_view, "new_share": share,
            "needs_refit": bool(reasons), "reasons": reasons}


def needs_refit(model: ClusterModel, threshold: float | None = None, *, max_new_share: float | None = None,
                min_rows: int | None = None) -> bool:
    return drift_report(model, threshold, max_new_share=max_new_share, min_rows=min_rows)["needs_refit"]


# ---------------------------------------------------------------------------------------------------------
# frames


def _current(assignments: pl.DataFrame, model_version: str | None = None) -> pl.DataFrame:
    """One row per (dialogue_id, view): the last one (a later assignment supersedes an earlier one)."""
    frame = assignments
    if model_version is not None:
        frame = frame.filter(pl.col("model_version") == model_version)
    return frame.unique(subset=["dialogue_id", "view"], keep="last", maintain_order=True)


def clusters_frame(model: ClusterModel, assignments: pl.DataFrame | None = None) -> pl.DataFrame:
    """``clusters``: one row per (view, cluster) of the model; sizes from the current assignments (fit plus
    assigned, the last assignment per dialogue and view), or the fit sizes when none are given."""
    records = []
    sizes: dict[tuple[str, int], int] = {}
    if assignments is not None:
        counted = _current(assignments, model.model_version).group_by(["view", "cluster_id"]).len()
        sizes = {(v, int(c)): int(n) for v, c, n in counted.iter_rows()}
    for name in VIEWS:
        v = model.views[name]
        for c in range(v.k):
            size = sizes.get((name, c), 0) if assignments is not None else int(v.fit_sizes[c])
            records.append((name, c, size, int(v.rep_counts[c]), model.model_version))
    return pl.DataFrame(records, schema=CLUSTERS_SCHEMA, orient="row")


def oversized_clusters(clusters: pl.DataFrame, max_share: float = 0.5) -> pl.DataFrame:
    """The clusters holding more than ``max_share`` of their view's rows (for a warning check), with
    a ``share`` column."""
    return (
        clusters.with_columns((pl.col("size") / pl.col("size").sum().over("view")).alias("share"))
        .filter(pl.col("share") > max_share)
        .sort(["view", "cluster_id"])
    )
