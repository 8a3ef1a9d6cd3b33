"""How the channels' lists become one ranking: the conversation's own text is the base, structure adds.
No Dagster imports.

Each channel returns its best conversations with scores on its own scale (cosines, BM25, PageRank
ratios). Within one query, a channel's scores are standardized over the list it returned,
``z = (score - mean) / std`` (a conversation the list lacks takes the list's lowest z). A channel sure of
its first conversation puts it several deviations above the rest; one that cannot tell its candidates
apart gives them nearly the same z and so moves little. Reciprocal-rank fusion cannot see this: it hands
every list the same 1 / (60 + rank) whatever its scores, so a weak list's arbitrary first place weighs as
much as a strong list's clear one (on real forum threads, rank fusion of dense and BM25 was below dense
alone; here every structure channel alone is below the text on every out-of-domain set).

For each conversation d, with z_1..z_n its standardized scores in the n text channels that are on
(``passages``: its best passage; ``conversation``: its whole text's vector; ``conversation_text``: BM25
over its whole text):

    base(d)      = mean(z_1..z_n)
    band(d)      = std(z_1..z_n) / sqrt(n)        the standard error of that mean: how unsure the text is
    structure(d) = mean z over the structure channels that are on (table_row, full_text, sdr, cluster_route)
    score(d)     = base(d) + band(d) x tanh(structure(d))

So structure moves a conversation by less than the text channels' own disagreement about it (at most its
band, up or down): where they agree, it cannot move it at all; where they disagree, it decides within that
uncertainty. A conversation can therefore overtake another only if their bases are closer than the sum
of their bands, and one that no text channel returned has no band: structure cannot rescue it. There is no
weight to set: the band comes from the query's own lists. The table match then lifts the rows holding the
values the query names (`engine.RowShares.lift`, ``trust² x share`` deviations), outside the band: it is
the one kind of evidence the text does not carry (which product "that one" is), and trust² is how far
the table may be believed for those values. With no text channel on (the ``sdr``, ``table`` and ``trag``
systems, an ``only_`` system of a structure channel), the structure channels' mean z is the ranking; with
one text channel on, the band is 0 and the structure channels change nothing.

Last, the neighbours vote (`with_neighbours`): conversations about the same problem resemble one another
(the cluster hypothesis of pseudo-relevance feedback), so each candidate is scored by the cosine of its
own conversation vector to the centroid of the ranking's first ``NEIGHBOUR_SEEDS``, standardized like
any list, and that z joins the score as one more text vote: ``(n x score + z) / (n + 1)``. It reads no
query: it reads what the ranking already found, so it cannot bring in a weak list's stray first place;
it moves the candidates that resemble the best answers up among them. With no more candidates than
seeds there is nothing to reorder and the vote is not cast.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

TEXT_CHANNELS = ("passages", "conversation", "conversation_text")
STRUCTURE_LISTS = ("table_row", "full_text", "sdr", "cluster_route")
# The first conversations of the fused ranking whose centroid the neighbours vote reads: the top the
# answer is read from, and a few so that one stray first hit does not decide it alone. Set before any
# measurement and never varied.
NEIGHBOUR_SEEDS = 3


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


def mean_z(lists: Mapping[str, Sequence[tuple[str, float]]], names: Sequence[str]) -> dict[str, float]:
    """Mean standardized score over the named lists, for every conversation in any of them."""
    present = [n for n in names if lists.get(n)]  # an empty list (a table not built) says nothing
    if not present:
        return {}
    per = [standardized(lists[n]) for n in present]
    ids = {d for n in present for d, _ in lists[n]}
    return {d: sum(z.get(d, floor) for z, floor in per) / len(per) for d in ids}


def fuse(lists: Mapping[str, Sequence[tuple[str, float]]]) -> dict[str, float]:
    """The fused score of every conversation some list returned (before the table match's lift)."""
    text = [standardized(lists[n]) for n in TEXT_CHANNELS if lists.get(n)]
    structure = mean_z(lists, STRUCTURE_LISTS)
    if not text:
        return structure
    ids = {d for z, _ in text for d in z} | set(structure)
    structure_floor = min(structure.values(), default=0.0)
    n = len(text)
    fused = {}
    for d in ids:
        zs = [z.get(d, floor) for z, floor in text]
        base = sum(zs) / n
        # a conversation no text channel returned has no text doubt to resolve: it stays at the floor
        if n > 1 and structure and any(d in z for z, _ in text):
            band = math.sqrt(sum((x - base) ** 2 for x in zs) / (n - 1) / n)
            base += band * math.tanh(structure.get(d, structure_floor))
        fused[d] = base
    return fused


def neighbours(fused: Mapping[str, float], unit_vectors: Mapping[str, np.ndarray],
               seeds: int = NEIGHBOUR_SEEDS) -> list[tuple[str, float]]:
    """Every candidate holding a vector, by the cosine of its unit vector to the centroid of the first
    ``seeds`` such candidates of the ranking (ties by id), best first; [] when there are no more
    candidates than seeds."""
    order = [d for d in sorted(fused, key=lambda d: (-fused[d], d)) if d in unit_vectors]
    if len(order) <= seeds:
        return []
    centroid = np.mean([unit_vectors[d] for d in order[:seeds]], axis=0, dtype=np.float64)
    length = float(np.linalg.norm(centroid))
    if not length > 0:
        return []
    scored = [(d, float(np.dot(unit_vectors[d], centroid)) / length) for d in order]
    return sorted(scored, key=lambda hit: (-hit[1], hit[0]))


def with_neighbours(fused: Mapping[str, float], hits: Sequence[tuple[str, float]], votes: int) -> dict[str, float]:
    """The fused scores with the neighbours list's z as one vote beside ``votes`` others (the text
    channels); a candidate it lacks takes its lowest z."""
    if not hits:
        return dict(fused)
    z, floor = standardized(hits)
    votes = max(1, votes)
    return {d: (votes * s + z.get(d, floor)) / (votes + 1) for d, s in fused.items()}
