"""The two gates every extracted value passes. No Dagster imports.

- Semantic gate: the value is supported by the conversation text (after redaction). Strings must
  occur in the text (normalized), or, for longer free text, most of their content words must occur
  in one turn; numbers must appear as numbers; dates as a date expression of the same day; booleans
  need evidence text that occurs in the conversation.
- Structural gate: the value parses as the column's canonical type and meets its constraints.

A value failing either gate becomes null; the gate and its reason are kept with the row.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime

from sarag_assets.core.structuring.interface import ConversationInput, MetadataColumn

_WORD = re.compile(r"[a-z0-9]+(?:[.\-_/][a-z0-9]+)*")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0"}
_STOPWORDS = frozenset(
    "a an the and or but of to in on at for with from by is are was were be been it its this that these those "
    "i you he she we they my your our their me us them so as if then than do does did not no yes please".split()
)
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
         ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
         ("dec", "december")]
    )
    for m in names
}


def normalize_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[\u2018\u2019\u201c\u201d]", "'", text)
    return re.sub(r"\s+", " ", text).strip()


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(normalize_text(text)) if w not in _STOPWORDS]


def _numbers_in(text: str) -> set[float]:
    found = set()
    for match in _NUMBER.findall(text):
        try:
            found.add(float(match.replace(",", "")))
        except ValueError:
            continue
    return found


def dates_in(text: str) -> set[date]:
    """Dates written in common ways: 2024-03-05, 03/05/2024 (US), 5 March 2024, March 5(th), 2024."""
    found: set[date] = set()
    low = normalize_text(text)
    for y, m, d in re.findall(r"\b(\d{4})-(\d{1,2})-(\d{1,2})", low):
        found |= _safe_date(int(y), int(m), int(d))
    for m, d, y in re.findall(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b", low):
        found |= _safe_date(int(y), int(m), int(d)) | _safe_date(int(y), int(d), int(m))
    month_names = "|".join(sorted(_MONTHS, key=len, reverse=True))
    for d, mon, y in re.findall(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({month_names})\.?,?\s+(\d{{4}})\b", low):
        found |= _safe_date(int(y), _MONTHS[mon], int(d))
    for mon, d, y in re.findall(rf"\b({month_names})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", low):
        found |= _safe_date(int(y), _MONTHS[mon], int(d))
    return found


def _safe_date(y: int, m: int, d: int) -> set[date]:
    try:
        return {date(y, m, d)}
    except ValueError:
        return set()


def _conversation_text(conversation: ConversationInput) -> str:
    return "\n".join(t.text for t in conversation.turns)


def value_span(value: str, conversation: ConversationInput, evidence: str | None = None) -> tuple[int, int, int] | None:
    """(turn, start, end) of the value's exact words in the conversation, any case: in the turn that holds
    the evidence first, else the first turn holding them. None when no turn does."""
    needle = str(value).strip().lower()
    if not needle:
        return None
    order = list(range(len(conversation.turns)))
    if evidence:
        order.sort(key=lambda i: evidence.strip() not in conversation.turns[i].text)
    for i in order:
        at = conversation.turns[i].text.lower().find(needle)
        if at >= 0 and len(conversation.turns[i].text.lower()) == len(conversation.turns[i].text):
            return i, at, at + len(needle)
    return None


EXCERPT_GAP = " … "  # joins the non-adjacent pieces of an extractive excerpt (a backend's quote of several sentences)


def semantic_gate(
    value: str, column: MetadataColumn, conversation: ConversationInput, evidence: str | None = None
) -> tuple[bool, str]:
    """Is `value` supported by what the conversation says? Returns (passed, reason)."""
    text = _conversation_text(conversation)
    norm_text = normalize_text(text)
    norm_value = normalize_text(str(value))
    if not norm_value:
        return False, "empty value"
    evidence_ok = bool(evidence) and normalize_text(evidence) in norm_text

    if column.type == "boolean":
        if evidence_ok:
            return True, "boolean backed by evidence quoted from the conversation"
        return False, "boolean value without evidence that occurs in the conversation"

    if column.type in ("int", "float"):
        try:
            number = float(norm_value.replace(",", ""))
        except ValueError:
            return False, f"{value!r} is not a number"
        if number in _numbers_in(text):
            return True, "number occurs in the conversation"
        return False, f"number {value} does not occur in the conversation"

    if column.type in ("date", "datetime"):
        if norm_value in norm_text:
            return True, "date occurs verbatim"
        try:
            day = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00")).date()
        except ValueError:
            return False, f"{value!r} is not an ISO date and does not occur verbatim"
        if day in dates_in(text):
            return True, "the same date occurs in the conversation"
        return False, f"date {day.isoformat()} is not mentioned in the conversation"

    if norm_value in norm_text:
        return True, "value occurs verbatim in the conversation"
    pieces = [normalize_text(p) for p in str(value).split(EXCERPT_GAP)]
    if len(pieces) > 1 and all(p and p in norm_text for p in pieces):
        return True, "every piece of the excerpt occurs verbatim in the conversation"
    words = _content_words(norm_value)
    if len(words) >= 4:
        best = max((_coverage(words, turn.text) for turn in conversation.turns), default=0.0)
        if best >= 0.8:
            return True, f"{best:.0%} of the value's content words occur in one turn"
        return False, f"only {best:.0%} of the value's content words occur in any one turn"
    return False, "value does not occur in the conversation"


def _coverage(words: list[str], turn_text: str) -> float:
    present = set(_content_words(turn_text))
    return sum(1 for w in words if w in present) / len(words)


def parse_typed(value: str, type_name: str):
    """Parse a stored string value as its canonical type; raises ValueError with a reason."""
    raw = str(value).strip()
    if type_name == "string":
        return raw
    if type_name == "int":
        cleaned = raw.replace(",", "")
        if not re.fullmatch(r"[+-]?\d+", cleaned):
            raise ValueError(f"{raw!r} is not an integer")
        return int(cleaned)
    if type_name == "float":
        try:
            return float(raw.replace(",", ""))
        except ValueError:
            raise ValueError(f"{raw!r} is not a number") from None
    if type_name == "boolean":
        low = raw.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"{raw!r} is not a boolean")
    if type_name == "date":
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
                raise ValueError
            return date.fromisoformat(raw)
        except ValueError:
            raise ValueError(f"{raw!r} is not an ISO date (YYYY-MM-DD)") from None
    if type_name == "datetime":
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{raw!r} is not an ISO-8601 datetime") from None
    raise ValueError(f"unknown column type {type_name!r}")


def structural_gate(value: str, column: MetadataColumn) -> tuple[bool, str]:
    """Does `value` fit the column's type and constraints? Returns (passed, reason)."""
    try:
        typed = parse_typed(value, column.type)
    except ValueError as exc:
        return False, f"type {column.type}: {exc}"
    c = column.constraints
    if c.allowed_values:
        allowed = {normalize_text(v) for v in c.allowed_values}
        if normalize_text(str(value)) not in allowed:
            return False, f"{value!r} is not one of the allowed values {c.allowed_values[:8]}"
    if c.pattern and isinstance(typed, str):
        try:
            if not re.fullmatch(c.pattern, typed, flags=re.IGNORECASE):
                return False, f"{value!r} does not match the pattern {c.pattern!r}"
        except re.error:
            return False, f"the column's pattern {c.pattern!r} is not a valid regular expression"
    if isinstance(typed, (int, float)) and not isinstance(typed, bool):
        if c.minimum is not None and typed < c.minimum:
            return False, f"{typed} is below the minimum {c.minimum}"
        if c.maximum is not None and typed > c.maximum:
            return False, f"{typed} is above the maximum {c.maximum}"
    if c.max_length is not None and len(str(value)) > c.max_length:
        return False, f"value is {len(str(value))} characters, above the limit {c.max_length}"
    return True, "fits type and constraints"
