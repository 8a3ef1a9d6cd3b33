"""How far a past conversation stands out for a question: the weak-match rule. No Dagster."""

from __future__ import annotations

import numpy as np

from sarag_assets.core.indices.store import CONVERSATION_TEXTS
from sarag_assets.query.dense import DenseIndexes

# A conversation whose similarity to the query does not stand this many standard deviations above the
# corpus's mean is a weak match (`match_strength`): a conventional outlier bound, fitted to no corpus.
WEAK_BELOW_SD = 3.0


def match_strength(dense: DenseIndexes, vector: np.ndarray, dialogue_ids: list[str]) -> dict[str, float | None]:
    """How far each conversation stands out for this query: its cosine to the query vector (whole
    conversation, ``conversation_texts``) in standard deviations above the mean over every conversation.
    A conversation that does not stand out from the corpus is a weak match, whatever its rank
    (`is_weak`). None for a corpus too small for any conversation to stand out that far: among n
    values none lies more than (n - 1) / sqrt(n) standard deviations above their mean. None too for a
    corpus too big to hold in memory (`exact_search_max_rows`)."""
    if not dense.in_memory(CONVERSATION_TEXTS) and dense.store.counts(CONVERSATION_TEXTS) > dense.max_rows:
        return {d: None for d in dialogue_ids}
    index = dense.get(CONVERSATION_TEXTS)
    n = len(index)
    if n < 2 or (n - 1) / np.sqrt(n) < WEAK_BELOW_SD:
        return {d: None for d in dialogue_ids}
    cosines = index.cosines(vector)
    mean, spread = float(cosines.mean()), float(cosines.std())
    position = index.row_of
    return {d: (float(cosines[position[d]]) - mean) / spread if d in position and spread > 0 else 0.0
            for d in dialogue_ids}


def is_weak(strength: float | None, matched: list | None = None) -> bool:
    """A weak match: it does not stand out from the corpus (`match_strength`; never said of a corpus
    too small to tell) and holds none of the values the question names (`Hit.matched_columns`)."""
    return strength is not None and strength < WEAK_BELOW_SD and not matched


def weak_matches(ranked: list[tuple[str, bool]]) -> set[str]:
    """The weak matches of a ranking ((dialogue id, `is_weak`) best first) that an answer sets aside: those
    ranked below the first conversation that stands out. What the ranking, which reads every view, puts
    above a close match is no weaker a match than that one, though it stands out less to the model alone.
    Measured with `evaluation.answer_quality.score_answers` on the real IRC follow-ups (CC BY 4.0, homes
    of `eab56e4`), fix from gold / nugget coverage: #ubuntu 0.319 / 0.329 -> 0.325 / 0.329, the other
    channels 0.404 / 0.405 -> 0.421 / 0.422. With none standing out, all are weak."""
    first_close = next((i for i, (_, weak) in enumerate(ranked) if not weak), len(ranked))
    return {d for i, (d, weak) in enumerate(ranked) if weak and i > first_close} if first_close < len(ranked) \
        else {d for d, _ in ranked}
