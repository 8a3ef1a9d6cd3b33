"""Deterministic normalization of candidate columns, shared by both structuring backends. No Dagster
imports, no network.

The LLM backend asks the model to normalize while it proposes, then runs this pass as a safety net;
the embedded backend can run it as its whole normalization step. Every function is idempotent.

- `snake_case(name)`: `"ErrorCode"`, `"error-code"`, `"Error code "` → `"error_code"`;
- `canonical_name(name)`: snake_case plus a small table of unambiguous synonyms (`os` →
  `operating_system`, `os_version` → `operating_system_version`, ...);
- `canonical_type(type_str)`: free-form type → one of int/string/float/boolean/date/datetime, or None
  when nothing sensible fits (`"object"`, `"blob"`);
- `normalize_candidates(columns)` / `dedupe_scored(columns)`: the whole pass over a list (names,
  types, dedupe).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import TypeVar

from sarag_assets.llm.interface import CANONICAL_TYPES, CandidateColumn, CanonicalType, ScoredColumn

__all__ = [
    "NAME_SYNONYMS",
    "canonical_name",
    "canonical_type",
    "dedupe_by_name",
    "dedupe_scored",
    "normalize_candidates",
    "snake_case",
]

_CAMEL_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")  # "HTTPCode" -> "HTTP_Code"
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")  # "errorCode" -> "error_Code"
_NON_WORD = re.compile(r"[^0-9a-z]+")


def snake_case(name: str) -> str:
    """`name` as lower snake_case ASCII: camelCase split, accents folded, every run of other characters
    one `_`, no leading/trailing `_`; a leading digit gets a `c_` prefix (`"3d_model"` → `"c_3d_model"`).
    Empty when nothing word-like is left."""
    text = unicodedata.normalize("NFKD", str(name).replace("ß", "ss")).encode("ascii", "ignore").decode("ascii")
    text = _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", text.strip()))
    text = _NON_WORD.sub("_", text.lower()).strip("_")
    if text and text[0].isdigit():
        text = f"c_{text}"
    return text


# Whole-name synonyms (after snake_case) that always mean the same column in support conversations.
# Kept small and unambiguous on purpose: deeper synonym resolution is the model's (or governance's) job.
NAME_SYNONYMS: dict[str, str] = {
    "os": "operating_system",
    "os_name": "operating_system",
    "operating_system_name": "operating_system",
    "platform_os": "operating_system",
    "os_version": "operating_system_version",
    "os_ver": "operating_system_version",
    "err_code": "error_code",
    "errorcode": "error_code",
    "error_number": "error_code",
    "err_msg": "error_message",
    "error_msg": "error_message",
    "errormessage": "error_message",
    "product_name": "product",
    "prod": "product",
    "ver": "version",
    "version_number": "version",
    "sw_version": "software_version",
    "fw_version": "firmware_version",
    "app_version": "application_version",
    "app_name": "application",
    "app": "application",
    "browser_name": "browser",
    "device_name": "device",
    "device_model": "device",
}


def canonical_name(name: str) -> str:
    """snake_case, then the synonym table."""
    snake = snake_case(name)
    return NAME_SYNONYMS.get(snake, snake)


_TYPE_WORDS: dict[str, CanonicalType] = {}
for _words, _canonical in (
    ("int integer int8 int16 int32 int64 uint long short smallint bigint tinyint count whole", "int"),
    ("float double decimal real numeric number num money currency amount percent percentage price", "float"),
    ("bool boolean bit flag yes_no yesno yes true binary", "boolean"),
    ("date day calendar_date", "date"),
    ("datetime timestamp timestamptz date_time date-time time_stamp iso8601 instant", "datetime"),
    (
        "string str text varchar char nvarchar enum category categorical label keyword name identifier id "
        "uuid email url uri version semver code phrase list array set tags",
        "string",
    ),
):
    for _w in _words.split():
        _TYPE_WORDS[_w] = _canonical  # type: ignore[assignment]

_TYPE_NOISE = re.compile(r"\b(optional|nullable|null|none|nonnull|not|required|type|of|or|and|the|a|an)\b")


def canonical_type(type_str: str) -> CanonicalType | None:
    """A canonical type for a free-form type string, or None.

    Exact canonical names pass through; otherwise the first recognised word decides
    (`"Optional[int]"` → int, `"integer (count)"` → int, `"string | null"` → string,
    `"list of strings"` → string, `"ISO 8601 timestamp"` → datetime, `"decimal(10,2)"` → float).
    A time of day alone (`"time"`) is kept as a string. `"object"`, `"json"`, `"blob"` → None."""
    if type_str is None:
        return None
    raw = str(type_str).strip().lower()
    if raw in CANONICAL_TYPES:
        return raw  # type: ignore[return-value]
    if raw in _TYPE_WORDS:
        return _TYPE_WORDS[raw]
    if raw in ("time", "time_of_day", "duration"):
        return "string"
    compact = raw.replace("-", "_").replace(" ", "_")
    if compact in _TYPE_WORDS:
        return _TYPE_WORDS[compact]
    words = [w for w in re.split(r"[^0-9a-z_]+", _TYPE_NOISE.sub(" ", raw)) if w]
    for word in words:
        if word in _TYPE_WORDS:
            return _TYPE_WORDS[word]
        stripped = word.rstrip("s")  # "strings", "integers", "dates"
        if stripped in _TYPE_WORDS:
            return _TYPE_WORDS[stripped]
        if re.fullmatch(r"u?int\d*", word):
            return "int"
        if re.fullmatch(r"float\d*", word):
            return "float"
    return None


C = TypeVar("C", CandidateColumn, ScoredColumn)


def dedupe_by_name(columns: Iterable[C], better: Callable[[C, C], bool] | None = None) -> list[C]:
    """One column per name, in first-seen order. With `better(new, kept)`, a later duplicate replaces
    the kept one (at the kept one's position) when `better` says so; otherwise the first wins."""
    kept: dict[str, C] = {}
    for column in columns:
        current = kept.get(column.name)
        if current is None:
            kept[column.name] = column
        elif better is not None and better(column, current):
            kept[column.name] = column
    return list(kept.values())


def _fill_from(primary: CandidateColumn, other: CandidateColumn) -> CandidateColumn:
    updates = {}
    if primary.example_value is None and other.example_value is not None:
        updates["example_value"] = other.example_value
    if not primary.note and other.note:
        updates["note"] = other.note
    return primary.model_copy(update=updates) if updates else primary


def normalize_candidates(columns: Iterable[CandidateColumn], *, default_type: CanonicalType = "string") -> list[CandidateColumn]:
    """canonical names and types (an unmappable type becomes `default_type`), nameless columns dropped,
    duplicates merged into the first (which borrows a missing example value or note)."""
    out: dict[str, CandidateColumn] = {}
    for column in columns:
        name = canonical_name(column.name)
        if not name:
            continue
        fixed = column.model_copy(
            update={
                "name": name,
                "type": canonical_type(column.type) or default_type,
                "meaning": column.meaning.strip(),
            }
        )
        out[name] = _fill_from(out[name], fixed) if name in out else fixed
    return list(out.values())


def dedupe_scored(columns: Iterable[ScoredColumn]) -> list[ScoredColumn]:
    """canonical names (types are already canonical in a ScoredColumn), nameless columns dropped, one
    column per name: the one with the highest overall score wins (the first on ties)."""
    renamed = []
    for column in columns:
        name = canonical_name(column.name)
        if name:
            renamed.append(column if name == column.name else column.model_copy(update={"name": name}))
    return dedupe_by_name(renamed, better=lambda new, kept: new.score.overall > kept.score.overall)
