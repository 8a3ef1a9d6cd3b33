"""Structure-aware retrieval over what the asset graph materialized. No Dagster imports.

`Sarag(home)` opens the home's last published state (`core.publication`): its read-only warehouse copy
and the LanceDB table versions it pinned, whatever the pipeline is writing meanwhile. The governed
table's cells, the cluster model and the row vectors are read once; full-text search asks LanceDB (at
the pinned version) each time. `refresh()` moves an opened engine to a newer published state.
`search(query, k)` fuses these channels into one ranking (`query.fusion`), the conversation's own text
first:

- ``passages``: dense search over the conversation's passages (LanceDB ``conversation_passages``), each
  conversation scored by its best passage;
- ``conversation``: dense search over each whole conversation (``conversation_texts``: the mean of its
  passages' vectors);
- ``conversation_text``: BM25 over each conversation's whole redacted text (``conversation_texts``);
- ``table_row``: dense search over the linearized table rows (LanceDB ``table_rows``);
- ``full_text``: BM25 over the same rows (LanceDB native FTS), query = every turn, the latest first;
- ``issue`` / ``solution``: dense search over the SDR pseudo-documents, fused per conversation as
  ``alpha * s_issue + (1 - alpha) * s_solution`` (cosine scores; a side that did not return the
  conversation contributes its lowest returned score, an upper bound of the missing one) — one list;
- ``cluster_route``: T-RAG — the best cluster per feature view, then personalized PageRank (damping 0.85)
  over the candidates' similarity graph (`core.indices.cluster_route.ClusterIndex`);
- ``table_match``: rows holding the values the conversation mentioned (`understanding.ValueLexicon`),
  ranked by the summed idf of the values they hold (`entity_shares`). This is how
  "that one" in the latest turn still selects the product named three turns ago.

Channels reading the same thing are one view, and each view is one vote, weighed as the home's own
conversations measured it (`query.fusion`, `query.calibration`): without a measurement the two text views
vote and structure does not. Within the table view, a row holding mentioned values is lifted by
``trust² x share`` standard deviations (the share of the mentioned values it holds); ``trust`` is how
completely the table holds the named values (rows holding each over the conversations mentioning it,
`_table_trust`), and its square is the net good of lifting the holders: they rise above the
conversations not naming the values (right), and above the share ``1 - trust`` of those naming them
whose rows missed them (wrong): ``t - t(1 - t) = t²``. Ties are
broken by dialogue id, so the same home and query always give the same ranking. The query vector is the
embedding of the turns read together (`Query.embedding_text`, `embed`), encoded by the runtime this
machine runs one short text on faster (`core.encoding.runtime_choice`; the `encoder_runtime` setting can
name one).
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sarag_assets.core.indices.store import (
    CONVERSATION_PASSAGES,
    CONVERSATION_TEXTS,
    GRAPH_NODES,
    ISSUE_DOCUMENTS,
    SOLUTION_DOCUMENTS,
    TABLE_ROWS,
)
from sarag_assets.query.damage import reading_published_copy
from sarag_assets.query.dense import DenseIndexes
from sarag_assets.query.fusion import DEFAULT_WEIGHTS, ViewScores, combine, view_scores
from sarag_assets.query.strength import WEAK_BELOW_SD
from sarag_assets.query.table_match import RowShares, entity_shares
from sarag_assets.query.understanding import (
    Query,
    QueryError,
    ValueLexicon,
    normalize,
    read_query,
    readable_text,
    unit_vector,
)
from sarag_assets.settings import Home, Settings

CHANNELS = ("passages", "conversation", "conversation_text", "table_row", "full_text", "issue", "solution",
            "cluster_route", "table_match")
PASSAGES_PER_CONVERSATION = 4  # passages read first per conversation wanted (a long thread has several near the top)
DEFAULT_ALPHA = 0.5
_SKIP_TYPES = {"boolean", "date", "datetime"}  # values that name nothing: true, 2024-01-02


class HomeNotReady(RuntimeError):
    """The home has no materialized tables or indices to search."""


class StateRetired(QueryError):
    """The published state an open reader holds is gone (retention keeps the last two)."""


class LLMRequired(RuntimeError):
    """The operation needs an LLM endpoint and none is configured."""


def query_errors() -> tuple[type[BaseException], ...]:
    """What a question, a statement or the LLM behind them can get wrong: the asker's to fix."""
    from sarag_assets.backends.llm import LLMCallFailed
    from sarag_assets.query.sql import SqlError

    return (QueryError, SqlError, LLMRequired, LLMCallFailed)


