"""A corpus written out as another export would hold it, to measure what that shape does to a run.

- ``html``, as a forum's HTML export: each line of a turn becomes a ``<p>`` with its text HTML-escaped,
  and lines that start with "-", "*", "•" or "1." become the items of a ``<ul>``.
- ``email``, as a mail or help-desk export: every turn after the first quotes the turn before it below
  its own text, under "On <date>, <speaker> wrote:", each line re-wrapped at 72 characters and marked
  "> ".

Everything else of a record stays. Usage:

    python -m sarag_assets.evaluation.corpus_exports html|email CORPUS.jsonl OUT.jsonl
"""

from __future__ import annotations

import html
import json
import re
import sys
import textwrap
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


def with_quotation(text: str, quoted: str, speaker: str) -> str:
    lines = []
    for line in quoted.split("\n"):
        lines.extend(textwrap.wrap(line, 72) or [""])
    marked = "\n".join(f"> {line}" if line else ">" for line in lines)
    return f"{text}\n\nOn Mon, 3 Jun 2024 at 10:02, {speaker} wrote:\n{marked}"


def as_email(turns: list[dict]) -> None:
    originals = [t.get("text") for t in turns]
    for k in range(1, len(turns)):
        if isinstance(originals[k], str) and isinstance(originals[k - 1], str):
            turns[k]["text"] = with_quotation(originals[k], originals[k - 1], str(turns[k - 1].get("speaker", "")))


SHAPES = ("html", "email")


def export(corpus: Path, out: Path, shape: str = "html") -> int:
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, not {shape!r}")
    n = 0
    with corpus.open(encoding="utf-8") as source, out.open("w", encoding="utf-8") as sink:
        for line in source:
            if not line.strip():
                continue
            record = json.loads(line)
            if shape == "email":
                as_email(record.get("turns", []))
            else:
                for turn in record.get("turns", []):
                    if isinstance(turn.get("text"), str):
                        turn["text"] = as_html(turn["text"])
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] not in SHAPES:
        print("usage: python -m sarag_assets.evaluation.corpus_exports html|email CORPUS.jsonl OUT.jsonl",
              file=sys.stderr)
        return 2
    print(f"{export(Path(args[1]), Path(args[2]), args[0])} conversations written as {args[0]} to {args[2]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
