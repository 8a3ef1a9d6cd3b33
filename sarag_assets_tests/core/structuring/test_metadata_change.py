"""A metadata change extracts only its new columns, and only with the work they need: the gist (problem,
resolution, resolved) is not computed for columns that do not read it, and the values are those a full
extraction gives. Real model, embedded backend."""

from __future__ import annotations

from sarag_assets.backends.embedded import backend as embedded
from sarag_assets.core.structuring.interface import GovernedMetadata, MetadataColumn
from sarag_assets.core.structuring.tables import validated_row_records
from sarag_assets.core.warehouse import empty_frame
from sarag_assets_tests.core.structuring.chats import chat


CHATS = [
    chat(f"b{i}", f"I was charged twice for order #{48151620 + i} on my Lumo X{i} plan, the amount was $4{i}.99.",
         "Sorry about that, I have refunded the duplicate charge to your card.", "Great, thanks.")
    for i in range(3)
] + [
    chat(f"r{i}", f"Hi, my Netwave AX{3000 + i} router drops Wi-Fi every hour since firmware 2.{i}.1.",
         "Please disable band steering in the admin page and reboot.", "That fixed it, thank you!")
    for i in range(3)
]
BEFORE = GovernedMetadata(version=1, columns=[
    MetadataColumn(name="problem", type="string", meaning="the problem the user reports"),
    MetadataColumn(name="resolution", type="string", meaning="what resolved it"),
    MetadataColumn(name="product", type="string", meaning="the product the user has"),
])
NEW = [MetadataColumn(name="amount", type="string", meaning="the amount of money charged"),
       MetadataColumn(name="order_number", type="string", meaning="the number of the order")]
AFTER = GovernedMetadata(version=2, columns=[*BEFORE.columns, *NEW])


def _refreshed(backend, metadata):
    conversations = [(c, f"h-{c.dialogue_id}") for c in CHATS]
    first = validated_row_records("b", conversations, BEFORE, empty_frame("validated_rows"), backend)
    embedded._ANALYSES.clear()  # as a new step's process: nothing analysed yet
    return validated_row_records("b", conversations, metadata, first.frame, backend)


def test_new_columns_that_read_no_gist_are_extracted_without_it_as_a_full_extraction_gives(backend):
    refreshed = _refreshed(backend, AFTER)
    assert refreshed.stats == {"extracted_cells": len(NEW) * len(CHATS), "carried_cells": len(BEFORE.columns) * len(CHATS)}
    assert not any(backend.analysis(c, gist=False).gist_applied for c in CHATS)

    embedded._ANALYSES.clear()
    full = validated_row_records("b", [(c, f"h-{c.dialogue_id}") for c in CHATS], AFTER,
                                 empty_frame("validated_rows"), backend)
    assert refreshed.frame.equals(full.frame)
    amounts = refreshed.frame.filter(refreshed.frame["column_name"] == "amount")["value"].to_list()
    assert sum(v is not None for v in amounts) == 3  # the billing chats' amounts were extracted


def test_a_new_column_that_reads_the_gist_gets_it(backend):
    summary = MetadataColumn(name="main_issue", type="string", meaning="the issue the user reports")
    refreshed = _refreshed(backend, GovernedMetadata(version=2, columns=[*BEFORE.columns, summary]))
    assert refreshed.stats["extracted_cells"] == len(CHATS)
    assert all(backend.analysis(c, gist=False).gist_applied for c in CHATS)
