"""What every format reader shares: the supported formats and limits, a conversation draft, field
checks, quarantine rows with their reason, and the finishing step that turns a draft into a Conversation."""

from __future__ import annotations

import codecs
import html
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sarag_assets.core.conversation import (
    CONTROL_CHARACTERS,
    QUARANTINE_RAW_CHARS,
    Conversation,
    NotAConversationFile,
    QuarantineRecord,
    Role,
    Turn,
)
from sarag_assets.core.ingest.roles import (
    _RawTurn,
    _Reject,
    is_neutral_label,
    resolve_roles,
    role_of_label,
)

FORMATS: tuple[str, ...] = ("jsonl", "msdialog", "ubuntu_csv", "turn_csv", "abcd", "tweetsumm", "multidogo")
DEFAULT_MAX_RECORD_BYTES = 5 * 1024 * 1024
TITLE_KEYS = ("title", "subject")  # metadata keys that name a thread's title (MSDialog: title)
# metadata keys sarag writes about how it read a record (and its evaluation exports carry): no field
READING_KEYS = ("dropped_empty_turns", "role_inference", "invalid_timestamps_dropped",
                "unpaired_surrogates_replaced", "source_format")
MAX_FIELD_CHARS = 80  # a record field longer than this is text, not a category
MAX_FIELDS = 20  # the first 20 kept fields of a record

_SNIFF_BYTES = 64 * 1024  # how much of the head the format sniffer reads
_BINARY_SNIFF_BYTES = 8 * 1024  # how much of the head the binary check looks at
_BINARY_RATIO = 0.30  # share of non-text characters above which a head counts as binary
_RAW_BYTES = QUARANTINE_RAW_CHARS * 4  # enough bytes for a full quarantine raw copy
_UTF8_BOM = codecs.BOM_UTF8



# --------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------


class _FileLevel(NotAConversationFile):
    """The whole file is unusable; becomes one quarantine row at position 0."""

    def __init__(self, reason: str, raw: bytes | str = b""):
        super().__init__(reason)
        self.reason = reason
        self.raw = raw


@dataclass
class _Bad:
    position: int
    reason: str
    raw: Any


@dataclass
class _Draft:
    """A record read from the source, before the shared checks."""

    position: int
    raw: Any
    dialogue_id: str
    turns: list[_RawTurn]
    metadata: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    role_inference: str | None = None  # set when the format decides every role itself
    bad_timestamps: int = 0
    fields: dict[str, Any] = field(default_factory=dict)  # the record's own fields (category, product, ...)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _kind(value: Any, json_prefix: bool = False) -> str:
    """'null', 'a number', 'an object' (or 'a JSON number' ...) for reasons."""
    name = _type_name(value)
    if name == "null":
        return "null"
    if json_prefix:
        return f"a JSON {name}"
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _short(value: Any, limit: int = 60) -> str:
    """A value for a reason: strings quoted, anything else as (truncated) JSON."""
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[:limit] + "...")
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def _norm_id(value: Any, what: str = "dialogue_id") -> str:
    if value is None:
        raise _Reject(f"missing {what}")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Reject(f"{what} is {_kind(value)} ({_short(value)}), expected a string")
    text = str(value)
    if not text.strip():
        raise _Reject(f"empty {what}")
    if CONTROL_CHARACTERS.search(text):  # an id is printed and typed: an ESC in it would drive the terminal
        raise _Reject(f"{what} {_short(text)} holds control characters")
    if _SURROGATE.search(text):  # replaced, it would be another id than the source's, and could meet one
        raise _Reject(f"{what} {_short(text)} holds an unpaired surrogate, which is not Unicode text")
    return text


