"""`auto`: the faster runtime of this machine, timed on the real model once and remembered."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from sarag_assets.core.encoding import embedder, runtime_choice
from sarag_assets.core.encoding.embedder import Embedder
from sarag_assets.core.encoding.runtime_choice import machine_key

# a smaller sample than a machine's real measurement, timed the same way
SMALL_SAMPLE = 2


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SARAG_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(runtime_choice, "_CHOSEN", {})  # what this process already chose
    monkeypatch.setattr(runtime_choice, "SAMPLE_PER_LENGTH", SMALL_SAMPLE)
    return tmp_path / "cache"


def _measurements_forbidden(monkeypatch):
    monkeypatch.setattr(runtime_choice, "_CHOSEN", {})

    def measure(*args, **kwargs):
        raise AssertionError("measured again")
    monkeypatch.setattr(runtime_choice, "measure", measure)


@pytest.mark.slow
def test_auto_takes_the_runtime_timed_faster_for_each_workload_and_keeps_the_answer(cache, monkeypatch):
    choice = embedder.runtime_choice()
    assert set(choice.texts_per_second) == set(choice.query_ms) == {"onnx", "torch"}
    assert all(rate > 0 for rate in choice.texts_per_second.values())
    assert choice.batches == max(choice.texts_per_second, key=choice.texts_per_second.get)
    assert choice.queries == min(choice.query_ms, key=choice.query_ms.get)
    kept = list((cache / "runtime").glob("*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["batches"] == choice.batches

    _measurements_forbidden(monkeypatch)  # as a new process on the same machine
    assert embedder.runtime_choice() == choice
    by_choice = Embedder(runtime="auto")
    assert by_choice.runtime == choice.batches
    texts = ["the printer shows E-1234 after the update", "Le routeur redémarre sans cesse", "ok"]
    assert np.abs(by_choice.encode(texts) - Embedder(runtime="torch").encode(texts)).max() < 1e-5


def test_the_answer_depends_on_the_machine_the_threads_and_the_sample(monkeypatch):
    model = "/models/m"
    base = machine_key(model, None, 1)
    assert machine_key(model, 4, 1) != base and machine_key(model, None, 2) != base
    real = runtime_choice._cpu()
    with monkeypatch.context() as patched:
        patched.setattr(runtime_choice, "_cpu", lambda: {**real, "flags": "other"})
        assert machine_key(model, None, 1) != base
    assert machine_key(model, None, 1) == base
    monkeypatch.setattr(runtime_choice, "SAMPLE_PER_LENGTH", runtime_choice.SAMPLE_PER_LENGTH + 1)
    assert machine_key(model, None, 1) != base


@pytest.mark.slow
def test_a_damaged_answer_is_measured_again(cache, monkeypatch):
    first = embedder.runtime_choice()
    kept = next((cache / "runtime").glob("*.json"))
    kept.write_text('{"batches": "tensorflow"')
    monkeypatch.setattr(runtime_choice, "_CHOSEN", {})
    again = embedder.runtime_choice()
    assert again.measured_at >= first.measured_at and again.batches in ("onnx", "torch")
    assert json.loads(kept.read_text())["batches"] == again.batches


@pytest.mark.slow
def test_a_cache_it_cannot_write_costs_a_measurement_not_an_error(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("SARAG_MODEL_CACHE", str(blocked))
    monkeypatch.setattr(runtime_choice, "_CHOSEN", {})
    monkeypatch.setattr(runtime_choice, "SAMPLE_PER_LENGTH", SMALL_SAMPLE)
    assert embedder.runtime_choice().batches in ("onnx", "torch")
    assert blocked.read_text() == "not a folder"


@pytest.mark.slow
def test_processes_starting_at_once_measure_once(cache):
    script = (f"from sarag_assets.core.encoding import runtime_choice as r; r.SAMPLE_PER_LENGTH = {SMALL_SAMPLE}; "
              "from sarag_assets.core.encoding.embedder import runtime_choice; "
              "c = runtime_choice(); print(c.batches, c.measured_at)")
    env = {**os.environ, "SARAG_MODEL_CACHE": str(cache)}
    started = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in started]
    assert [p.returncode for p in started] == [0, 0], [err[-500:] for _, err in results]
    assert results[0][0] == results[1][0]  # the same answer
    assert sum("chosen by timing both" in err for _, err in results) == 1  # measured by one of them


def test_the_choice_is_logged_as_one_readable_line():
    choice = runtime_choice.RuntimeChoice(batches="torch", queries="onnx",
                                          texts_per_second={"onnx": 119.2, "torch": 134.6},
                                          query_ms={"onnx": 2.495, "torch": 7.586}, machine="x86_64",
                                          measured_at="now")
    assert choice.summary() == "torch for batches (torch 134.6, onnx 119.2 texts/s), onnx for queries " \
                               "(onnx 2.5 ms, torch 7.6 ms)"
