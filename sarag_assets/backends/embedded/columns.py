"""The embedded backend's column vocabulary: the core and optional support concepts, what each
detector's findings mean as a column (meaning, constraints, how it was found), name variants, and whether
a value fits a column's type and constraints."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sarag_assets.backends.embedded.findings import Finding
from sarag_assets.backends.embedded.quantities import find_dates
from sarag_assets.core.structuring.interface import ColumnConstraints

BACKEND_NAME = "embedded/1"
MAX_PROPOSALS = 15

# ---------------------------------------------------------------------------------------------------
# vocabulary: canonical types, general synonyms, meanings


CORE_CONCEPTS = ("problem", "resolution", "resolved", "root_cause", "product")

_CORE_MEANINGS = {
    "problem": ("string", "The problem, symptom or request the user reports, in the user's words."),
    "resolution": (
        "string",
        "What resolved the problem: the agent's step the user confirmed worked, else the agent's last concrete instruction.",
    ),
    "resolved": ("boolean", "Whether the user's problem was resolved by the end of the conversation."),
    "root_cause": ("string", "The underlying cause of the problem, as stated in the conversation."),
    "product": ("string", "The product, device or service the conversation is about."),
}
# General support concepts proposed only when the conversation states them.
_OPTIONAL_CONCEPTS = {
    "attempted_steps": ("string", "What the user had already tried before or during the conversation."),
    "escalated": ("boolean", "Whether the agent escalated the case to a specialist, manager or another team."),
}

# Canonical descriptions of what each detector finds: the embedding targets for matching foreign columns.
_SIGNAL_DESCRIPTIONS = {
    "problem": "problem: the issue, symptom, complaint or request the customer reports",
    "resolution": "resolution: the solution, fix or steps that solved the issue",
    "resolved": "resolved: whether the issue was solved or fixed, yes or no",
    "attempted_steps": "attempted steps: what the customer already tried before contacting support",
    "escalated": "escalated: whether the case was escalated to a specialist, manager or another team",
    "root_cause": "root cause: the underlying reason or cause of the issue",
    "product": "product: the product, device, app or service concerned",
    "version": "version: the software, app or firmware version number",
    "os": "operating system: the OS and its version, such as Windows, macOS, Linux, iOS or Android",
    "browser": "browser: the web browser used, such as Chrome, Firefox, Safari or Edge",
    "error_code": "error code: the code of the error shown",
    "error_message": "error message: the text of the error message displayed",
    "model": "model: the model number of the device or hardware",
    "date": "date: a calendar date of an event",
    "amount": "amount: a sum of money, price, fee, charge or refund",
    "measurement": "measurement: a quantity with a unit such as speed, size or capacity",
    "identifier": "identifier: an order, ticket, account, booking or reference number",
    "plan": "plan: the subscription plan, tier or membership level",
}

_GENERIC_WORDS = frozenset(
    "the user customer agent conversation mentioned given value text name which what that this with from their there about "
    "reports reported stated says said short description".split()
)
_STRONG = 0.4  # a finding weaker than this never fills a value
_FREE_TEXT_MIN = 0.5  # cosine a sentence needs to fill a free-text column with no detector


def _words_of(name: str) -> str:
    words = name.replace("_", " ")
    words = re.sub(r"\bid\b", "ID", words)
    words = re.sub(r"\bos\b", "operating system", words)
    return words


def _meaning(f: Finding) -> str:
    """One sentence saying what the column holds, from the detector and the conversation's words."""
    n, w = f.name, _words_of(f.name)
    if n in _CORE_MEANINGS:
        return _CORE_MEANINGS[n][1]
    if n in _OPTIONAL_CONCEPTS:
        return _OPTIONAL_CONCEPTS[n][1]
    if f.signal == "version":
        if n == "target_version":
            return "The version the agent says to install or that fixes the problem."
        if n == "version":
            return "The version number of the software the user reports."
        if n == "build_number":
            return "The build number of the software the user runs."
        return f"The {w.replace(' version', '')} version the user reports."
    fixed = {
        "os": "The operating system (and its version) the user runs.",
        "browser": "The web browser (and its version) the user uses.",
        "error_code": "The error code the user gets.",
        "error_message": "The text of the error message the user sees.",
        "model": "The model number of the user's device.",
        "date": "A calendar date mentioned in the conversation.",
        "amount": "A sum of money mentioned in the conversation.",
        "speed": "The speed (data rate) reported in the conversation.",
        "data_size": "The data size or storage amount mentioned.",
        "battery_capacity": "The battery capacity mentioned.",
        "frequency": "The frequency mentioned.",
        "username": "The username of the user's account.",
    }
    if n in fixed:
        return fixed[n]
    if f.signal == "date":
        return f"The {w.replace(' date', '')} date."
    if f.signal == "amount":
        return f"The {w.replace(' amount', '')} amount of money, as a number."
    if f.signal == "identifier":
        return f"The {w} identifying the user's {(f.key or w.split()[0]).lower()}."
    if f.signal == "plan":
        return f"The {w} the user is on."
    if f.signal == "answer":
        return f"The {w} the user gives when the agent asks for it."
    if f.signal == "statement":
        return f"The user's {w}, as stated in the conversation." if f.role == "user" else f"The {w} the agent states for the user."
    if f.signal == "key_value":
        return f"The value given for '{(f.key or w).strip()}'."
    return f"The {w} mentioned in the conversation."


_VERSION_PATTERN = r"[vV]?\d+(?:[.\-_+][0-9A-Za-z]+)*"
_CODE_PATTERN = r"[0-9A-Za-z][0-9A-Za-z_.:#/+\-]{0,39}"
_ID_PATTERN = r"[0-9A-Za-z][0-9A-Za-z_.#/\-]{1,47}"
_MODEL_PATTERN = r"[0-9A-Za-z][0-9A-Za-z .()_/+\-]{1,47}"


