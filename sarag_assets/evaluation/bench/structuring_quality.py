"""How well the structuring stage recovers a generated corpus's latent fields.

Runs the same core functions the assets run (parse, redact, candidate schemas, governance, validated
rows) on a generated corpus with the configured backend, then aligns the table to the ground truth
(core/truth_alignment.py). `sarag quality --n 1000 --seed 1` prints the report.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sarag_assets.core.ingest.landing import BatchManifest
from sarag_assets.core.ingest.parsers import parse_file
from sarag_assets.core.ingest.raw_dialogues import build_batch
from sarag_assets.core.structuring.interface import GovernedMetadata
from sarag_assets.core.structuring.tables import (
    candidate_schema_rows,
    conversations_from_raw,
    evolve_metadata,
    validated_row_records,
)
from sarag_assets.core.warehouse import empty_frame
from sarag_assets.evaluation.synthetic import generate
from sarag_assets.evaluation.truth_alignment import TruthReport, align_table_to_truth


@dataclass
class QualityRun:
    report: TruthReport
    metadata: GovernedMetadata
    kept_values: int
    seconds: dict[str, float]


def measure(n: int, seed: int, backend=None) -> QualityRun:
    if backend is None:
        from sarag_assets.backends.embedded import EmbeddedBackend

        backend = EmbeddedBackend()
    corpus = generate(n, seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.jsonl"
        path.write_text("".join(json.dumps(c) + "\n" for c in corpus.conversations), encoding="utf-8")
        parsed = parse_file(path)
    manifest = BatchManifest("bench", "corpus.jsonl", "corpus.jsonl", "-", None, 0, n, 0, 1,
                             "2024-01-01T00:00:00+00:00")
    conversations = conversations_from_raw(build_batch(parsed, manifest).raw_dialogues)
    seconds = {}
    start = time.perf_counter()
    candidates = candidate_schema_rows("bench", conversations, backend)
    seconds["candidate_schemas"] = time.perf_counter() - start
    start = time.perf_counter()
    evolution = evolve_metadata(GovernedMetadata(), candidates.frame, backend)
    seconds["governed_metadata"] = time.perf_counter() - start
    start = time.perf_counter()
    rows = validated_row_records("bench", conversations, evolution.metadata, empty_frame("validated_rows"), backend)
    seconds["validated_rows"] = time.perf_counter() - start
    table: dict[str, dict[str, str | None]] = {}
    for record in rows.frame.iter_rows(named=True):
        table.setdefault(record["dialogue_id"], {})[record["column_name"]] = record["value"]
    kept = rows.frame.filter(rows.frame["value"].is_not_null()).height
    return QualityRun(align_table_to_truth(table, corpus.truth), evolution.metadata, kept, seconds)
