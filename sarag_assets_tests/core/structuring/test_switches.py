"""The structuring ablation switches as plain functions: the fixed schema instead of governed metadata
(SARAG_GOVERNANCE=fixed) and validated rows without the gates (SARAG_GATES=off)."""

from __future__ import annotations

import polars as pl
import pytest

from sarag_assets.core.structuring import governance
from sarag_assets.core.structuring.interface import (
    ColumnConstraints,
    GovernedMetadata,
    MetadataColumn,
)
from sarag_assets.core.structuring.tables import (
    GATES_SKIPPED,
    candidate_schema_rows,
    govern,
    install_fixed_metadata,
    validated_row_outcomes,
    validated_row_records,
)
from sarag_assets.core.warehouse import conform, empty_frame
from sarag_assets_tests.core.structuring.chats import chat


ROUTER_CHATS = [
    chat(f"r{i}", f"Hi, my Netwave AX{3000 + i} router drops Wi-Fi every hour since firmware 2.{i}.1.",
         "Please disable band steering in the admin page and reboot.", "That fixed it, thank you!")
    for i in range(4)
]
BILLING_CHATS = [
    chat(f"b{i}", f"I was charged twice for order #{48151620 + i}, the amount was $4{i}.99.",
         "Sorry about that, I have refunded the duplicate charge.", "Great, thanks.")
    for i in range(4)
]


def candidates(conversations, backend):
    return candidate_schema_rows("b", [(c, f"h-{c.dialogue_id}") for c in conversations], backend).frame


def test_fixed_schema_replaces_an_evolved_metadata_as_a_new_version(backend):
    evolved = govern(GovernedMetadata(), candidates(ROUTER_CHATS, backend), backend).metadata
    assert evolved.columns and not governance.is_fixed(evolved)

    installed = install_fixed_metadata(evolved, latest_version=evolved.version, next_seq=7)
    fixed = installed.metadata
    assert [c.name for c in fixed.columns] == [name for name, _, _ in governance.FIXED_SCHEMA]
    assert governance.is_fixed(fixed) and fixed.version == evolved.version + 1
    assert installed.versions == [fixed] and installed.processed == 0
    ops = installed.operations
    assert [o["seq"] for o in ops] == list(range(8, 8 + len(ops)))
    assert {o["columns"] for o in ops if o["operation"] == "DELETE"} == {c.name for c in evolved.columns}
    assert [o["columns"] for o in ops if o["operation"] == "ADD"] == [c.name for c in fixed.columns]
    assert all(c.meaning for c in fixed.columns)

    again = install_fixed_metadata(fixed, latest_version=fixed.version)
    assert again.versions == [] and again.operations == [] and again.metadata.version == fixed.version


def test_governing_in_chunks_of_whole_conversations_is_governing_them_at_once(backend):
    rows = candidates(ROUTER_CHATS + BILLING_CHATS, backend)
    at_once = govern(GovernedMetadata(), rows, backend)
    keys = rows.select("dialogue_id").unique(maintain_order=True)["dialogue_id"].to_list()
    chunks = [rows.filter(pl.col("dialogue_id").is_in(keys[i : i + 3])) for i in range(0, len(keys), 3)]
    chunked = govern(GovernedMetadata(), iter(chunks), backend)
    assert chunked.metadata == at_once.metadata and chunked.versions == at_once.versions
    drop_time = lambda ops: [{k: v for k, v in o.items() if k != "applied_at"} for o in ops]  # noqa: E731
    assert drop_time(chunked.operations) == drop_time(at_once.operations)
    assert chunked.governed == at_once.governed == [(d, f"h-{d}", "b") for d in keys]
    assert at_once.processed == len(ROUTER_CHATS + BILLING_CHATS) and len(at_once.versions) > 1


def test_fixed_mode_ignores_candidates(backend):
    result = govern(GovernedMetadata(), candidates(ROUTER_CHATS + BILLING_CHATS, backend), backend,
                    governance_mode="fixed")
    assert governance.is_fixed(result.metadata) and result.processed == 0
    assert result.metadata.pending == []


