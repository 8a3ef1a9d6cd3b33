"""How far a past conversation stands out for a question: the weak-match rule. No Dagster."""

from __future__ import annotations

# A conversation whose similarity to the query does not stand this many standard deviations above the
# corpus's mean is a weak match (`Sarag.match_strength`): a conventional outlier bound, fitted to no corpus.
WEAK_BELOW_SD = 3.0


def is_weak(strength: float | None, matched: list | None = None) -> bool:
    """A weak match: it does not stand out from the corpus (`Sarag.match_strength`; never said of a corpus
    too small to tell) and holds none of the values the question names (`Hit.matched_columns`)."""
    return strength is not None and strength < WEAK_BELOW_SD and not matched
