"""How the channels' lists become one ranking: one vote per view, weighted by what the home earned. No Dagster.

Each channel returns its best conversations with scores on its own scale (cosines, BM25, PageRank
ratios). Within one query, a channel's scores are standardized over the list it returned,
``z = (score - mean) / std`` (a conversation the list lacks takes the list's lowest z), so a channel sure of
its first conversation puts it several deviations above the rest, and one that cannot tell its candidates
apart moves little.

Channels that read the same thing the same way are one *view*, and a view is one vote, however many
channels it has: the table channels read its row, by the model and by BM25. Counted apart, correlated
channels outvote an independent one that is right (on a real FAQ corpus the structure channels, all
reading the latest turn's topic words, outvoted the BM25 channel that carried the place's name). A view's
z is the mean of its channels' z:

    lexical  conversation_text (BM25 over the whole text)
    dense    passages (each conversation by its best passage; the whole conversation's vector was a
             second channel here until it showed no gain on the real IRC follow-ups, docs/results.md)
    table    table_row (dense), full_text (BM25 over the row), lifted by the table match
    sdr      the issue/solution pseudo-documents (fused by alpha first)
    trag     cluster_route

    score(d) = sum_v w_v z_v(d) / sum_v w_v

over the views whose channels are on. The weights ``w`` are the home's own (`query.calibration`): measured
on its conversations, a view keeps its vote only where it was seen to find them; without a measurement the
text views vote, one each, and structure none. When the views that are on all weigh 0 (the ``table``
system of a home whose calibration gave the table no vote), they vote equally: a system of one view is
that view's ranking.

The table match lifts, within the table view, the rows holding the values the query names by ``trust² x
share`` deviations (`table_match.RowShares.lift`): the one thing the text does not carry (which product "that
one" is), as far as the table can be believed for those values. With no table channel on but the match,
the match's own order is the table view.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

VIEWS: dict[str, tuple[str, ...]] = {
    "lexical": ("conversation_text",),
    "dense": ("passages",),
    "table": ("table_row", "full_text"),
    "sdr": ("sdr",),
    "trag": ("cluster_route",),
}
TEXT_VIEWS = ("lexical", "dense")
# Without a calibration of the home: the conversation's own words, each reading one vote; structure none.
DEFAULT_WEIGHTS: dict[str, float] = {"lexical": 1.0, "dense": 1.0}

ViewScores = dict[str, tuple[dict[str, float], float]]  # view -> (z per conversation, z of one it lacks)


def standardized(hits: Sequence[tuple[str, float]]) -> tuple[dict[str, float], float]:
    """Each listed conversation's z-score within the list, and the z given to one it lacks (its lowest).
    A list whose scores are all equal says nothing about order: every z is 0."""
    if not hits:
        return {}, 0.0
    scores = np.array([s for _, s in hits], dtype=np.float64)
    std = float(scores.std())
    if not np.isfinite(std) or std <= 1e-12:
        return {d: 0.0 for d, _ in hits}, 0.0
    z = (scores - scores.mean()) / std
    return {d: float(v) for (d, _), v in zip(hits, z)}, float(z.min())


def mean_z(lists: Mapping[str, Sequence[tuple[str, float]]], names: Sequence[str]) -> tuple[dict[str, float], float]:
    """Mean standardized score over the named lists, for every conversation in any of them, and the mean
    of their floors (what a conversation none of them returned gets)."""
    present = [n for n in names if lists.get(n)]  # an empty list (a table not built) says nothing
    if not present:
        return {}, 0.0
    per = [standardized(lists[n]) for n in present]
    ids = {d for n in present for d, _ in lists[n]}
    scores = {d: sum(z.get(d, floor) for z, floor in per) / len(per) for d in ids}
    return scores, sum(floor for _, floor in per) / len(per)


def view_scores(lists: Mapping[str, Sequence[tuple[str, float]]]) -> ViewScores:
    """Each view's z per conversation (the mean over its channels' lists), for the views holding any."""
    out: ViewScores = {}
    for view, names in VIEWS.items():
        scores, floor = mean_z(lists, names)
        if scores:
            out[view] = (scores, floor)
    return out


def effective_weights(views: Sequence[str], weights: Mapping[str, float]) -> dict[str, float]:
    """The weights of the given views; equal when none of them has any."""
    chosen = {v: float(weights.get(v, 0.0)) for v in views}
    if not any(w > 0 for w in chosen.values()):
        return {v: 1.0 for v in views}
    return chosen


def combine(views: ViewScores, weights: Mapping[str, float]) -> dict[str, float]:
    """``sum_v w_v z_v(d) / sum_v w_v`` for every conversation a voting view returned."""
    w = {v: x for v, x in effective_weights(list(views), weights).items() if x > 0}
    total = sum(w.values())
    ids = {d for v in w for d in views[v][0]}
    return {d: sum(x * views[v][0].get(d, views[v][1]) for v, x in w.items()) / total for d in ids}


def fuse(lists: Mapping[str, Sequence[tuple[str, float]]], weights: Mapping[str, float] = DEFAULT_WEIGHTS,
         table: Callable[[dict[str, float], float], tuple[dict[str, float], float]] | None = None) -> dict[str, float]:
    """The fused score of every conversation a voting view returned. ``table(z, floor)``, when given, turns
    the table view's scores into the lifted ones (`table_match.RowShares.lift`); it is called with an empty view
    when no table channel is on."""
    views = view_scores(lists)
    if table is not None:
        lifted = table(*views.get("table", ({}, 0.0)))
        if lifted[0]:
            views["table"] = lifted
    return combine(views, weights)
