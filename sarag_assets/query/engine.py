"""`Sarag`: one opened home's published state, and what a reader asks of it. No Dagster imports.

`Sarag(home)` opens the home's last published state (`query.published`): its read-only warehouse copy and
the LanceDB table versions it pinned, whatever the pipeline is writing meanwhile. `refresh()` moves an
opened engine to a newer published state. The work is done by the parts it holds, each named by what it
does:

- reading a query: `query.understanding` (the turns, the table's values they name) and `query.embedding`
  (the query vector);
- ranking: `query.channels` (each channel's list), `query.ranking` (one vote per view, `query.fusion`,
  weighed as `query.calibration` measured), `query.strength` (how far a hit stands out);
- evidence and answers: `query.evidence`, `query.answers` (with `query.fixes`);
- SQL: `query.sql` (a read-only statement within limits), `query.text_to_sql` (SQL an LLM writes);
- conversations: `query.conversations` (as stored, their origins and dialogue graphs).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from sarag_assets.query import text_to_sql
from sarag_assets.query.answers import Answer, answer_question
from sarag_assets.query.channels import CHANNELS, Channels
from sarag_assets.query.conversations import ConversationReader
from sarag_assets.query.damage import reading_published_copy
from sarag_assets.query.dense import DenseIndexes
from sarag_assets.query.embedding import query_embedder, query_vector
from sarag_assets.query.evidence import Gathered, gather
from sarag_assets.query.fusion import ViewScores
from sarag_assets.query.published import HomeNotReady, StateRetired, published_state, read_tables
from sarag_assets.query.ranking import Ranker, SearchHit, SearchResult, SearchSettings
from sarag_assets.query.sql import SqlError, SqlLimits, run_select
from sarag_assets.query.strength import match_strength
from sarag_assets.query.text_to_sql import LLMRequired
from sarag_assets.query.understanding import Query, QueryError, ValueLexicon, understand
from sarag_assets.settings import Home, Settings

__all__ = ["CHANNELS", "HomeNotReady", "LLMRequired", "Sarag", "SearchHit", "SearchResult", "SearchSettings",
           "StateRetired", "published_state", "query_errors"]


def query_errors() -> tuple[type[BaseException], ...]:
    """What a question, a statement or the LLM behind them can get wrong: the asker's to fix."""
    # deferred: the LLM client's libraries take ~0.7 s to import, paid here only when an error is caught
    from sarag_assets.backends.llm import LLMCallFailed

    return (QueryError, SqlError, LLMRequired, LLMCallFailed)


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
        """Read everything a search needs from one published state and build the parts that read it."""
        store = state.index_store(str(self.home.lancedb))
        dense = DenseIndexes(store, max_rows=self.config.exact_search_max_rows)
        tables = reading_published_copy(lambda: read_tables(state.warehouse))  # mended by publishing again
        self.publication, self.store, self.dense, self.tables = state, store, dense, tables
        self.channels = Channels(store, dense, tables)
        self.ranker = Ranker(self.channels, tables.weights, self.embed, self._pool)
        self.reader = ConversationReader(state, tables)

    def refresh(self) -> bool:
        """Switch to the newest published state if it is newer than the one this engine reads. Call it
        between searches: a service that searches from many threads opens a new Sarag and swaps it in."""
        state = published_state(self.home)
        if state.id == self.publication.id:
            return False
        self._open_state(state)
        return True

    def close(self) -> None:
        self._pool.shutdown(wait=False)

    def __enter__(self) -> "Sarag":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- the published state, as read once ------------------------------------------------------------

    @property
    def rows(self) -> dict[str, dict[str, str]]:
        """Each current conversation's non-null table cells, in dialogue id order."""
        return self.tables.rows

    @property
    def columns(self) -> list[dict[str, str]]:
        return self.tables.columns

    @property
    def lexicon(self) -> ValueLexicon:
        return self.tables.lexicon

    @property
    def weights(self) -> dict[str, float]:
        """Each view's vote in the ranking, as the home's own conversations measured it."""
        return self.tables.weights

    @property
    def metadata_version(self) -> int | None:
        return self.tables.metadata_version

    @property
    def embedder(self):
        """The query embedder (`embedding.query_embedder`), made on first use unless one was given."""
        if self._embedder is None:
            self._embedder = query_embedder(self.config)
        return self._embedder

    @embedder.setter
    def embedder(self, embedder) -> None:
        self._embedder = embedder

    @property
    def llm(self):
        """The configured LLM (SARAG_LLM_BASE_URL), or None. Calls are not cached here: the query side
        never writes the warehouse."""
        if self._llm is None:
            # deferred: the LLM client's libraries take ~0.7 s to import, and most homes configure no LLM
            from sarag_assets.backends.llm import LLMSettings, StructuredLLM

            settings = LLMSettings.from_config(self.config.llm)
            self._llm = StructuredLLM(settings) if settings else False
        return self._llm or None

    # ---- searching --------------------------------------------------------------------------------

    def understand(self, query) -> Query:
        return understand(query, self.lexicon)

    def embed(self, parsed: Query) -> np.ndarray:
        """The query vector (`embedding.query_vector`)."""
        return query_vector(self.embedder, parsed)

    def search(self, query, k: int = 10, *, settings: SearchSettings | None = None) -> list[SearchHit]:
        return self.retrieve(query, k, settings=settings).hits

    def retrieve(self, query, k: int = 10, *, settings: SearchSettings | None = None) -> SearchResult:
        """The ``k`` best conversations (`ranking.Ranker.retrieve`), with the query as read and its vector."""
        return self.ranker.retrieve(query, k, settings or self.settings, self.publication.id)

    def views(self, query, settings: SearchSettings | None = None) -> ViewScores:
        """Each view's scores for the query at the settings' depth, before they are weighed (what
        `query.calibration` measures)."""
        settings = settings or self.settings
        return self.ranker.rank(self.understand(query), settings, settings.depth).views

    def match_strength(self, vector: np.ndarray, dialogue_ids: list[str]) -> dict[str, float | None]:
        """How far each conversation stands out for this query (`strength.match_strength`)."""
        return match_strength(self.dense, vector, dialogue_ids)

    # ---- evidence and answers -----------------------------------------------------------------------

    def evidence(self, query, *, k: int = 5, m: int = 2, radius: int = 1, depth: int = 2, max_triples: int = 20,
                 settings: SearchSettings | None = None) -> Gathered:
        """The search result and the evidence gathered from it (`evidence.gather`)."""
        result = self.retrieve(query, k, settings=settings)
        return Gathered(result, gather(result, self.tables, self.store, self.reader, self.embedder, m=m,
                                       radius=radius, depth=depth, max_triples=max_triples))

    def answer(self, query, *, k: int = 5, m: int = 2, radius: int = 1,
               settings: SearchSettings | None = None) -> Answer:
        """A grounded answer with citations and the fixes the conversations hold (`answers.answer_question`)."""
        found = self.evidence(query, k=k, m=m, radius=radius, settings=settings)
        strength = self.match_strength(found.result.query_vector, found.result.ids())
        return answer_question(found, strength, self.reader, self.embedder, self.llm)

    # ---- reading conversations ----------------------------------------------------------------------

    def origins(self, dialogue_ids: list[str]) -> dict[str, dict]:
        """Source file, format, first and last turn time and landing time of these conversations."""
        return self.reader.origins(dialogue_ids)

    def conversation(self, dialogue_id: str) -> dict | None:
        """A current conversation as stored (`ConversationReader.conversation`); None when there is none."""
        return self.reader.conversation(dialogue_id)

    # ---- SQL ------------------------------------------------------------------------------------------

    def published_warehouse(self):
        """The warehouse copy of the state this reader holds; StateRetired once newer publications retired it."""
        return self.reader.warehouse()

    def sql(self, statement: str, *, max_rows: int | None = None, runner=None):
        """One read-only SELECT within the home's SQL limits (`query.sql`; `runner`: `IsolatedSql.run` or
        `run_select`); raises SqlRefused for anything else and SqlLimitExceeded when a limit stops it."""
        return (runner or run_select)(self.published_warehouse(), statement, max_rows=max_rows,
                                      limits=SqlLimits.from_settings(self.config))

    def schema(self) -> str:
        """The tables a question can be answered from, for people and for the LLM."""
        return text_to_sql.schema_text(self.columns, self.tables.field_names)

    def ask_sql(self, question: str):
        """Question -> SQL (LLM) -> read-only rows -> an answer from those rows only (`text_to_sql.ask`)."""
        return text_to_sql.ask(self.llm, question, self.schema(), self.sql)
