"""One home built by the real pipeline from what `sarag demo` lands (the generated corpus and the bundled
real samples), shared by the query tests (read-only): the README's examples run against it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import pytest

from sarag_assets.cli import DEMO_N, DEMO_SEED, land_demo
from sarag_assets.settings import Home


@pytest.fixture(scope="package")
def built_home(tmp_path_factory) -> Home:
    """`sarag demo`'s path: generated corpus -> inbox -> sensor -> every asset, on a temporary instance."""
    from sarag_assets.orchestration.runner import land_and_process

    root = tmp_path_factory.mktemp("query_home")
    saved = {k: v for k, v in os.environ.items() if k.startswith("SARAG_") and k != "SARAG_MODEL_CACHE"}
    for name in saved:
        del os.environ[name]
    os.environ["SARAG_HOME"] = str(root)
    try:
        home = Home(root).ensure()
        land_demo(home)
        from sarag_assets.definitions import defs

        with dg.instance_for_test() as instance:
            run = land_and_process(defs, instance)
        assert not run.failed, run
        yield home
    finally:
        for name in [k for k in os.environ if k.startswith("SARAG_") and k != "SARAG_MODEL_CACHE"]:
            del os.environ[name]
        os.environ.update(saved)


@pytest.fixture(scope="package")
def generated_queries(built_home) -> list[dict]:
    path = Path(built_home.root) / "generated" / f"n{DEMO_N}-seed{DEMO_SEED}" / "queries.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="package")
def engine(built_home):
    from sarag_assets.query.engine import Sarag

    with Sarag(built_home) as opened:
        yield opened