@dataclass(frozen=True)
class SearchSettings:
    channels: frozenset[str] = frozenset(CHANNELS)
    alpha: float = DEFAULT_ALPHA  # issue side weight in the SDR fusion
    depth: int = 50  # candidates asked of each channel; the ranking is made at this depth whatever k is

    def __post_init__(self):
        unknown = set(self.channels) - set(CHANNELS)
        if unknown:
            raise ValueError(f"unknown channels {sorted(unknown)}; known: {', '.join(CHANNELS)}")
        if not self.channels:
            raise ValueError("at least one channel must be on")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be within [0, 1], got {self.alpha}")

    @staticmethod
    def only(*channels: str, **kwargs) -> "SearchSettings":
        return SearchSettings(channels=frozenset(channels), **kwargs)

    def without(self, *channels: str) -> "SearchSettings":
        return replace(self, channels=frozenset(set(self.channels) - set(channels)))


@dataclass
class SearchHit:
    dialogue_id: str
    score: float
    rank: int
    channels: dict[str, dict[str, float]]  # channel -> {"rank", "score"}
    matched_columns: list[dict[str, Any]]  # [{column, value, turn, matched}]
    row: dict[str, str]  # the conversation's non-null table cells

    def as_dict(self) -> dict[str, Any]:
        return {"dialogue_id": self.dialogue_id, "score": round(self.score, 6), "rank": self.rank,
                "channels": self.channels, "matched_columns": self.matched_columns, "row": self.row}


@dataclass
class Ranking:
    """One query's ranking at one depth: each channel's list (``sdr`` and ``table_match`` as fused), the
    dense lists as searched (``issue``, ``solution`` apart), each view's scores and the fused ones."""

    ranked: dict[str, list[tuple[str, float]]]
    lists: dict[str, list[tuple[str, float]]]
    views: ViewScores
    fused: dict[str, float]


@dataclass
class SearchResult:
    query: Query
    hits: list[SearchHit]
    query_vector: np.ndarray
    published_state: str | None = None  # the id of the published state the hits come from

    def ids(self) -> list[str]:
        return [h.dialogue_id for h in self.hits]


