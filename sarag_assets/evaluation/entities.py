"""Entity cells and query values measured on real corpora whose labels say what each conversation is
about (`sarag eval-entities`).

A labelled corpus is a folder holding `corpus.jsonl` (sarag's generic JSONL) and `labels.jsonl`: per
dialogue, its labelled name spans (``names``: turn, start, end, value, role). The structuring core runs
on the corpus as the assets run it (candidate schemas, governance, validated rows, embedded backend), then:

- **cell exactness**: of the labelled conversations, the share whose entity cell (the governed column
  the product detector fills) equals one of the conversation's labelled names, compared case- and
  spacing-free (`core.indices.table_values.tokens`); also the share with any entity cell;
- **query value recall**: for every conversation whose asker names a labelled thing and speaks again
  later, the query is the conversation up to that later asker turn (a follow-up: the name is in an
  earlier turn); found when the query reader (`query.understanding.ValueLexicon`, built from the
  table's cells as the published state builds it) finds a value equal to a name the asker gave.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sarag_assets.core.indices.table_values import tokens
from sarag_assets.core.indices.value_mentions import count_mentions
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
from sarag_assets.query.published import entity_columns
from sarag_assets.query.understanding import ValueLexicon, read_query


def same_value(a: str | None, b: str | None) -> bool:
    """Equal once case, spacing and punctuation between words are set aside."""
    return a is not None and b is not None and tokens(a) == tokens(b) and bool(tokens(a))


@dataclass
class EntityReport:
    corpus: str
    conversations: int
    labelled: int
    entity_column: str | None
    filled: int
    exact: int
    queries: int
    found: int
    misses: list[dict] = field(default_factory=list)

    @property
    def exactness(self) -> float:
        return self.exact / self.labelled if self.labelled else 0.0

    @property
    def recall(self) -> float:
        return self.found / self.queries if self.queries else 0.0

    def as_dict(self) -> dict:
        return {"corpus": self.corpus, "conversations": self.conversations, "labelled": self.labelled,
                "entity_column": self.entity_column, "filled": self.filled, "exact_cells": self.exact,
                "cell_exactness": round(self.exactness, 3), "queries": self.queries, "values_found": self.found,
                "value_recall": round(self.recall, 3)}

    def render(self) -> str:
        return (f"{self.corpus}: {self.conversations} conversations, {self.labelled} labelled; entity column "
                f"{self.entity_column or '(none)'}\n"
                f"  cells filled        {self.filled}/{self.labelled}\n"
                f"  cells exact         {self.exact}/{self.labelled} = {self.exactness:.3f}\n"
                f"  query value recall  {self.found}/{self.queries} = {self.recall:.3f}")


def load_labels(folder: Path) -> dict[str, dict]:
    """dialogue id -> its labels (``labels.jsonl`` of a labelled corpus folder)."""
    records = [json.loads(line) for line in (folder / "labels.jsonl").read_text("utf-8").splitlines() if line.strip()]
    return {r["dialogue_id"]: r for r in records}


def follow_up_queries(turns: list[dict], names: list[dict]) -> list[tuple[list[dict], list[str]]]:
    """The follow-up query of one conversation: its turns up to the asker's next turn after the first asker
    turn naming a labelled thing, with the names the asker gave up to then. None when the asker names
    nothing or never speaks again."""
    named = [n for n in names if n["role"] == "user"]
    if not named:
        return []
    first = min(n["turn"] for n in named)
    later = next((i for i in range(first + 1, len(turns)) if turns[i]["role"] == "user"), None)
    if later is None:
        return []
    gold = sorted({n["value"] for n in named if n["turn"] <= later})
    return [([{"speaker": t["role"], "text": t["text"]} for t in turns[: later + 1]], gold)]


def evaluate_entities(folder: str | Path, backend=None) -> EntityReport:
    folder = Path(folder)
    if backend is None:
        from sarag_assets.backends.embedded import EmbeddedBackend

        backend = EmbeddedBackend()
    labels = load_labels(folder)
    raw_turns = {(rec := json.loads(line))["dialogue_id"]: rec["turns"]
                 for line in (folder / "corpus.jsonl").read_text("utf-8").splitlines() if line.strip()}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.jsonl"
        path.write_bytes((folder / "corpus.jsonl").read_bytes())
        parsed = parse_file(path)
    manifest = BatchManifest("entities", "corpus.jsonl", "corpus.jsonl", "-", None, 0, len(raw_turns), 0, 1,
                             "2024-01-01T00:00:00+00:00")
    conversations = conversations_from_raw(build_batch(parsed, manifest).raw_dialogues)
    candidates = candidate_schema_rows("entities", conversations, backend)
    metadata = evolve_metadata(GovernedMetadata(), candidates.frame, backend).metadata
    rows = validated_row_records("entities", conversations, metadata, empty_frame("validated_rows"), backend).frame
    column = next((c.name for c in metadata.columns if c.signal == "product"), None)
    table: dict[str, dict[str, str]] = {}
    for r in rows.filter(rows["value"].is_not_null()).select("dialogue_id", "column_name", "value").iter_rows():
        table.setdefault(r[0], {})[r[1]] = r[2]
    report = EntityReport(folder.name, len(conversations), 0, column, 0, 0, 0, 0)
    for dialogue_id, label in labels.items():
        golds = {n["value"] for n in label["names"]}
        if not golds or dialogue_id not in raw_turns:
            continue
        report.labelled += 1
        cell = table.get(dialogue_id, {}).get(column) if column else None
        report.filled += cell is not None
        if any(same_value(cell, g) for g in golds):
            report.exact += 1
        else:
            report.misses.append({"dialogue_id": dialogue_id, "cell": cell, "gold": sorted(golds)})
    columns = [{"name": c.name, "type": c.type} for c in metadata.columns]
    cells = [(d, c, v) for d, row in table.items() for c, v in row.items()]
    # the value_mentions asset's counts, over the corpus's texts as written
    mentions = dict(count_mentions(cells, len(table), [(d, "\n".join(t["text"] for t in turns))
                                                       for d, turns in raw_turns.items()]).iter_rows())
    lexicon = ValueLexicon(cells, len(table), columns=entity_columns(columns), mentions=mentions)
    for dialogue_id, label in labels.items():
        for turns, gold in follow_up_queries(raw_turns.get(dialogue_id, []), label["names"]):
            report.queries += 1
            found = lexicon.find(read_query(turns))
            if any(same_value(e.value, g) for e in found for g in gold):
                report.found += 1
            else:
                report.misses.append({"query_of": dialogue_id, "gold": gold, "found": [e.value for e in found]})
    return report
