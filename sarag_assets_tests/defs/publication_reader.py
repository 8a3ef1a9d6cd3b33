"""One reader process for the publish-then-read tests: `sarag search` or `sarag sql` (the real CLI's
main, called again and again as a user would run it), until a stop file appears, then once more.

    python -m sarag_assets_tests.defs.publication_reader HOME search|sql STOP_FILE OUT.jsonl

Each call appends {"rc", "state", "answer", "stderr", "t"} to OUT: the exit code, the published state
the answer reports, the dialogue ids found (search) or the conversation count (sql), and when it ended.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from pathlib import Path

from sarag_assets.cli import main

COUNT = "SELECT count(*) AS n FROM conversation_table"
QUESTION = "my printer jams on every page"


def read_once(home: str, mode: str) -> dict:
    argv = ["search", "--home", home, "--json", "--k", "3", QUESTION] if mode == "search" else \
        ["sql", "--home", home, "--json", COUNT]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except BaseException as exc:  # noqa: BLE001 - a traceback is a failure the test must see
            rc, err = 99, io.StringIO(f"{type(exc).__name__}: {exc}")
    record = {"rc": rc, "stderr": err.getvalue()[-500:], "state": None, "answer": None, "t": time.time()}
    if rc == 0:
        data = json.loads(out.getvalue())
        record["state"] = data["published_state"]
        record["answer"] = [h["dialogue_id"] for h in data["hits"]] if mode == "search" else data["rows"][0][0]
    return record


def run(home: str, mode: str, stop: Path, out: Path) -> None:
    with out.open("a", encoding="utf-8") as log:
        while True:
            last = stop.exists()
            log.write(json.dumps(read_once(home, mode)) + "\n")
            log.flush()
            if last:
                return


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
