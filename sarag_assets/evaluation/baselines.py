"""Text retrieval baselines over raw conversation text: ``text_freq``, ``bm25``, ``dense``. No Dagster.

Each baseline is built once over the corpus and then searched::

    docs = [(dialogue_id, conversation_text(turns)), ...]     # the whole conversation, turns joined
    bm25 = BM25Retriever().fit(docs)
    bm25.search(query.text, k=10)                             # -> [(dialogue_id, score), ...], best first

The query text of a multi-turn query is all its turns joined (``EvalQuery.text``): a text baseline sees
the whole conversation so far, as the full system does.

Analysis (``analyze``), shared by ``text_freq`` and ``bm25`` so they differ only in weighting:
NFKC + lowercase; "n't" is rewritten " not" and "cannot" "can not"; tokens are runs of letters and
digits, with dotted numbers kept whole (``11.1.2``, like Unicode word segmentation), and in Chinese and
Japanese the overlapping pairs of Han and kana characters (as Lucene's CJK analyzer); one-letter tokens
and a short list of English function words (``STOPWORDS``: articles, pronouns, auxiliaries,
prepositions, conjunctions, negations; no content words) are dropped; a light suffix stemmer
(``stem``: plural -s/-ies, -ed, -ing, final -e; no dictionary) folds inflections.

- ``text_freq``: score(d) = sum over the query's distinct terms of the term's raw count in d. No idf and
  no length normalization, on purpose: it is the naive "how often do my words occur" baseline, so long
  conversations and frequent words weigh more.
- ``bm25``: Okapi BM25, k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (the
  non-negative form Lucene uses), over the query's distinct terms; document length = analyzed tokens.
- ``dense``: all-MiniLM-L6-v2 (``sarag_assets.core.encoding.embedder``), cosine of the query text and the raw
  conversation text. The model reads at most 256 word pieces (about 150-200 English words) and the
  rest is silently cut, so a long conversation is represented by its opening: usually the user's
  problem statement, often not the helper's answer or later corrections. That is what embedding raw
  conversations means with this model, so the baseline does exactly that: one vector per conversation
  from the text the model accepts, no chunking. ``truncated_share`` reports how many conversations
  were cut.

Ranking: highest score first; equal scores are ordered by dialogue id (string order), so results are
deterministic. The sparse baselines return only conversations sharing at least one term with the query
(a query none of whose terms occurs returns []); dense returns the top k of all. An empty or
whitespace-only query raises ``ValueError``. Scores are float; term matrices are scipy sparse, so
fitting and searching 100k conversations is cheap (one sparse column sum per query term).
"""

from __future__ import annotations

import re
import time
import unicodedata
from functools import lru_cache
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy import sparse

from sarag_assets.core.writing import cjk_bigrams, without_cjk

__all__ = [
    "STOPWORDS",
    "NEGATIONS",
    "analyze",
    "stem",
    "TextFrequencyRetriever",
    "BM25Retriever",
    "DenseRetriever",
    "BASELINE_NAMES",
    "make_baseline",
    "fit_baselines",
    "run_queries",
]

# Sentential negators (a preposition like "without" negates a phrase, not the statement: "without fail").
NEGATIONS = frozenset("no not nor never none nothing nobody neither".split())
STOPWORDS = frozenset(
    """a an the this that these those there here
    i me my mine myself you your yours yourself he him his she her hers it its itself we us our ours they them
    their theirs what which who whom whose
    am is are was were be been being have has had having do does did doing done will would shall should can
    could may might must ought
    and or but if then than so as because while until although though also too very just only
    of at by for with without about against between into through during before after above below to from up down in
    on off over under again further once out
    all any both each few more most other some such own same
    how when where why
    ll re ve
    """.split()
) | NEGATIONS

_IRREGULAR = {"can": "can", "won": "will", "shan": "shall"}
_IRREGULAR_NEGATION = re.compile(r"\b(can|won|shan)(?:['\u2019]t|not)\b")  # can't, cannot, won't, shan't
_NEGATION_CONTRACTION = re.compile(r"(?<=[a-z])n['\u2019]t\b")
_TOKEN = re.compile(r"\d+(?:\.\d+)+|[^\W_]+")  # dotted numbers whole, else runs of letters/digits
_DOUBLE_END = re.compile(r"([b-df-hj-kmnp-rtv-y])\1$")  # doubled final consonant (not l, s, z)


@lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    """A light, dictionary-free suffix stemmer: folds plural -s/-ies, -ed, -ing and a final -e.

    ``charges``/``charged``/``charging``/``charge`` -> ``charg``; ``stopped`` -> ``stop``; ``replies``
    -> ``reply``. Tokens with digits or of three letters or fewer are left alone. It errs on the side of
    doing little (no -ly, -ation, ... folding); both sides of every comparison go through it.
    """
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith("ies") and len(token) > 4:
        token = token[:-3] + "y"
    elif token.endswith("s") and not token.endswith(("ss", "us", "is")):
        token = token[:-1]
    for suffix in ("ing", "ed"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            token = token[: -len(suffix)]
            if _DOUBLE_END.search(token):
                token = token[:-1]
            break
    if token.endswith("e") and len(token) > 3:
        token = token[:-1]
    return token


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = _IRREGULAR_NEGATION.sub(lambda m: _IRREGULAR[m.group(1)] + " not", text)
    return _NEGATION_CONTRACTION.sub(" not", text)


def analyze(text: str, *, keep_negations: bool = False) -> list[str]:
    """The analyzed terms of a text (see the module docstring). ``keep_negations`` keeps no/not/never..."""
    stop = STOPWORDS - NEGATIONS if keep_negations else STOPWORDS
    text = _normalize(text)
    out = []
    for tok in _TOKEN.findall(without_cjk(text)):
        if tok in stop or (len(tok) == 1 and tok.isalpha()):
            continue
        out.append(stem(tok))
    return out + cjk_bigrams(text)


def _check_docs(docs: Iterable[tuple[str, str]]) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    seen: set[str] = set()
    for i, item in enumerate(docs):
        try:
            did, text = item
        except (TypeError, ValueError):
            raise ValueError(f"docs[{i}] must be a (dialogue_id, text) pair") from None
        if not isinstance(did, str) or not did:
            raise ValueError(f"docs[{i}]: the dialogue id must be a non-empty string, got {did!r}")
        if not isinstance(text, str):
            raise ValueError(f"docs[{i}] ({did!r}): the text must be a string, got {type(text).__name__}")
        if did in seen:
            raise ValueError(f"docs[{i}]: duplicate dialogue id {did!r}")
        seen.add(did)
        ids.append(did)
        texts.append(text)
    if not ids:
        raise ValueError("cannot fit a baseline on an empty corpus")
    return ids, texts


def _check_query(query_text: str, k: int) -> None:
    if not isinstance(query_text, str):
        raise ValueError(f"the query text must be a string, got {type(query_text).__name__}")
    if not query_text.strip():
        raise ValueError("the query text is empty")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


class _Ranked:
    """Shared top-k selection with the deterministic tie-break (score desc, then dialogue id asc)."""

    name = "baseline"

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._id_rank: np.ndarray | None = None
        self.fit_seconds: float | None = None

    def _set_ids(self, ids: list[str]) -> None:
        self.ids = ids
        order = sorted(range(len(ids)), key=ids.__getitem__)
        rank = np.empty(len(ids), dtype=np.int64)
        rank[order] = np.arange(len(ids))
        self._id_rank = rank

    def _require_fit(self) -> None:
        if self._id_rank is None:
            raise RuntimeError(f"{type(self).__name__}.search called before fit()")

    def _top(self, scores: np.ndarray, k: int, candidates: np.ndarray | None = None) -> list[tuple[str, float]]:
        idx = np.arange(len(scores)) if candidates is None else candidates
        if idx.size == 0:
            return []
        vals = scores[idx]
        if idx.size > k:
            kth = np.partition(vals, idx.size - k)[idx.size - k]  # the k-th largest score
            keep = vals >= kth  # every tie at the boundary stays in, the tie-break decides
            idx, vals = idx[keep], vals[keep]
        order = np.lexsort((self._id_rank[idx], -vals))[:k]
        return [(self.ids[i], float(vals[j])) for j, i in zip(order, idx[order])]

    def __len__(self) -> int:
        return len(self.ids)


class _SparseRetriever(_Ranked):
    def __init__(self) -> None:
        super().__init__()
        self.vocabulary: dict[str, int] = {}
        self._weights: sparse.csc_matrix | None = None  # docs x terms, the per-(doc, term) score

    def _term_counts(self, texts: Sequence[str]) -> sparse.csr_matrix:
        vocab: dict[str, int] = {}
        indptr = [0]
        indices: list[int] = []
        data: list[int] = []
        for text in texts:
            counts: dict[int, int] = {}
            for term in analyze(text):
                j = vocab.setdefault(term, len(vocab))
                counts[j] = counts.get(j, 0) + 1
            indices.extend(counts)
            data.extend(counts.values())
            indptr.append(len(indices))
        self.vocabulary = vocab
        return sparse.csr_matrix(
            (np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
            shape=(len(texts), max(1, len(vocab))),
        )

    def _weigh(self, tf: sparse.csr_matrix) -> sparse.csr_matrix:
        raise NotImplementedError

    def fit(self, docs: Iterable[tuple[str, str]]) -> "_SparseRetriever":
        start = time.perf_counter()
        ids, texts = _check_docs(docs)
        self._set_ids(ids)
        self._weights = self._weigh(self._term_counts(texts)).tocsc()
        self.fit_seconds = time.perf_counter() - start
        return self

    def query_terms(self, query_text: str) -> list[str]:
        """The query's distinct analyzed terms that occur in the corpus, in first-seen order."""
        return [t for t in dict.fromkeys(analyze(query_text)) if t in self.vocabulary]

    def search(self, query_text: str, k: int = 10) -> list[tuple[str, float]]:
        _check_query(query_text, k)
        self._require_fit()
        cols = [self.vocabulary[t] for t in self.query_terms(query_text)]
        if not cols:
            return []
        w = self._weights
        spans = [slice(w.indptr[c], w.indptr[c + 1]) for c in cols]  # each term's postings (CSC column)
        rows = np.concatenate([w.indices[sp] for sp in spans])
        scores = np.bincount(rows, weights=np.concatenate([w.data[sp] for sp in spans]), minlength=w.shape[0])
        return self._top(scores, k, np.flatnonzero(scores > 0))


class TextFrequencyRetriever(_SparseRetriever):
    """score(d) = sum over the query's distinct terms of their raw count in d (no idf, no length norm)."""

    name = "text_freq"

    def _weigh(self, tf: sparse.csr_matrix) -> sparse.csr_matrix:
        return tf


class BM25Retriever(_SparseRetriever):
    """Okapi BM25 (k1 = 1.2, b = 0.75, Lucene's non-negative idf) over the query's distinct terms."""

    name = "bm25"

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        super().__init__()
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1, self.b = float(k1), float(b)

    def _weigh(self, tf: sparse.csr_matrix) -> sparse.csr_matrix:
        n_docs = tf.shape[0]
        doc_len = np.asarray(tf.sum(axis=1)).ravel()
        avg_len = float(doc_len.mean()) or 1.0
        df = np.bincount(tf.indices, minlength=tf.shape[1]).astype(np.float64)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        w = tf.copy()
        row_norm = self.k1 * (1.0 - self.b + self.b * doc_len / avg_len)  # per document
        rows = np.repeat(np.arange(n_docs), np.diff(tf.indptr))
        f = w.data
        w.data = idf[w.indices] * f * (self.k1 + 1.0) / (f + row_norm[rows])
        return w


class DenseRetriever(_Ranked):
    """all-MiniLM-L6-v2 cosine between the query text and each raw conversation (truncated by the model)."""

    name = "dense"

    def __init__(self, embedder=None) -> None:
        super().__init__()
        self._embedder = embedder
        self._vectors: np.ndarray | None = None
        self.truncated_share: float | None = None  # share of conversations longer than the model reads

    @property
    def embedder(self):
        if self._embedder is None:
            from sarag_assets.core.encoding.embedder import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    def _truncated_share(self, texts: Sequence[str]) -> float | None:
        """Share of texts longer than the model reads (`Embedder.fits`); None for an embedder that cannot say."""
        fits = getattr(self.embedder, "fits", None)
        if fits is None:
            return None
        try:
            return sum(not fits(t) for t in texts) / len(texts)
        except Exception:  # a custom model without a tokenizer to count with
            return None

    def fit(self, docs: Iterable[tuple[str, str]], *, measure_truncation: bool = True) -> "DenseRetriever":
        start = time.perf_counter()
        ids, texts = _check_docs(docs)
        self._set_ids(ids)
        self._vectors = np.asarray(self.embedder.encode(texts), dtype=np.float32)
        self.fit_seconds = time.perf_counter() - start
        if measure_truncation:
            self.truncated_share = self._truncated_share(texts)
        return self

    def search(self, query_text: str, k: int = 10) -> list[tuple[str, float]]:
        _check_query(query_text, k)
        self._require_fit()
        q = np.asarray(self.embedder.encode_one(query_text), dtype=np.float32)
        scores = self._vectors @ q
        return self._top(scores.astype(np.float64), k)


BASELINE_NAMES: tuple[str, ...] = ("text_freq", "bm25", "dense")


def make_baseline(name: str, *, embedder=None) -> _Ranked:
    """An unfitted baseline by name (``text_freq``, ``bm25``, ``dense``)."""
    if name == "text_freq":
        return TextFrequencyRetriever()
    if name == "bm25":
        return BM25Retriever()
    if name == "dense":
        return DenseRetriever(embedder)
    raise ValueError(f"unknown baseline {name!r}; expected one of {', '.join(BASELINE_NAMES)}")


def fit_baselines(
    docs: Sequence[tuple[str, str]], names: Sequence[str] = BASELINE_NAMES, *, embedder=None
) -> dict[str, _Ranked]:
    """Each named baseline fitted over the same (dialogue_id, text) corpus."""
    docs = list(docs)
    return {name: make_baseline(name, embedder=embedder).fit(docs) for name in names}


def run_queries(
    search: Callable[[str, int], list[tuple[str, float]]], query_texts: Sequence[str], k: int = 10
) -> tuple[list[list[str]], list[float]]:
    """Run every query through ``search(text, k)``: the ranked dialogue ids and each query's latency (ms)."""
    ranked: list[list[str]] = []
    latencies: list[float] = []
    for text in query_texts:
        start = time.perf_counter()
        hits = search(text, k)
        latencies.append((time.perf_counter() - start) * 1000.0)
        ranked.append([did for did, _ in hits])
    return ranked, latencies
