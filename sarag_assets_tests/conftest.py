"""Shared fixtures: a temporary sarag home and a real (temporary) Dagster instance."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from sarag_assets.settings import Home  # noqa: E402

# Package fixtures that build a home through the whole pipeline; the tests that use one are slow however
# little they do themselves.
HOME_BUILDING_FIXTURES = {"built_home"}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items):
    for item in items:
        if HOME_BUILDING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory):
    """The query side's exported ONNX encoder goes to this test session's directory, not the user's cache
    (subprocesses such as the CLI tests inherit it)."""
    path = tmp_path_factory.mktemp("model-cache")
    previous = os.environ.get("SARAG_MODEL_CACHE")
    os.environ["SARAG_MODEL_CACHE"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("SARAG_MODEL_CACHE", None)
    else:
        os.environ["SARAG_MODEL_CACHE"] = previous


@pytest.fixture
def home(tmp_path, monkeypatch) -> Home:
    """An empty sarag home; SARAG_HOME points at it for the code under test."""
    root = tmp_path / "home"
    monkeypatch.setenv("SARAG_HOME", str(root))
    for name in ("SARAG_BATCH_SIZE", "SARAG_REDACT", "SARAG_MAX_RECORD_BYTES", "SARAG_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return Home(root).ensure()


@pytest.fixture
def instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def defs():
    from sarag_assets.definitions import defs as definitions

    return definitions


def write_jsonl(path: Path, conversations: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(c) + "\n" for c in conversations), encoding="utf-8")
    return path


def conversation(dialogue_id: str, *turns: tuple[str, str]) -> dict:
    return {"dialogue_id": dialogue_id, "turns": [{"speaker": s, "text": t} for s, t in turns]}


def publish_as_is(root: Path, warehouse_bytes: bytes | None = None, *, copy_of: Path | None = None):
    """Make `root` a home whose published state holds a warehouse copy (the bytes given, or a copy of a
    file) and no LanceDB table, as a reader finds it. The pipeline itself publishes only what passes
    its audit; this is for tests of what readers do with a given (or damaged) state."""
    import json
    import shutil

    from sarag_assets.core import publication
    from sarag_assets.settings import Home

    home = Home(root)
    folder = publication.folder(home)
    folder.mkdir(parents=True, exist_ok=True)
    state = publication.PublishedState(id="20260101T000000000000Z-test00", folder=folder, staged_at="2026-01-01",
                                       published_at="2026-01-01", lancedb={}, counts={}, audit={})
    if copy_of is not None:
        shutil.copyfile(copy_of, state.warehouse)
    elif warehouse_bytes is not None:
        state.warehouse.write_bytes(warehouse_bytes)
    state.record_path.write_text(json.dumps(state.as_dict()))
    (folder / publication.CURRENT).write_text(state.id)
    return state
