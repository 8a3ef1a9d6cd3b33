"""The structuring ablation switches end to end: real Dagster runs of the real graph on a small generated
corpus, with the fixed schema instead of governed metadata (SARAG_GOVERNANCE=fixed) and without the
gates (SARAG_GATES=off); then back to the full pipeline in the same home."""

from __future__ import annotations

import json
import re
import shutil

import dagster as dg
import duckdb
import pytest

from sarag_assets.core.structuring import governance
from sarag_assets.core.structuring.tables import GATES_SKIPPED
from sarag_assets.orchestration.runner import land_and_process
from sarag_assets.evaluation.synthetic import write_corpus
from sarag_assets_tests.backends.llm.fake_openai_server import (
    Behaviour,
    FakeOpenAIServer,
    tool_name,
    user_text,
)
from sarag_assets_tests.conftest import conversation, write_jsonl

pytestmark = pytest.mark.slow

FIXED_NAMES = [name for name, _, _ in governance.FIXED_SCHEMA]


@pytest.fixture(autouse=True)
def full_pipeline_by_default(monkeypatch):
    monkeypatch.delenv("SARAG_GOVERNANCE", raising=False)
    monkeypatch.delenv("SARAG_GATES", raising=False)


def land_generated(home, tmp_path, n=14, seed=11):
    write_corpus(tmp_path / "generated", n, seed)
    home.inbox.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(tmp_path / "generated" / "corpus.jsonl", home.inbox / "generated.jsonl")


def latest_metadata(instance, asset, partition=None) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None),
        limit=1,
    ).records
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def check(instance, asset, name):
    record = instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(dg.AssetKey(asset), name))
    return record.evaluation


