"""How good the answers are (`sarag eval`): does the first fix offered come from a gold conversation, how
much of the gold resolution does the answer's text say, and is the outcome label right. No Dagster.

For each query whose gold conversation holds a resolution, its *nuggets* are, first found:

1. the truth file's resolution for a gold conversation: a file of issues (`fidelity.load_truth`: the
   issue's fix) or the generator's per-conversation facts (``resolution_steps``), split into sentences and
   clauses (at ``;``);
2. the query's own nuggets;
3. the gold conversation's final helper answer, split into sentences: its final helper turn, unless that
   ends on a question. A thread whose helpers' last word is a question (a clarifying question; on the
   real IRC follow-ups it is why the asker speaks again, in 34 of #ubuntu's 191) holds no resolution, and
   the query is left out: counted in the report's ``ended_on_a_question``.

Per system and query:

- **fix from gold**: the first fix offered comes from a gold conversation (no fix offered: 0);
- **answer nugget coverage**: the share of those nuggets the answer's text covers (SDR's nugget
  accuracy on the answer, `metrics.NuggetMatcher`), citations and outcome labels aside;
- **outcome accuracy**, where the truth gives outcomes (the generator's ``resolved``): over the fixes
  offered from a conversation whose outcome is known, the share labelled ``confirmed`` exactly when that
  conversation was resolved.

Systems: ``sarag`` (the extractive answer), ``llm`` (the answer the configured LLM writes, only when one is
configured), and two baselines that answer with the top ``hybrid`` conversation's final helper turn
(``top1_last_answer``) or its first (``top1_first_answer``: on forums the accepted answer is often the
first).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

ANSWER_SYSTEMS = ("sarag", "top1_last_answer", "top1_first_answer")
_CITATION = re.compile(r"\s*\[[^\[\]]+\]")
_LABEL = re.compile(r"^(?:Confirmed fix|Suggested fix \(outcome not recorded\)|Tried, did not work)"
                    r"(?: in \d+ of the \d+ similar conversations)?:\s*", re.M)


def nugget_pieces(text: str) -> list[str]:
    from sarag_assets.evaluation.metrics import split_sentences

    return [p.strip() for s in split_sentences(text) for p in s.split(";") if len(p.split()) >= 2]


def gold_resolutions(truth_path: Path | None) -> tuple[dict[str, str], dict[str, bool]]:
    """(resolution text per conversation, resolved per conversation) from a truth file, if any."""
    texts: dict[str, str] = {}
    resolved: dict[str, bool] = {}
    if truth_path is None or not truth_path.is_file():
        return texts, resolved
    for line in truth_path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if not isinstance(record, dict):
            continue
        fix = record.get("fix") or record.get("resolution")
        if isinstance(record.get("resolution_steps"), list):
            fix = ". ".join(str(s) for s in record["resolution_steps"])
        ids = record.get("dialogue_ids") or ([record["dialogue_id"]] if "dialogue_id" in record else [])
        for d in ids:
            if isinstance(fix, str) and fix.strip():
                texts.setdefault(str(d), fix)
            if isinstance(record.get("resolved"), bool) and "dialogue_id" in record:
                resolved[str(d)] = record["resolved"]
    return texts, resolved


@dataclass
class SystemAnswers:
    fix_from_gold: list[float] = field(default_factory=list)
    coverage: list[float] = field(default_factory=list)
    outcome_right: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        mean = lambda xs: round(sum(xs) / len(xs), 4) if xs else None
        return {"n_queries": len(self.coverage), "fix_from_gold": mean(self.fix_from_gold),
                "answer_nugget_coverage": mean(self.coverage), "outcome_accuracy": mean(self.outcome_right),
                "n_outcomes": len(self.outcome_right)}


@dataclass
class AnswerReport:
    systems: dict[str, SystemAnswers]
    ended_on_a_question: int = 0  # queries left out: the gold thread's last helper turn is a question

    def as_dict(self) -> dict[str, Any]:
        return {name: s.as_dict() for name, s in self.systems.items()}

    def render(self) -> str:
        rows = self.as_dict()
        n = max((r["n_queries"] for r in rows.values()), default=0)
        header = ["answers", "fix_from_gold", "nugget_coverage", "outcome_accuracy"]
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        lines = [[name, fmt(r["fix_from_gold"]), fmt(r["answer_nugget_coverage"]),
                  fmt(r["outcome_accuracy"]) + (f" (n={r['n_outcomes']})" if r["n_outcomes"] else "")]
                 for name, r in rows.items()]
        widths = [max(len(x) for x in col) for col in zip(header, *lines)]
        left = f" ({self.ended_on_a_question} more end on a helper's question: no resolution)" \
            if self.ended_on_a_question else ""
        out = [f"answers on {n} queries with a gold resolution{left}"]
        out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *lines]]
        return "\n".join(out)


def answer_text(text: str) -> str:
    """An answer's words, its citations and outcome labels aside."""
    return _LABEL.sub("", _CITATION.sub("", text))


