"""Parsers: one landed file in, conversations and quarantine rows out.

Supported formats (``FORMATS``), sniffed from the content, never from the extension alone:

- ``jsonl``: one conversation per line,
  ``{"dialogue_id": str, "turns": [{"speaker", "text", "ts"?, "role"?}], "metadata"?: {}}``.
  Position = 1-based line number; blank lines are not records. An integer ``dialogue_id`` is
  accepted and converted to its decimal string; any other non-string id is quarantined.
- ``msdialog``: MSDialog JSON, ``{id: {title, category, utterances: [{actor_type, utterance,
  utterance_pos, is_answer, user_id, utterance_time, ...}]}}``. Position = 0-based record index.
- ``ubuntu_csv``: Ubuntu Dialogue Corpus CSV (``dialogueID,date,from,to,text``); rows sharing a
  dialogueID form one conversation (first-seen order); the user who opens it is ``user``, every
  other speaker ``agent``. Position = 1-based line of the conversation's first row.
- ``turn_csv``: per-turn CSV (``conversation_id,turn,speaker,text[,timestamp][,role]``); turns are
  sorted by ``turn``. Position = 1-based line of the conversation's first row.
- ``abcd``: ABCD JSON list; ``original`` [[speaker, text]] pairs are used, ``action`` rows are system
  events and are dropped (counted in ``metadata["system_actions"]``). Position = record index.
- ``tweetsumm``: TweetSumm as distributed by DialogStudio (a JSON list of ``{dialog, summaries}``).
- ``multidogo``: MultiDoGO as distributed by DialogStudio (``{id: {..., log: [...]}}``).

Contract: ``iter_records`` yields exactly one item (a ``Conversation`` or a ``QuarantineRecord``) per
landed record, in file order; ``parse_file`` never raises for bad content. A file that is not a
conversation file at all (binary, empty, unreadable, no known format, a single-document JSON that does
not parse) becomes one file-level ``QuarantineRecord`` at position 0.

Speaker roles for ``jsonl`` and ``turn_csv`` are resolved by ``resolve_roles``: an explicit per-turn
``role`` wins, then a vocabulary of role words (``role_of_label``); a conversation whose every label is
outside the vocabulary (a thread of usernames) takes its opener as ``user`` and the rest as ``agent``;
a mix of role words and unknown labels is ambiguous and quarantined.

Every conversation's metadata carries ``_names`` (personal names/handles known to the source, used
for redaction later), ``dropped_empty_turns`` and ``role_inference``. Texts are kept as they are.

No Dagster here. Paths are local paths (``str`` or ``os.PathLike``).
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from json.decoder import scanstring
from typing import Any

from sarag_assets.core.conversation import (
    QUARANTINE_RAW_CHARS,
    Conversation,
    NotAConversationFile,
    ParsedFile,
    QuarantineRecord,
    Role,
    Turn,
)

__all__ = [
    "FORMATS",
    "DEFAULT_MAX_RECORD_BYTES",
    "detect_format",
    "iter_records",
    "parse_file",
    "count_records",
    "role_of_label",
    "role_hint_of_label",
    "is_neutral_label",
    "resolve_roles",
]

FORMATS: tuple[str, ...] = ("jsonl", "msdialog", "ubuntu_csv", "turn_csv", "abcd", "tweetsumm", "multidogo")
DEFAULT_MAX_RECORD_BYTES = 5 * 1024 * 1024

_SNIFF_BYTES = 64 * 1024  # how much of the head the format sniffer reads
_BINARY_SNIFF_BYTES = 8 * 1024  # how much of the head the binary check looks at
_BINARY_RATIO = 0.30  # share of non-text characters above which a head counts as binary
_RAW_BYTES = QUARANTINE_RAW_CHARS * 4  # enough bytes for a full quarantine raw copy
_UTF8_BOM = codecs.BOM_UTF8


# --------------------------------------------------------------------------------------------------
# Speaker roles
# --------------------------------------------------------------------------------------------------

# Words that name the asking side / the helping side of a support conversation. Kept general on
# purpose (chat logs, help desks, forums, call transcripts, dialogue datasets), not fitted to a dataset.
USER_WORDS = frozenset(
    """user customer client human caller requester requestor op poster asker questioner guest visitor
    seeker consumer buyer shopper enduser submitter reporter""".split()
)
AGENT_WORDS = frozenset(
    """agent support assistant asst helper staff rep representative operator advisor adviser expert
    moderator mod bot chatbot system sys technician tech answerer responder specialist engineer admin
    administrator helpdesk desk service care team wizard consultant associate officer ai""".split()
)
# Words that may qualify a role word without changing which side it names ("live agent",
# "end user", "customer service rep", "technical support", "staff member", "original poster").
_MODIFIER_WORDS = frozenset(
    """the a an live virtual end human technical it help chat online senior junior lead main original
    first second member center centre side account sales billing product community forum site
    level tier customer""".split()
)
# Labels that name a participant without being a role or a personal name ("Speaker 1", "A", "B").
_NEUTRAL_RE = re.compile(
    r"^(?:speaker|participant|person|party|interlocutor|spk|p|s|a|b|c|x|y|q|r|unknown|anonymous|anon)?"
    r"[\s_#.-]*\d*$",
    re.IGNORECASE,
)
_LABEL_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


def _label_words(label: str) -> list[str]:
    words = []
    for w in _LABEL_WORD_RE.findall(label):
        w = w.lower()
        if w not in USER_WORDS and w not in AGENT_WORDS and w.endswith("s") and (
            w[:-1] in USER_WORDS or w[:-1] in AGENT_WORDS
        ):
            w = w[:-1]  # plural: "Agents", "Users"
        words.append(w)
    return words


def role_of_label(label: str) -> Role | None:
    """The role a speaker label names, or None when it is not made of role words.

    Case-insensitive; digits and punctuation are ignored ("Agent_2", "user1", "SupportBot"); in a
    multi-word label the last role word decides ("customer service rep" -> agent, "end user" -> user).
    A label containing any other word ("Agent Smith", "dave_99") is not a role label.
    """
    if not isinstance(label, str):
        return None
    words = _label_words(label)
    if not words:
        return None
    role_words = [w for w in words if w in USER_WORDS or w in AGENT_WORDS]
    if not role_words or any(w not in USER_WORDS and w not in AGENT_WORDS and w not in _MODIFIER_WORDS for w in words):
        return None
    return "user" if role_words[-1] in USER_WORDS else "agent"


def role_hint_of_label(label: str) -> Role | None:
    """The side a label names beside a personal name ("Agent Priya", "Mod_Pauline", "customer_john"):
    role words of one side only, any other words taken as a name. None without role words or with
    both sides' ("support_user"). Weaker than `role_of_label`: used only to settle a conversation
    whose other speakers are named by role words."""
    if not isinstance(label, str):
        return None
    words = _label_words(label)
    sides = {"user" if w in USER_WORDS else "agent" for w in words if w in USER_WORDS or w in AGENT_WORDS}
    return sides.pop() if len(sides) == 1 else None  # type: ignore[return-value]


def is_neutral_label(label: str) -> bool:
    """True for labels that are neither role words nor personal names ("Speaker 1", "A", "2")."""
    return bool(_NEUTRAL_RE.match(label.strip()))


def _explicit_role(value: Any) -> Role | None:
    """An explicit ``role`` field: "user"/"agent" or any role word; None when it names neither."""
    if not isinstance(value, str):
        return None
    v = value.strip().lower()
    if v in ("user", "agent"):
        return v  # type: ignore[return-value]
    return role_of_label(value)


class _Reject(Exception):
    """A record cannot become a conversation; the message is the quarantine reason."""


@dataclass
class _RawTurn:
    speaker: str
    text: str
    ts: str | None = None
    role: Role | None = None  # decided by the source (explicit field or a format-level rule)


# An opening turn that offers help ("how can I help you?") is a helper's, not the asker's.
_OFFERS_HELP = re.compile(
    r"\b(?:how|what)\s+(?:can|may|could|shall)\s+(?:i|we)\s+(?:help|assist|do\s+for)"
    r"|\b(?:thanks?|thank\s+you)\s+for\s+(?:contacting|reaching\s+out|calling|getting\s+in\s+touch)"
    r"|\b(?:welcome\s+to|you(?:'ve|\s+have)\s+reached)\b"
    r"|\bhere\s+(?:from|at|with)\s+[A-Z]"  # "Dana here from ShopSphere"
    r"|\bwhat(?:'s|\s+is|\s+seems\s+to\s+be)\s+(?:going\s+on|the\s+(?:issue|problem|trouble))",
    re.IGNORECASE,
)


def _asking_speaker(turns: list[_RawTurn]) -> str:
    """The speaker who brings the problem: the opener, unless the opener only offers help."""
    opener = turns[0].speaker
    if _OFFERS_HELP.search(turns[0].text):
        for t in turns[1:]:
            if t.speaker != opener:
                return t.speaker
    return opener


def resolve_roles(turns: list[_RawTurn]) -> tuple[list[Role], str]:
    """Roles for turns whose role is not fixed yet; returns (roles, how they were inferred).

    Raises ``_Reject`` when a conversation mixes a user named by a role word with a label that names no
    side (another user, or a helper?).
    """
    label_role: dict[str, Role] = {}
    for t in turns:
        if t.role is not None:
            label_role.setdefault(t.speaker, t.role)
    roles: list[Role | None] = []
    unknown: list[str] = []
    used_vocabulary = False
    for t in turns:
        if t.role is not None:
            r: Role | None = t.role
        elif t.speaker in label_role:
            r = label_role[t.speaker]
        else:
            r = role_of_label(t.speaker)
            if r is None:
                if t.speaker not in unknown:
                    unknown.append(t.speaker)
            else:
                used_vocabulary = True
        roles.append(r)
    if unknown and (label_role or used_vocabulary):
        # "customer" beside "Agent Priya": the name carries its side; a bare "dave_99" stays ambiguous
        hints = {u: h for u in unknown if (h := role_hint_of_label(u)) is not None}
        roles = [hints.get(t.speaker) if r is None else r for t, r in zip(turns, roles)]
        unknown = [u for u in unknown if u not in hints]
        if unknown and "user" not in roles:
            # a thread of handles with a bot or a moderator in it: the first handle to speak asks, as in a
            # thread of names only; the other handles help
            return ["user" if t.speaker == unknown[0] else r or "agent" for t, r in zip(turns, roles)], "opener"
    if unknown:
        if label_role or used_vocabulary:
            known = sorted({t.speaker for t, r in zip(turns, roles) if r is not None})
            raise _Reject(
                f"ambiguous speaker label(s) {', '.join(repr(u) for u in unknown)}: not role words, while other "
                f"speakers of the conversation are ({', '.join(repr(k) for k in known)}); "
                "give those turns an explicit 'role'"
            )
        asker = _asking_speaker(turns)
        return ["user" if t.speaker == asker else "agent" for t in turns], "opener"
    if all(t.role is not None for t in turns):
        return [t.role for t in turns], "explicit"  # type: ignore[misc]
    return roles, "vocabulary"  # type: ignore[return-value]


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


def _finish(draft: _Draft, seen_ids: dict[str, int], source: str) -> Conversation | QuarantineRecord:
    """Shared rules: drop empty turns, resolve roles, require a user turn, reject duplicate ids."""

    def bad(reason: str) -> QuarantineRecord:
        return _quarantine(source, draft.position, reason, draft.raw)

    id_fixed = [0]
    dialogue_id = _scrub(draft.dialogue_id, id_fixed)

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
    metadata["_names"] = _unique(names)
    metadata["dropped_empty_turns"] = dropped
    metadata["role_inference"] = inference
    if draft.bad_timestamps:
        metadata["invalid_timestamps_dropped"] = draft.bad_timestamps
    fixed = [0]
    turns = tuple(
        Turn(speaker=_scrub(t.speaker, fixed), role=r, text=_scrub(t.text, fixed), ts=t.ts) for t, r in zip(kept, roles)
    )
    metadata = _scrub(metadata, fixed)
    fixed[0] += id_fixed[0]
    if fixed[0]:
        metadata["unpaired_surrogates_replaced"] = fixed[0]
    return Conversation(dialogue_id, turns, draft.position, metadata)


# --------------------------------------------------------------------------------------------------
# Reading and sniffing
# --------------------------------------------------------------------------------------------------


def _read_error(path: Any, exc: OSError) -> _FileLevel:
    what = exc.strerror or exc.__class__.__name__
    if isinstance(exc, FileNotFoundError):
        return _FileLevel(f"cannot read file: {what} (it was moved or deleted before or while being read)")
    return _FileLevel(f"cannot read file: {what} ({exc.__class__.__name__})")


def _open(path: Any):
    try:
        return open(path, "rb")
    except OSError as exc:
        raise _read_error(path, exc) from exc


def _read_head(path: Any) -> bytes:
    """First bytes of the file; raises _FileLevel for unreadable, empty or binary files."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError as exc:
        raise _read_error(path, exc) from exc
    if not head:
        raise _FileLevel("empty file (0 bytes)")
    probe = head[:_BINARY_SNIFF_BYTES]
    if probe.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise _FileLevel("UTF-16 encoded file; only UTF-8 text is supported", head)
    if b"\x00" in probe:
        raise _FileLevel("binary file (NUL bytes in the first 8 KB)", head)
    text = probe.decode("utf-8", errors="replace")
    if len(probe) == _BINARY_SNIFF_BYTES:
        text = text.rstrip("\ufffd")  # a multi-byte character cut at the probe boundary
    if text:
        odd = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\f\v"))
        if odd / len(text) > _BINARY_RATIO:
            raise _FileLevel(f"binary file ({odd * 100 // len(text)}% non-text characters in the first 8 KB)", head)
    if not head.removeprefix(_UTF8_BOM).strip():
        raise _FileLevel("empty file (only whitespace)", head)
    return head


