"""The preference pairs of a home, one JSONL file per batch, written again only where the batch changed.

A batch's pairs depend on its current conversations, their validated rows and M*, and on the code that
builds them. Each batch is fingerprinted by the hashes of its current validated cells, the extraction
prompt M* gives and the pair builder's source; a batch whose fingerprint is unchanged keeps its file. So a
day's new tickets write that day's files, not the home's, and a change of M*, which refreshes every row,
writes them all. Together the files hold exactly the records one pass over the home would
(`backends.llm.preference_pairs`), split by the batch that holds each conversation's current version.
Load them as one dataset with `data_files="<dir>/*.jsonl"`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from sarag_assets.backends.llm import code_digest, extraction_prompt, write_pairs
from sarag_assets.backends.llm import preference_pairs as build_pairs
from sarag_assets.core import warehouse
from sarag_assets.core.structuring.interface import ConversationInput, GovernedMetadata
from sarag_assets.core.structuring.tables import conversations_from_raw
from sarag_assets.evaluation.table_quality import table_from_rows

MANIFEST = "manifest.json"

# Per batch, a sum of its current validated cells' hashes: it streams (no cell is held), and a changed,
# added or removed cell changes it. DuckDB's hash may differ between its releases; that only writes every
# batch again once.
_BATCH_DIGESTS = """
    SELECT c.batch_key, count(v.dialogue_id),
           coalesce(sum(hash(v.dialogue_id, v.content_hash, v.metadata_version, v.column_name, v.value)::HUGEINT), 0)
    FROM current_dialogue_versions c LEFT JOIN validated_rows v USING (dialogue_id, batch_key)
    GROUP BY c.batch_key
"""


@dataclass
class PairFiles:
    """What one update did, and the pairs of every file now in the directory by kind (a missing kind: 0)."""

    directory: Path
    batches: int = 0
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    rows: int = 0
    rows_on_older_metadata: int = 0
    per_kind: Counter = field(default_factory=Counter)

    @property
    def pairs(self) -> int:
        return sum(self.per_kind.values())


def _build_digest(metadata: GovernedMetadata) -> str:
    """What every batch's pairs share: the prompt M* gives (instruction, columns) and the builder's code."""
    empty = extraction_prompt(ConversationInput(dialogue_id="", turns=[]), metadata)
    return hashlib.sha256(f"{metadata.version}\x1f{empty}\x1f{code_digest()}".encode()).hexdigest()


def _read_manifest(directory: Path) -> dict[str, dict]:
    try:
        entries = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):  # none yet, or torn: every batch is written again
        return {}
    # valid JSON of another shape (edited by hand, say) is as good as torn
    if not isinstance(entries, dict) or not all(isinstance(e, dict) for e in entries.values()):
        return {}
    return entries


def _write_manifest(directory: Path, entries: dict[str, dict]) -> None:
    tmp = directory / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(entries, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, directory / MANIFEST)


def _batch_pairs(con: duckdb.DuckDBPyConnection, batch_key: str, metadata: GovernedMetadata, path: Path) -> dict:
    rows = warehouse.current_rows(con, "validated_rows", [batch_key])
    raw = warehouse.current_rows(con, "raw_dialogues", [batch_key]).sort("dialogue_id", "turn_index")
    current = rows.filter(pl.col("metadata_version") == metadata.version)
    table = table_from_rows(current)
    counts = write_pairs(build_pairs(table, (c for c, _ in conversations_from_raw(raw)), metadata), path)
    older = rows["dialogue_id"].n_unique() - current["dialogue_id"].n_unique() if rows.height else 0
    return {"rows": len(table), "rows_on_older_metadata": older, "per_kind": dict(counts)}


def update_pair_files(con: duckdb.DuckDBPyConnection, metadata: GovernedMetadata, directory: Path) -> PairFiles:
    """Bring `directory` to one `<batch_key>.jsonl` per batch holding current conversations: write the
    batches whose fingerprint changed (or whose file is gone), remove the files of batches with none."""
    directory.mkdir(parents=True, exist_ok=True)
    shared = _build_digest(metadata)
    fingerprints = {batch: hashlib.sha256(f"{shared}\x1f{cells}\x1f{digest}".encode()).hexdigest()
                    for batch, cells, digest in con.execute(_BATCH_DIGESTS).fetchall()}
    entries = _read_manifest(directory)
    result = PairFiles(directory=directory, batches=len(fingerprints))
    for batch_key in sorted(fingerprints):
        path = directory / f"{batch_key}.jsonl"
        entry = entries.get(batch_key)
        if entry is None or entry.get("fingerprint") != fingerprints[batch_key] or not path.exists():
            written = _batch_pairs(con, batch_key, metadata, path)
            entries[batch_key] = {"fingerprint": fingerprints[batch_key], **written}
            _write_manifest(directory, entries)  # after each batch: a crash keeps what was done
            result.written.append(batch_key)
        entry = entries[batch_key]
        result.rows += entry["rows"]
        result.rows_on_older_metadata += entry["rows_on_older_metadata"]
        result.per_kind.update(entry["per_kind"])
    for batch_key in sorted(set(entries) - set(fingerprints)):
        (directory / f"{batch_key}.jsonl").unlink(missing_ok=True)
        del entries[batch_key]
        result.removed.append(batch_key)
    # a file of no current batch (copied in by hand, say) is not among this home's pairs
    for path in directory.glob("*.jsonl"):
        if path.stem not in entries:
            path.unlink()
    _write_manifest(directory, entries)
    return result
