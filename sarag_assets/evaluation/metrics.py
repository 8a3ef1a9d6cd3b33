"""Retrieval metrics, offline nugget coverage, and their aggregation over queries. No Dagster.

Retrieval (``ranked`` = dialogue ids best first; a repeated id counts at its first position only;
``gold`` = the query's gold dialogue ids, non-empty):

- ``recall_at_k``: |gold ∩ top k| / |gold|.
- ``reciprocal_rank_at_k`` (MRR@3 with k = 3): 1 / rank of the first gold id within the top k, 0 if none.
- ``ndcg_at_k``: linear gain, rel_i = 1 if the id at rank i is gold else 0;
  DCG@k = Σ_{i=1..k} rel_i / log2(i + 1); ideal DCG puts all gold first (min(|gold|, k) ones);
  nDCG = DCG / ideal DCG.

Nugget coverage@3 (``NuggetMatcher``): the share of a query's nuggets covered by the evidence of the top
3 results (for a retrieval system: the top 3 conversations' text; for an answering system: its answer
and the evidence it shows). A nugget is covered when, in some *window* of the evidence (one sentence,
or two adjacent sentences of the same evidence text; sentences end at . ! ? or a line break), either

1. token overlap: at least ``TOKEN_OVERLAP_THRESHOLD`` = 0.8 of the nugget's distinct content terms
   occur in the window. Terms come from ``baselines.analyze`` with negations kept: NFKC, lowercase,
   punctuation stripped, "n't" -> "not", English function words dropped except no/not/never/...,
   a light suffix stemmer (plural, -ed, -ing, final -e). Why 0.8: nuggets are short atomic facts (2-8
   content terms). Up to 4 terms, every term carries the fact (often the only verb is the fact:
   "*restart* the router and the modem" must not be covered by a sentence that only names the two
   devices), so all must occur; from 5 terms on, one term in five may differ (a synonym, a dropped
   modifier). The terms must co-occur within one or two sentences, not anywhere in a long
   conversation, which keeps chance matches out.
2. embedding similarity: the cosine between the nugget and the window, both embedded with
   all-MiniLM-L6-v2, is at least ``COSINE_THRESHOLD`` = 0.70. Why 0.70: with this model, sentences about
   the same topic that state a different fact commonly score 0.4-0.6 (same product, different step),
   close paraphrases 0.65-0.9; 0.70 sits above the same-topic band so an embedding match means "says
   the same thing", at the price of missing loose paraphrases. Coverage is therefore conservative: a
   miss may be a paraphrase, a hit is rarely a different fact.

Polarity guard (both rules): a window can cover a nugget only if both or neither contain a negation
word (no, not, never, none, nothing, nobody, neither, nor; "n't" and "cannot" count; "without" does
not: it negates a phrase, not the statement, as in "without fail"). The embedding model barely sees
negation ("the warranty does not cover water damage" vs "the warranty covers water damage" scores
above 0.9) and the token rule would let a missing "not" be the one term in five; so "X is not
accepted" is never covered by "X is accepted", at the price of missing paraphrases that negate with
other words ("refused") or windows that contain an unrelated "no". (First written with "without" in
the list; taken out when an inspection showed "expire after 7 days without fail" blocked.)

Known false positives: the embedding rule can credit a question that names the nugget's topic ("when
do the codes expire?" against "a code stays valid for 7 days" scores about 0.74); questions are kept as
evidence because a nugget can be what an agent asks for ("the order ID").

The thresholds were set from these general properties, not fitted to any evaluation set's scores (the
token threshold was first 0.75 and raised to 0.8 when a 4-term false positive of the kind above showed
up in an inspection of individual matches); the tests check both rules with hand-written paraphrases
and near-miss non-matches.

Aggregation: ``score_queries`` gives each query its metrics; ``aggregate`` averages them over all queries
and per query kind (when kinds exist). nugget_coverage@3 averages over the queries that have nuggets.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Sequence

import numpy as np

from sarag_assets.evaluation.baselines import NEGATIONS, analyze

__all__ = [
    "RETRIEVAL_METRICS",
    "NUGGET_METRIC",
    "TOKEN_OVERLAP_THRESHOLD",
    "COSINE_THRESHOLD",
    "recall_at_k",
    "reciprocal_rank_at_k",
    "ndcg_at_k",
    "retrieval_scores",
    "nugget_terms",
    "split_sentences",
    "evidence_windows",
    "NuggetMatch",
    "NuggetMatcher",
    "nugget_coverage_at_k",
    "QueryScore",
    "score_queries",
    "mean_scores",
    "aggregate",
]

RETRIEVAL_METRICS: tuple[str, ...] = ("R@1", "R@3", "R@10", "MRR@3", "nDCG@10")
NUGGET_METRIC = "nugget_coverage@3"
NUGGET_K = 3

TOKEN_OVERLAP_THRESHOLD = 0.8
COSINE_THRESHOLD = 0.70


# --------------------------------------------------------------------------------------------------
# Retrieval metrics
# --------------------------------------------------------------------------------------------------


def _check(gold: Collection[str], k: int) -> set[str]:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("gold is empty: a query needs at least one gold dialogue to be scored")
    return gold_set


def _top(ranked: Sequence[str], k: int) -> list[str]:
    """The first k distinct ids (a repeated id counts at its first position only)."""
    out: list[str] = []
    seen: set[str] = set()
    for did in ranked:
        if did not in seen:
            seen.add(did)
            out.append(did)
            if len(out) == k:
                break
    return out


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """|gold ∩ top k| / |gold|."""
    gold_set = _check(gold, k)
    return sum(did in gold_set for did in _top(ranked, k)) / len(gold_set)


def reciprocal_rank_at_k(ranked: Sequence[str], gold: Collection[str], k: int = 3) -> float:
    """1 / (rank of the first gold id in the top k), 0 when none of the top k is gold."""
    gold_set = _check(gold, k)
    for rank, did in enumerate(_top(ranked, k), start=1):
        if did in gold_set:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], gold: Collection[str], k: int = 10) -> float:
    """nDCG@k with linear gain (rel 1 for gold, 0 otherwise), DCG = Σ rel_i / log2(i + 1)."""
    gold_set = _check(gold, k)
    dcg = sum(1.0 / math.log2(i + 1) for i, did in enumerate(_top(ranked, k), start=1) if did in gold_set)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold_set), k) + 1))
    return dcg / ideal


def retrieval_scores(ranked: Sequence[str], gold: Collection[str]) -> dict[str, float]:
    """R@1, R@3, R@10, MRR@3 and nDCG@10 of one ranking."""
    return {
        "R@1": recall_at_k(ranked, gold, 1),
        "R@3": recall_at_k(ranked, gold, 3),
        "R@10": recall_at_k(ranked, gold, 10),
        "MRR@3": reciprocal_rank_at_k(ranked, gold, 3),
        "nDCG@10": ndcg_at_k(ranked, gold, 10),
    }


# --------------------------------------------------------------------------------------------------
# Nugget coverage
# --------------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


def nugget_terms(text: str) -> list[str]:
    """The distinct content terms of a text as the token-overlap rule sees them (negations kept)."""
    return list(dict.fromkeys(analyze(text, keep_negations=True)))


def split_sentences(text: str) -> list[str]:
    """Sentences of a text: split after . ! ? followed by space, and at line breaks; empty pieces dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def evidence_windows(texts: Sequence[str], size: int = 2) -> list[str]:
    """Every run of 1..size adjacent sentences within each evidence text (never across two texts)."""
    out: list[str] = []
    for text in texts:
        sentences = split_sentences(text)
        for width in range(1, size + 1):
            for i in range(len(sentences) - width + 1):
                out.append(" ".join(sentences[i : i + width]))
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class NuggetMatch:
    nugget: str
    covered: bool
    rule: str | None  # "tokens", "embedding", or None when not covered
    token_overlap: float  # best share of the nugget's terms found in one window
    cosine: float | None  # best cosine over windows (None when the token rule already matched)
    window: str | None  # the window that matched (or came closest by cosine)