_CSV_ID_ALIASES = ("conversation_id", "dialogue_id", "dialog_id", "conv_id")
_CSV_TURN_ALIASES = ("turn", "turn_id", "turn_index", "turn_no", "turn_number")
_CSV_TS_ALIASES = ("timestamp", "ts", "time", "date", "datetime")
_CSV_TEXT_ALIASES = ("text", "utterance", "message")


def _csv_header(head_text: str) -> list[str]:
    first = head_text.splitlines()[0] if head_text else ""
    try:
        row = next(csv.reader([first]))
    except (csv.Error, StopIteration):
        return []
    return [c.strip().lower() for c in row]


def _first(header: list[str], aliases: tuple[str, ...]) -> str | None:
    for a in aliases:
        if a in header:
            return a
    return None


def _sniff(head: bytes) -> str:
    text = head.removeprefix(_UTF8_BOM).decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if not stripped:
        raise _FileLevel("empty file (only whitespace)", head)
    first_char = stripped[0]
    if first_char == "{":
        lines = stripped.splitlines()
        complete = lines[:-1] if len(head) == _SNIFF_BYTES else lines
        for line in complete[:50]:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict) and ("turns" in obj or "dialogue_id" in obj):
                return "jsonl"
        if '"utterances"' in stripped and '"actor_type"' in stripped:
            return "msdialog"
        if '"log"' in stripped and ('"user utterance"' in stripped or '"system response"' in stripped):
            return "multidogo"
        first_line = lines[0]
        if first_line.startswith('{"') and re.search(r'"(?:dialogue_id|turns)"\s*:', first_line):
            return "jsonl"
        raise _FileLevel(
            "JSON object(s) without the fields of a supported format (jsonl needs dialogue_id/turns, "
            "msdialog utterances/actor_type, multidogo log/'user utterance')",
            head,
        )
    if first_char == "[":
        if '"convo_id"' in stripped and ('"original"' in stripped or '"scenario"' in stripped):
            return "abcd"
        if '"dialog"' in stripped and ('"is_agent"' in stripped or '"sentences"' in stripped):
            return "tweetsumm"
        raise _FileLevel(
            "JSON list without the fields of a supported format (abcd needs convo_id/original, "
            "tweetsumm dialog/is_agent/sentences)",
            head,
        )
    header = _csv_header(text)
    if {"dialogueid", "from", "text"} <= set(header):
        return "ubuntu_csv"
    if (
        _first(header, _CSV_ID_ALIASES)
        and _first(header, _CSV_TURN_ALIASES)
        and "speaker" in header
        and _first(header, _CSV_TEXT_ALIASES)
    ):
        return "turn_csv"
    first_line = stripped.splitlines()[0]
    raise _FileLevel(
        f"content matches no supported format ({', '.join(FORMATS)}); first line: {_short(first_line, 80)}", head
    )


