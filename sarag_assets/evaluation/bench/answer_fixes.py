"""Which conversations an extractive answer takes its fix from (a measurement, not a test).

    python -m sarag_assets.evaluation.bench.answer_fixes --home DIR [--k 5 10]

Over the generated benchmark landed in the home (`<home>/generated/*/`: its queries and the generator's
truth), each query is answered as `sarag ask` answers it (`Sarag.answer`, no LLM). Counted per k: answers
offering a fix (supported); those whose first fix comes from a conversation of the question's own issue,
or of another one; answers offering any fix from a conversation the generator marks unresolved; answers
that open by saying the closest conversation was not resolved. Only the generator knows the issues; the
answer never sees them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def measure(home: Path, k: int) -> dict[str, int]:
    from sarag_assets.query import Sarag

    generated = next(p for p in sorted((home / "generated").iterdir()) if (p / "truth.jsonl").exists())
    truth = {t["dialogue_id"]: t for t in map(json.loads, (generated / "truth.jsonl").read_text().splitlines())}
    queries = [json.loads(line) for line in (generated / "queries.jsonl").read_text().splitlines()]
    counts = dict(queries=len(queries), supported=0, first_fix_same_issue=0, first_fix_other_issue=0,
                  unresolved_offered=0, closest_not_resolved_said=0)
    with Sarag(home) as sarag:
        for query in queries:
            answer = sarag.answer(query["turns"], k=k)
            counts["closest_not_resolved_said"] += answer.text.startswith("The closest conversation")
            if not answer.supported:
                continue
            counts["supported"] += 1
            issues = {truth[d]["issue_id"] for d in answer.fixes[0].dialogue_ids if d in truth}
            counts["first_fix_same_issue" if query["issue_id"] in issues else "first_fix_other_issue"] += 1
            counts["unresolved_offered"] += any(d in truth and not truth[d]["resolved"]
                                                for fix in answer.fixes for d in fix.dialogue_ids)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", required=True, type=Path)
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10])
    args = parser.parse_args(argv)
    for k in args.k:
        print(f"k={k}: " + ", ".join(f"{name} {n}" for name, n in measure(args.home, k).items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
