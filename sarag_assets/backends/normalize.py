"""The one normalizer of column names and types, shared by both structuring backends. No Dagster
imports, no network.

The LLM backend asks the model to normalize while it proposes, then runs this pass as a safety net;
the embedded backend names its columns with it. Every function is idempotent.

- `snake_case(name)`: `"ErrorCode"`, `"error-code"`, `"Error code "` → `"error_code"`, at most 40
  characters, never cut mid-word;
- `canonical_name(name)`: snake_case, number suffixes unified (`order_no` → `order_number`), then a
  small table of general synonyms (`operating_system` → `os`, `fw` → `firmware_version`, ...);
- `canonical_type(type_str)`: free-form type → one of int/string/float/boolean/date/datetime, or None
  when nothing sensible fits (`"object"`, `"blob"`);
- `normalize_candidates(columns)` / `dedupe_scored(columns)`: the whole pass over a list (names,
  types, dedupe).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import TypeVar

from sarag_assets.core.checks import RESERVED_COLUMNS
from sarag_assets.core.structuring.interface import (
    CANONICAL_TYPES,
    CandidateColumn,
    CanonicalType,
    ScoredColumn,
)

__all__ = [
    "NAME_SYNONYMS",
    "canonical_name",
    "canonical_type",
    "dedupe_by_name",
    "dedupe_scored",
    "normalize_candidates",
    "snake_case",
    "unreserved",
]

MAX_NAME = 40


def snake_case(name: str, max_len: int = MAX_NAME) -> str:
    """`name` as lower snake_case ASCII of at most `max_len` characters: camelCase split ("iPhone"
    stays one word), accents folded, `#`/`%`/`&` spelled out, every run of other characters one `_`,
    a name too long cut at a word boundary; a leading digit gets an `n_` prefix (`"3d model"` →
    `"n_3d_model"`). Empty when nothing word-like is left."""
    return _snake_case(str(name or ""), max_len)


@functools.lru_cache(maxsize=1 << 16)  # the same candidate names recur in every conversation of a batch
def _snake_case(name: str, max_len: int) -> str:
    t = unicodedata.normalize("NFKD", name.replace("ß", "ss")).encode("ascii", "ignore").decode("ascii")
    t = re.sub(r"([a-z0-9]{2,})([A-Z])", r"\1_\2", t)  # errorCode -> error_Code (iPhone stays)
    t = re.sub(r"([A-Z]{2,})([A-Z][a-z]{2,})", r"\1_\2", t)  # HTTPStatus -> HTTP_Status
    t = t.replace("#", " number ").replace("%", " percent ").replace("&", " and ")
    t = re.sub(r"[^A-Za-z0-9]+", "_", t).lower().strip("_")
    t = re.sub(r"_+", "_", t)
    if not t:
        return ""
    if t[0].isdigit():
        t = "n_" + t
    if len(t) > max_len:
        cut = t[:max_len]
        if t[max_len] != "_" and "_" in cut[max_len // 2 :]:
            cut = cut[: cut.rfind("_")]  # do not end on half a word
        t = cut.strip("_")
    return t


# Whole-name synonyms (after snake_case) that mean the same column in support conversations: general
# support vocabulary, not one dataset's. Deeper synonym resolution is governance's job.
NAME_SYNONYMS: dict[str, str] = {
    "operating_system": "os", "platform": "os", "os_name": "os", "operating_system_name": "os", "system_os": "os",
    "operating_system_version": "os_version", "platform_version": "os_version",
    "err_code": "error_code", "error_no": "error_code", "error_number": "error_code", "errorcode": "error_code",
    "error_id": "error_code", "err_no": "error_code", "err_num": "error_code", "error_num": "error_code",
    "fault_code": "error_code", "code_error": "error_code",
    "err_msg": "error_message", "error_msg": "error_message", "error_text": "error_message", "err_message": "error_message",
    "error_string": "error_message", "error_description": "error_message",
    "fw_version": "firmware_version", "fw": "firmware_version", "firmware": "firmware_version", "firmware_ver": "firmware_version",
    "fw_ver": "firmware_version",
    "sw_version": "software_version", "software_ver": "software_version", "sw_ver": "software_version",
    "app_ver": "app_version", "application_version": "app_version",
    "ver": "version", "version_number": "version", "version_no": "version", "software_release": "version",
    "problem_description": "problem", "issue_description": "problem", "issue": "problem", "symptom": "problem",
    "user_problem": "problem", "customer_problem": "problem", "complaint": "problem", "problem_statement": "problem",
    "reported_problem": "problem", "reported_issue": "problem", "main_issue": "problem", "issue_summary": "problem",
    "solution": "resolution", "fix": "resolution", "resolution_steps": "resolution", "solution_steps": "resolution",
    "fix_applied": "resolution", "applied_fix": "resolution", "what_fixed_it": "resolution", "resolution_step": "resolution",
    "workaround": "resolution", "remedy": "resolution",
    "is_resolved": "resolved", "issue_resolved": "resolved", "problem_resolved": "resolved", "was_resolved": "resolved",
    "solved": "resolved", "is_solved": "resolved", "resolution_status": "resolved", "fixed": "resolved", "is_fixed": "resolved",
    "cause": "root_cause", "underlying_cause": "root_cause", "rootcause": "root_cause", "cause_of_issue": "root_cause",
    "problem_cause": "root_cause", "issue_cause": "root_cause", "diagnosis": "root_cause",
    "product_name": "product", "product_or_service": "product", "service_name": "product", "affected_product": "product",
    "model_number": "model", "model_no": "model", "model_name": "model", "device_model": "model",
    "e_mail": "email", "email_address": "email", "mail": "email",
    "phone": "phone_number", "telephone": "phone_number", "telephone_number": "phone_number", "mobile_number": "phone_number",
    "order_no": "order_number", "order_num": "order_number",
    "acct_number": "account_number", "account_no": "account_number", "acct_no": "account_number", "acct": "account_number",
    "subscription_plan": "plan", "plan_name": "plan", "service_plan": "plan", "tariff": "plan",
    "browser_name": "browser", "web_browser": "browser",
}


def canonical_name(name: str) -> str:
    """snake_case, number suffixes unified, then the synonym table; never a table key's name."""
    snake = re.sub(r"_(?:no|num|nbr|nr)$", "_number", snake_case(name))
    return unreserved(NAME_SYNONYMS.get(snake, snake))


def unreserved(name: str) -> str:
    """`name`, or `mentioned_<name>` when the conversation table has a column of that name of its own
    (`dialogue_id`, `batch_key`, `source_fields`): a proposed column so named holds something the
    conversation mentions, and the view cannot have two columns of one name."""
    return f"mentioned_{name}" if name in RESERVED_COLUMNS else name


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