def detect_format(path: str | os.PathLike) -> str:
    """The format of a file, sniffed from its content.

    Raises ``NotAConversationFile`` (with the reason as message) for an empty, binary, unreadable or
    unrecognised file.
    """
    return _sniff(_read_head(path))


# --------------------------------------------------------------------------------------------------
# JSONL
# --------------------------------------------------------------------------------------------------


@dataclass
class _Line:
    number: int  # 1-based
    offset: int  # byte offset of the line's content in the file
    data: bytes  # the line without its line ending (only the head for an oversized line)
    size: int  # bytes of the line without its line ending
    oversized: bool
    terminated: bool  # ended with a newline


def _iter_lines(fh, max_bytes: int) -> Iterator[_Line]:
    """Non-blank lines, never holding more than max_bytes (+1) of one line in memory."""
    number = 0
    offset = 0
    while True:
        try:
            chunk = fh.readline(max_bytes + 2)
        except OSError as exc:
            raise _read_error(None, exc) from exc
        if not chunk:
            return
        number += 1
        start = offset
        data = chunk
        total = len(chunk)
        oversized = False
        if not chunk.endswith(b"\n") and len(chunk) == max_bytes + 2:
            oversized = True
            data = chunk[:_RAW_BYTES]
            while not chunk.endswith(b"\n"):
                try:
                    chunk = fh.readline(1 << 20)
                except OSError as exc:
                    raise _read_error(None, exc) from exc
                if not chunk:
                    break
                total += len(chunk)
        offset += total
        terminated = chunk.endswith(b"\n")
        size = total - (1 if terminated else 0)
        if not oversized:
            data = data.rstrip(b"\r\n")
            size = len(data)
            if number == 1 and data.startswith(_UTF8_BOM):
                data = data[len(_UTF8_BOM) :]
                start += len(_UTF8_BOM)
                size = len(data)
            if not data.strip():
                continue
            if size > max_bytes:
                oversized = True
                data = data[:_RAW_BYTES]
        yield _Line(number, start, data, size, oversized, terminated)


