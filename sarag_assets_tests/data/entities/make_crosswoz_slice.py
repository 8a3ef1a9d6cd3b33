"""Build the CrossWOZ slice of this folder (run by hand; nothing imports it).

    python make_crosswoz_slice.py <CrossWOZ checkout or git dir, or test.json.zip, or test.json>

Reads the test split of CrossWOZ (Zhu et al., TACL 2020; Chinese; Beijing attractions, restaurants,
hotels, metro and taxi; written by pairs of crowd workers, one the user and one the system), keeps the
dialogues in file order whose dialogue acts label a *thing name* that the turn's text contains, at most
PER_DOMAIN per domain (the domain of the dialogue's first labelled name), up to TOTAL dialogues (300:
its dialogues are long, and the slice stays under 1 MB; the first slice had 50 per domain, 150 in all,
below the 200 conversations from which the batch's unit names give verdicts). A thing name is the value of the
``名称`` (name) slot of the 景点 (attraction), 餐馆 (restaurant) or 酒店 (hotel) domain. CrossWOZ's acts
give values, not character offsets: a label's span is the first occurrence of its value in that turn's
text; an act whose value the text does not contain gives no span. The rule was fixed before any figure
was measured. Writes ``crosswoz/corpus.jsonl`` (sarag's generic JSONL) and ``crosswoz/labels.jsonl``
(per dialogue, every labelled thing-name span; CrossWOZ has no payment-method slot, so
``payment_methods`` is empty).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

PER_DOMAIN = 100
TOTAL = 300
THING_DOMAINS = ("景点", "餐馆", "酒店")
NAME_SLOT = "名称"
ZIP_PATH = "data/crosswoz/test.json.zip"


def _load(source: Path) -> dict:
    if source.suffix == ".json":
        return json.loads(source.read_text(encoding="utf-8"))
    if source.suffix == ".zip":
        data = source.read_bytes()
    elif (source / ZIP_PATH).exists():
        data = (source / ZIP_PATH).read_bytes()
    else:
        git_dir = source / ".git" if (source / ".git").exists() else source
        data = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{ZIP_PATH}"],
                              check=True, capture_output=True).stdout
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return json.loads(z.read("test.json").decode("utf-8"))


def main(source: Path) -> None:
    dialogues = _load(source)
    per_domain: dict[str, int] = {}
    corpus, labels = [], []
    for task_id, d in dialogues.items():
        spans, domains = [], []
        for ti, m in enumerate(d["messages"]):
            text, role = m["content"], "user" if m["role"] == "usr" else "agent"
            seen = set()
            for intent, domain, slot, value in m["dialog_act"]:
                if intent != "General" and domain not in domains:
                    domains.append(domain)
                if domain not in THING_DOMAINS or slot != NAME_SLOT or not value or value in ("none", "无"):
                    continue
                start = text.find(value)
                if start < 0 or (domain, value) in seen:
                    continue
                seen.add((domain, value))
                spans.append({"turn": ti, "start": start, "end": start + len(value), "slot": f"{domain}-{slot}",
                              "value": text[start:start + len(value)], "role": role})
        if not spans:
            continue
        domain = spans[0]["slot"].split("-")[0]
        if per_domain.get(domain, 0) >= PER_DOMAIN:
            continue
        per_domain[domain] = per_domain.get(domain, 0) + 1
        did = f"crosswoz-test-{task_id}"
        corpus.append({"dialogue_id": did, "turns": [
            {"speaker": "user" if m["role"] == "usr" else "system",
             "role": "user" if m["role"] == "usr" else "agent", "text": m["content"]} for m in d["messages"]]})
        labels.append({"dialogue_id": did, "services": domains, "names": spans, "payment_methods": []})
        if len(corpus) >= TOTAL:
            break
    out = Path(__file__).parent / "crosswoz"
    out.mkdir(exist_ok=True)
    (out / "corpus.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in corpus), encoding="utf-8")
    (out / "labels.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in labels), encoding="utf-8")
    print(len(corpus), per_domain)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
