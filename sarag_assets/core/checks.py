"""Data-quality rules as plain functions over frames. No Dagster imports.

Each rule returns a `RuleOutcome`; the Dagster layer turns it into an asset check result. Rules are
evaluated on what was read back from the warehouse, not on the frame that was meant to be written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from sarag_assets.core.conversation import ROLES


@dataclass(frozen=True)
class RuleOutcome:
    name: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def raw_dialogue_rules(
    stored: pl.DataFrame, stored_quarantine: pl.DataFrame, *, records_landed: int
) -> list[RuleOutcome]:
    n_dialogues = stored["dialogue_id"].n_unique() if stored.height else 0
    n_quarantined = stored_quarantine.height
    outcomes = [
        RuleOutcome(
            "records_accounted_for",
            records_landed == n_dialogues + n_quarantined,
            "records landed = conversations parsed + records quarantined",
            {"records_landed": records_landed, "parsed": n_dialogues, "quarantined": n_quarantined},
        )
    ]

    dupes = (
        stored.group_by("dialogue_id", "content_hash", "turn_index").len().filter(pl.col("len") > 1).height
        if stored.height
        else 0
    )
    outcomes.append(
        RuleOutcome(
            "turn_keys_unique",
            dupes == 0,
            "(dialogue id, turn index) unique per conversation version",
            {"duplicate_keys": dupes, "turns": stored.height},
        )
    )

    empty = stored.filter(pl.col("text").str.strip_chars().str.len_chars() == 0).height if stored.height else 0
    outcomes.append(
        RuleOutcome("no_empty_text", empty == 0, "no turn has empty text", {"empty_turns": empty})
    )

    if stored.height:
        per_dialogue = stored.group_by("dialogue_id").agg((pl.col("role") == "user").sum().alias("user_turns"))
        without_user = per_dialogue.filter(pl.col("user_turns") == 0)["dialogue_id"].to_list()
    else:
        without_user = []
    outcomes.append(
        RuleOutcome(
            "every_dialogue_has_user_turn",
            not without_user,
            "every conversation has at least one user turn",
            {"dialogues_without_user_turn": len(without_user), "examples": ", ".join(sorted(without_user)[:5])},
        )
    )

    bad_roles = stored.filter(~pl.col("role").is_in(list(ROLES))) if stored.height else stored
    outcomes.append(
        RuleOutcome(
            "roles_user_or_agent",
            bad_roles.height == 0,
            "roles are only user or agent",
            {
                "bad_role_turns": bad_roles.height,
                "roles_seen": ", ".join(sorted(set(stored["role"].to_list()))) if stored.height else "",
            },
        )
    )
    return outcomes


SNAKE_CASE = r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$"
RESERVED_COLUMNS = frozenset({"dialogue_id", "batch_key", "source_fields"})  # conversation_table's own


def metadata_rules(columns: list[dict], capacity: int) -> list[RuleOutcome]:
    """M* is within capacity, its names are snake_case, unique and not reserved, its types canonical."""
    import re

    from sarag_assets.core.structuring.interface import CANONICAL_TYPES

    names = [c["name"] for c in columns]
    bad_names = [n for n in names if not re.match(SNAKE_CASE, n) or n in RESERVED_COLUMNS]
    dupes = sorted({n for n in names if names.count(n) > 1})
    bad_types = [f"{c['name']}:{c['type']}" for c in columns if c["type"] not in CANONICAL_TYPES]
    return [
        RuleOutcome("within_capacity", len(columns) <= capacity, "M* holds at most `capacity` columns",
                    {"columns": len(columns), "capacity": capacity}),
        RuleOutcome("names_snake_case_unique", not bad_names and not dupes,
                    "column names are snake_case, unique and not reserved",
                    {"bad_names": ", ".join(bad_names), "duplicates": ", ".join(dupes)}),
        RuleOutcome("types_canonical", not bad_types, "column types are int/string/float/boolean/date/datetime",
                    {"bad_types": ", ".join(bad_types)}),
    ]


MOSTLY_NULL = 0.8  # a column null in 80% of rows or more holds little for this corpus


def validated_row_rules(stored: pl.DataFrame, n_failed: int, *, sparse_threshold: float = MOSTLY_NULL) -> list[RuleOutcome]:
    kept = stored.filter(pl.col("value").is_not_null())
    violating = kept.filter(~(pl.col("semantic_passed").fill_null(False) & pl.col("structural_passed").fill_null(False)))
    raw = stored.filter(pl.col("raw_value").is_not_null() & (pl.col("raw_value").str.strip_chars() != ""))
    n_raw = raw.height
    structural_ok = raw.filter(pl.col("structural_passed").fill_null(False)).height
    nulled_semantic = raw.filter(~pl.col("semantic_passed").fill_null(False)).height
    nulled_structural = raw.filter(pl.col("semantic_passed").fill_null(False) & ~pl.col("structural_passed").fill_null(False)).height
    per_column = (
        stored.group_by("column_name").agg(pl.col("value").is_null().mean().alias("null_share")).sort("column_name")
        if stored.height else pl.DataFrame({"column_name": [], "null_share": []})
    )
    sparse = per_column.filter(pl.col("null_share") >= sparse_threshold)["column_name"].to_list()
    return [
        RuleOutcome("values_pass_both_gates", violating.height == 0,
                    "every non-null value passed the semantic and the structural gate",
                    {"non_null_values": kept.height, "violations": violating.height}),
        RuleOutcome("gate_rates", True, "structural compliance and the share of values each gate nulled",
                    {"extracted_values": n_raw,
                     "structural_compliance_rate": round(structural_ok / n_raw, 4) if n_raw else 1.0,
                     "nulled_by_semantic_gate": round(nulled_semantic / n_raw, 4) if n_raw else 0.0,
                     "nulled_by_structural_gate": round(nulled_structural / n_raw, 4) if n_raw else 0.0}),
        RuleOutcome("sparse_columns", not sparse,
                    f"columns null in at least {sparse_threshold:.0%} of the batch's rows (mostly null: candidates for DELETE)",
                    {"sparse_columns": ", ".join(f"{name} ({share:.0%} null)" for name, share in per_column.filter(
                        pl.col("null_share") >= sparse_threshold).iter_rows()), "count": len(sparse)}),
        RuleOutcome("structuring_failures", n_failed == 0, "conversations that failed structuring",
                    {"failed_conversations": n_failed}),
    ]


def pseudo_document_rules(docs: pl.DataFrame, dialogue_ids: set[str]) -> list[RuleOutcome]:
    empty = docs.filter(
        (pl.col("issue_document").str.strip_chars() == "") | (pl.col("solution_document").str.strip_chars() == "")
    )["dialogue_id"].to_list() if docs.height else []
    missing = sorted(dialogue_ids - set(docs["dialogue_id"].to_list()))
    return [RuleOutcome(
        "both_documents_non_empty", not empty and not missing,
        "every conversation has a non-empty issue and solution pseudo-document",
        {"empty": len(empty), "missing": len(missing), "examples": ", ".join(sorted(empty + missing)[:5])},
    )]


def dialogue_graph_rules(nodes: pl.DataFrame, edges: pl.DataFrame, dialogue_ids: set[str]) -> list[RuleOutcome]:
    node_keys = set(zip(nodes["dialogue_id"].to_list(), nodes["node_id"].to_list())) if nodes.height else set()
    dangling = [
        f"{d}:{s}->{t}" for d, s, t in zip(edges["dialogue_id"].to_list(), edges["source"].to_list(),
                                          edges["target"].to_list())
        if (d, s) not in node_keys or (d, t) not in node_keys
    ] if edges.height else []
    without_nodes = sorted(dialogue_ids - {d for d, _ in node_keys})
    isolated = len(node_keys - {(d, s) for d, s in zip(edges["dialogue_id"].to_list(), edges["source"].to_list())}
                   - {(d, t) for d, t in zip(edges["dialogue_id"].to_list(), edges["target"].to_list())}) \
        if edges.height else len(node_keys)
    return [
        RuleOutcome("edge_endpoints_exist", not dangling, "every edge connects two nodes of its conversation",
                    {"edges": edges.height, "dangling": len(dangling), "examples": ", ".join(dangling[:5])}),
        RuleOutcome("every_dialogue_has_a_node", not without_nodes, "every conversation has at least one node",
                    {"nodes": len(node_keys), "dialogues_without_nodes": len(without_nodes),
                     "isolated_nodes": isolated, "examples": ", ".join(without_nodes[:5])}),
    ]