def _jsonl_records(fh, max_bytes: int) -> Iterator[_Draft | _Bad]:
    for line in _iter_lines(fh, max_bytes):
        pos = line.number
        if line.oversized:
            reason = f"line is {line.size:,} bytes, over the {max_bytes:,}-byte record limit; not parsed"
            yield _Bad(pos, reason, line.data)
            continue
        try:
            text = line.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield _Bad(
                pos,
                f"invalid UTF-8 at byte offset {line.offset + exc.start} of the file "
                f"(byte {exc.start} of line {pos}): {exc.reason}",
                line.data,
            )
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            hint = "" if line.terminated else " (last line has no line ending: the file is probably truncated)"
            yield _Bad(pos, f"invalid JSON{hint}: {exc.msg} (column {exc.colno})", text)
            continue
        except RecursionError:
            yield _Bad(pos, "invalid JSON: nested too deeply", text)
            continue
        try:
            yield _jsonl_draft(pos, obj, text)
        except _Reject as exc:
            yield _Bad(pos, str(exc), text)


def _jsonl_draft(pos: int, obj: Any, raw: str) -> _Draft:
    if not isinstance(obj, dict):
        raise _Reject(f"record is {_kind(obj, json_prefix=True)}, expected an object")
    dialogue_id = _norm_id(obj.get("dialogue_id"))
    if "turns" not in obj:
        raise _Reject(f"dialogue {dialogue_id!r} has no 'turns' field")
    raw_turns = obj["turns"]
    if not isinstance(raw_turns, list):
        raise _Reject(f"dialogue {dialogue_id!r}: 'turns' is {_kind(raw_turns)}, expected a list")
    if not raw_turns:
        raise _Reject(f"dialogue {dialogue_id!r} has no turns ('turns' is empty)")
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise _Reject(f"dialogue {dialogue_id!r}: 'metadata' is {_kind(metadata)}, expected an object")
    turns, bad_ts = _generic_turns(raw_turns, dialogue_id)
    return _Draft(pos, raw, dialogue_id, turns, dict(metadata), bad_timestamps=bad_ts)


def _generic_turns(raw_turns: list, dialogue_id: str) -> tuple[list[_RawTurn], int]:
    turns: list[_RawTurn] = []
    bad_ts = 0
    for i, t in enumerate(raw_turns):
        where = f"dialogue {dialogue_id!r} turns[{i}]"
        if not isinstance(t, dict):
            raise _Reject(f"{where} is {_kind(t)}, expected an object")
        speaker = _check_speaker(where, t.get("speaker"))
        if "text" not in t:
            raise _Reject(f"{where} has no 'text'")
        text = _check_text(where, t["text"])
        role = None
        if t.get("role") is not None:
            role = _explicit_role(t["role"])
            if role is None:
                raise _Reject(f"{where}: role {_short(t['role'])} is neither 'user' nor 'agent'")
        ts, invalid = _norm_ts(t.get("ts"))
        bad_ts += invalid
        turns.append(_RawTurn(speaker, text, ts, role))
    return turns, bad_ts


# --------------------------------------------------------------------------------------------------
# Single-document JSON (msdialog, abcd, tweetsumm, multidogo)
# --------------------------------------------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_BAD_BYTE = re.compile("[\udc80-\udcff]")


@dataclass
class _Entry:
    index: int
    key: str | None
    value: Any
    start: int  # char span of the entry in the document text
    end: int


