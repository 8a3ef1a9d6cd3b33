"""What an analysis holds: the conversation's sentences (turn, role, text), the findings detected in
them (signal, name, value, strength, where), and the Analysis that carries both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


@dataclass(frozen=True)
class Sentence:
    turn: int
    role: str
    index: int  # sentence index within the turn
    start: int  # offsets into the turn's text
    end: int
    text: str


@dataclass
class Finding:
    """A value found in a conversation, with where it came from."""

    signal: str
    name: str
    value: str
    type: str
    strength: float
    turn: int
    role: str
    evidence: str  # the sentence (or the verbatim span for multi-sentence values) it came from
    raw: str = ""  # the verbatim span
    key: str | None = None
    corrected: bool = False  # a correction said this value replaces an earlier one
    negated: bool = False  # denied ("not 2.1"): never a value
    superseded: bool = False  # replaced by a later correction

    @property
    def usable(self) -> bool:
        return not (self.negated or self.superseded)

    def where(self) -> str:
        return f"{self.role} turn {self.turn}"


@dataclass
class Analysis:
    turns: list[tuple[str, str]]  # (role, text)
    sentences: list[Sentence]
    findings: list[Finding] = field(default_factory=list)
    problem: Finding | None = None
    problem_text: str = ""  # the first substantive user turns (what relevance is measured against)
    problem_turns: tuple[int, ...] = ()
    gist_applied: bool = False  # problem, resolution and resolved come from `gist` (embeddings)
    speakers: list[str] = field(default_factory=list)  # each turn's speaker, where the input names them
    body: list[Sentence] = field(default_factory=list)  # the sentences a cell may quote (no letter frame)
    accepted: tuple[int, ...] = ()  # the turns the source marks as the accepted answer
    quotable: tuple[list[Sentence], list[Sentence]] | None = None  # `sentences`, `body` as the gist quotes them

    def by_signal(self, signal: str) -> list[Finding]:
        return [f for f in self.findings if f.signal == signal and f.usable]

    def by_name(self, name: str) -> list[Finding]:
        return [f for f in self.findings if f.name == name and f.usable]

    def best(self, findings: Iterable[Finding]) -> Finding | None:
        """Corrections win; then the strongest; then the user's word over the agent's; then the earliest."""
        fs = [f for f in findings if f.usable]
        if not fs:
            return None
        return min(fs, key=lambda f: (not f.corrected, -round(f.strength, 1), f.role != "user", f.turn, f.evidence))

    def names(self) -> list[str]:
        return list(dict.fromkeys(f.name for f in self.findings if f.usable))
