"""Automation conditions shared by asset definitions (kept apart to avoid import cycles)."""

import dagster as dg

# Rebuild when a dependency's data version changed (a new batch, or M* really changed), once deps are done.
ON_DEPENDENCY_CHANGE = (
    dg.AutomationCondition.any_deps_match(dg.AutomationCondition.data_version_changed())
    & ~dg.AutomationCondition.in_progress()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & dg.AutomationCondition.all_deps_blocking_checks_passed()
).with_label("dependency data version changed")

GOVERN_ON_NEW_CANDIDATES = dg.AutomationCondition.eager()

# Staging a state for readers waits, besides, until no batch lacks its index: a state staged while one
# does would only fail its audit (readers keep the last published state either way).
ON_COMPLETE_INDICES = (ON_DEPENDENCY_CHANGE & ~dg.AutomationCondition.any_deps_missing()).with_label(
    "dependency data version changed, no batch unindexed")