def _load_document(fh, fmt: str) -> tuple[str, list[_Entry], bool]:
    """Parse a whole JSON document into its top-level entries; raises _FileLevel if it does not parse."""
    try:
        data = fh.read()
    except OSError as exc:
        raise _read_error(None, exc) from exc
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    try:
        text = data.decode("utf-8")
        bad_bytes = False
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="surrogateescape")
        bad_bytes = True
    del data
    opener, closer = ("[", "]") if fmt in ("abcd", "tweetsumm") else ("{", "}")
    kind = "list" if opener == "[" else "object"
    decoder = json.JSONDecoder()
    entries: list[_Entry] = []

    def fail(msg: str, pos: int) -> _FileLevel:
        line = text.count("\n", 0, pos) + 1
        col = pos - text.rfind("\n", 0, pos)
        ends_early = pos >= len(text.rstrip()) or msg.startswith("Unterminated string")
        truncated = " (the document ends early: the file is probably truncated)" if ends_early else ""
        return _FileLevel(
            f"not a valid {fmt} JSON document{truncated}: {msg} (line {line}, column {col}, char {pos})",
            text[:QUARANTINE_RAW_CHARS],
        )

    i = _WS.match(text, 0).end()
    if i >= len(text) or text[i] != opener:
        found = repr(text[i]) if i < len(text) else "end of file"
        raise fail(f"expected a JSON {kind} ({opener!r}), found {found}", i)
    i = _WS.match(text, i + 1).end()
    if i < len(text) and text[i] == closer:
        i += 1
    else:
        index = 0
        while True:
            start = i
            key = None
            try:
                if opener == "{":
                    if i >= len(text) or text[i] != '"':
                        raise fail("expecting a property name in double quotes", i)
                    key, i = scanstring(text, i + 1)
                    i = _WS.match(text, i).end()
                    if i >= len(text) or text[i] != ":":
                        raise fail("expecting ':' delimiter", i)
                    i = _WS.match(text, i + 1).end()
                value, i = decoder.raw_decode(text, i)
            except json.JSONDecodeError as exc:
                raise fail(exc.msg, exc.pos) from None
            except RecursionError:
                raise fail("nested too deeply", i) from None
            entries.append(_Entry(index, key, value, start, i))
            index += 1
            i = _WS.match(text, i).end()
            if i < len(text) and text[i] == ",":
                i = _WS.match(text, i + 1).end()
                continue
            if i < len(text) and text[i] == closer:
                i += 1
                break
            raise fail(f"expecting ',' or {closer!r}", i)
    rest = _WS.match(text, i).end()
    if rest < len(text):
        raise fail("extra data after the document", rest)
    return text, entries, bad_bytes


def _entry_problem(text: str, entry: _Entry, bad_bytes: bool, max_bytes: int) -> str | None:
    chars = entry.end - entry.start
    if chars * 4 > max_bytes:
        size = len(text[entry.start : entry.end].encode("utf-8", errors="surrogateescape"))
        if size > max_bytes:
            return f"record is {size:,} bytes, over the {max_bytes:,}-byte record limit"
    if bad_bytes:
        m = _BAD_BYTE.search(text, entry.start, entry.end)
        if m:
            offset = len(text[: m.start()].encode("utf-8", errors="surrogateescape"))
            return f"invalid UTF-8 at byte offset {offset} of the file (inside record {entry.index})"
    return None


def _document_records(fh, fmt: str, max_bytes: int) -> Iterator[_Draft | _Bad]:
    text, entries, bad_bytes = _load_document(fh, fmt)
    build = _DOC_BUILDERS[fmt]
    for entry in entries:
        raw_text = text[entry.start : min(entry.end, entry.start + QUARANTINE_RAW_CHARS)]
        problem = _entry_problem(text, entry, bad_bytes, max_bytes)
        if problem:
            yield _Bad(entry.index, problem, raw_text)
            continue
        try:
            draft = build(entry)
        except _Reject as exc:
            yield _Bad(entry.index, str(exc), raw_text)
            continue
        draft.raw = raw_text
        yield draft


