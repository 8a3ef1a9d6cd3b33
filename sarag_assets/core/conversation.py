"""The conversation records every parser produces and every later stage consumes.

Plain dataclasses, no Dagster. A parser turns one landed file into a `ParsedFile`: the conversations
it could read and a quarantine entry for everything it could not, so that
`records_landed == len(conversations) + len(quarantined)` always holds for a file.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "agent"]
ROLES: tuple[str, ...] = ("user", "agent")

# Raw input kept in a quarantine row is cut to this many characters.
QUARANTINE_RAW_CHARS = 2000

# Control characters (NUL, ESC, ...) other than tab and line breaks, and the bidirectional embeddings and
# overrides: they carry no words, and printed to a terminal or drawn by the web page they could clear the
# screen or reverse what a reader sees.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u202a-\u202e]")
_OTHER_BREAK = re.compile(r"[\x0b\x0c\x85]")  # vertical tab, form feed, next line: still line breaks


def displayable(text: str) -> str:
    """The text without control characters (line breaks kept as line breaks)."""
    return _OTHER_BREAK.sub("\n", CONTROL_CHARACTERS.sub("", text))


@dataclass(frozen=True)
class Turn:
    speaker: str  # the speaker label as it appeared in the source (a name, "customer", "agent", ...)
    role: Role
    text: str
    ts: str | None = None  # ISO-8601 when the source has one
    accepted: bool = False  # the source marks this turn as the accepted answer (MSDialog is_answer)


@dataclass(frozen=True)
class Conversation:
    dialogue_id: str
    turns: tuple[Turn, ...]
    position: int  # record index (0-based) or line number (1-based) in the source file
    metadata: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)  # the record's own fields (`drafts.source_fields`)

    def content_hash(self) -> str:
        """Hash of what the conversation says; a re-landed id with a new hash supersedes the old one."""
        # an accepted mark and the record's fields join the hash only where there are some, so conversations
        # without them keep the hash they were landed with
        turns = [[t.role, t.speaker, t.text, t.ts] + ([True] if t.accepted else []) for t in self.turns]
        payload = json.dumps(turns + ([self.fields] if self.fields else []), ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class QuarantineRecord:
    source_file: str
    position: int  # line number (1-based, JSONL/CSV) or record index (0-based, JSON); 0 for the file itself
    reason: str
    raw: str  # truncated copy of the offending input

    @staticmethod
    def of(source_file: str, position: int, reason: str, raw: Any) -> "QuarantineRecord":
        if isinstance(raw, bytes):
            text = raw[: QUARANTINE_RAW_CHARS * 4].decode("utf-8", errors="backslashreplace")
        elif isinstance(raw, str):
            text = raw
        else:
            try:
                text = json.dumps(raw, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                text = repr(raw)
        return QuarantineRecord(source_file, position, reason, text[:QUARANTINE_RAW_CHARS])


@dataclass
class ParsedFile:
    source_file: str
    source_format: str
    records_landed: int
    conversations: list[Conversation]
    quarantined: list[QuarantineRecord]


class NotAConversationFile(ValueError):
    """The file as a whole cannot be read as any supported conversation format."""
