"""The structuring assets with the LLM backend, end to end: real Dagster runs, the real openai client and
instructor, and a real local OpenAI-compatible HTTP server that answers like a (simple) model."""

from __future__ import annotations

import re

import dagster as dg
import duckdb
import pytest

from sarag_assets.defs.runner import land_and_process
from sarag_assets_tests.backends.llm.fake_openai_server import (
    Behaviour,
    FakeOpenAIServer,
    tool_name,
    user_text,
)
from sarag_assets_tests.conftest import conversation, write_jsonl

PRODUCT = re.compile(r"Widget \w+")
ERROR = re.compile(r"\bE\d{3}\b")


class ScriptedModel:
    """Answers each structuring task from the conversation it is given; `broken` marks conversations
    whose extraction always fails with HTTP 500."""

    def __init__(self):
        self.broken = True

    def __call__(self, request):
        tool, data = tool_name(request), user_text(request)
        if tool == "CandidateSchemaAnswer":
            return Behaviour.answer({"problem": "a widget fails", "columns": [
                {"name": "product", "type": "string", "meaning": "the widget model the user has",
                 "example_value": (PRODUCT.findall(data) or [None])[0],
                 "score": {"relevance": 0.9, "answerability": 0.9, "overall": 0.9, "justification": "named"}},
                {"name": "Error Code", "type": "text", "meaning": "the error code shown",
                 "example_value": (ERROR.findall(data) or [None])[0],
                 "score": {"relevance": 0.8, "answerability": 0.8, "overall": 0.8, "justification": "shown"}},
            ]})
        if tool == "GovernanceOperations":
            ops = [{"operation": "ADD", "columns": [name], "candidate": name, "reason": "recurring fact"}
                   for name in ("product", "error_code") if f'"name": "{name}"' not in data.split("candidates")[0]]
            return Behaviour.answer({"operations": ops})
        if tool == "RowValues":
            if self.broken and "BROKEN" in data:
                return Behaviour.server_error(500)
            product, error = PRODUCT.findall(data), ERROR.findall(data)
            return Behaviour.answer({"values": [
                {"column": "product", "value": product[0] if product else None,
                 "evidence": product[0] if product else None},
                {"column": "error_code", "value": error[0] if error else None, "evidence": error[0] if error else None},
            ]})
        if tool == "PseudoDocumentsAnswer":
            return Behaviour.answer({"issue_queries": [f"{' '.join(PRODUCT.findall(data)[:1])} error"],
                                     "solution_queries": ["what fixed the widget"]})
        if tool == "DialogueGraphAnswer":
            return Behaviour.answer({"nodes": [{"node_id": "n0", "issue": "widget error", "answer": "a fix",
                                                "turn_start": 0, "turn_end": 1}], "edges": []})
        if tool == "ValueJudgements":
            return Behaviour.answer({"judgements": [
                {"column": c, "supported": True, "reason": "stated"} for c in ("product", "error_code")
            ]})
        return Behaviour.http_error(400, error_body={"error": {"message": f"unexpected tool {tool!r}"}})


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
