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
