"""Which structuring backend the settings choose. No Dagster imports.

An `[llm]` base URL (`SARAG_LLM_BASE_URL`) → the LLM backend against that endpoint; none → the embedded
backend (deterministic, offline, the default). The embedded backend is imported only when chosen, so an
LLM run never loads the embedding model and vice versa.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sarag_assets.backends.llm import CallStats, LLMSettings

if TYPE_CHECKING:
    from sarag_assets.backends.llm import CallCache
    from sarag_assets.core.structuring.interface import StructuringBackend
    from sarag_assets.settings import LLMConfig

__all__ = ["backend_for"]


def backend_for(llm: "LLMConfig", *, cache: "CallCache | None", stats: CallStats | None,
                embedder=None) -> "StructuringBackend":
    """The backend for these LLM settings. `cache` and `stats` are used by the LLM backend (every call
    cached in DuckDB, counted in `stats`); the embedded backend makes no calls and ignores them, and
    encodes with `embedder` (default: the process's `default_embedder`)."""
    settings = LLMSettings.from_config(llm)
    if settings is not None:
        from sarag_assets.backends.llm import LLMBackend

        return LLMBackend.from_settings(settings, cache=cache, stats=stats)

    from sarag_assets.backends.embedded import EmbeddedBackend

    return EmbeddedBackend(embedder)
