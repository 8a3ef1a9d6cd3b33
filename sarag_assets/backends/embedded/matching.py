"""Which finding of a conversation fills a column: the column read as a detector's signal (by its own signal,
its name, else the similarity of its meaning to the detectors' descriptions), then the findings of the same
name, of that signal, or whose key words name it; for a free-text column, the best sentence of the right
speaker."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from sarag_assets.backends.embedded.columns import (
    _FREE_TEXT_MIN,
    _GENERIC_WORDS,
    _OPTIONAL_CONCEPTS,
    _ROLE_AGENT,
    _ROLE_USER,
    _SIGNAL_DESCRIPTIONS,
    _STRONG,
    CORE_CONCEPTS,
    _fits_constraints,
    _fits_type,
    _head_and_qualifier,
    _Match,
    _signal_of,
    _words_of,
)
from sarag_assets.backends.embedded.cues import _GREETING_ONLY
from sarag_assets.backends.embedded.findings import Analysis, Finding
from sarag_assets.backends.embedded.text import _STOP, SIGNALS, _strip_lead, is_placeholder_only
from sarag_assets.backends.normalize import canonical_name, canonical_type
from sarag_assets.core.structuring.interface import ColumnConstraints

Encode = Callable[[list[str]], np.ndarray]

# A column's name read as a detector's signal, before any model call.
_LEXICAL = (
    (r"^(?:problem|issue|symptom|complaint)$|_(?:problem|issue|symptom)$", "problem"),
    (r"^(?:resolution|solution|fix)$|_(?:resolution|solution|fix|steps)$", "resolution"),
    (r"^(?:resolved|solved|fixed)$|^(?:is|was)_(?:resolved|solved|fixed)", "resolved"),
    (r"(?:^|_)cause$", "root_cause"),
    (r"^(?:attempted|tried)_(?:steps|fixes|solutions|actions)$|^(?:steps|things)_tried$|^troubleshooting_(?:steps|done)$", "attempted_steps"),
    (r"^(?:is_|was_)?escalat(?:ed|ion)$", "escalated"),
    (r"(?:^|_)(?:version|ver)$|(?:^|_)build(?:_number)?$", "version"),
    (r"^os(?:_version)?$", "os"),
    (r"(?:^|_)browser$", "browser"),
    (r"(?:^|_)error_code$|(?:^|_)status_code$", "error_code"),
    (r"(?:^|_)error_message$", "error_message"),
    (r"(?:^|_)model$", "model"),
    (r"(?:^|_)(?:date|day)$", "date"),
    (r"(?:^|_)(?:amount|price|cost|fee|refund|charge|total|balance)$", "amount"),
    (r"(?:^|_)(?:number|id|no|reference|ref|code)$|^username$", "identifier"),
    (r"(?:^|_)(?:plan|subscription|tier|membership|membership_level)$", "plan"),
    (r"^(?:product|device|service|app|application)$", "product"),
)


def describe(col) -> str:
    """The text a column is compared by: the words of its name, and its meaning."""
    return f"{_words_of(col.name)}: {col.meaning}"


def signal_for(col, desc_vec: np.ndarray | None, encode: Encode) -> tuple[str | None, float]:
    """Which detector a column corresponds to: its own, its name, else embedding similarity."""
    s = _signal_of(col)
    if s in SIGNALS:
        return s, 1.0
    n = canonical_name(col.name)
    for pat, s in _LEXICAL:
        if re.search(pat, n):
            return s, 0.9
    if desc_vec is None:
        return None, 0.0
    names = list(_SIGNAL_DESCRIPTIONS)
    vecs = encode([_SIGNAL_DESCRIPTIONS[k] for k in names])
    sims = vecs @ desc_vec
    k = int(np.argmax(sims))
    if float(sims[k]) >= 0.55:
        return names[k], round(float(sims[k]), 3)
    return None, 0.0


def match(col, an: Analysis, desc_vec: np.ndarray | None, encode: Encode) -> _Match:
    """The finding that fills a column: the same name, its detector's, or a key whose words name it."""
    name = canonical_name(col.name)
    aliases = {canonical_name(a) for a in (getattr(col, "aliases", None) or [])}
    col_type = canonical_type(col.type) or "string"
    constraints = getattr(col, "constraints", None) or ColumnConstraints()

    def usable(fs: list[Finding]) -> list[Finding]:
        good = []
        for f in fs:
            if f.strength < _STRONG:
                continue
            v = _fits_type(f.value, col_type)
            if v is None or _fits_constraints(v, constraints) is None:
                continue
            good.append(f)
        return good

    # 1. the same name (or an alias) in this conversation
    same = usable([f for f in an.findings if f.usable and canonical_name(f.name) in ({name} | aliases)])
    if same:
        return _Match(an.best(same), 1.0, "same name")
    signal, conf = signal_for(col, desc_vec, encode)
    if signal is not None:
        fs = usable(an.by_signal(signal))
        if signal in CORE_CONCEPTS or signal in _OPTIONAL_CONCEPTS or signal in ("os", "browser"):
            if fs:
                return _Match(an.best(fs), conf, f"detector {signal}")
        else:
            head, qual = _head_and_qualifier(name)
            compatible = []
            for f in fs:
                fh, fq = _head_and_qualifier(canonical_name(f.name))
                if fq == "target" and qual != "target" and not re.search(r"target|fix|latest|recommend|new|update", name):
                    continue  # the version to install is not the version the user runs
                generic = canonical_name(f.name) in (signal, "version", "error_code", "model", "date", "amount", "error_message")
                if not qual or generic or fq == qual or (set(qual.split("_")) & set(fq.split("_"))):
                    if signal in ("identifier", "answer", "statement", "key_value", "plan") and not generic:
                        # identifiers must name the same thing ("order" vs "ticket")
                        if not (set(name.split("_")) & set(canonical_name(f.name).split("_")) - {"number", "id", "no", "code"}):
                            continue
                    compatible.append(f)
            if compatible:
                return _Match(an.best(compatible), conf * 0.95, f"detector {signal}")
    # 2. a key/statement/answer whose words name the column
    words = set(name.split("_")) - {"number", "id", "the", "of", "user", "customer"}
    if words:
        named = [
            f
            for f in an.findings
            if f.usable and f.signal in ("key_value", "statement", "answer", "identifier", "plan")
            and len(words & set(canonical_name(f.name).split("_"))) >= max(1, (len(words) + 1) // 2)
        ]
        named = usable(named)
        if named:
            return _Match(an.best(named), 0.8, "matching key words")
    return _Match(None, 0.0, "no finding")


def free_text(col, an: Analysis, desc_vec: np.ndarray, encode: Encode) -> tuple[str, str, float] | None:
    """The sentence of the right role most similar to the column's meaning, if similar enough."""
    text = f"{col.name} {col.meaning}"
    agent, user = bool(_ROLE_AGENT.search(text)), bool(_ROLE_USER.search(text))
    roles = {"agent"} if agent and not user else {"user"} if user and not agent else {"user", "agent"}
    stems = {w[:5] for w in re.findall(r"[a-z]{4,}", text.lower().replace("_", " ")) if w not in _STOP and w not in _GENERIC_WORDS}
    cands = [
        s
        for s in an.sentences
        if s.role in roles
        and stems & {w[:5] for w in re.findall(r"[a-z]{4,}", s.text.lower())}
        and len(s.text.split()) >= 4
        and not is_placeholder_only(s.text)
        and not _GREETING_ONLY.match(_strip_lead(s.text).strip())
    ]
    if not cands:
        return None
    vecs = encode([_strip_lead(s.text).strip() for s in cands])
    sims = vecs @ desc_vec
    k = int(np.argmax(sims))
    best = round(float(sims[k]), 4)
    if best < _FREE_TEXT_MIN:
        return None
    s = cands[k]
    return _strip_lead(s.text).strip(), s.text, best
