"""Does the table hold the point of each conversation? The `problem` and `resolution` cells against a set's
truth, next to two trivial extractive baselines. No Dagster imports.

A set's `truth.jsonl` (beside its corpus) lists issues, each with the conversations about it and what a
support analyst would write: `{"problem", "fix", "dialogue_ids": [...], ...}` (`issue` stands for a missing
`problem`, `resolution` for a missing `fix`). Per conversation:

- `problem`: the embedding similarity (all-MiniLM-L6-v2 cosine) of the conversation's `problem` cell to
  its issue's truth problem; the baseline `first_user_turn` is the same for the asker's first turn;
- `resolution`: the same for the `resolution` cell and the truth fix; the baseline `last_helper_turn` is
  the helper's last turn.

An empty cell (no column, or null) scores 0: a table that says nothing has not held the point. The
report gives means over all conversations, and over the conversations whose askers state their problem
in English and the others separately (the language of the asker's first turn of 40 characters or more, by
`langdetect`, seeded; it can misread short informal text), since the model reads English best.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

MEASURES = ("problem", "first_user_turn", "resolution", "last_helper_turn")
PROBLEM_KEYS = ("problem", "issue")
FIX_KEYS = ("fix", "resolution")


class TruthFileError(ValueError):
    """A truth file that is not a list of issues with problem, fix and dialogue ids (one line)."""


@dataclass(frozen=True)
class TruthIssue:
    problem: str
    fix: str
    dialogue_ids: tuple[str, ...]


def load_truth(path: str | Path) -> list[TruthIssue] | None:
    """The issues of a truth file, or None when it holds something else (the generator's per-conversation
    facts, say). A line that is not JSON is an error naming the line."""
    issues = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TruthFileError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                return None
            problem = _first_text(record, PROBLEM_KEYS)
            fix = _first_text(record, FIX_KEYS)
            if problem is None or fix is None or not isinstance(record.get("dialogue_ids"), list):
                return None
            issues.append(TruthIssue(problem, fix, tuple(str(d) for d in record["dialogue_ids"])))
    return issues or None


def _first_text(record: Mapping, keys: Sequence[str]) -> str | None:
    for key in keys:
        if isinstance(record.get(key), str) and record[key].strip():
            return record[key]
    return None


@dataclass
class ConversationFidelity:
    dialogue_id: str
    language: str
    scores: dict[str, float]  # measure -> similarity


@dataclass
class FidelityReport:
    conversations: list[ConversationFidelity] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # truth ids the home does not hold
    # conversations in which the user speaks again after a helper's reply, and how many have a graph edge
    follow_ups: int = 0
    follow_ups_with_edge: int = 0

    def means(self, keep: Callable[[ConversationFidelity], bool] = lambda _: True) -> dict[str, float | int]:
        chosen = [c for c in self.conversations if keep(c)]
        out: dict[str, float | int] = {"n": len(chosen)}
        for measure in MEASURES:
            out[measure] = round(float(np.mean([c.scores[measure] for c in chosen])), 3) if chosen else float("nan")
        return out

    def groups(self) -> dict[str, dict[str, float | int]]:
        groups = {"all": self.means()}
        if any(c.language != "en" for c in self.conversations):
            groups["english"] = self.means(lambda c: c.language == "en")
            groups["other languages"] = self.means(lambda c: c.language != "en")
        return groups

    def as_dict(self) -> dict:
        return {"groups": self.groups(), "missing": self.missing,
                "graph": {"user_speaks_again": self.follow_ups, "with_an_edge": self.follow_ups_with_edge},
                "conversations": [{"dialogue_id": c.dialogue_id, "language": c.language, **c.scores}
                                  for c in self.conversations]}

    def render(self) -> str:
        header = "conversations          n  problem  first_user_turn  resolution  last_helper_turn"
        lines = ["Fidelity of the problem and resolution cells (cosine to the truth; empty = 0):", header,
                 "-" * len(header)]
        for name, m in self.groups().items():
            lines.append(f"{name:<18} {m['n']:>5}  {m['problem']:>7.3f}  {m['first_user_turn']:>15.3f}  "
                         f"{m['resolution']:>10.3f}  {m['last_helper_turn']:>16.3f}")
        if self.missing:
            lines.append(f"({len(self.missing)} conversation(s) of the truth are not in the home)")
        if self.follow_ups:
            lines.append(f"Dialogue graphs: {self.follow_ups_with_edge} of the {self.follow_ups} conversations in which the "
                         f"user speaks again after a helper's reply have an edge "
                         f"({self.follow_ups_with_edge / self.follow_ups:.0%}).")
        return "\n".join(lines)


def language_of(text: str) -> str:
    """ISO 639-1 code of the text's language ('unknown' when it cannot tell)."""
    from langdetect import DetectorFactory, LangDetectException, detect

    DetectorFactory.seed = 0  # langdetect samples; seeded it gives the same answer every run
    try:
        return detect(text)
    except LangDetectException:
        return "unknown"


