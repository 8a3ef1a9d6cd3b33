"""A corpus written out as a forum's HTML export would hold it, to measure what markup does to a run.

Each line of a turn becomes a ``<p>`` with its text HTML-escaped, and lines that start with "-", "*",
"•" or "1." become the items of a ``<ul>``; everything else of the record stays. Usage:

    python -m sarag_assets.evaluation.html_export CORPUS.jsonl OUT.jsonl
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

_ITEM = re.compile(r"^(?:[-*•]|\d+[.)])\s+(.*)")


def as_html(text: str) -> str:
    out: list[str] = []
    items: list[str] = []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        item = _ITEM.match(line)
        if item:
            items.append(f"<li>{html.escape(item.group(1))}</li>")
            continue
        if items:
            out.append("<ul>" + "".join(items) + "</ul>")
            items = []
        out.append(f"<p>{html.escape(line)}</p>")
    if items:
        out.append("<ul>" + "".join(items) + "</ul>")
    return "".join(out) or html.escape(text)


def export(corpus: Path, out: Path) -> int:
    n = 0
    with corpus.open(encoding="utf-8") as source, out.open("w", encoding="utf-8") as sink:
        for line in source:
            if not line.strip():
                continue
            record = json.loads(line)
            for turn in record.get("turns", []):
                if isinstance(turn.get("text"), str):
                    turn["text"] = as_html(turn["text"])
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m sarag_assets.evaluation.html_export CORPUS.jsonl OUT.jsonl", file=sys.stderr)
        return 2
    print(f"{export(Path(args[0]), Path(args[1]))} conversations written as HTML to {args[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