def _norm_ts(value: Any) -> tuple[str | None, bool]:
    """(ISO-8601 timestamp or None, whether a present value had to be dropped as invalid)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, False
    if isinstance(value, bool):
        return None, True
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value  # epoch milliseconds
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(), False
        except (OverflowError, OSError, ValueError):
            return None, True
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip()).isoformat(), False
        except ValueError:
            return None, True
    return None, True


def _check_speaker(where: str, speaker: Any) -> str:
    if speaker is None:
        raise _Reject(f"{where}: missing speaker")
    if not isinstance(speaker, str):
        raise _Reject(f"{where}: speaker is {_kind(speaker)} ({_short(speaker)}), expected a string")
    if not speaker.strip():
        raise _Reject(f"{where}: empty speaker")
    return speaker.strip()


def _check_text(where: str, text: Any, field_name: str = "text") -> str:
    if not isinstance(text, str):
        if text is None:
            raise _Reject(f"{where}: {field_name} is null, expected a string")
        raise _Reject(f"{where}: {field_name} is {_kind(text)} ({_short(text)}), expected a string")
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _quarantine(source: str, position: int, reason: str, raw: Any) -> QuarantineRecord:
    """A quarantine row whose strings are valid UTF-8 (undecodable bytes shown as \\xNN)."""
    if isinstance(raw, str):
        raw = _SURROGATE.sub(_escape_surrogate, raw[: QUARANTINE_RAW_CHARS * 2])
    record = QuarantineRecord.of(source, position, _SURROGATE.sub(_escape_surrogate, reason), raw)
    if _SURROGATE.search(record.raw):  # a non-string raw serialized with lone surrogates in it
        raw_text = _SURROGATE.sub(_escape_surrogate, record.raw)
        record = QuarantineRecord(record.source_file, position, record.reason, raw_text)
    return record


def _scrub(value: Any, counter: list[int]) -> Any:
    """Replace unpaired surrogates (from JSON escapes like "\\ud83d") with U+FFFD, counting them."""
    if isinstance(value, str):
        if _SURROGATE.search(value):
            counter[0] += len(_SURROGATE.findall(value))
            return _SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, dict):
        return {_scrub(k, counter): _scrub(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, counter) for v in value]
    return value


def _composed(text: str) -> str:
    """The text in Unicode's composed form (NFC), the same characters as written. Text exported from a Mac
    or some web forms arrives decomposed ("Vie\u0323\u0302t" for "Việt"): every rule that reads words by
    runs of word characters, and BM25 against a query typed the usual way, would see other words."""
    return unicodedata.normalize("NFC", text)


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.strip().lower()
        if key and key not in seen:
            seen.add(key)
            out.append(item.strip())
    return out


def _is_personal_label(label: str) -> bool:
    return role_of_label(label) is None and not is_neutral_label(label)


def source_title(metadata: dict[str, Any]) -> str | None:
    """The thread's title or subject as the source gives it (a metadata key, any case), else None."""
    for key, value in metadata.items():
        if isinstance(key, str) and key.strip().lower() in TITLE_KEYS and isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return None


def _field_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return ", ".join(v.strip() for v in value if v.strip())  # tags
    return None


_RUN = re.compile(r"[^\W\d_]+|\d+")  # runs of letters and runs of digits


def _is_identifier(value: str) -> bool:
    """A value no two records would share: a number or date (no letter), a link or an address (one token
    with "/", ":" or "@"), a code (one token with as many digits as letters, "TCK-88213", "KB3140743", or
    letters and digits interleaved, "0db9fadd-de84"). A category has letters: "Outlook", "High",
    "Windows_10", "Office 365"."""
    letters = sum(c.isalpha() for c in value)
    if not letters:
        return True
    if " " in value:
        return False
    digits = sum(c.isdigit() for c in value)
    return any(c in "/:@" for c in value) or digits >= letters or len(_RUN.findall(value)) > 3


def source_fields(raw: dict[str, Any]) -> dict[str, str]:
    """The record's own fields kept beside the table (`conversation_table.source_fields`): short
    categorical values (a forum's category, a ticket's product, queue or priority, its tags), keyed as the
    source names them.

    Left out: the title (it opens the text), keys starting with "_", sarag's own READING_KEYS, values
    that are no scalar or list of strings, longer than MAX_FIELD_CHARS (text, not a category), and
    identifiers (`_is_identifier`): a ticket number or a date would be a column no query shares."""
    out: dict[str, str] = {}
    for key, value in raw.items():
        if (not isinstance(key, str) or not key.strip() or key.startswith("_") or key in READING_KEYS
                or key.strip().lower() in TITLE_KEYS):
            continue
        text = _field_value(value)
        if text is None:
            continue
        text = " ".join(_composed(CONTROL_CHARACTERS.sub("", text)).split())
        if text and len(text) <= MAX_FIELD_CHARS and not _is_identifier(text):
            out[" ".join(CONTROL_CHARACTERS.sub("", key).split())] = text
        if len(out) >= MAX_FIELDS:
            break
    return out


