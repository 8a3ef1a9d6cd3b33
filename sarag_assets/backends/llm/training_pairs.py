"""Preference pairs for training a small table generator with DPO (SA-RAG's training-based variant). No Dagster.

For every validated row, perturbed negatives of five kinds:

- `drop_to_null`: one to half of the row's non-null values become null;
- `random_words`: one to half of the non-null values are replaced by as many random words of the
  conversation as the value had (at most 6);
- `swap_columns`: the values of two columns holding different values are swapped;
- `random_sentence`: one column is filled with a random sentence of the conversation;
- `combination`: two or three of the four above, applied one after the other.

Each pair is one JSON line: `prompt` (the LLM backend's extraction instruction, the table's columns and
the conversation as delimited data, exactly what `extract_row` sends), `chosen` (the validated row as a
JSON object, column -> value or null, in M* order) and `rejected` (the perturbed row, same shape), plus
`dialogue_id`, `perturbation` and `metadata_version`. A perturbation that cannot change the row (no
non-null value to drop, no two different values to swap) or that happens to reproduce it is skipped.
Everything is deterministic: each (dialogue id, kind) seeds its own random generator.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Iterator

from sarag_assets.core.structuring.interface import (
    ConversationInput,
    GovernedMetadata,
    MetadataColumn,
)

KINDS = ("drop_to_null", "random_words", "swap_columns", "random_sentence", "combination")
MAX_RANDOM_WORDS = 6
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'._-]*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")

Row = dict[str, str | None]


def _rng(dialogue_id: str, kind: str) -> random.Random:
    seed = hashlib.sha256(f"{dialogue_id}\x00{kind}".encode("utf-8")).hexdigest()[:16]
    return random.Random(int(seed, 16))


def conversation_words(conversation: ConversationInput) -> list[str]:
    return [w.strip("'._-") for t in conversation.turns for w in _WORD.findall(t.text) if w.strip("'._-")]


def conversation_sentences(conversation: ConversationInput) -> list[str]:
    """Sentences of the conversation with at least three words, in order."""
    out = []
    for turn in conversation.turns:
        for piece in _SENTENCE_END.split(turn.text):
            piece = piece.strip()
            if len(piece.split()) >= 3:
                out.append(piece)
    return out


def _filled(row: Row) -> list[str]:
    return [c for c, v in row.items() if v not in (None, "")]


def _how_many(rng: random.Random, n: int) -> int:
    return rng.randint(1, max(1, math.ceil(n / 2)))


def drop_to_null(row: Row, conversation: ConversationInput, rng: random.Random) -> Row | None:
    filled = _filled(row)
    if not filled:
        return None
    out = dict(row)
    for c in rng.sample(filled, _how_many(rng, len(filled))):
        out[c] = None
    return out


def random_words(row: Row, conversation: ConversationInput, rng: random.Random) -> Row | None:
    filled, words = _filled(row), conversation_words(conversation)
    if not filled or not words:
        return None
    out = dict(row)
    for c in rng.sample(filled, _how_many(rng, len(filled))):
        n = min(MAX_RANDOM_WORDS, max(1, len(str(row[c]).split())))
        out[c] = " ".join(rng.choice(words) for _ in range(n))
    return out


def swap_columns(row: Row, conversation: ConversationInput, rng: random.Random) -> Row | None:
    filled = _filled(row)
    pairs = [(a, b) for a in filled for b in row if a != b and row[a] != row[b] and not (b in filled and b < a)]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    out = dict(row)
    out[a], out[b] = row[b], row[a]
    return out


def random_sentence(row: Row, conversation: ConversationInput, rng: random.Random) -> Row | None:
    sentences = conversation_sentences(conversation)
    if not sentences or not row:
        return None
    out = dict(row)
    out[rng.choice(list(row))] = rng.choice(sentences)
    return out


BASE: dict[str, Callable[[Row, ConversationInput, random.Random], Row | None]] = {
    "drop_to_null": drop_to_null,
    "random_words": random_words,
    "swap_columns": swap_columns,
    "random_sentence": random_sentence,
}


def combination(row: Row, conversation: ConversationInput, rng: random.Random) -> Row | None:
    kinds = rng.sample(list(BASE), rng.randint(2, 3))
    out, applied = dict(row), 0
    for kind in kinds:
        changed = BASE[kind](out, conversation, rng)
        if changed is not None:
            out, applied = changed, applied + 1
    return out if applied >= 2 else None


PERTURBATIONS = {**BASE, "combination": combination}


def perturbations(dialogue_id: str, row: Row, conversation: ConversationInput) -> Iterator[tuple[str, Row]]:
    """(kind, perturbed row) for every kind that changes the row."""
    for kind in KINDS:
        rejected = PERTURBATIONS[kind](row, conversation, _rng(dialogue_id, kind))
        if rejected is not None and rejected != row:
            yield kind, rejected


def _column_data(column: MetadataColumn) -> dict:
    data = {"name": column.name, "type": column.type, "meaning": column.meaning}
    constraints = {k: v for k, v in column.constraints.model_dump().items() if v is not None}
    if constraints:
        data["constraints"] = constraints
    return data


def extraction_prompt(conversation: ConversationInput, metadata: GovernedMetadata) -> str:
    """The LLM backend's extract_row request as one text: instruction, data notice, delimited data."""
    from sarag_assets.backends.llm import prompts
    from sarag_assets.backends.llm.client import data_notice, wrap_data

    columns = json.dumps([_column_data(c) for c in metadata.columns], ensure_ascii=False)
    data = f"## conversation\n{conversation.transcript()}\n\n## table columns (JSON)\n{columns}"
    return f"{prompts.EXTRACT_ROW.rstrip()}\n\n{data_notice()}\n\n{wrap_data(data)}"


def _dumps(row: Row) -> str:
    return json.dumps(row, ensure_ascii=False)


def preference_pairs(
    rows: dict[str, Row], conversations: Iterable[ConversationInput], metadata: GovernedMetadata
) -> Iterator[dict]:
    """DPO records for every conversation that has a validated row, in dialogue id order."""
    names = [c.name for c in metadata.columns]
    by_id = {c.dialogue_id: c for c in conversations}
    for dialogue_id in sorted(rows):
        conversation = by_id.get(dialogue_id)
        if conversation is None:
            continue
        chosen = {name: rows[dialogue_id].get(name) for name in names}
        prompt = extraction_prompt(conversation, metadata)
        for kind, rejected in perturbations(dialogue_id, chosen, conversation):
            yield {"prompt": prompt, "chosen": _dumps(chosen), "rejected": _dumps(rejected),
                   "dialogue_id": dialogue_id, "perturbation": kind, "metadata_version": metadata.version}


def code_digest() -> str:
    """A digest of this module's source: pairs written by other code are written again."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def write_pairs(records: Iterable[dict], path: Path) -> Counter:
    """Write JSONL atomically (a reader never sees half a file); returns counts per perturbation kind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    counts: Counter = Counter()
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            counts[record["perturbation"]] += 1
    os.replace(tmp, path)
    return counts