def test_governance_resumes_from_the_last_evolved_metadata_after_the_fixed_schema(backend):
    first = govern(GovernedMetadata(), candidates(ROUTER_CHATS, backend), backend).metadata
    fixed = govern(first, empty_frame("candidate_schemas"), backend, governance_mode="fixed").metadata
    assert fixed.version == first.version + 1

    # Nothing new to govern: the evolved M* comes back, as a version after the fixed one.
    back = govern(fixed, empty_frame("candidate_schemas"), backend, last_governed=first)
    assert [c.name for c in back.metadata.columns] == [c.name for c in first.columns]
    assert back.metadata.version == fixed.version + 1 and back.versions == [back.metadata]

    # New candidates evolve the resumed M*, not the fixed schema.
    grown = govern(fixed, candidates(BILLING_CHATS, backend), backend, last_governed=first)
    assert not governance.is_fixed(grown.metadata)
    assert {c.name for c in first.columns} <= {n for c in grown.metadata.columns for n in [c.name, *c.aliases]}
    assert len(grown.metadata.columns) > len(first.columns)
    assert grown.metadata.version > fixed.version

    with pytest.raises(ValueError, match="governance mode"):
        govern(first, empty_frame("candidate_schemas"), backend, governance_mode="free")


CONVERSATION = chat("t1", "My router shows error X12 after the update, model Netwave AX3000.",
                    "Reset it to factory settings.", "Done, works now.")
METADATA = GovernedMetadata(version=1, columns=[
    MetadataColumn(name="product", type="string", meaning="the product the user has"),
    MetadataColumn(name="error_code", type="string", meaning="the error code shown",
                   constraints=ColumnConstraints(pattern=r"[A-Z]\d{3}")),
])


def stored_rows(values: dict[str, str]) -> pl.DataFrame:
    """Rows as an earlier materialization stored them (raw values extracted, gates not passed)."""
    return conform("validated_rows", pl.DataFrame([{
        "batch_key": "b", "dialogue_id": "t1", "content_hash": "h1", "column_name": name, "value": None,
        "raw_value": raw, "evidence": raw, "semantic_passed": None, "semantic_reason": None,
        "structural_passed": None, "structural_reason": None, "metadata_version": 1, "backend": "llm/some-model",
        "span_turn": None, "span_start": None, "span_end": None,
    } for name, raw in values.items()]))


def by_column(frame: pl.DataFrame) -> dict[str, dict]:
    return {r["column_name"]: r for r in frame.iter_rows(named=True)}


def test_gates_off_keeps_every_extracted_value_and_records_the_gates_as_skipped(backend):
    # "Zyx Phantom" is not in the conversation (semantic gate); "X12" is, but breaks the pattern (structural).
    existing = stored_rows({"product": "Zyx Phantom", "error_code": "X12"})
    gated = validated_row_records("b", [(CONVERSATION, "h1")], METADATA, existing, backend)
    rows = by_column(gated.frame)
    assert rows["product"]["value"] is None and rows["product"]["semantic_passed"] is False
    assert rows["error_code"]["value"] is None and rows["error_code"]["semantic_passed"] is True
    assert rows["error_code"]["structural_passed"] is False

    ungated = validated_row_records("b", [(CONVERSATION, "h1")], METADATA, existing, backend, gates=False)
    rows = by_column(ungated.frame)
    assert (rows["product"]["value"], rows["error_code"]["value"]) == ("Zyx Phantom", "X12")
    for row in rows.values():
        assert row["semantic_passed"] is None and row["structural_passed"] is None
        assert row["semantic_reason"] == row["structural_reason"] == GATES_SKIPPED

    # The blocking rule would stop these values; with the gates off it reports that instead.
    blocking = {o.name: o for o in validated_row_outcomes(ungated.frame, 0, gates=True)}
    assert not blocking["values_pass_both_gates"].passed
    assert blocking["values_pass_both_gates"].metadata["violations"] == 2
    off = {o.name: o for o in validated_row_outcomes(ungated.frame, 0, gates=False)}
    assert off["values_pass_both_gates"].passed and off["values_pass_both_gates"].metadata["gates"] == "off"
    assert off["values_pass_both_gates"].metadata["ungated_values"] == 2
    assert "gates are off" in off["gate_rates"].description
    assert {o.name: o.passed for o in validated_row_outcomes(gated.frame, 0, gates=True)}["values_pass_both_gates"]


def test_rows_stored_without_gates_are_extracted_again_when_the_gates_return(backend):
    ungated = validated_row_records("b", [(CONVERSATION, "h1")], METADATA, stored_rows(
        {"product": "Zyx Phantom", "error_code": "X12"}), backend, gates=False)
    assert ungated.stats == {"extracted_cells": 0, "carried_cells": 2}
    regated = validated_row_records("b", [(CONVERSATION, "h1")], METADATA, ungated.frame, backend)
    assert regated.stats == {"extracted_cells": 2, "carried_cells": 0}
    rows = by_column(regated.frame)
    assert rows["product"]["raw_value"] != "Zyx Phantom"
    assert all(r["semantic_reason"] != GATES_SKIPPED for r in rows.values())