def _helper_turns(turns: Sequence[dict]) -> list[str]:
    return [t["text"] for t in turns if t["role"] != "user" and (t["text"] or "").strip()]


def resolution_nuggets(query, texts: dict[str, str], gold_turns: Callable[[], dict[str, list[dict]]]
                       ) -> list[str] | None:
    """The query's gold resolution as nuggets (see the module docstring): [] when it has none, None when
    the gold thread's last helper turn is a question (no resolution either, but counted apart)."""
    from sarag_assets.core.writing import QUESTION_MARKS

    gold_text = next((texts[g] for g in query.gold if g in texts), None)
    nuggets = nugget_pieces(gold_text) if gold_text else list(query.nuggets or [])
    if nuggets:
        return nuggets
    by_id = gold_turns()
    last = next((_helper_turns(by_id[g])[-1] for g in query.gold if _helper_turns(by_id.get(g, []))), None)
    if last and last.rstrip().endswith(QUESTION_MARKS):
        return None
    return nugget_pieces(last) if last else []


def score_answers(root: Path, eval_queries, truth_path: Path | None, *,
                  log: Callable[[str], None] = lambda _: None) -> AnswerReport:
    """Answer every query with a gold resolution by each system (see the module docstring)."""
    from sarag_assets.core import warehouse
    from sarag_assets.evaluation.metrics import NuggetMatcher
    from sarag_assets.evaluation.scoring import query_settings
    from sarag_assets.query.engine import Sarag
    from sarag_assets.query.fixes import CONFIRMED

    texts, resolved = gold_resolutions(truth_path)
    matcher = NuggetMatcher()
    with Sarag(root) as engine, Sarag(root, llm=False) as extractive:
        systems = {n: SystemAnswers() for n in list(ANSWER_SYSTEMS) + (["llm"] if engine.llm is not None else [])}
        with warehouse.connect(engine.published_warehouse(), read_only=True) as con:
            def turns(ids):
                return warehouse.turns_of(con, list(ids))

            wanted, ended_on_a_question = [], 0
            for q in eval_queries:
                nuggets = resolution_nuggets(q, texts, lambda: turns(q.gold))
                if nuggets is None:
                    ended_on_a_question += 1
                elif nuggets:
                    wanted.append((q, nuggets))
            log(f"answers: {len(wanted)} queries with a gold resolution")
            hybrid = query_settings("hybrid")
            for q, nuggets in wanted:
                gold = set(q.gold)
                top = [h.dialogue_id for h in extractive.search(q.turns, 1, settings=hybrid)]
                helper = _helper_turns(turns(top).get(top[0], [])) if top else []
                for name, said in (("top1_last_answer", helper[-1:]), ("top1_first_answer", helper[:1])):
                    s = systems[name]
                    s.fix_from_gold.append(float(bool(said) and top[0] in gold))
                    s.coverage.append(_coverage(matcher, nuggets, said[0] if said else ""))
                for name, opened in (("sarag", extractive), ("llm", engine)):
                    if name not in systems:
                        continue
                    answer = opened.answer(q.turns)
                    s = systems[name]
                    first = answer.fixes[0].dialogue_ids if answer.fixes else []
                    s.fix_from_gold.append(float(bool(set(first) & gold)))
                    s.coverage.append(_coverage(matcher, nuggets, answer_text(answer.text) if answer.fixes else ""))
                    for fix in answer.fixes:
                        known = [d for d in fix.dialogue_ids if d in resolved]
                        if known:
                            s.outcome_right.append(float((fix.outcome == CONFIRMED) == resolved[known[0]]))
    return AnswerReport(systems, ended_on_a_question)


def _coverage(matcher, nuggets: list[str], text: str) -> float:
    if not text.strip():
        return 0.0
    return sum(m.covered for m in matcher.match(nuggets, text)) / len(nuggets)
