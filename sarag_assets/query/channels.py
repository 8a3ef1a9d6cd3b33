"""Each channel's best conversations for one query, over one published state. No Dagster.

- ``passages``: dense search over the conversation's passages (LanceDB ``conversation_passages``), each
  conversation scored by its best passage;
- ``conversation_text``: BM25 over each conversation's whole redacted text (``conversation_texts``);
- ``table_row``: dense search over the linearized table rows (LanceDB ``table_rows``);
- ``full_text``: BM25 over the same rows (LanceDB native FTS), query = every turn, the latest first;
- ``issue`` / ``solution``: dense search over the SDR pseudo-documents, fused per conversation as
  ``alpha * s_issue + (1 - alpha) * s_solution`` (cosine scores; a side that did not return the
  conversation contributes its lowest returned score, an upper bound of the missing one) — one list
  (`alpha_fuse`);
- ``cluster_route``: T-RAG — the best cluster per feature view, then personalized PageRank (damping 0.85)
  over the candidates' similarity graph (`core.indices.cluster_route.ClusterIndex`);
- ``table_match``: rows holding the values the conversation mentioned (`understanding.ValueLexicon`),
  ranked by the summed idf of the values they hold (`table_match.entity_shares`). This is how
  "that one" in the latest turn still selects the product named three turns ago.

How the lists become one ranking is `query.ranking`.
"""

from __future__ import annotations

import numpy as np

from sarag_assets.core.indices.cluster_route import ClusterIndex
from sarag_assets.core.indices.clusters import ClusterModel, query_vectors
from sarag_assets.core.indices.store import CONVERSATION_PASSAGES, TABLE_ROWS, IndexStore
from sarag_assets.query.dense import DenseIndexes
from sarag_assets.query.published import PublishedTables
from sarag_assets.query.table_match import RowShares, entity_shares
from sarag_assets.query.understanding import Query, normalize

CHANNELS = ("passages", "conversation_text", "table_row", "full_text", "issue", "solution",
            "cluster_route", "table_match")
PASSAGES_PER_CONVERSATION = 4  # passages read first per conversation wanted (a long thread has several near the top)


class Channels:
    """The channels of one opened state: dense and BM25 searches of its LanceDB tables, the cluster route
    (its index built on first use) and the table match over its governed table. Each returns
    ``[(dialogue id, score)]``, best first."""

    def __init__(self, store: IndexStore, dense: DenseIndexes, tables: PublishedTables):
        self.store = store
        self.dense = dense
        self.tables = tables
        self.row_ids = sorted(tables.rows)  # positions in id order: a position breaks ties as the id would
        self.row_position = {d: i for i, d in enumerate(self.row_ids)}
        self._positions: dict[tuple[str, str], np.ndarray] = {}
        self._cluster_index: ClusterIndex | None = None
        self._cluster_model: ClusterModel | None = None

    def search_dense(self, table: str, vector: np.ndarray, depth: int) -> list[tuple[str, float]]:
        """The table's ``depth`` best conversations for the vector."""
        if table != CONVERSATION_PASSAGES:
            return self.dense.search(table, vector, depth)
        # several passages per conversation: read deeper until `depth` conversations (or every passage)
        # are in, each by its best passage
        want = PASSAGES_PER_CONVERSATION * depth
        while True:
            hits = self.dense.search(table, vector, want)
            best: dict[str, float] = {}
            for dialogue_id, score in hits:
                best.setdefault(dialogue_id, score)
            if len(best) >= depth or len(hits) < want:
                return list(best.items())[:depth]
            want *= 4

    def search_text(self, table: str, text: str, depth: int) -> list[tuple[str, float]]:
        hits = self.store.text_search(table, text, depth, columns=["dialogue_id"])  # no row texts to fetch
        return [(h["dialogue_id"], float(h["score"])) for h in hits]

    def cluster_index(self) -> ClusterIndex | None:
        """The cluster route's index, built on first use (it reads every row vector once); None in a home
        without a cluster model."""
        if self._cluster_index is None and self.tables.cluster_model is not None:
            model = ClusterModel.from_bytes(self.tables.cluster_model)
            rows = self.dense.get(TABLE_ROWS)  # one row per dialogue; the matrix is shared, not copied
            self._cluster_model = model
            self._cluster_index = ClusterIndex.build(model, self.tables.assignments, rows.dialogue_ids, rows.vectors)
        return self._cluster_index

    def route(self, parsed: Query, vector: np.ndarray, depth: int) -> list[tuple[str, float]]:
        index = self.cluster_index()
        if index is None:
            return []
        views = query_vectors(self._cluster_model, parsed.full_text(), embedding=vector)
        return [(h.dialogue_id, float(h.score)) for h in index.route(views, top_k=depth)]

    def table_trust(self, parsed: Query) -> float:
        """How far the table stands for the values the query names: each value's rows holding it over the
        conversations mentioning it (`ValueLexicon.trust`, from the value_mentions asset), averaged with
        the values' idf, their weights in the match. Its square scales the table_match channel and the
        boost, so a table that caught a common word, or missed most conversations naming a product,
        cannot promote the few rows that hold it."""
        lexicon = self.tables.lexicon
        total = trusted = 0.0
        for e in parsed.entities:
            key = normalize(e.value)
            held = len(lexicon.rows(e.column, key))
            if not held:
                continue
            gain = lexicon.idf(held) * e.confidence
            total += gain
            trusted += gain * lexicon.trust(e.column, key, self.tables.mentions)
        return trusted / total if total > 0 else 1.0

    def entity_shares(self, parsed: Query) -> RowShares:
        """The rows holding the values the query names, each with its share of them."""
        return entity_shares(parsed.entities, lambda e: self._value_positions(e.column, normalize(e.value)),
                             self.tables.lexicon.idf, self.row_ids)

    def _value_positions(self, column: str, normalized_value: str) -> np.ndarray:
        """The table positions (`row_ids` order) of the rows holding a value, sorted; kept once computed
        (at most one entry per lexicon value)."""
        key = (column, normalized_value)
        found = self._positions.get(key)
        if found is None:
            holders = self.tables.lexicon.rows(column, normalized_value)
            found = np.sort(np.fromiter((self.row_position[d] for d in holders), dtype=np.int64))
            self._positions[key] = found
        return found


def alpha_fuse(issue: list[tuple[str, float]], solution: list[tuple[str, float]], alpha: float,
               use_issue: bool, use_solution: bool) -> list[tuple[str, float]]:
    """The SDR list: ``alpha * s_issue + (1 - alpha) * s_solution`` per conversation (module docstring)."""
    if not use_issue:
        alpha = 0.0
    if not use_solution:
        alpha = 1.0
    by_issue, by_solution = dict(issue), dict(solution)
    floor_i = min(by_issue.values(), default=0.0)
    floor_s = min(by_solution.values(), default=0.0)
    scores = {d: alpha * by_issue.get(d, floor_i) + (1 - alpha) * by_solution.get(d, floor_s)
              for d in set(by_issue) | set(by_solution)}
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))
