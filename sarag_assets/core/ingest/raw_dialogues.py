"""Turning a parsed batch into `raw_dialogues` and `quarantine` frames. No Dagster imports.

Speakers are anonymized per conversation (`user1`, `agent1`, ... in order of first appearance), HTML
and character references are rendered as the reader saw them (`markup`), a reply's quotation of earlier
turns is left out (`quoting`), and personal data in the text is replaced by placeholders before anything
downstream sees it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

import polars as pl

from sarag_assets.core.conversation import Conversation, ParsedFile, displayable
from sarag_assets.core.ingest.landing import BatchManifest
from sarag_assets.core.ingest.markup import plain_text
from sarag_assets.core.ingest.quoting import without_quotations
from sarag_assets.core.ingest.redaction import Redactor
from sarag_assets.core.warehouse import conform, polars_schema


@dataclass
class IngestedBatch:
    raw_dialogues: pl.DataFrame
    quarantine: pl.DataFrame
    records_landed: int
    conversations: int
    quarantined: int
    source_format: str


def parse_timestamp(value: str | None) -> datetime | None:
    """ISO-8601 to an aware UTC datetime; naive times are taken as UTC; unparseable → None."""
    if not value:
        return None
    text = value.strip().replace("Z", "+00:00") if isinstance(value, str) else None
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def anonymize_speakers(conversation: Conversation) -> dict[str, str]:
    """Map each source speaker label to `user<n>` / `agent<n>` by order of first appearance."""
    mapping: dict[str, str] = {}
    counters = {"user": 0, "agent": 0}
    for turn in conversation.turns:
        key = f"{turn.role}\x00{turn.speaker}"
        if key not in mapping:
            counters[turn.role] += 1
            mapping[key] = f"{turn.role}{counters[turn.role]}"
    return mapping


def conversation_rows(conversation: Conversation, *, redact: bool) -> list[dict]:
    anon = anonymize_speakers(conversation)
    names = list(conversation.metadata.get("_names", []))
    placeholders = {t.speaker: anon[f"{t.role}\x00{t.speaker}"] for t in conversation.turns}
    redactor = Redactor(names + list(placeholders), enabled=redact)
    content_hash = conversation.content_hash()
    texts = without_quotations([displayable(plain_text(turn.text)) for turn in conversation.turns])
    fields = record_fields(conversation, redactor, placeholders)
    rows = []
    for index, (turn, text) in enumerate(zip(conversation.turns, texts)):
        rows.append(
            {
                "dialogue_id": conversation.dialogue_id,
                "turn_index": index,
                "role": turn.role,
                "speaker": anon[f"{turn.role}\x00{turn.speaker}"],
                "text": redactor.redact(text, placeholders),
                "ts": parse_timestamp(turn.ts),
                "content_hash": content_hash,
                "accepted": turn.accepted,
                "source_fields": fields,
            }
        )
    return rows


def record_fields(conversation: Conversation, redactor: Redactor, placeholders: dict[str, str]) -> str | None:
    """The record's fields as a JSON object, or None. A field the redactor would change (an e-mail, a
    phone number, a name the source gives) is personal and left out, not stored redacted: a table column
    of placeholders would say nothing."""
    kept = {k: v for k, v in conversation.fields.items() if redactor.redact(v, placeholders) == v}
    return json.dumps(kept, ensure_ascii=False) if kept else None


def build_batch(parsed: ParsedFile, manifest: BatchManifest, *, redact: bool = True) -> IngestedBatch:
    landed_at = datetime.fromisoformat(manifest.landed_at)
    rows: list[dict] = []
    for conversation in parsed.conversations:
        rows.extend(conversation_rows(conversation, redact=redact))
    raw = pl.DataFrame(rows, schema_overrides={"ts": pl.Datetime("us", "UTC"), "source_fields": pl.String}) if rows else None
    if raw is None:
        raw = pl.DataFrame(schema={k: v for k, v in polars_schema("raw_dialogues").items()})
    else:
        raw = raw.with_columns(
            pl.lit(manifest.batch_key).alias("batch_key"),
            pl.lit(manifest.source_file).alias("source_file"),
            pl.lit(parsed.source_format).alias("source_format"),
            pl.lit(landed_at).cast(pl.Datetime("us", "UTC")).alias("landed_at"),
        )
    quarantine = pl.DataFrame(
        {
            "batch_key": [manifest.batch_key] * len(parsed.quarantined),
            "source_file": [manifest.source_file] * len(parsed.quarantined),
            "position": [q.position for q in parsed.quarantined],
            "reason": [q.reason for q in parsed.quarantined],
            "raw_excerpt": [q.raw for q in parsed.quarantined],
            "landed_at": [landed_at] * len(parsed.quarantined),
        },
        schema=polars_schema("quarantine"),
    )
    return IngestedBatch(
        raw_dialogues=conform("raw_dialogues", raw),
        quarantine=conform("quarantine", quarantine),
        records_landed=parsed.records_landed,
        conversations=len(parsed.conversations),
        quarantined=len(parsed.quarantined),
        source_format=parsed.source_format,
    )
