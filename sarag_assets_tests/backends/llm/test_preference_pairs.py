"""Preference pairs: perturbed negatives of validated rows, DPO-ready and deterministic."""

from __future__ import annotations

import json

from sarag_assets.backends.llm import prompts
from sarag_assets.backends.llm.backend import _column_data, _with_json
from sarag_assets.backends.llm.client import build_messages
from sarag_assets.backends.llm.training_pairs import (
    KINDS,
    conversation_sentences,
    conversation_words,
    extraction_prompt,
    perturbations,
    preference_pairs,
    write_pairs,
)
from sarag_assets.core.structuring.interface import (
    ColumnConstraints,
    ConversationInput,
    ConversationTurn,
    GovernedMetadata,
    MetadataColumn,
)

CONVERSATION = ConversationInput(dialogue_id="d1", turns=[
    ConversationTurn(speaker="user1", role="user",
                     text="Hi. My Netwave AX3000 router drops the connection every hour. It started with firmware 2.1.4."),
    ConversationTurn(speaker="agent1", role="agent", text="Please disable band steering and reboot the router."),
    ConversationTurn(speaker="user1", role="user", text="That fixed it, thanks a lot!"),
])
METADATA = GovernedMetadata(version=3, columns=[
    MetadataColumn(name="product", type="string", meaning="the product the user has"),
    MetadataColumn(name="firmware_version", type="string", meaning="the firmware version",
                   constraints=ColumnConstraints(pattern=r"\d+(\.\d+)*")),
    MetadataColumn(name="resolution", type="string", meaning="what fixed the problem"),
    MetadataColumn(name="resolved", type="boolean", meaning="whether the problem was solved"),
    MetadataColumn(name="error_code", type="string", meaning="the error code shown"),
])
ROW = {"product": "Netwave AX3000", "firmware_version": "2.1.4",
       "resolution": "Please disable band steering and reboot the router.", "resolved": "true", "error_code": None}


def test_every_kind_changes_the_row_in_its_own_way():
    got = dict(perturbations("d1", ROW, CONVERSATION))
    assert list(got) == list(KINDS)
    for kind, rejected in got.items():
        assert list(rejected) == list(ROW) and rejected != ROW, kind
    dropped = got["drop_to_null"]
    changed = [c for c in ROW if dropped[c] != ROW[c]]
    assert changed and all(dropped[c] is None for c in changed) and len(changed) <= 2  # at most half of 4 values
    words = set(conversation_words(CONVERSATION))
    replaced = [c for c in ROW if got["random_words"][c] != ROW[c]]
    assert replaced and all(set(got["random_words"][c].split()) <= words for c in replaced)
    swapped = [c for c in ROW if got["swap_columns"][c] != ROW[c]]
    assert len(swapped) == 2
    a, b = swapped
    assert (got["swap_columns"][a], got["swap_columns"][b]) == (ROW[b], ROW[a])
    filled = [c for c in ROW if got["random_sentence"][c] != ROW[c]]
    assert len(filled) == 1 and got["random_sentence"][filled[0]] in conversation_sentences(CONVERSATION)
    assert sum(got["combination"][c] != ROW[c] for c in ROW) >= 1


def test_perturbations_are_deterministic_per_dialogue():
    assert list(perturbations("d1", ROW, CONVERSATION)) == list(perturbations("d1", ROW, CONVERSATION))
    others = [list(perturbations(f"d{i}", ROW, CONVERSATION)) for i in range(2, 12)]
    assert any(o != list(perturbations("d1", ROW, CONVERSATION)) for o in others)


def test_kinds_that_cannot_change_the_row_are_skipped():
    empty = {c: None for c in ROW}
    kinds = [k for k, _ in perturbations("d1", empty, CONVERSATION)]
    assert "drop_to_null" not in kinds and "random_words" not in kinds and "swap_columns" not in kinds
    assert "random_sentence" in kinds
    same = {"product": "x", "error_code": "x"}  # two equal values: swapping changes nothing
    assert "swap_columns" not in [k for k, _ in perturbations("d1", same, CONVERSATION)]


def test_prompt_is_the_extraction_request_the_llm_backend_sends():
    messages = build_messages(prompts.EXTRACT_ROW, _with_json(
        CONVERSATION, "table columns", [_column_data(c) for c in METADATA.columns]))
    assert extraction_prompt(CONVERSATION, METADATA) == messages[0]["content"] + "\n\n" + messages[1]["content"]


def test_pairs_are_dpo_records_written_as_jsonl(tmp_path):
    rows = {"d1": ROW, "ghost": ROW}  # a row whose conversation is not given is skipped
    records = list(preference_pairs(rows, [CONVERSATION], METADATA))
    assert {r["dialogue_id"] for r in records} == {"d1"} and len(records) == len(KINDS)
    for r in records:
        chosen, rejected = json.loads(r["chosen"]), json.loads(r["rejected"])
        assert chosen == ROW and rejected != chosen and list(rejected) == [c.name for c in METADATA.columns]
        assert "Netwave AX3000 router drops" in r["prompt"] and r["metadata_version"] == 3
    counts = write_pairs(iter(records), tmp_path / "reports" / "pairs.jsonl")
    lines = (tmp_path / "reports" / "pairs.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == records
    assert counts == {k: 1 for k in KINDS}
    assert not list((tmp_path / "reports").glob(".*"))  # no temporary file left
