"""How the CLI finds a `sarag serve` running on the same home, so that `sarag search` and `ask` answer in
milliseconds instead of loading the model and the vectors again (seconds, and ~800 MB, per call).

The service writes `<home>/serve.json` (its URL, process id and home) once it listens, and removes it when
it stops. A reader trusts the file only while that process is alive and the file names this home; the CLI
then also checks that the answer comes from the state this home has published (a service still switching
to a newer state, or serving a copied home, is not used). Anything else falls back to answering in process.
Standard library only: the point is a fast start.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

FILE = "serve.json"


def announce(home_root: Path, url: str) -> Path:
    path = Path(home_root) / FILE
    temporary = path.with_name(f".{FILE}.{os.getpid()}")
    temporary.write_text(json.dumps({"url": url, "pid": os.getpid(), "home": str(Path(home_root).resolve())}))
    temporary.replace(path)  # a reader never sees half a file
    return path


def withdraw(home_root: Path) -> None:
    """Remove the file if it is this process's (a second service on the home may have written its own)."""
    path = Path(home_root) / FILE
    if _read(path).get("pid") == os.getpid():
        try:
            path.unlink(missing_ok=True)
        except OSError:  # the file is stale once this process ends: readers check that
            pass


def running_service(home_root: Path) -> str | None:
    """The URL of a live `sarag serve` on this home, or None."""
    found = _read(Path(home_root) / FILE)
    pid, url = found.get("pid"), found.get("url")
    if not (isinstance(pid, int) and isinstance(url, str)) or found.get("home") != str(Path(home_root).resolve()):
        return None
    try:
        os.kill(pid, 0)  # signal 0: only whether the process exists
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        pass
    return url


def post(url: str, path: str, body: dict, *, api_key: str | None = None, timeout_s: float = 60) -> dict | None:
    """The service's JSON answer, or None when it cannot give one (gone, refusing, not ready)."""
    headers = {"Content-Type": "application/json", **({"X-API-Key": api_key} if api_key else {})}
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):  # HTTPError is a URLError
        return None


def _read(path: Path) -> dict:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