def _require_dict(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise _Reject(f"{what} is {_kind(value, json_prefix=True)}, expected an object")
    return value


def _require_list(value: Any, what: str, dialogue_id: str) -> list:
    if value is None:
        raise _Reject(f"dialogue {dialogue_id!r} has no {what}")
    if not isinstance(value, list):
        raise _Reject(f"dialogue {dialogue_id!r}: {what} is {_kind(value)}, expected a list")
    if not value:
        raise _Reject(f"dialogue {dialogue_id!r} has no turns ({what} is empty)")
    return value


def _msdialog(entry: _Entry) -> _Draft:
    dialogue_id = _norm_id(entry.key, "dialog id")
    rec = _require_dict(entry.value, f"dialog {dialogue_id!r}")
    utterances = _require_list(rec.get("utterances"), "'utterances'", dialogue_id)
    items: list[tuple[Any, _RawTurn]] = []
    names: list[str] = []
    answers: list[Any] = []
    bad_ts = 0
    for i, u in enumerate(utterances):
        where = f"dialogue {dialogue_id!r} utterances[{i}]"
        if not isinstance(u, dict):
            raise _Reject(f"{where} is {_kind(u)}, expected an object")
        actor = u.get("actor_type")
        role = actor.strip().lower() if isinstance(actor, str) else None
        if role not in ("user", "agent"):
            raise _Reject(f"{where}: actor_type {_short(actor)} is neither 'user' nor 'agent'")
        text = _check_text(where, u.get("utterance"), "utterance")
        user_id = u.get("user_id")
        if isinstance(user_id, str) and user_id.strip():
            speaker = user_id.strip()
            names.append(speaker)
        elif isinstance(user_id, int) and not isinstance(user_id, bool):
            speaker = str(user_id)
        else:
            speaker = role
        ts, invalid = _norm_ts(u.get("utterance_time"))
        bad_ts += invalid
        pos = u.get("utterance_pos")
        if u.get("is_answer") in (1, True, "1"):
            answers.append(pos if pos is not None else i + 1)
        items.append((pos, _RawTurn(speaker, text, ts, role)))  # type: ignore[arg-type]
    if all(isinstance(p, int) and not isinstance(p, bool) for p, _ in items):
        items.sort(key=lambda pt: pt[0])
    metadata: dict[str, Any] = {}
    for key in ("title", "category", "dialog_time", "frequency"):
        if rec.get(key) is not None:
            metadata[key] = rec[key]
    metadata["answer_utterance_pos"] = answers
    return _Draft(
        entry.index, entry.value, dialogue_id, [t for _, t in items], metadata, names, "source", bad_ts
    )


_ABCD_ROLES: dict[str, Role] = {"customer": "user", "agent": "agent"}


def _abcd(entry: _Entry) -> _Draft:
    rec = _require_dict(entry.value, f"record {entry.index}")
    dialogue_id = _norm_id(rec.get("convo_id"), "convo_id")
    original = _require_list(rec.get("original"), "'original'", dialogue_id)
    turns: list[_RawTurn] = []
    actions = 0
    for i, pair in enumerate(original):
        where = f"dialogue {dialogue_id!r} original[{i}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise _Reject(f"{where} is not a [speaker, text] pair: {_short(pair)}")
        speaker = _check_speaker(where, pair[0])
        text = _check_text(where, pair[1])
        key = speaker.lower()
        if key == "action":
            actions += 1
            continue
        role = _ABCD_ROLES.get(key) or role_of_label(speaker)
        if role is None:
            raise _Reject(f"{where}: unknown speaker {speaker!r} (expected customer, agent or action)")
        turns.append(_RawTurn(speaker, text, None, role))
    scenario = rec.get("scenario") if isinstance(rec.get("scenario"), dict) else {}
    metadata: dict[str, Any] = {"system_actions": actions}
    for key in ("flow", "subflow"):
        if isinstance(scenario.get(key), str):
            metadata[key] = scenario[key]
    personal = scenario.get("personal") if isinstance(scenario.get("personal"), dict) else {}
    names = [personal[k] for k in ("customer_name", "username") if isinstance(personal.get(k), str)]
    return _Draft(entry.index, entry.value, dialogue_id, turns, metadata, names, "source")


def _tweetsumm(entry: _Entry) -> _Draft:
    rec = _require_dict(entry.value, f"record {entry.index}")
    dialog = _require_dict(rec.get("dialog"), f"record {entry.index} 'dialog'")
    dialogue_id = _norm_id(dialog.get("dialog_id"), "dialog_id")
    raw_turns = _require_list(dialog.get("turns"), "'turns'", dialogue_id)
    turns: list[_RawTurn] = []
    for i, t in enumerate(raw_turns):
        where = f"dialogue {dialogue_id!r} turns[{i}]"
        if not isinstance(t, dict):
            raise _Reject(f"{where} is {_kind(t)}, expected an object")
        is_agent = t.get("is_agent")
        if not isinstance(is_agent, bool):
            raise _Reject(f"{where}: is_agent is {_short(is_agent)}, expected true or false")
        sentences = t.get("sentences")
        if isinstance(sentences, str):
            sentences = [sentences]
        if not isinstance(sentences, list):
            raise _Reject(f"{where}: sentences is {_kind(sentences)}, expected a list of strings")
        for j, s in enumerate(sentences):
            _check_text(f"{where} sentences[{j}]", s, "sentence")
        text = " ".join(s.strip() for s in sentences if s.strip())
        turns.append(_RawTurn("agent" if is_agent else "customer", text, None, "agent" if is_agent else "user"))
    metadata: dict[str, Any] = {}
    summaries = rec.get("summaries")
    if isinstance(summaries, dict) and isinstance(summaries.get("abstractive_summaries"), list):
        metadata["abstractive_summaries"] = summaries["abstractive_summaries"]
    return _Draft(entry.index, entry.value, dialogue_id, turns, metadata, [], "source")


_NAME_SLOT = re.compile(r"^(?:(?:first|last|full|customer|person|user|given|family)_?)?name$", re.IGNORECASE)
_SLOT_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


def _slot_names(utterance: str, side_info: Any) -> list[str]:
    """Tokens tagged as a person's name by MultiDoGO's slot labels (when they align with the text)."""
    if not isinstance(side_info, dict) or not isinstance(side_info.get("slot-labels"), list):
        return []
    labels = " ".join(x for x in side_info["slot-labels"] if isinstance(x, str)).split()
    tokens = _SLOT_TOKEN.findall(utterance)
    if len(labels) != len(tokens):
        return []
    return [tok for tok, lab in zip(tokens, labels) if _NAME_SLOT.match(lab) and tok.isalpha() and len(tok) > 1]


def _multidogo(entry: _Entry) -> _Draft:
    dialogue_id = _norm_id(entry.key, "dialog id")
    rec = _require_dict(entry.value, f"dialog {dialogue_id!r}")
    log = _require_list(rec.get("log"), "'log'", dialogue_id)
    turns: list[_RawTurn] = []
    names: list[str] = []
    for i, e in enumerate(log):
        where = f"dialogue {dialogue_id!r} log[{i}]"
        if not isinstance(e, dict):
            raise _Reject(f"{where} is {_kind(e)}, expected an object")
        for key, speaker, role in (("user utterance", "user", "user"), ("system response", "system", "agent")):
            value = e.get(key)
            if value is None:
                continue
            text = _check_text(where, value, repr(key))
            if text.strip():
                turns.append(_RawTurn(speaker, text, None, role))  # type: ignore[arg-type]
        if isinstance(e.get("user utterance"), str):
            names += _slot_names(e["user utterance"], e.get("original user side information"))
    metadata: dict[str, Any] = {}
    info = rec.get("original dialog info")
    if isinstance(info, dict) and info.get("domain") is not None:
        metadata["domain"] = info["domain"]
    if rec.get("original dialog id") is not None:
        metadata["original_dialog_id"] = rec["original dialog id"]
    return _Draft(entry.index, entry.value, dialogue_id, turns, metadata, names, "source")


_DOC_BUILDERS = {"msdialog": _msdialog, "abcd": _abcd, "tweetsumm": _tweetsumm, "multidogo": _multidogo}


# --------------------------------------------------------------------------------------------------
# CSV (ubuntu_csv, turn_csv)
# --------------------------------------------------------------------------------------------------


@dataclass
class _CsvRow:
    line: int  # first physical line of the row
    values: dict[str, str | None]
    nfields: int


@dataclass
class _CsvGroup:
    gid: str
    line: int
    rows: list[_CsvRow] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    raw_chars: int = 0
    size: int = 0
    problem: str | None = None


class _LineFeed:
    """Decoded physical lines for csv.reader, remembering byte sizes and UTF-8 errors per line."""

    def __init__(self, fh):
        self.fh = fh
        self.number = 0
        self.offset = 0
        self.sizes: dict[int, int] = {}
        self.errors: dict[int, str] = {}
        self.last: dict[int, str] = {}

    def __iter__(self):
        return self

    def __next__(self) -> str:
        try:
            data = self.fh.readline()
        except OSError as exc:
            raise _read_error(None, exc) from exc
        if not data:
            raise StopIteration
        self.number += 1
        if self.number == 1 and data.startswith(_UTF8_BOM):
            data = data[len(_UTF8_BOM) :]
            self.offset += len(_UTF8_BOM)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = data.decode("utf-8", errors="surrogateescape")
            self.errors[self.number] = (
                f"invalid UTF-8 at byte offset {self.offset + exc.start} of the file (line {self.number})"
            )
        self.offset += len(data)
        self.sizes[self.number] = len(data)
        self.last[self.number] = text
        return text

    def take(self, first: int, last: int) -> tuple[int, str | None, str]:
        """Size, first UTF-8 error and text of lines first..last (forgotten afterwards)."""
        size, error, parts = 0, None, []
        for n in range(first, last + 1):
            size += self.sizes.pop(n, 0)
            error = error or self.errors.pop(n, None)
            parts.append(self.last.pop(n, ""))
        return size, error, "".join(parts)


def _csv_records(fh, fmt: str, max_bytes: int) -> Iterator[_Draft | _Bad]:
    if csv.field_size_limit() < max_bytes * 2:
        csv.field_size_limit(max_bytes * 2)
    feed = _LineFeed(fh)
    reader = csv.reader(feed)
    try:
        header_row = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise _FileLevel(f"unreadable CSV header: {exc}") from exc
    feed.take(1, reader.line_num)
    header = [h.strip().lower() for h in header_row]
    shown = {h: raw.strip() for h, raw in zip(header, header_row)}  # column names as the file spells them
    if fmt == "ubuntu_csv":
        cols = {
            "id": "dialogueid",
            "turn": None,
            "speaker": "from",
            "text": "text",
            "ts": "date",
            "role": None,
            "to": "to",
        }
    else:
        cols = {
            "id": _first(header, _CSV_ID_ALIASES),
            "turn": _first(header, _CSV_TURN_ALIASES),
            "speaker": "speaker",
            "text": _first(header, _CSV_TEXT_ALIASES),
            "ts": _first(header, _CSV_TS_ALIASES),
            "role": "role" if "role" in header else None,
            "to": None,
        }
    required = [cols["id"], cols["speaker"], cols["text"]] + ([cols["turn"]] if fmt == "turn_csv" else [])
    missing = [c for c in required if c is None or c not in header]
    if missing:
        raise _FileLevel(f"CSV header {header_row!r} lacks the column(s) {missing} needed for {fmt}")
    index = {name: header.index(name) for name in set(cols.values()) if name and name in header}

    groups: dict[str, _CsvGroup] = {}
    order: list[_CsvGroup | _Bad] = []
    prev_line = reader.line_num
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            first_line = prev_line + 1
            _, _, text = feed.take(first_line, reader.line_num)
            order.append(_Bad(first_line, f"unreadable CSV row at line {first_line}: {exc}", text))
            prev_line = reader.line_num
            continue
        first_line, prev_line = prev_line + 1, reader.line_num
        size, error, text = feed.take(first_line, reader.line_num)
        if not row or all(not c.strip() for c in row):
            continue
        values = {name: (row[i] if i < len(row) else None) for name, i in index.items()}
        gid = values.get(cols["id"])
        if gid is None or not gid.strip():
            order.append(_Bad(first_line, f"row at line {first_line} has no {shown[cols['id']]}", text))
            continue
        group = groups.get(gid)
        if group is None:
            group = groups[gid] = _CsvGroup(gid, first_line)
            order.append(group)
        group.rows.append(_CsvRow(first_line, values, len(row)))
        group.size += size
        if group.raw_chars < QUARANTINE_RAW_CHARS:
            group.raw.append(text)
            group.raw_chars += len(text)
        if group.problem is None:
            if error:
                group.problem = error
            elif any(values.get(c) is None for c in required):
                group.problem = f"row at line {first_line} has {len(row)} fields, the header has {len(header)}"
    for item in order:
        if isinstance(item, _Bad):
            yield item
            continue
        gid = item.gid
        raw = "".join(item.raw)
        if item.problem:
            yield _Bad(item.line, f"dialogue {gid!r}: {item.problem}", raw)
        elif item.size > max_bytes:
            yield _Bad(
                item.line, f"dialogue {gid!r} is {item.size:,} bytes, over the {max_bytes:,}-byte record limit", raw
            )
        else:
            try:
                yield _csv_draft(fmt, gid, item, cols, raw)
            except _Reject as exc:
                yield _Bad(item.line, str(exc), raw)


def _csv_draft(fmt: str, gid: str, group: _CsvGroup, cols: dict[str, str | None], raw: str) -> _Draft:
    rows = group.rows
    if fmt == "turn_csv":
        keyed = []
        for r in rows:
            value = (r.values.get(cols["turn"]) or "").strip()  # type: ignore[arg-type]
            try:
                keyed.append((int(value), r))
            except ValueError:
                raise _Reject(
                    f"dialogue {gid!r}: row at line {r.line} has {cols['turn']} {value!r}, expected an integer"
                ) from None
        keyed.sort(key=lambda kr: kr[0])
        rows = [r for _, r in keyed]
    turns: list[_RawTurn] = []
    names: list[str] = []
    bad_ts = 0
    for r in rows:
        where = f"dialogue {gid!r} row at line {r.line}"
        speaker = _check_speaker(where, r.values.get(cols["speaker"]))  # type: ignore[arg-type]
        text = r.values.get(cols["text"]) or ""  # type: ignore[arg-type]
        ts, invalid = _norm_ts(r.values.get(cols["ts"])) if cols["ts"] else (None, False)  # type: ignore[arg-type]
        bad_ts += invalid
        role = None
        if cols["role"] and (r.values.get(cols["role"]) or "").strip():
            role = _explicit_role(r.values[cols["role"]])
            if role is None:
                raise _Reject(f"{where}: role {r.values[cols['role']]!r} is neither 'user' nor 'agent'")
        if cols["to"] and (r.values.get(cols["to"]) or "").strip():
            names.append(r.values[cols["to"]].strip())  # type: ignore[union-attr]
        turns.append(_RawTurn(speaker, text, ts, role))
    inference = None
    if fmt == "ubuntu_csv":
        kept = [t for t in turns if t.text.strip()]
        opener = kept[0].speaker if kept else None
        for t in turns:
            t.role = "user" if t.speaker == opener else "agent"
        names += [t.speaker for t in turns]
        inference = "opener"
    return _Draft(group.line, raw, gid, turns, {}, names, inference, bad_ts)


# --------------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------------


def _check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _items(
    path: str | os.PathLike, fmt: str | None, max_record_bytes: int, source: str
) -> Iterator[Conversation | QuarantineRecord]:
    """The landed records of a file; raises _FileLevel (before or during iteration) for file-level failures."""
    head = _read_head(path)
    fmt = fmt or _sniff(head)
    seen: dict[str, int] = {}
    with _open(path) as fh:
        if fmt == "jsonl":
            records: Iterator[_Draft | _Bad] = _jsonl_records(fh, max_record_bytes)
        elif fmt in ("ubuntu_csv", "turn_csv"):
            records = _csv_records(fh, fmt, max_record_bytes)
        else:
            records = _document_records(fh, fmt, max_record_bytes)
        for rec in records:
            if isinstance(rec, _Bad):
                yield _quarantine(source, rec.position, rec.reason, rec.raw)
            else:
                yield _finish(rec, seen, source)


def _source_name(path: str | os.PathLike, source_name: str | None) -> str:
    return source_name or os.path.basename(os.fspath(path))


def iter_records(
    path: str | os.PathLike,
    fmt: str | None = None,
    *,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    source_name: str | None = None,
) -> Iterator[Conversation | QuarantineRecord]:
    """Yield one ``Conversation`` or ``QuarantineRecord`` per landed record, in file order.

    The ordinal of an item is its index in this iteration (chunk k of a big file takes ordinals
    [start, end)). A file that is not a conversation file yields a single file-level quarantine row
    (position 0); so does a read error part-way through (after the items already yielded).
    """
    _check_format(fmt)
    source = _source_name(path, source_name)
    try:
        yield from _items(path, fmt, max_record_bytes, source)
    except _FileLevel as exc:
        yield _quarantine(source, 0, exc.reason, exc.raw)


def parse_file(
    path: str | os.PathLike,
    fmt: str | None = None,
    *,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    source_name: str | None = None,
    record_range: tuple[int, int] | None = None,
) -> ParsedFile:
    """Parse one landed file (or the ordinals ``record_range = (start, end)`` of it).

    Never raises for bad content: a file that is not a conversation file at all (binary, empty,
    unreadable or vanished, no known format, a single-document JSON that does not parse) becomes one
    file-level quarantine row at position 0 with ``records_landed = 1``; otherwise
    ``records_landed = len(conversations) + len(quarantined)`` = the records in range.
    An unexpected internal error is also reported as a file-level quarantine row, never raised.
    Integer dialogue ids are accepted and converted to their decimal string.
    Raises ``ValueError`` only for an unknown ``fmt`` or a malformed ``record_range``.
    """
    _check_format(fmt)
    source = _source_name(path, source_name)
    start, end = 0, None
    if record_range is not None:
        start, end = record_range
        if start < 0 or end < start:
            raise ValueError(f"bad record_range {record_range!r}")
    conversations: list[Conversation] = []
    quarantined: list[QuarantineRecord] = []
    detected = fmt
    try:
        if detected is None:
            detected = _sniff(_read_head(path))
        items = _items(path, detected, max_record_bytes, source)
        try:
            for ordinal, item in enumerate(items):
                if end is not None and ordinal >= end:
                    break
                if ordinal < start:
                    continue
                if isinstance(item, Conversation):
                    conversations.append(item)
                else:
                    quarantined.append(item)
        finally:
            items.close()
    except _FileLevel as exc:
        return ParsedFile(source, detected or "unknown", 1, [], [_quarantine(source, 0, exc.reason, exc.raw)])
    except Exception as exc:  # a parser bug must not stop the run; keep the file in quarantine
        reason = f"unexpected parser error (a bug in sarag, please report): {type(exc).__name__}: {exc}"
        return ParsedFile(source, detected or "unknown", 1, [], [_quarantine(source, 0, reason[:500], b"")])
    return ParsedFile(source, detected, len(conversations) + len(quarantined), conversations, quarantined)


def count_records(
    path: str | os.PathLike, fmt: str | None = None, *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
) -> int:
    """How many items ``iter_records`` would yield (1 for a file that is not a conversation file).

    Cheap for JSONL (counts non-blank lines without parsing them); other formats are parsed.
    """
    _check_format(fmt)
    try:
        head = _read_head(path)
        fmt = fmt or _sniff(head)
        if fmt == "jsonl":
            with _open(path) as fh:
                return sum(1 for _ in _iter_lines(fh, max_record_bytes))
    except _FileLevel:
        return 1
    return sum(1 for _ in iter_records(path, fmt, max_record_bytes=max_record_bytes))
