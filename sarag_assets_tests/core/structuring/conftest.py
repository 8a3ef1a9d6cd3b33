"""The real embedded backend, loaded once per test module of the structuring core."""

from __future__ import annotations

import pytest

from sarag_assets.backends.embedded import EmbeddedBackend


@pytest.fixture(scope="module")
def backend():
    return EmbeddedBackend()
