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
