"""One line for an error that a damaged store raises: what is wrong and what to run. No Dagster."""

import os
import re

import duckdb

from sarag_assets.core.publication import PublicationError


def damaged_store(exc: BaseException) -> str | None:
    """One line for an error that a damaged, foreign or half-written warehouse or LanceDB folder raises
    (what is wrong and what to run), or None for any other error."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    first = re.sub(r",?\s*(?:\S*/\.cargo/|/rustc/)\S+", "", first)[:240]  # the library's own source location
    rebuild = "move the home's warehouse.duckdb and lancedb/ aside and rebuild them with `sarag materialize`"
    if isinstance(exc, PublicationError):
        return f"{first}; publish again with `sarag materialize` (it re-publishes the current state)"
    if isinstance(exc, duckdb.Error) and f"{os.sep}published{os.sep}" in str(exc):
        return f"the published state cannot be read ({first}); `sarag materialize` publishes the current state again"
    if isinstance(exc, duckdb.Error):
        return f"the warehouse cannot be read ({first}); if it is damaged, {rebuild}"
    lance = type(exc).__module__.split(".")[0] in ("lance", "lancedb", "pyarrow") or "lance" in first.lower()
    if lance and isinstance(exc, (OSError, ValueError, RuntimeError)):
        return f"the LanceDB indices cannot be read ({first}); if they are damaged, {rebuild}"
    return None


def reading_published_copy(load):
    """What `load` returns, which reads a published warehouse copy: a DuckDB error there (a damaged block
    names no file) is the published state's, mended by publishing again, not by moving the live warehouse
    aside."""
    try:
        return load()
    except duckdb.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:240]
        raise PublicationError(f"the published warehouse copy cannot be read ({first})") from None
