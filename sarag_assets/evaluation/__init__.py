"""Evaluation toolkit: query/corpus files, retrieval and nugget metrics, text baselines, reports.

Plain functions and small classes, no Dagster (the ``sarag eval`` command and the evaluation assets wire
them to the query module and the materialized assets):

- ``queries``: load and validate QUERIES.jsonl (``load_queries`` -> ``EvalQuery``) and CORPUS.jsonl.
- ``metrics``: Recall@k, MRR@3, nDCG@10 (linear gain), nugget coverage@3 with a documented offline
  matching rule (``NuggetMatcher``), per-query scores and their means overall and per query kind.
- ``baselines``: ``text_freq``, ``bm25`` and ``dense`` retrieval over raw conversation text.
- ``report``: the report structure and its JSON contract, stdout table, markdown and a bar chart.
"""

from sarag_assets.evaluation.baselines import (
    BASELINE_NAMES,
    BM25Retriever,
    DenseRetriever,
    TextFrequencyRetriever,
    fit_baselines,
    make_baseline,
    run_queries,
)
from sarag_assets.evaluation.metrics import (
    NuggetMatcher,
    aggregate,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank_at_k,
    score_queries,
)
from sarag_assets.evaluation.queries import (
    CorpusDialogue,
    CorpusFileError,
    EvalQuery,
    QueryFileError,
    load_corpus,
    load_queries,
)
from sarag_assets.evaluation.report import (
    EvalReport,
    build_report,
    render_bar_chart,
    render_markdown,
    render_table,
)

__all__ = [
    "BASELINE_NAMES",
    "BM25Retriever",
    "DenseRetriever",
    "TextFrequencyRetriever",
    "fit_baselines",
    "make_baseline",
    "run_queries",
    "NuggetMatcher",
    "aggregate",
    "ndcg_at_k",
    "recall_at_k",
    "reciprocal_rank_at_k",
    "score_queries",
    "CorpusDialogue",
    "EvalQuery",
    "QueryFileError",
    "CorpusFileError",
    "load_corpus",
    "load_queries",
    "EvalReport",
    "build_report",
    "render_bar_chart",
    "render_markdown",
    "render_table",
]