class NuggetMatcher:
    """Offline nugget matching: token overlap >= ``token_threshold`` OR cosine >= ``cosine_threshold``."""

    def __init__(
        self,
        embedder=None,
        *,
        token_threshold: float = TOKEN_OVERLAP_THRESHOLD,
        cosine_threshold: float = COSINE_THRESHOLD,
        window_sentences: int = 2,
    ) -> None:
        if not 0 < token_threshold <= 1 or not -1 <= cosine_threshold <= 1 or window_sentences < 1:
            raise ValueError("thresholds must be in (0, 1] (tokens) and [-1, 1] (cosine); windows >= 1 sentence")
        self._embedder = embedder
        self.token_threshold = token_threshold
        self.cosine_threshold = cosine_threshold
        self.window_sentences = window_sentences

    @property
    def embedder(self):
        if self._embedder is None:
            from sarag_assets.core.encoding.embedder import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    def match(self, nuggets: Sequence[str], evidence: Sequence[str] | str) -> list[NuggetMatch]:
        """How each nugget fares against the evidence (a text or a list of texts)."""
        texts = [evidence] if isinstance(evidence, str) else [t for t in evidence if isinstance(t, str)]
        windows = evidence_windows(texts, self.window_sentences)
        if not windows:
            return [NuggetMatch(n, False, None, 0.0, None, None) for n in nuggets]
        window_terms = [set(analyze(w, keep_negations=True)) for w in windows]
        window_negated = np.array([bool(wt & NEGATIONS) for wt in window_terms])
        results: dict[int, NuggetMatch] = {}
        pending: list[tuple[int, float, np.ndarray]] = []
        for i, nugget in enumerate(nuggets):
            terms = nugget_terms(nugget)
            allowed = window_negated == bool(set(terms) & NEGATIONS)  # the polarity guard
            best, best_w = 0.0, None
            if terms:
                for w, wt, ok in zip(windows, window_terms, allowed):
                    if not ok:
                        continue
                    share = sum(t in wt for t in terms) / len(terms)
                    if share > best:
                        best, best_w = share, w
            if terms and best >= self.token_threshold:
                results[i] = NuggetMatch(nugget, True, "tokens", best, None, best_w)
            elif not allowed.any():
                results[i] = NuggetMatch(nugget, False, None, best, None, None)
            else:
                pending.append((i, best, allowed))
        if pending:
            vectors = self.embedder.encode([nuggets[i] for i, _, _ in pending] + windows)
            nug, win = vectors[: len(pending)], vectors[len(pending) :]
            sims = nug @ win.T
            for row, (i, overlap, allowed) in enumerate(pending):
                masked = np.where(allowed, sims[row], -np.inf)
                j = int(np.argmax(masked))
                cos = float(sims[row, j])
                covered = cos >= self.cosine_threshold
                results[i] = NuggetMatch(nuggets[i], covered, "embedding" if covered else None, overlap, cos, windows[j])
        return [results[i] for i in range(len(nuggets))]

    def coverage(self, nuggets: Sequence[str], evidence: Sequence[str] | str) -> float:
        """Share of the nuggets covered by the evidence; raises ValueError for no nuggets."""
        if not nuggets:
            raise ValueError("no nuggets to cover")
        return sum(m.covered for m in self.match(nuggets, evidence)) / len(nuggets)


