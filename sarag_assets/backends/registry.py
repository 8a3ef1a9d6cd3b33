"""Which structuring backend to use, from the environment. No Dagster imports.

`SARAG_LLM_BASE_URL` set → the LLM backend (with `SARAG_LLM_MODEL` and the other `SARAG_LLM_*`
settings read by `LLMSettings.from_env`); unset → the embedded backend (deterministic, offline, the
default). The embedded backend is imported only when chosen, so an LLM run never loads the embedding
model and vice versa.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sarag_assets.backends.llm import CallStats, LLMSettings

if TYPE_CHECKING:
    from sarag_assets.backends.llm import CallCache
    from sarag_assets.core.structuring.interface import StructuringBackend

__all__ = ["backend_from_env"]


def backend_from_env(
    *,
    cache: "CallCache | None",
    stats: CallStats | None,
    environ: Mapping[str, str] | None = None,
) -> "StructuringBackend":
    """The backend the environment asks for (`environ` defaults to `os.environ`).

    `cache` and `stats` are used by the LLM backend (every call cached in DuckDB, counted in `stats`);
    the embedded backend makes no calls and ignores them. A bad `SARAG_LLM_*` value raises ValueError
    naming the variable."""
    settings = LLMSettings.from_env(environ)
    if settings is not None:
        from sarag_assets.backends.llm import LLMBackend

        return LLMBackend.from_settings(settings, cache=cache, stats=stats)

    from sarag_assets.backends.embedded import EmbeddedBackend

    return EmbeddedBackend()