def _with_title(turns: list[_RawTurn], roles: list[Role], metadata: dict[str, Any]) -> list[str]:
    """Each turn's text, the asker's first turn opened by the thread's title unless its first line holds it
    (the title is at least half of that line: "Re: vpn drops hourly" holds "VPN drops hourly").

    A forum thread's title or a ticket's subject is the asker's own summary of the problem, and often the
    one line that names the product and the error; the thread shows it above the first post, so the stored
    text does too, and search and the problem cell read it like the rest of what the asker wrote. The
    title is plain text, so it is escaped: an HTML post renders it as written, and "<p> tags vanish" does
    not make a plain post read as HTML."""
    texts = [t.text for t in turns]
    title = source_title(metadata)
    if title is None:
        return texts
    first = roles.index("user")
    first_line = " ".join(next((line for line in texts[first].splitlines() if line.strip()), "").split())
    if not (title.casefold() in first_line.casefold() and 2 * len(title) >= len(first_line)):
        texts[first] = f"{html.escape(title, quote=False)}\n\n{texts[first]}"
    return texts


def _finish(draft: _Draft, seen_ids: dict[str, int], source: str) -> Conversation | QuarantineRecord:
    """Shared rules: drop empty turns, resolve roles, require a user turn, reject duplicate ids."""

    def bad(reason: str) -> QuarantineRecord:
        return _quarantine(source, draft.position, reason, draft.raw)

    dialogue_id = draft.dialogue_id
    kept = [t for t in draft.turns if t.text.strip()]
    dropped = len(draft.turns) - len(kept)
    if not kept:
        if dropped:
            return bad(f"dialogue {draft.dialogue_id!r}: all {dropped} turn(s) have empty text")
        return bad(f"dialogue {draft.dialogue_id!r} has no turns")
    try:
        if draft.role_inference is not None and all(t.role is not None for t in kept):
            roles: list[Role] = [t.role for t in kept]  # type: ignore[misc]
            inference = draft.role_inference
        else:
            roles, inference = resolve_roles(kept)
    except _Reject as exc:
        return bad(f"dialogue {draft.dialogue_id!r}: {exc}")
    if "user" not in roles:
        return bad(f"dialogue {draft.dialogue_id!r} has no user turn (all {len(kept)} turns are agent turns)")
    first = seen_ids.get(dialogue_id)
    if first is not None:
        return bad(f"duplicate dialogue_id {draft.dialogue_id!r}: already used by the record at position {first}")
    seen_ids[dialogue_id] = draft.position

    names = list(draft.names)
    if inference != "source":
        names += [t.speaker for t in kept if _is_personal_label(t.speaker)]
    metadata = dict(draft.metadata)
    source_names = metadata.pop("_names", None)
    if isinstance(source_names, list):
        names = [n for n in source_names if isinstance(n, str)] + names
    metadata["_names"] = _unique(_composed(n) for n in names)  # as the text is, or redaction would miss them
    metadata["dropped_empty_turns"] = dropped
    metadata["role_inference"] = inference
    if draft.bad_timestamps:
        metadata["invalid_timestamps_dropped"] = draft.bad_timestamps
    texts = _with_title(kept, roles, metadata)
    fixed = [0]
    turns = tuple(
        Turn(speaker=_composed(_scrub(t.speaker, fixed)), role=r, text=_composed(_scrub(text, fixed)), ts=t.ts,
             accepted=t.accepted)
        for t, r, text in zip(kept, roles, texts)
    )
    metadata = _scrub(metadata, fixed)
    fields = _scrub(source_fields(draft.fields), [0])  # mostly the metadata again, counted there
    if fixed[0]:
        metadata["unpaired_surrogates_replaced"] = fixed[0]
    return Conversation(dialogue_id, turns, draft.position, metadata, fields)