def _constraints(f: Finding, col_type: str) -> ColumnConstraints:
    if f.signal in ("resolved", "escalated"):
        return ColumnConstraints(allowed_values=["true", "false"])
    if f.signal == "version":
        return ColumnConstraints(pattern=_VERSION_PATTERN, max_length=40)
    if f.signal == "error_code":
        return ColumnConstraints(pattern=_CODE_PATTERN, max_length=40)
    if f.signal == "identifier" or (f.signal == "answer" and re.search(r"\d", f.value) and " " not in f.value):
        return ColumnConstraints(pattern=_ID_PATTERN, max_length=48)
    if f.signal == "model":
        return ColumnConstraints(pattern=_MODEL_PATTERN, max_length=48)
    if f.signal == "amount":
        return ColumnConstraints(minimum=0)
    if f.signal in ("problem", "resolution", "root_cause", "error_message", "attempted_steps"):
        return ColumnConstraints(max_length=500)
    if col_type == "string":
        return ColumnConstraints(max_length=160)
    return ColumnConstraints()


def _how(f: Finding) -> str:
    return {
        "problem": "first substantive user turn, problem cue words",
        "resolution": "agent instruction, confirmed by the user" if f.strength >= 0.6 else "last agent instruction",
        "resolved": "confirmation/failure cues near the end",
        "root_cause": "cause cue words",
        "product": "capitalized name, repeated / device noun",
        "answer": "answer to the agent's question",
        "key_value": "'key: value' line",
        "statement": "'my X is Y' statement",
        "attempted_steps": "'I tried / already ...' cue words",
        "escalated": "escalation cue words",
    }.get(f.signal, "pattern")


def _note(f: Finding) -> str:
    return f"{f.where()}, detector {f.signal} ({_how(f)})"


_NOTE_SIGNAL = re.compile(r"\bdetector (\w+)")


def _signal_of(col) -> str | None:
    s = getattr(col, "signal", None)
    if s:
        return s
    m = _NOTE_SIGNAL.search(getattr(col, "note", "") or "")
    return m.group(1) if m else None


def _edit_distance_le1(a: str, b: str) -> bool:
    """At most one insertion, deletion, substitution or swap of two neighbours (a spelling variant)."""
    if a == b:
        return True
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]:
            return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :]
    return a[i:] == b[i + 1 :]


def _id_variant(a: str, b: str) -> bool:
    """order_id and order_number name the same thing."""
    sa = re.sub(r"_(?:id|number)$", "", a)
    sb = re.sub(r"_(?:id|number)$", "", b)
    return sa == sb and sa != a and sb != b


def _differs_in_digit(a: str, b: str) -> bool:
    return re.sub(r"\d", "", a) == re.sub(r"\d", "", b) and a != b


def _head_and_qualifier(name: str) -> tuple[str, str]:
    for head in ("version", "error_code", "date", "amount", "number", "id", "model", "plan"):
        if name == head:
            return head, ""
        if name.endswith("_" + head):
            return head, name[: -len(head) - 1]
    return name, ""


# ---------------------------------------------------------------------------------------------------
# values


def _fits_type(value: str, t: str) -> str | None:
    """The value in the column's type (numbers as they appear, booleans true/false, ISO dates), or None."""
    v = value.strip()
    if t == "string":
        return v or None
    if t == "int":
        c = v.replace(",", "")
        return c if re.fullmatch(r"[+-]?\d+", c) else None
    if t == "float":
        c = v.replace(",", "")
        return c if re.fullmatch(r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)", c) else None
    if t == "boolean":
        low = v.lower()
        if low in ("true", "yes", "y"):
            return "true"
        if low in ("false", "no", "n"):
            return "false"
        return None
    if t == "date":
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
            return v
        d = find_dates(v)
        return d[0].value if d and d[0].type == "date" else None
    if t == "datetime":
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?", v):
            return v
        d = find_dates(v)
        return d[0].value if d and d[0].type == "date" else None
    return v


def _fits_constraints(value: str, c: ColumnConstraints) -> str | None:
    if c is None:
        return value
    if c.allowed_values:
        for a in c.allowed_values:
            if a.lower() == value.lower():
                return a
        return None
    if c.pattern:
        try:
            if not re.fullmatch(c.pattern, value):
                return None
        except re.error:
            pass
    if c.minimum is not None or c.maximum is not None:
        try:
            x = float(value.replace(",", ""))
        except ValueError:
            return None
        if c.minimum is not None and x < c.minimum or c.maximum is not None and x > c.maximum:
            return None
    if c.max_length is not None and len(value) > c.max_length:
        cut = value[: c.max_length]
        cut = cut[: cut.rfind(" ")] if " " in cut[c.max_length // 2 :] else cut
        return cut.rstrip(" ,;:") or None
    return value


@dataclass
class _Match:
    finding: Finding | None
    confidence: float  # how sure the column is the finding's kind (1 = same name)
    how: str


_ROLE_AGENT = re.compile(
    r"\b(?:agent|support|helper|staff|solution|fix|fixed|resolution|resolve[ds]?|recommend\w*|suggest\w*|instruct\w*|steps?|"
    r"workaround|advice|advis\w*|diagnos\w*|cause|explain\w*|repl(?:y|ied)|answer\w*|offer\w*)\b",
    re.I,
)
_ROLE_USER = re.compile(
    r"\b(?:user|customer|client|caller|problem|issue|symptom|complain\w*|report\w*|request\w*|asks?|question|wants?|needs?|"
    r"experienc\w*|tried|attempt\w*)\b",
    re.I,
)
