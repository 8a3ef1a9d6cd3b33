"""Build the SGD slice of this folder (run by hand; nothing imports it).

    python make_sgd_slice.py <dstc8-schema-guided-dialogue checkout> [--commit <sha>]

Reads the test split (its services were not in training: unseen names, unseen wording), keeps the
dialogues in file order whose frames label a span of a *thing-name* slot, at most PER_SERVICE per
service, up to TOTAL dialogues. A thing-name slot is a free-text (non-categorical) slot named
``*_name`` or ``*title``: the restaurant, hotel, event, film, car, salon a conversation is about; not
``contact_name`` (a person messaged) nor ``alarm_name`` (a label the user invents). The rule was fixed
before any figure was measured. Writes ``sgd/corpus.jsonl`` (sarag's generic JSONL) and
``sgd/labels.jsonl`` (per dialogue, every labelled thing-name span and every payment-method value).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PER_SERVICE = 30
TOTAL = 300
NOT_THINGS = {"contact_name", "alarm_name", "new_alarm_name"}


def _show(repo: Path, path: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo / ".git") if (repo / ".git").exists() else str(repo),
                           "show", f"HEAD:{path}"], check=True, capture_output=True, text=True).stdout


def main(repo: Path) -> None:
    schema = json.loads(_show(repo, "test/schema.json"))
    things = {(s["service_name"], x["name"]) for s in schema for x in s["slots"]
              if not x["is_categorical"] and (x["name"].endswith("_name") or x["name"].endswith("title"))
              and x["name"] not in NOT_THINGS}
    per_service: dict[str, int] = {}
    corpus, labels = [], []
    for i in range(1, 35):
        for d in json.loads(_show(repo, f"test/dialogues_{i:03d}.json")):
            spans, payments = [], []
            for ti, t in enumerate(d["turns"]):
                for f in t["frames"]:
                    for s in f["slots"]:
                        if (f["service"], s["slot"]) in things:
                            spans.append({"turn": ti, "start": s["start"], "end": s["exclusive_end"], "slot": s["slot"],
                                          "value": t["utterance"][s["start"]:s["exclusive_end"]],
                                          "role": "user" if t["speaker"] == "USER" else "agent"})
                    for a in f.get("actions", []):
                        if a["slot"] == "payment_method":
                            payments += a["values"]
            if not spans:
                continue
            service = next(s["service"] for s in [{"service": f["service"]} for t in d["turns"] for f in t["frames"]]
                           if any((s["service"], sp["slot"]) in things for sp in spans))
            if per_service.get(service, 0) >= PER_SERVICE:
                continue
            per_service[service] = per_service.get(service, 0) + 1
            did = f"sgd-test-{d['dialogue_id']}"
            corpus.append({"dialogue_id": did, "turns": [
                {"speaker": "user" if t["speaker"] == "USER" else "system",
                 "role": "user" if t["speaker"] == "USER" else "agent", "text": t["utterance"]} for t in d["turns"]]})
            labels.append({"dialogue_id": did, "services": d["services"], "names": spans,
                           "payment_methods": sorted(set(payments))})
            if len(corpus) >= TOTAL:
                break
        if len(corpus) >= TOTAL:
            break
    out = Path(__file__).parent / "sgd"
    out.mkdir(exist_ok=True)
    (out / "corpus.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in corpus), encoding="utf-8")
    (out / "labels.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in labels), encoding="utf-8")
    print(len(corpus), per_service)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