def nugget_coverage_at_k(
    nuggets: Sequence[str], evidence_ranked: Sequence[str], k: int = NUGGET_K, matcher: NuggetMatcher | None = None
) -> float:
    """Coverage of the nuggets by the evidence texts of the top k results (``evidence_ranked`` best first)."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return (matcher or NuggetMatcher()).coverage(nuggets, list(evidence_ranked)[:k])


# --------------------------------------------------------------------------------------------------
# Per query and aggregated
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryScore:
    query_id: str
    kind: str | None
    scores: dict[str, float]  # RETRIEVAL_METRICS, plus NUGGET_METRIC when the query has nuggets
    ranked: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # the query's extra fields (pattern, ...)


def score_queries(
    queries: Sequence,
    rankings: Mapping[str, Sequence[str]] | Sequence[Sequence[str]],
    *,
    evidence: Mapping[str, Sequence[str]] | None = None,
    texts: Mapping[str, str] | None = None,
    matcher: NuggetMatcher | None = None,
) -> list[QueryScore]:
    """Score each query (``EvalQuery``) against its ranking (by query id, or a list in query order).

    Nugget coverage@3 is computed for queries with nuggets when evidence is available: either
    ``evidence[query_id]`` (texts, best first: an answer and/or retrieved evidence) or, for retrieval
    systems, ``texts`` (dialogue id -> conversation text) applied to the top 3 of the ranking.
    """
    if not isinstance(rankings, Mapping):
        rankings = list(rankings)
        if len(rankings) != len(queries):
            raise ValueError(f"{len(rankings)} rankings for {len(queries)} queries")
        rankings = {q.query_id: r for q, r in zip(queries, rankings)}
    missing = [q.query_id for q in queries if q.query_id not in rankings]
    if missing:
        raise ValueError(f"no ranking for {len(missing)} queries, e.g. {missing[0]!r}")
    use_nuggets = evidence is not None or texts is not None
    if use_nuggets and matcher is None:
        matcher = NuggetMatcher()
    out = []
    for q in queries:
        ranked = list(rankings[q.query_id])
        scores = retrieval_scores(ranked, q.gold)
        if q.nuggets and use_nuggets:
            if evidence is not None and q.query_id in evidence:
                ev = list(evidence[q.query_id])[:NUGGET_K]
            elif texts is not None:
                ev = [texts[d] for d in _top(ranked, NUGGET_K) if d in texts]
            else:
                ev = []
            scores[NUGGET_METRIC] = matcher.coverage(q.nuggets, ev)
        out.append(QueryScore(q.query_id, q.kind, scores, ranked, dict(getattr(q, "extra", {}) or {})))
    return out


def mean_scores(scores: Sequence[QueryScore]) -> dict[str, float]:
    """Mean of each metric over the queries that have it (retrieval metrics: all queries)."""
    if not scores:
        return {}
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for s in scores:
        for name, value in s.scores.items():
            sums[name] += value
            counts[name] += 1
    order = [m for m in (*RETRIEVAL_METRICS, NUGGET_METRIC) if m in sums] + sorted(
        m for m in sums if m not in RETRIEVAL_METRICS and m != NUGGET_METRIC
    )
    return {m: sums[m] / counts[m] for m in order}


def aggregate(scores: Sequence[QueryScore], *, group_by: str = "kind") -> dict[str, Any]:
    """``{"all": means, "n": count, "by_<group_by>": {group: {"n", **means}}}``.

    ``group_by`` is ``"kind"`` or any extra field of the queries (``"pattern"``); queries without a value
    for it are left out of the groups (never out of "all"). The groups dict is empty when none has one.
    """
    groups: dict[str, list[QueryScore]] = defaultdict(list)
    for s in scores:
        key = s.kind if group_by == "kind" else s.extra.get(group_by)
        if key is not None:
            groups[str(key)].append(s)
    return {
        "n": len(scores),
        "all": mean_scores(scores),
        f"by_{group_by}": {g: {"n": len(v), **mean_scores(v)} for g, v in sorted(groups.items())},
    }
