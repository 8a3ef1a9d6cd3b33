"""A corpus written out as another export would hold it, to measure what that shape does to a run.

- ``html``, as a forum's HTML export: each line of a turn becomes a ``<p>`` with its text HTML-escaped,
  and lines that start with "-", "*", "•" or "1." become the items of a ``<ul>``.
- ``email``, as a mail or help-desk export: every turn after the first quotes the turn before it below
  its own text, under "On <date>, <speaker> wrote:", each line re-wrapped at 72 characters and marked
  "> ".
- ``chat``, as a fast typist's chat log: every turn in lower case, without sentence punctuation, and one
  word in `TYPO_RATE` of four letters or more misspelt (two inner letters swapped, or one dropped), the
  same words in every run (seeded by the dialogue id and turn).
- ``titled``, as a forum export that gives the thread's title apart from the first post: a first turn
  that opens with a line of its own (a line, then a blank line) loses it to the record's
  ``metadata.title``, whatever the line is (a title, a "Subject:" line, a salutation): it checks that
  landing puts the line back, not what a title is worth.

Everything else of a record stays. Usage:

    python -m sarag_assets.evaluation.corpus_exports html|email|chat|titled CORPUS.jsonl OUT.jsonl
"""

from __future__ import annotations

import html
import json
import random
import re
import sys
import textwrap
import zlib
from pathlib import Path

_ITEM = re.compile(r"^(?:[-*•]|\d+[.)])\s+(.*)")
_SENTENCE_PUNCTUATION = re.compile(r"[.,!?;:]+(?=\s|$)|[¿¡]")
_WORD = re.compile(r"[^\W\d_]{4,}")
TYPO_RATE = 1 / 8


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


def as_chat(text: str, seed: str) -> str:
    rng = random.Random(zlib.crc32(seed.encode("utf-8")))

    def misspelt(m: re.Match) -> str:
        word = m.group(0)
        if rng.random() >= TYPO_RATE:
            return word
        i = rng.randrange(1, len(word) - 2)
        if rng.random() < 0.5:
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        return word[:i] + word[i + 1:]

    return _WORD.sub(misspelt, _SENTENCE_PUNCTUATION.sub("", text.lower()))


def titled(record: dict) -> None:
    turns = record.get("turns") or []
    first = turns[0].get("text") if turns and isinstance(turns[0], dict) else None
    if not isinstance(first, str) or "\n\n" not in first:
        return
    title, body = first.split("\n\n", 1)
    if title.strip() and "\n" not in title.strip() and body.strip():
        turns[0]["text"] = body
        if not isinstance(record.get("metadata"), dict):
            record["metadata"] = {}
        record["metadata"]["title"] = title.strip()


SHAPES = ("html", "email", "chat", "titled")


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
            elif shape == "titled":
                titled(record)
            elif shape == "chat":
                for k, turn in enumerate(record.get("turns", [])):
                    if isinstance(turn.get("text"), str):
                        turn["text"] = as_chat(turn["text"], f"{record.get('dialogue_id')}/{k}")
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
        print("usage: python -m sarag_assets.evaluation.corpus_exports html|email|chat|titled CORPUS.jsonl OUT.jsonl",
              file=sys.stderr)
        return 2
    print(f"{export(Path(args[1]), Path(args[2]), args[0])} conversations written as {args[0]} to {args[2]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