class Sarag:
    """One opened home. Thread-safe for searching once opened (nothing in it changes)."""

    def __init__(self, home: str | os.PathLike | Home | None = None, *, embedder=None,
                 settings: SearchSettings | None = None, llm=None):
        self.config = Settings.load(home.root if isinstance(home, Home) else home)
        self.home = home if isinstance(home, Home) else self.config.paths
        self.settings = settings or SearchSettings()
        self._embedder = embedder
        self._llm = llm
        # BM25, the route and (until their vectors are read) the three dense searches: none waits for a worker
        self._pool = ThreadPoolExecutor(max_workers=5, thread_name_prefix="sarag-search")
        self._open_state(published_state(self.home))

    def _open_state(self, state) -> None:
        """Read everything a search needs from one published state (see `core.publication`)."""
        self.publication = state
        self.store = state.index_store(str(self.home.lancedb))
        self.dense = DenseIndexes(self.store, max_rows=self.config.exact_search_max_rows)
        reading_published_copy(self._load_warehouse)  # its damage is mended by publishing again
        self._cluster_index = None
        self._cluster_model = None

    def refresh(self) -> bool:
        """Switch to the newest published state if it is newer than the one this engine reads. Call it
        between searches: a service that searches from many threads opens a new Sarag and swaps it in."""
        state = published_state(self.home)
        if state.id == self.publication.id:
            return False
        self._open_state(state)
        return True

    # ---- opening ----------------------------------------------------------------------------------

    def _load_warehouse(self) -> None:
        from sarag_assets.core import warehouse

        with warehouse.connect(self.publication.warehouse, read_only=True) as con:
            state = warehouse.latest_governance_state(con)
            columns = json.loads(state[1])["columns"] if state else []
            self.metadata_version = state[0] if state else None
            self.columns = [{"name": c["name"], "type": c.get("type", "string"),
                             "description": c.get("meaning") or c.get("description") or ""} for c in columns]
            names, table = warehouse.wide_rows(con, [c["name"] for c in self.columns])
            self.field_names = warehouse.source_field_names(con)
            tables = warehouse.table_names(con)
            self._cluster_bytes = warehouse.latest_cluster_model(con) if "cluster_models" in tables else None
            self._assignments = warehouse.cluster_assignments(con) if self._cluster_bytes else None
            # none in a home built before value_mentions existed: every value is then trusted fully
            self._mentions = warehouse.value_mention_counts(con)
            self._origins = warehouse.conversation_origins(con)  # every hit names its own: read once here
            calibration = warehouse.latest_ranking_calibration(con)
        # each view's vote, as the home's own conversations measured it (`query.calibration`)
        self.weights = calibration[1] if calibration else dict(DEFAULT_WEIGHTS)
        self.rows: dict[str, dict[str, str]] = {}  # in dialogue id order
        cells = []
        for record in table:
            dialogue_id = record[0]
            row = {n: v for n, v in zip(names, record[1:]) if v is not None}
            self.rows[dialogue_id] = row
            cells.extend((dialogue_id, n, v) for n, v in row.items())
        entity_columns = [c["name"] for c in self.columns if c["type"] not in _SKIP_TYPES]
        self.lexicon = ValueLexicon(cells, len(self.rows), columns=entity_columns)
        self.row_ids = sorted(self.rows)  # positions in id order: a position breaks ties as the id would
        self._row_position = {d: i for i, d in enumerate(self.row_ids)}
        self._positions: dict[tuple[str, str], np.ndarray] = {}

    @property
    def embedder(self):
        if self._embedder is None:
            from sarag_assets.core.encoding.embedder import Embedder

            threads = _limit_query_threads(self.config.query_threads)
            # bf16 pays off on the pipeline's batches; a query's few short texts are faster on onnx, whose
            # vectors are within the same tolerance of the model's
            runtime = "onnx" if self.config.encoder_runtime == "bf16" else self.config.encoder_runtime
            if runtime == "auto":  # the faster on one short text, which need not be the pipeline's
                from sarag_assets.core.encoding.embedder import runtime_choice

                runtime = runtime_choice(self.config.embedding_model, None, threads).queries
            self._embedder = Embedder(self.config.embedding_model, runtime=runtime, threads=threads)
        return self._embedder

    def _clusters(self):
        """The cluster route's index, built on first use (it reads every row vector once)."""
        if self._cluster_index is None and self._cluster_bytes is not None:
            from sarag_assets.core.indices.cluster_route import ClusterIndex
            from sarag_assets.core.indices.clusters import ClusterModel

            model = ClusterModel.from_bytes(self._cluster_bytes)
            rows = self.dense.get(TABLE_ROWS)  # one row per dialogue; the matrix is shared, not copied
            self._cluster_model = model
            self._cluster_index = ClusterIndex.build(model, self._assignments, rows.dialogue_ids, rows.vectors)
        return self._cluster_index

    def close(self) -> None:
        self._pool.shutdown(wait=False)

    def __enter__(self) -> "Sarag":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- searching --------------------------------------------------------------------------------

    def understand(self, query) -> Query:
        parsed = read_query(query)
        parsed.entities = self.lexicon.find(parsed)
        return parsed

    def embed(self, parsed: Query) -> np.ndarray:
        """The query vector: the embedding of the turns read together (`Query.embedding_text`), without
        its earliest lines where the model would cut its latest."""
        text = readable_text(parsed.embedding_text(), getattr(self.embedder, "fits", None))
        return unit_vector(self.embedder.encode([text])[0])

    def _ranking(self, parsed: Query, settings: SearchSettings, depth: int,
                 vector: np.ndarray | None = None) -> tuple[Ranking, np.ndarray]:
        """Each channel's ``depth`` best conversations, each view's scores (the table lifted by the match)
        and the fused ones; and the query vector, for a deeper ranking to reuse."""
        on = settings.channels
        jobs = {}
        # BM25 needs no vector: it runs on the other core while the query is embedded
        for name, table in (("conversation_text", CONVERSATION_TEXTS), ("full_text", TABLE_ROWS)):
            if name in on:
                jobs[name] = self._pool.submit(self._text, table, parsed.full_text(), depth)
        vector = self.embed(parsed) if vector is None else vector
        if "cluster_route" in on:  # the longest job that needs the vector: on another thread
            jobs["cluster_route"] = self._pool.submit(self._route, parsed, vector, depth)
        dense = [(name, table) for name, table in (("passages", CONVERSATION_PASSAGES),
                                                     ("conversation", CONVERSATION_TEXTS), ("table_row", TABLE_ROWS),
                                                     ("issue", ISSUE_DOCUMENTS), ("solution", SOLUTION_DOCUMENTS))
                 if name in on]
        for name, table in dense:  # to be read first, or searched by LanceDB (too big to hold): side by side
            if not self.dense.in_memory(table):
                jobs[name] = self._pool.submit(self._dense, table, vector, depth)
        lists = {}
        for name, table in dense:  # in memory: ~2 ms each at 100k rows, here rather than wait for the GIL
            if name not in jobs:
                lists[name] = self._dense(table, vector, depth)
        lists.update({name: job.result() for name, job in jobs.items()})
        ranked: dict[str, list[tuple[str, float]]] = {
            name: lists[name] for name in ("passages", "conversation", "conversation_text", "table_row", "full_text",
                                           "cluster_route")
            if name in lists}
        if "issue" in lists or "solution" in lists:
            ranked["sdr"] = _alpha_fuse(lists.get("issue", []), lists.get("solution", []), settings.alpha,
                                        "issue" in lists, "solution" in lists)
        views = view_scores(ranked)
        if "table_match" in on and parsed.entities:
            shares = self._entity_shares(parsed)
            scores, floor = views.get("table", ({}, 0.0))
            ranked["table_match"] = shares.top(depth, scores, self._row_position)
            if scores:
                views["table"] = (shares.lift(scores, self._table_trust(parsed) ** 2, self._row_position,
                                              joining=[d for d, _ in ranked["table_match"]]), floor)
            elif ranked["table_match"]:  # the table match alone: its own order
                views["table"] = ({d: -float(i) for i, (d, _) in enumerate(ranked["table_match"])}, -float(depth))
        fused = combine(views, self.weights)
        return Ranking(ranked, lists, views, fused), vector

    def search(self, query, k: int = 10, *, settings: SearchSettings | None = None) -> list[SearchHit]:
        return self.retrieve(query, k, settings=settings).hits

    def views(self, query, settings: SearchSettings | None = None) -> ViewScores:
        """Each view's scores for the query at the settings' depth, before they are weighed (what
        `query.calibration` measures)."""
        settings = settings or self.settings
        return self._ranking(self.understand(query), settings, settings.depth)[0].views

    def retrieve(self, query, k: int = 10, *, settings: SearchSettings | None = None) -> SearchResult:
        if not isinstance(k, int) or k < 1:
            raise QueryError(f"k must be a positive integer, got {k!r}")
        settings = settings or self.settings
        parsed = self.understand(query)
        # The ranking is made at the settings' depth whatever k is: a channel's z-scores depend on how long
        # its list is, so deeper lists for a larger k would reorder the top. A k beyond what that depth
        # found is filled from deeper lists, after it, so a longer list always starts with the shorter one.
        ranking, vector = self._ranking(parsed, settings, settings.depth)
        fused = ranking.fused
        order = sorted(fused, key=lambda d: (-fused[d], d))[:k]
        scores = dict(fused)
        if len(order) < k:
            deeper, _ = self._ranking(parsed, settings, max(5 * k, 2 * settings.depth), vector)
            seen, last = set(order), fused[order[-1]] if order else math.inf
            for d in sorted(deeper.fused, key=lambda d: (-deeper.fused[d], d)):
                if len(order) == k:
                    break
                if d not in seen:  # never above the ranking it extends
                    order.append(d)
                    last = scores[d] = min(deeper.fused[d], last)
            ranking = deeper  # the same lists, longer: the hits' channel ranks
        ranked, lists = ranking.ranked, ranking.lists
        per_channel = {name: {d: (i + 1, s) for i, (d, s) in enumerate(hits)} for name, hits in ranked.items()}
        for side in ("issue", "solution"):
            if side in lists:
                per_channel[side] = {d: (i + 1, s) for i, (d, s) in enumerate(lists[side])}
        per_channel.pop("sdr", None)
        hits = []
        for rank, dialogue_id in enumerate(order, start=1):
            found = {name: {"rank": r, "score": round(float(s), 6)}
                     for name, by_id in per_channel.items() if (hit := by_id.get(dialogue_id)) for r, s in [hit]}
            row = self.rows.get(dialogue_id, {})
            matched = [e.as_dict() for e in parsed.entities if row.get(e.column) == e.value]
            hits.append(SearchHit(dialogue_id, float(scores[dialogue_id]), rank, found, matched, dict(row)))
        return SearchResult(parsed, hits, vector, self.publication.id)

    # ---- answers ------------------------------------------------------------------------------------

    @property
    def llm(self):
        """The configured LLM (SARAG_LLM_BASE_URL), or None. Calls are not cached here: the query side
        never writes the warehouse."""
        if self._llm is None:
            from sarag_assets.backends.llm import LLMSettings, StructuredLLM

            settings = LLMSettings.from_config(self.config.llm)
            self._llm = StructuredLLM(settings) if settings else False
        return self._llm or None

    def evidence(self, query, *, k: int = 5, m: int = 2, radius: int = 1, depth: int = 2, max_triples: int = 20,
                 settings: SearchSettings | None = None):
        from sarag_assets.query.answers import Evidence, expand_triples, top_cells

        result = self.retrieve(query, k, settings=settings)
        hits = result.hits
        entity_columns = {c["name"] for c in self.columns if c["type"] not in _SKIP_TYPES}
        seeds = [(e.column, e.value) for e in result.query.entities]
        if not seeds and hits:
            seeds = [(c, v) for c, v in hits[0].row.items() if c in entity_columns and len(v) <= 60]
        ranked = [h.dialogue_id for h in hits]
        triples = expand_triples(seeds, ranked, self.rows,
                                 lambda c, v: self.lexicon.rows(c, normalize(v)) or
                                 {d for d in ranked if self.rows.get(d, {}).get(c) == v},
                                 entity_columns, depth=depth, max_triples=max_triples)
        nodes = self._graph_evidence(ranked, result.query_vector, m=m, radius=radius)
        mentioned = {(e.column, e.value) for e in result.query.entities}
        cells = top_cells(hits, result.query_vector, self.embedder, mentioned)
        rows = [{"dialogue_id": h.dialogue_id, "score": round(h.score, 6), "row": h.row} for h in hits]
        return result, Evidence(rows, triples, nodes, cells)

    def _graph_evidence(self, dialogue_ids: list[str], vector: np.ndarray, *, m: int, radius: int):
        from sarag_assets.core import warehouse
        from sarag_assets.core.indices.store import sql_string
        from sarag_assets.query.answers import walk_nodes

        if not dialogue_ids:
            return []
        with warehouse.connect(self._published_warehouse(), read_only=True) as con:
            nodes, edges = warehouse.graph_of(con, dialogue_ids)
        where = "dialogue_id IN (" + ", ".join(sql_string(d) for d in dialogue_ids) + ")"
        similarity = {(h["dialogue_id"], h.get("node_id")): float(h["score"])
                      for h in self.store.vector_search(GRAPH_NODES, vector, max(len(nodes), 1), where)}
        out = []
        for dialogue_id in dialogue_ids:
            own = [n for n in nodes if n["dialogue_id"] == dialogue_id]
            own_edges = [(s, t, r) for d, s, t, r in edges if d == dialogue_id]
            sims = {n["node_id"]: similarity.get((dialogue_id, n["node_id"]), -1.0) for n in own}
            out.extend(walk_nodes(own, own_edges, sims, m=m, radius=radius))
        return out

    def answer(self, query, *, k: int = 5, m: int = 2, radius: int = 1, settings: SearchSettings | None = None):
        """A grounded answer with citations and the fixes the conversations hold (`answers.answer_question`)."""
        from sarag_assets.query.answers import answer_question

        return answer_question(self, query, k=k, m=m, radius=radius, settings=settings)

    # ---- reading conversations ----------------------------------------------------------------------

    def origins(self, dialogue_ids: list[str]) -> dict[str, dict]:
        """Source file, format, first and last turn time and landing time of these conversations."""
        self._published_warehouse()  # StateRetired, as for every read of a retired state
        return {d: self._origins[d] for d in dialogue_ids if d in self._origins}

    def conversation(self, dialogue_id: str) -> dict | None:
        """A current conversation as stored (redacted turns), with its table cells and origin; None when
        the published state holds no conversation of that id."""
        from sarag_assets.core import warehouse

        with warehouse.connect(self._published_warehouse(), read_only=True) as con:
            turns = warehouse.conversation_turns(con, dialogue_id)
            origin = warehouse.conversation_origins(con, [dialogue_id]).get(dialogue_id)
        if not turns:
            return None
        return {"dialogue_id": dialogue_id, "turns": turns, "row": dict(self.rows.get(dialogue_id, {})),
                **(origin or {})}

    def match_strength(self, vector: np.ndarray, dialogue_ids: list[str]) -> dict[str, float | None]:
        """How far each conversation stands out for this query: its cosine to the query vector (whole
        conversation, ``conversation_texts``) in standard deviations above the mean over every conversation.
        A conversation that does not stand out from the corpus is a weak match, whatever its rank
        (`is_weak`). None for a corpus too small for any conversation to stand out that far: among n
        values none lies more than (n - 1) / sqrt(n) standard deviations above their mean. None too for a
        corpus too big to hold in memory (`exact_search_max_rows`)."""
        if not self.dense.in_memory(CONVERSATION_TEXTS) and self.store.counts(CONVERSATION_TEXTS) > self.dense.max_rows:
            return {d: None for d in dialogue_ids}
        index = self.dense.get(CONVERSATION_TEXTS)
        n = len(index)
        if n < 2 or (n - 1) / np.sqrt(n) < WEAK_BELOW_SD:
            return {d: None for d in dialogue_ids}
        cosines = index.cosines(vector)
        mean, spread = float(cosines.mean()), float(cosines.std())
        position = index.row_of
        return {d: (float(cosines[position[d]]) - mean) / spread if d in position and spread > 0 else 0.0
                for d in dialogue_ids}

    # ---- SQL ------------------------------------------------------------------------------------------

    def _published_warehouse(self):
        """The warehouse copy of the state this reader holds; StateRetired once newer publications retired it."""
        if not self.publication.warehouse.exists():
            raise StateRetired(f"the published state {self.publication.id} this reader opened was retired by newer "
                               "publications; refresh() reads the newest")
        return self.publication.warehouse

    def sql(self, statement: str, *, max_rows: int | None = None, runner=None):
        """One read-only SELECT within the home's SQL limits (`query.sql`; `runner`: `IsolatedSql.run` or
        `run_select`); raises SqlRefused for anything else and SqlLimitExceeded when a limit stops it."""
        from sarag_assets.query.sql import SqlLimits, run_select

        return (runner or run_select)(self._published_warehouse(), statement, max_rows=max_rows,
                                      limits=SqlLimits.from_settings(self.config))

    def schema(self) -> str:
        """The tables a question can be answered from, for people and for the LLM."""
        lines = ["conversation_table: one row per current conversation. Columns:",
                 "  dialogue_id VARCHAR, batch_key VARCHAR"]
        for c in self.columns:
            lines.append(f"  {c['name']} {c['type'].upper()}: {c['description']}".rstrip(": "))
        if self.field_names:
            lines.append("  source_fields JSON: the record's own fields as the source gave them, read one with "
                         f"source_fields->>'name'; names: {', '.join(self.field_names)}")
        lines += [
            "current_dialogues: one row per turn of the current conversations: dialogue_id, turn_index, "
            "role ('user' | 'agent'), speaker, text, ts, source_file, source_format, accepted (the source marks "
            "the turn as the accepted answer)",
            "graph_nodes: issue-solution units: dialogue_id, node_id, issue, answer, turn_start, turn_end",
            "pseudo_documents: dialogue_id, issue_document, solution_document",
        ]
        return "\n".join(lines)

    def ask_sql(self, question: str):
        """Question -> SQL (LLM) -> read-only rows -> an answer from those rows only."""
        from sarag_assets.query.answers import (
            SqlQuestionAnswer,
            answer_from_rows,
            plan_sql,
        )
        from sarag_assets.query.sql import SqlError

        if not isinstance(question, str) or not question.strip():
            raise QueryError("the question is empty")
        if self.llm is None:
            raise LLMRequired("ask_sql needs an LLM: set SARAG_LLM_BASE_URL and SARAG_LLM_MODEL "
                              "(or write the SQL yourself: sarag sql)")
        schema = self.schema()
        plan = plan_sql(self.llm, question, schema)
        try:
            result = self.sql(plan.sql)
        except SqlError as exc:
            plan = plan_sql(self.llm, question, schema, error=str(exc))
            result = self.sql(plan.sql)
        rows = [{k: _plain(v) for k, v in r.items()} for r in result.records()]
        reply = answer_from_rows(self.llm, question, result.statement, rows)
        return SqlQuestionAnswer(question, result.statement, plan.columns, rows, reply.answer.strip(),
                                 bool(reply.supported), f"llm/{self.llm.settings.model}", result.truncated)

    # ---- channels -----------------------------------------------------------------------------------

    def _dense(self, table: str, vector: np.ndarray, depth: int) -> list[tuple[str, float]]:
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

    def _text(self, table: str, text: str, depth: int) -> list[tuple[str, float]]:
        hits = self.store.text_search(table, text, depth, columns=["dialogue_id"])  # no row texts to fetch
        return [(h["dialogue_id"], float(h["score"])) for h in hits]

    def _table_trust(self, parsed: Query) -> float:
        """How far the table stands for the values the query names: each value's rows holding it over the
        conversations mentioning it (`ValueLexicon.trust`, from the value_mentions asset), averaged with
        the values' idf, their weights in the match. Its square scales the table_match channel and the
        boost, so a table that caught a common word, or missed most conversations naming a product,
        cannot promote the few rows that hold it."""
        total = trusted = 0.0
        for e in parsed.entities:
            key = normalize(e.value)
            held = len(self.lexicon.rows(e.column, key))
            if not held:
                continue
            gain = self.lexicon.idf(held)
            total += gain
            trusted += gain * self.lexicon.trust(e.column, key, self._mentions)
        return trusted / total if total > 0 else 1.0

    def _route(self, parsed: Query, vector: np.ndarray, depth: int) -> list[tuple[str, float]]:
        index = self._clusters()
        if index is None:
            return []
        from sarag_assets.core.indices.clusters import query_vectors

        views = query_vectors(self._cluster_model, parsed.full_text(), embedding=vector)
        return [(h.dialogue_id, float(h.score)) for h in index.route(views, top_k=depth)]

    def _value_positions(self, column: str, normalized_value: str) -> np.ndarray:
        """The table positions (`self.row_ids` order) of the rows holding a value, sorted; kept once
        computed (at most one entry per lexicon value)."""
        key = (column, normalized_value)
        found = self._positions.get(key)
        if found is None:
            found = np.sort(np.fromiter((self._row_position[d] for d in self.lexicon.rows(column, normalized_value)),
                                        dtype=np.int64))
            self._positions[key] = found
        return found

    def _entity_shares(self, parsed: Query) -> "RowShares":
        return entity_shares(parsed.entities, lambda e: self._value_positions(e.column, normalize(e.value)),
                             self.lexicon.idf, self.row_ids)


def published_state(home: Home):
    """The home's published state; HomeNotReady before anything was published."""
    from sarag_assets.core import publication

    state = publication.current(home)
    if state is not None:
        return state
    if not home.warehouse.exists():
        raise HomeNotReady(f"no warehouse at {home.warehouse}: run the pipeline first (sarag materialize)")
    raise HomeNotReady("nothing is published in this home yet: `sarag materialize` publishes the state once "
                       "every check of what it wrote has passed")


def _limit_query_threads(threads: int) -> int | None:
    """The threads a query is encoded on (the `query_threads` setting, default 1; ONNX Runtime's or torch's),
    after limiting the BLAS library (the cluster route's products; the dense searches' too when numba is
    missing, `query.kernels`) to as many. One short query gains nothing from more, and on a busy 2-core
    machine more threads make a query slower (the channels already run side by side). Process-wide: 0
    (None returned) leaves the libraries' defaults."""
    if threads == 0:
        return None
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads, user_api="blas")
    return threads


def _plain(value):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _alpha_fuse(issue: list[tuple[str, float]], solution: list[tuple[str, float]], alpha: float,
                use_issue: bool, use_solution: bool) -> list[tuple[str, float]]:
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