def query(home, sql):
    with duckdb.connect(str(home.warehouse), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_fixed_schema_instead_of_governed_metadata_and_back(home, tmp_path, instance, defs, monkeypatch):
    land_generated(home, tmp_path)
    monkeypatch.setenv("SARAG_GOVERNANCE", "fixed")
    run = land_and_process(defs, instance, raise_on_error=True)
    (batch,) = run.batches
    meta = latest_metadata(instance, "governed_metadata")
    assert meta["governance"] == "fixed" and meta["conversations_governed"] == 0
    assert meta["columns"] == len(FIXED_NAMES)
    assert all(check(instance, "governed_metadata", c).passed
               for c in ("within_capacity", "names_snake_case_unique", "types_canonical"))
    (state,) = query(home, "SELECT state_json FROM governance_state ORDER BY saved_at DESC LIMIT 1")[0]
    assert [c["name"] for c in json.loads(state)["columns"]] == FIXED_NAMES
    assert query(home, "SELECT version, backend FROM metadata_versions") == [(1, governance.FIXED_BACKEND)]
    assert query(home, "SELECT count(*) FROM governance_processed") == [(0,)]
    # Rows are extracted against the fixed schema, and some of its columns find values in the conversations.
    assert sorted(r[0] for r in query(home, "SELECT DISTINCT column_name FROM validated_rows")) == sorted(FIXED_NAMES)
    filled = dict(query(home, "SELECT column_name, count(value) FROM validated_rows GROUP BY 1"))
    assert filled["problem"] > 0 and filled["product"] > 0
    assert latest_metadata(instance, "validated_rows", batch)["metadata_version"] == 1
    table_columns = [r[0] for r in query(home, "DESCRIBE conversation_table")]
    assert set(FIXED_NAMES) <= set(table_columns)

    # Back to governed in the same home: M* is evolved from the candidates the fixed run left unseen,
    # as the next version, and the batch's rows are rebuilt against it.
    monkeypatch.setenv("SARAG_GOVERNANCE", "governed")
    again = land_and_process(defs, instance, raise_on_error=True)
    meta = latest_metadata(instance, "governed_metadata")
    assert meta["governance"] == "governed" and meta["conversations_governed"] == 14
    assert meta["version"] > 1
    (state,) = query(home, "SELECT state_json FROM governance_state ORDER BY saved_at DESC LIMIT 1")[0]
    governed = [c["name"] for c in json.loads(state)["columns"]]
    assert governed and governed != FIXED_NAMES
    assert again.refreshed == [batch]
    assert sorted(r[0] for r in query(home, "SELECT DISTINCT column_name FROM validated_rows")) == sorted(governed)


def test_gates_off_keeps_values_ungated_without_blocking_then_back_on(home, tmp_path, instance, defs, monkeypatch):
    land_generated(home, tmp_path, n=12, seed=5)
    monkeypatch.setenv("SARAG_GATES", "off")
    run = land_and_process(defs, instance, raise_on_error=True)
    (batch,) = run.batches
    assert latest_metadata(instance, "validated_rows", batch)["gates"] == "off"
    extracted, ungated, gated = query(home, f"""
        SELECT count(raw_value), count(*) FILTER (WHERE semantic_reason = '{GATES_SKIPPED}'
                                                  AND value = trim(raw_value)),
               count(semantic_passed) + count(structural_passed)
        FROM validated_rows WHERE trim(raw_value) <> ''""")[0]
    assert extracted > 0 and ungated == extracted and gated == 0
    evaluation = check(instance, "validated_rows", "values_pass_both_gates")
    assert evaluation.passed and evaluation.metadata["gates"].value == "off"
    # The downstream assets ran: the blocking check did not stop them.
    assert query(home, "SELECT count(*) FROM current_dialogue_versions") == [(12,)]
    assert instance.fetch_materializations(dg.AssetKey("feature_clusters"), limit=1).records

    monkeypatch.setenv("SARAG_GATES", "on")
    again = land_and_process(defs, instance, raise_on_error=True)
    assert again.refreshed == [batch]  # rows built without the gates are stale once they are back on
    assert latest_metadata(instance, "validated_rows", batch)["gates"] == "on"
    assert query(home, f"SELECT count(*) FROM validated_rows WHERE semantic_reason = '{GATES_SKIPPED}'") == [(0,)]
    assert query(home, "SELECT count(*) FROM validated_rows WHERE trim(raw_value) <> '' AND semantic_passed IS NULL") \
        == [(0,)]
    assert check(instance, "validated_rows", "values_pass_both_gates").passed


# --- with a model that invents values: what the gates are for ---------------------------------------------

PRODUCT = re.compile(r"Widget \w+")


def inventing_model(request):
    """Proposes product and error_code; extracts the product as written and an error code it made up."""
    tool, data = tool_name(request), user_text(request)
    score = {"relevance": 0.9, "answerability": 0.9, "overall": 0.9, "justification": "stated"}
    if tool == "CandidateSchemaAnswer":
        return Behaviour.answer({"problem": "a widget fails", "columns": [
            {"name": "product", "type": "string", "meaning": "the widget model", "score": score},
            {"name": "error_code", "type": "string", "meaning": "the error code shown", "score": score}]})
    if tool == "GovernanceOperations":
        return Behaviour.answer({"operations": [
            {"operation": "ADD", "columns": [n], "candidate": n, "reason": "recurring"}
            for n in ("product", "error_code") if f'"name": "{n}"' not in data.split("candidates")[0]]})
    if tool == "RowValues":
        product = PRODUCT.findall(data)
        return Behaviour.answer({"values": [
            {"column": "product", "value": product[0] if product else None, "evidence": product[0] if product else None},
            {"column": "error_code", "value": "E999", "evidence": "error E999"}]})
    if tool == "ValueJudgements":
        return Behaviour.answer({"judgements": [
            {"column": c, "supported": True, "reason": "looks fine"} for c in ("product", "error_code")]})
    if tool == "PseudoDocumentsAnswer":
        return Behaviour.answer({"issue_queries": ["widget error"], "solution_queries": ["widget fix"]})
    if tool == "DialogueGraphAnswer":
        return Behaviour.answer({"nodes": [{"node_id": "n0", "issue": "widget error", "answer": "a fix",
                                            "turn_start": 0, "turn_end": 1}], "edges": []})
    return Behaviour.http_error(400, error_body={"error": {"message": f"unexpected tool {tool!r}"}})


def test_gates_null_what_the_model_invents_and_gates_off_keeps_it(home, instance, defs, monkeypatch):
    with FakeOpenAIServer() as server:
        server.set_responder(inventing_model)
        monkeypatch.setenv("SARAG_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("SARAG_LLM_MODEL", "inventing-model")
        monkeypatch.setenv("SARAG_LLM_MAX_RETRIES", "1")
        write_jsonl(home.inbox / "tickets.jsonl", [
            conversation("a", ("user", "My Widget A100 does not start"), ("agent", "Charge it overnight")),
            conversation("b", ("user", "Widget B200 beeps all the time"), ("agent", "Replace the battery")),
        ])
        monkeypatch.setenv("SARAG_GATES", "off")
        run = land_and_process(defs, instance, raise_on_error=True)
        (batch,) = run.batches
        assert query(home, "SELECT dialogue_id, product, error_code FROM conversation_table ORDER BY 1") == [
            ("a", "Widget A100", "E999"), ("b", "Widget B200", "E999")]
        assert not [r for r in server.requests if tool_name(r) == "ValueJudgements"]  # no judge without gates

        monkeypatch.setenv("SARAG_GATES", "on")
        before = len(server.requests)
        again = land_and_process(defs, instance, raise_on_error=True)
        assert again.refreshed == [batch]
        asked = [tool_name(r) for r in server.requests[before:]]
        assert asked.count("ValueJudgements") == 2  # the extraction itself comes from the call cache
        assert query(home, "SELECT dialogue_id, product, error_code FROM conversation_table ORDER BY 1") == [
            ("a", "Widget A100", None), ("b", "Widget B200", None)]
        reasons = query(home, "SELECT DISTINCT semantic_reason FROM validated_rows WHERE column_name = 'error_code'")
        assert reasons == [("value does not occur in the conversation",)]
