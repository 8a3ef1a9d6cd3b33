"""The query module: structure-aware retrieval and grounded answers over a materialized home.

Reads DuckDB read-only and LanceDB for reading; never imports Dagster.

    from sarag_assets.query import Sarag
    with Sarag("data") as sarag:
        sarag.search("my router keeps rebooting", k=10)
"""

from sarag_assets.query.engine import (
           CHANNELS,
           HomeNotReady,
           LLMRequired,
           Sarag,
           SearchHit,
           SearchSettings,
)
from sarag_assets.query.sql import SqlError, SqlRefused
from sarag_assets.query.understanding import QueryError

__all__ = ["CHANNELS", "HomeNotReady", "LLMRequired", "QueryError", "Sarag", "SearchHit", "SearchSettings",
           "SqlError", "SqlRefused"]
