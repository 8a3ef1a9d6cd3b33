"""How much each candidate column is worth to a conversation: relevance to its problem and answerability
from its findings, mixed 0.4 / 0.6 (see the backend's module docstring)."""

from __future__ import annotations

import numpy as np

from sarag_assets.backends.embedded.columns import CORE_CONCEPTS
from sarag_assets.backends.embedded.findings import Analysis
from sarag_assets.backends.embedded.matching import Encode, match
from sarag_assets.backends.normalize import canonical_name
from sarag_assets.core.structuring.interface import ColumnScore


def problem_text(an: Analysis) -> str:
    """The conversation's problem statement, as relevance compares columns with it."""
    if an.problem_text:
        return an.problem_text
    users = [t for r, t in an.turns if r == "user" and t.strip()]
    return (users[0] if users else " ".join(t for _, t in an.turns))[:600] or "support conversation"


def score(an: Analysis, cols: list, problem_vec: np.ndarray, desc_vecs: np.ndarray,
          encode: Encode) -> list[ColumnScore]:
    """Relevance (to the problem, and whether the value is in the problem turns) and answerability (how
    strongly a finding fills the column) of each column."""
    scores = []
    problem_turns = set(an.problem_turns)
    conv_text = "\n".join(t for _, t in an.turns).lower()
    for col, dv in zip(cols, desc_vecs):
        m = match(col, an, dv, encode)
        raw = round(float(dv @ problem_vec), 4)
        rel = min(1.0, max(0.0, (raw - 0.05) / 0.45))
        in_problem = m.finding is not None and m.finding.turn in problem_turns
        rel = 0.7 * rel + 0.3 * (1.0 if in_problem else 0.0)
        name = canonical_name(col.name)
        floor = {"problem": 0.9}.get(name, 0.6 if name in CORE_CONCEPTS else 0.0)
        rel = max(rel, floor)
        if m.finding is not None:
            ans = m.finding.strength * m.confidence
            source = f"{m.finding.signal} found '{_short(m.finding.value)}' in {m.finding.where()}"
        else:
            ans = 0.1
            source = "no value found"
            ex = getattr(col, "example_value", None)
            if ex and len(ex) >= 3 and ex.lower() in conv_text:
                ans, source = 0.5, f"its example value '{_short(ex)}' occurs in the text"
        ans = round(min(1.0, max(0.0, ans)), 3)
        rel = round(rel, 3)
        overall = round(0.4 * rel + 0.6 * ans, 3)
        just = f"relevance {rel:.2f} (cosine {raw:.2f} to the problem{'; value in the problem turns' if in_problem else ''}); answerability {ans:.2f}: {source}"
        scores.append(ColumnScore(relevance=rel, answerability=ans, overall=overall, justification=just))
    return scores


def _short(v: str, n: int = 40) -> str:
    v = " ".join(v.split())
    return v if len(v) <= n else v[: n - 1] + "…"
