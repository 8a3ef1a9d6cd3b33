"""The warehouse-side rules behind the asset checks (`core/checks.py`)."""

from __future__ import annotations

import polars as pl

from sarag_assets.core.checks import MOSTLY_NULL, validated_row_rules


def rows(column: str, values: list[str | None]) -> list[dict]:
    return [{"dialogue_id": f"d{i}", "column_name": column, "value": v, "raw_value": v,
             "semantic_passed": v is not None or None, "structural_passed": v is not None or None}
            for i, v in enumerate(values)]


def test_mostly_null_columns_are_reported_each_with_its_share():
    frame = pl.DataFrame(rows("problem", ["a"] * 10) + rows("order_number", ["1", "2"] + [None] * 8)
                         + rows("coupon", ["x"] * 3 + [None] * 7))
    outcome = {o.name: o for o in validated_row_rules(frame, 0)}["sparse_columns"]
    assert MOSTLY_NULL == 0.8
    assert outcome.passed is False
    assert outcome.metadata["count"] == 1
    assert outcome.metadata["sparse_columns"] == "order_number (80% null)"  # 70% null is not "mostly"


def test_no_mostly_null_column_passes():
    frame = pl.DataFrame(rows("problem", ["a"] * 4) + rows("product", ["p", None, "q", None]))
    outcome = {o.name: o for o in validated_row_rules(frame, 0)}["sparse_columns"]
    assert outcome.passed is True and outcome.metadata["count"] == 0
