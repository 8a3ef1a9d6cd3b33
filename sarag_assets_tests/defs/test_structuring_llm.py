"""The structuring assets with the LLM backend, end to end: real Dagster runs, the real openai client and
instructor, and a real local OpenAI-compatible HTTP server that answers like a (simple) model."""

from __future__ import annotations

import dagster as dg
import duckdb
import pytest

from sarag_assets.orchestration.runner import land_and_process
from sarag_assets_tests.backends.llm.fake_openai_server import Behaviour, FakeOpenAIServer, user_text
from sarag_assets_tests.backends.llm.scripted_model import ScriptedModel
from sarag_assets_tests.conftest import conversation, write_jsonl

pytestmark = pytest.mark.slow


@pytest.fixture
def llm(monkeypatch):
    with FakeOpenAIServer() as server:
        model = ScriptedModel()
        server.set_responder(model)
        monkeypatch.setenv("SARAG_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("SARAG_LLM_MODEL", "scripted-model")
        monkeypatch.setenv("SARAG_LLM_MAX_RETRIES", "1")
        monkeypatch.setenv("SARAG_LLM_MAX_VALIDATION_RETRIES", "1")
        yield server, model


def _metadata(instance, asset, partition=None):
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None),
        limit=1,
    ).records
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def test_llm_structuring_caches_calls_and_isolates_a_broken_conversation(home, instance, defs, llm):
    server, model = llm
    write_jsonl(home.inbox / "tickets.jsonl", [
        conversation("a", ("user", "My Widget A100 shows E101 on boot"), ("agent", "Update the firmware")),
        conversation("b", ("user", "Widget B200 beeps with E202"), ("agent", "Replace the battery")),
        conversation("c", ("user", "BROKEN Widget C300 shows E303"), ("agent", "Reset it")),
    ])
    run = land_and_process(defs, instance)
    assert run.batches and not run.failed
    batch = run.batches[0]
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        rows = con.execute(
            "SELECT dialogue_id, product, error_code FROM conversation_table ORDER BY 1").fetchall()
        failures = con.execute("SELECT dialogue_id, stage, reason FROM structuring_failures").fetchall()
        backends = con.execute("SELECT DISTINCT backend FROM validated_rows").fetchall()
    assert rows == [("a", "Widget A100", "E101"), ("b", "Widget B200", "E202"), ("c", None, None)]
    assert [(d, s) for d, s, _ in failures] == [("c", "extract_row")]
    assert "500" in failures[0][2]
    assert backends == [("llm/scripted-model",)]
    row_meta = _metadata(instance, "validated_rows", batch)
    assert row_meta["failed_conversations"] == 1 and row_meta["llm_failures"] == 1

    # Re-materializing unchanged input: candidate schemas come from the cache, no HTTP request at all.
    before = len(server.requests)
    defs.resolve_job_def("ingest_batch_job").execute_in_process(partition_key=batch, instance=instance)
    assert len(server.requests) == before
    cand_meta = _metadata(instance, "candidate_schemas", batch)
    assert cand_meta["llm_calls"] == 0 and cand_meta["llm_cache_hits"] == 3

    # The model recovers: the next materialization retries only the failed conversation.
    model.broken = False
    before = len(server.requests)
    defs.resolve_job_def("refresh_rows_job").execute_in_process(partition_key=batch, instance=instance)
    asked = [user_text(r) for r in server.requests[before:]]
    assert asked and all("BROKEN" in text for text in asked)
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        assert con.execute("SELECT product, error_code FROM conversation_table WHERE dialogue_id = 'c'").fetchall() \
            == [("Widget C300", "E303")]
        assert con.execute("SELECT count(*) FROM structuring_failures WHERE stage = 'extract_row'").fetchone() == (0,)


def _widget_conversations(n: int, broken: int | None = None) -> list[dict]:
    return [conversation(f"w{i:02d}", ("user", f"{'BROKEN ' if i == broken else ''}My Widget A{i:03d} shows E{i % 10}01"),
                         ("agent", "Update the firmware")) for i in range(n)]


def test_llm_calls_run_concurrently_and_a_failing_conversation_does_not_stop_the_others(
        home, instance, defs, llm, monkeypatch):
    server, model = llm
    monkeypatch.setenv("SARAG_LLM_CONCURRENCY", "4")
    # every answer takes a moment, so that calls sent one at a time could never overlap
    server.set_responder(lambda request: model(request).after(0.1))
    write_jsonl(home.inbox / "tickets.jsonl", _widget_conversations(12, broken=5))
    run = land_and_process(defs, instance)
    assert run.batches and not run.failed
    assert 2 <= server.most_in_flight <= 4
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        products = dict(con.execute("SELECT dialogue_id, product FROM conversation_table").fetchall())
        failed = con.execute("SELECT dialogue_id, stage FROM structuring_failures").fetchall()
    assert failed == [("w05", "extract_row")]
    assert products["w05"] is None
    assert {d: p for d, p in products.items() if d != "w05"} == {f"w{i:02d}": f"Widget A{i:03d}" for i in range(12) if i != 5}
    meta = _metadata(instance, "validated_rows", run.batches[0])
    assert meta["llm_concurrency_limit"] == 4 and 2 <= meta["llm_concurrency_peak"] <= 4


def test_rate_limit_answers_shrink_the_concurrency_and_every_call_still_succeeds(home, instance, defs, llm, monkeypatch):
    server, model = llm
    monkeypatch.setenv("SARAG_LLM_CONCURRENCY", "8")
    monkeypatch.setenv("SARAG_LLM_MAX_RETRIES", "4")
    server.enqueue(*[Behaviour.rate_limited(retry_after=0.2)] * 3)  # the first three requests are refused
    server.set_responder(lambda request: model(request).after(0.05))
    model.broken = False
    write_jsonl(home.inbox / "tickets.jsonl", _widget_conversations(12))
    run = land_and_process(defs, instance)
    assert run.batches and not run.failed
    meta = _metadata(instance, "candidate_schemas", run.batches[0])
    assert meta["llm_failures"] == 0 and meta["llm_retries"] >= 3
    assert meta["llm_concurrency_limit"] == 8 and meta["llm_concurrency_lowest"] < 8
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM conversation_table WHERE product IS NOT NULL").fetchone() == (12,)