def asker_language(user_turns: Sequence[str], min_chars: int = 40) -> str:
    """The language the asker states the problem in: that of their first turn long enough to tell (a short
    "hi"/"thanks" says little), else of all their turns together."""
    for text in user_turns:
        if len(text.strip()) >= min_chars:
            return language_of(text)
    return language_of(" ".join(user_turns))


def measure(truth: Iterable[TruthIssue], cells: Mapping[str, tuple[str | None, str | None]],
            turns: Mapping[str, Sequence[tuple[str, str]]], encode: Callable[[list[str]], np.ndarray]) -> FidelityReport:
    """`cells`: dialogue id -> (problem cell, resolution cell); `turns`: dialogue id -> (role, text) in order;
    `encode`: texts -> unit vectors."""
    report = FidelityReport()
    pairs: list[tuple[str, str, str, str | None]] = []  # (dialogue, measure, truth text, candidate)
    for issue in truth:
        for dialogue_id in issue.dialogue_ids:
            if dialogue_id not in turns:
                report.missing.append(dialogue_id)
                continue
            problem, resolution = cells.get(dialogue_id, (None, None))
            user = [text for role, text in turns[dialogue_id] if role == "user"]
            helper = [text for role, text in turns[dialogue_id] if role != "user"]
            pairs += [(dialogue_id, "problem", issue.problem, problem),
                      (dialogue_id, "first_user_turn", issue.problem, user[0] if user else None),
                      (dialogue_id, "resolution", issue.fix, resolution),
                      (dialogue_id, "last_helper_turn", issue.fix, helper[-1] if helper else None)]
            report.conversations.append(ConversationFidelity(dialogue_id, asker_language(user), {}))
    texts = sorted({t for _, _, truth_text, cand in pairs for t in (truth_text, cand) if t and t.strip()})
    vectors = dict(zip(texts, encode(texts))) if texts else {}
    by_id = {c.dialogue_id: c for c in report.conversations}
    for dialogue_id, name, truth_text, candidate in pairs:
        ok = candidate is not None and candidate.strip() and truth_text.strip()
        by_id[dialogue_id].scores[name] = float(vectors[candidate] @ vectors[truth_text]) if ok else 0.0
    return report


def user_speaks_again(turns: Sequence[tuple[str, str]]) -> bool:
    """The user has a turn after the helper's first reply (a follow-up, a clarification, a report)."""
    roles = [role for role, _ in turns]
    first_reply = next((i for i, (role, _) in enumerate(turns) if role != "user" and "user" in roles[:i]), None)
    return first_reply is not None and "user" in roles[first_reply + 1:]


def graph_coverage(turns: Mapping[str, Sequence[tuple[str, str]]], with_edges: set[str]) -> tuple[int, int]:
    """(conversations in which the user speaks again, how many of them have a graph edge)."""
    again = [d for d, ts in turns.items() if user_speaks_again(ts)]
    return len(again), sum(d in with_edges for d in again)


def home_fidelity(warehouse_path: Path, truth: list[TruthIssue], encode) -> FidelityReport:
    """`measure` over what a materialized home holds (its conversation_table cells and current turns),
    with the dialogue graphs' coverage of the conversations in which the user speaks again."""
    from sarag_assets.core import warehouse

    with warehouse.connect(warehouse_path, read_only=True) as con:
        cells = warehouse.problem_and_resolution(con)
        turns = warehouse.current_dialogue_turns(con)
        with_edges = warehouse.dialogues_with_graph_edges(con)
    report = measure(truth, cells, turns, encode)
    report.follow_ups, report.follow_ups_with_edge = graph_coverage(turns, with_edges)
    return report
