"""Metadata governance on hand-built inputs with the real embedding model: `decide` chooses operations,
`apply_decision` applies (or refuses) them; the fingerprint, the fixed schema, and reading the saved M*
back from a real DuckDB warehouse."""

from __future__ import annotations

import pytest

from sarag_assets.core import warehouse
from sarag_assets.core.structuring import governance
from sarag_assets.core.structuring.interface import (
    CandidateSchema,
    ColumnConstraints,
    ColumnScore,
    GovernanceDecision,
    GovernanceOperation,
    GovernedMetadata,
    MetadataColumn,
    ScoredColumn,
)

# Distinct concepts: no two of the same type are near-identical (cosine well below SAME_CONCEPT) and no
# name's words contain another's, so none is taken for another.
CONCEPTS = {
    "product": ("string", "the product the customer needs help with"),
    "error_code": ("string", "the error code the device shows"),
    "order_number": ("string", "the number of the customer order"),
    "router_model": ("string", "the model name of the customer router"),
    "firmware_version": ("string", "the firmware version installed on the device"),
    "city": ("string", "the city the customer lives in"),
    "payment_method": ("string", "how the customer paid"),
    "ticket_id": ("string", "the identifier of the support ticket"),
    "refund_amount": ("float", "the amount of money refunded to the customer"),
    "wait_minutes": ("int", "how many minutes the customer waited"),
    "is_resolved": ("boolean", "whether the problem was solved"),
}


def scored(name: str, overall: float = 0.8, *, type_: str | None = None, meaning: str | None = None) -> ScoredColumn:
    known_type, known_meaning = CONCEPTS.get(name, ("string", ""))
    return ScoredColumn(name=name, type=type_ or known_type, meaning=meaning or known_meaning,
                        score=ColumnScore(relevance=overall, answerability=overall, overall=overall, justification="-"))


def column(name: str, support: int = 3, mean_score: float = 0.8, **extra) -> MetadataColumn:
    type_, meaning = CONCEPTS.get(name, ("string", ""))
    return MetadataColumn(**{"name": name, "type": type_, "meaning": meaning, "support": support,
                             "mean_score": mean_score} | extra)


def proposal(dialogue_id: str, *columns: ScoredColumn) -> CandidateSchema:
    return CandidateSchema(dialogue_id=dialogue_id, problem="a problem", columns=list(columns), backend="test")


def step(metadata: GovernedMetadata, candidates: CandidateSchema):
    """One conversation's governance as the pipeline runs it: decide, then apply."""
    decision = governance.decide(metadata, candidates, backend_name="test")
    assert decision.backend == "test"
    new, results = governance.apply_decision(metadata, decision, candidates)
    return new, decision, results


def ops(decision: GovernanceDecision) -> list[tuple[str, list[str]]]:
    return [(op.operation, op.columns) for op in decision.operations]


# --- decide + apply_decision ---------------------------------------------------------------------------


def test_a_new_concept_waits_in_pending_until_enough_conversations_propose_it():
    metadata = GovernedMetadata(min_support=3)

    first, decision, _ = step(metadata, proposal("c1", scored("refund_amount", 0.6)))
    assert ops(decision) == [] and first.columns == []
    assert [(p.name, p.support, p.mean_score) for p in first.pending] == [("refund_amount", 1, pytest.approx(0.6))]
    assert first.version == 0  # the pending pool is not part of M*

    second, decision, _ = step(first, proposal("c2", scored("refund_amount", 0.8), scored("city", 0.7)))
    assert ops(decision) == [] and second.columns == [] and second.version == 0
    assert {p.name: p.support for p in second.pending} == {"refund_amount": 2, "city": 1}

    third, decision, results = step(second, proposal("c3", scored("refund_amount", 1.0)))
    assert ops(decision) == [("ADD", ["refund_amount"])]
    assert [rejected for _, rejected in results] == [None]
    [added] = third.columns
    assert (added.name, added.type, added.support) == ("refund_amount", "float", 3)
    assert added.mean_score == pytest.approx((0.6 + 0.8 + 1.0) / 3)
    assert third.version == 1 and added.added_in_version == 1
    assert [p.name for p in third.pending] == ["city"]  # the admitted concept left the pool


def test_a_concept_proposed_by_one_conversation_never_becomes_a_column():
    metadata = GovernedMetadata(min_support=2)
    for i in range(3):  # the same conversation's idiosyncrasies, but each time a different one
        metadata, decision, _ = step(metadata, proposal(f"c{i}", scored(list(CONCEPTS)[i])))
        assert ops(decision) == []
    assert metadata.columns == [] and len(metadata.pending) == 3


def test_a_candidate_scoring_below_the_minimum_is_ignored():
    low = governance.MIN_OVERALL - 0.05
    new, decision, _ = step(GovernedMetadata(min_support=1), proposal("c1", scored("city", low)))
    assert ops(decision) == [] and new.columns == [] and new.pending == []


KEPT = GovernedMetadata(version=4, columns=[
    column("product", support=3, mean_score=0.6),
    column("order_number", support=2, mean_score=0.5, aliases=["order_no"]),
    column("error_code", support=5, mean_score=0.9),
])


@pytest.mark.parametrize(("candidate", "kept"), [
    (scored("product", 1.0), "product"),  # by name
    (scored("order_no", 1.0, meaning="the reference of the purchase"), "order_number"),  # by alias
    (scored("error_number", 1.0, meaning="the error code the device shows"), "error_code"),  # same definition
])
def test_a_candidate_naming_an_existing_column_is_kept_and_adds_support(candidate, kept):
    before = KEPT.column(kept)
    new, decision, results = step(KEPT, proposal("c1", candidate))
    assert ops(decision) == [("KEEP", [kept])]
    assert results[0][1] is None
    after = new.column(kept)
    assert after.support == before.support + 1
    assert after.mean_score == pytest.approx((before.mean_score * before.support + 1.0) / (before.support + 1))
    assert [c.name for c in new.columns] == [c.name for c in KEPT.columns] and new.pending == []
    assert new.version == KEPT.version  # support is not a new version
    assert KEPT.column(kept).support == before.support  # the input was not modified


def test_a_more_specific_name_expands_a_young_column_and_keeps_the_old_name_as_alias():
    metadata = GovernedMetadata(version=2, columns=[column("error_code", support=1, mean_score=0.5)])
    specific = scored("installation_error_code", 0.9, meaning="the error code shown when the installation fails")
    new, decision, _ = step(metadata, proposal("c1", specific))
    assert ops(decision) == [("EXPAND", ["error_code", "installation_error_code"])]
    [expanded] = new.columns
    assert (expanded.name, expanded.aliases, expanded.meaning) == (
        "installation_error_code", ["error_code"], specific.meaning)
    assert expanded.support == 2 and new.version == 3
    assert expanded.added_in_version == 0  # it inherits the old column's values: not a new column

    established = GovernedMetadata(version=2, columns=[column("error_code", support=5, mean_score=0.5)])
    new, decision, _ = step(established, proposal("c1", specific))
    assert ops(decision) == [("KEEP", ["error_code"])]
    assert new.columns[0].name == "error_code" and new.columns[0].support == 6 and new.version == 2


def test_capacity_is_never_exceeded():
    metadata = GovernedMetadata(capacity=3, min_support=1)
    names = list(CONCEPTS)
    seen_operations = set()
    for i in range(0, len(names), 2):  # ever better concepts, two per conversation
        candidates = proposal(f"c{i}", *(scored(n, 0.4 + 0.05 * (i + j)) for j, n in enumerate(names[i:i + 2])))
        metadata, decision, results = step(metadata, candidates)
        seen_operations |= {op.operation for op in decision.operations}
        assert len(metadata.columns) <= metadata.capacity
        assert all(rejected is None for _, rejected in results)
    assert {"ADD", "DELETE"} <= seen_operations  # the capacity was reached and concepts were replaced
    assert len(metadata.columns) == 3
    # the strongest concepts hold the columns; the replaced ones wait in pending and may come back
    assert {c.name for c in metadata.columns} == set(names[-3:])
    assert set(names[:-3]) <= {p.name for p in metadata.pending}


def test_a_full_metadata_keeps_strong_columns_against_a_weak_newcomer():
    full = GovernedMetadata(capacity=2, min_support=1, columns=[column("product", 9), column("city", 9)])
    new, decision, _ = step(full, proposal("c1", scored("refund_amount", 0.9)))
    assert ops(decision) == []
    assert [c.name for c in new.columns] == ["product", "city"] and new.version == full.version
    assert [p.name for p in new.pending] == ["refund_amount"]


def test_apply_decision_refuses_operations_that_would_break_the_metadata():
    full = GovernedMetadata(version=1, capacity=2, columns=[column("product"), column("wait_minutes")])
    op = lambda operation, *columns, candidate=None: GovernanceOperation(  # noqa: E731
        operation=operation, columns=list(columns), candidate=candidate, reason="hand-made")
    decision = GovernanceDecision(operations=[
        op("ADD", "city", candidate="city"),
        op("KEEP", "ghost"),
        op("EXPAND", "product", "wait_minutes"),
        op("MERGE", "wait_minutes", "product"),
        op("KEEP"),
        op("KEEP", "product", candidate="product"),
    ])
    candidates = proposal("c1", scored("city", 0.7), scored("product", 0.6))
    new, results = governance.apply_decision(full, decision, candidates)
    reasons = [rejected for _, rejected in results]
    assert reasons[0] == "capacity 2 reached"
    assert "no column named 'ghost'" in reasons[1]
    assert "already exists" in reasons[2]
    assert "cannot merge int 'wait_minutes' into string 'product'" in reasons[3]
    assert reasons[4] == "operation names no column"
    assert reasons[5] is None
    assert [c.name for c in new.columns] == ["product", "wait_minutes"] and new.version == 1
    assert new.column("product").support == 4
    # the refused ADD's candidate was not taken: it waits in pending
    assert [(p.name, p.support) for p in new.pending] == [("city", 1)]


def test_near_identical_columns_are_merged_into_the_better_supported_one():
    metadata = GovernedMetadata(version=3, columns=[
        column("error_number", support=1, mean_score=0.4, meaning="the error code the device shows"),
        column("error_code", support=3, mean_score=0.8, aliases=["err"]),
        column("city", support=1),
    ])
    new, decision, results = step(metadata, proposal("c1"))
    assert ops(decision) == [("MERGE", ["error_number", "error_code"])]
    assert results[0][1] is None
    merged = new.column("error_code")
    assert [c.name for c in new.columns] == ["error_code", "city"]
    assert merged.aliases == ["err", "error_number"] and merged.support == 4
    assert merged.mean_score == pytest.approx((3 * 0.8 + 1 * 0.4) / 4)
    assert new.version == 4


def test_a_step_leaves_the_metadata_it_started_from_as_it_was():
    """The rules work on copies: the state a run read (and may still show or save) never changes."""
    metadata = GovernedMetadata(version=3, min_support=2, columns=[
        column("error_code", support=1, mean_score=0.5, aliases=["err"]),
        column("error_number", support=1, mean_score=0.4, meaning="the error code the device shows"),
        column("product", support=4),
    ], pending=[column("city", support=1, aliases=["town"])])
    before = metadata.model_dump()
    specific = scored("installation_error_code", 0.9, meaning="the error code shown when the installation fails")
    new, decision, _ = step(metadata, proposal("c1", specific, scored("city"), scored("product")))
    assert {op for op, _ in ops(decision)} >= {"EXPAND", "ADD", "KEEP"}  # every rule that changes a column ran
    assert new.model_dump() != before
    assert metadata.model_dump() == before


# --- fingerprint and the fixed schema ------------------------------------------------------------------


BASE = GovernedMetadata(version=2, columns=[column("product"), column("error_code")])


def test_fingerprint_ignores_support_aliases_order_pending_and_version():
    same = [
        BASE.model_copy(update={"version": 9, "capacity": 5, "min_support": 7}),
        GovernedMetadata(columns=[column("error_code", 1, 0.1, aliases=["err"]), column("product", 40, 0.99)]),
        BASE.model_copy(update={"pending": [column("city")]}),
        GovernedMetadata(columns=[column("product", signal="detector"), column("error_code", added_in_version=2)]),
    ]
    assert [governance.fingerprint(m) for m in same] == [governance.fingerprint(BASE)] * 4


def test_fingerprint_changes_with_a_column_definition():
    def changed(index: int, **update) -> GovernedMetadata:
        columns = [c.model_copy(deep=True) for c in BASE.columns]
        columns[index] = columns[index].model_copy(update=update)
        return GovernedMetadata(columns=columns)

    variants = [
        changed(0, name="product_name"),
        changed(0, type="int"),
        changed(1, meaning="the code of the error"),
        changed(1, constraints=ColumnConstraints(pattern=r"E\d+")),
        GovernedMetadata(columns=BASE.columns[:1]),
        GovernedMetadata(columns=[*BASE.columns, column("city")]),
        GovernedMetadata(),
    ]
    prints = [governance.fingerprint(v) for v in variants]
    assert governance.fingerprint(BASE) not in prints
    assert len(set(prints)) == len(prints)


def test_fixed_columns_are_the_fixed_schema():
    columns = governance.fixed_columns()
    assert [(c.name, c.type, c.meaning) for c in columns] == list(governance.FIXED_SCHEMA)
    assert all(c.support == 0 and c.aliases == [] for c in columns)
    columns[0].support = 99
    assert governance.fixed_columns()[0].support == 0  # a fresh list each time


def test_is_fixed_compares_column_definitions():
    fixed = GovernedMetadata(columns=governance.fixed_columns())
    assert governance.is_fixed(fixed)
    used = fixed.model_copy(update={"version": 7, "columns": [
        c.model_copy(update={"support": 12}) for c in reversed(fixed.columns)]})
    assert governance.is_fixed(used)
    assert not governance.is_fixed(GovernedMetadata())
    assert not governance.is_fixed(GovernedMetadata(columns=fixed.columns[:-1]))
    assert not governance.is_fixed(GovernedMetadata(columns=[*fixed.columns, column("city")]))
    retyped = [c.model_copy(update={"type": "int"}) if c.name == "version" else c for c in fixed.columns]
    assert not governance.is_fixed(GovernedMetadata(columns=retyped))
    assert not governance.is_fixed(BASE)


# --- the saved M* in the warehouse ---------------------------------------------------------------------


def save(con, metadata: GovernedMetadata) -> None:
    warehouse.save_governance(
        con, versions=None, operations=warehouse.empty_frame("metadata_operations"),
        processed=warehouse.empty_frame("governance_processed"), version=metadata.version,
        state_json=metadata.model_dump_json(), columns=[(c.name, c.type) for c in metadata.columns])


EVOLVED = GovernedMetadata(version=1, capacity=20, min_support=2,
                           columns=[column("product"), column("refund_amount")], pending=[column("city", 1)])
FIXED = GovernedMetadata(version=2, columns=governance.fixed_columns())
GROWN = EVOLVED.model_copy(update={"version": 3, "columns": [*EVOLVED.columns, column("ticket_id")]})


def test_current_metadata_is_empty_before_the_first_governance_run(tmp_path):
    with warehouse.connect(tmp_path / "warehouse.duckdb") as con:  # a file without any table yet
        metadata = governance.current_metadata(con, capacity=7, min_support=4)
    assert metadata == GovernedMetadata(capacity=7, min_support=4)


def test_current_metadata_is_the_newest_saved_state_with_this_runs_settings(tmp_path):
    path = tmp_path / "warehouse.duckdb"
    with warehouse.connect(path) as con:
        save(con, EVOLVED)
        assert governance.current_metadata(con, capacity=7, min_support=4) == EVOLVED.model_copy(
            update={"capacity": 7, "min_support": 4})
        save(con, GROWN)
    with warehouse.connect(path) as con:
        metadata = governance.current_metadata(con, capacity=30, min_support=1)
    assert (metadata.version, metadata.capacity, metadata.min_support) == (3, 30, 1)
    assert [c.name for c in metadata.columns] == ["product", "refund_amount", "ticket_id"]
    assert [(p.name, p.support) for p in metadata.pending] == [("city", 1)]


def test_last_governed_skips_fixed_schema_states(tmp_path):
    with warehouse.connect(tmp_path / "warehouse.duckdb") as con:
        warehouse.ensure_schema(con)
        assert governance.last_governed(con) is None
        save(con, FIXED)
        assert governance.last_governed(con) is None  # only the fixed schema so far
        save(con, EVOLVED)
        save(con, FIXED.model_copy(update={"version": 4}))
        assert governance.is_fixed(governance.current_metadata(con, capacity=20, min_support=2))
        assert governance.last_governed(con) == EVOLVED
        save(con, GROWN)
        assert governance.last_governed(con) == GROWN


# --- support relative to the corpus ---------------------------------------------------------------------


@pytest.mark.parametrize("floor, share, corpus, expected", [
    (2, 0.05, 0, 2),  # an empty corpus: the floor
    (2, 0.05, 30, 2),  # 1.5 conversations: the floor still
    (2, 0.05, 60, 3),
    (2, 0.05, 313, 16),
    (2, 0.05, 100_000, 5000),
    (3, 0.0, 100_000, 3),  # share 0: the absolute minimum alone, as before
])
def test_min_support_is_a_share_of_the_corpus_with_the_absolute_minimum_as_floor(floor, share, corpus, expected):
    assert governance.relative_min_support(floor, share, corpus) == expected


def test_a_concept_a_few_conversations_of_a_large_corpus_propose_stays_pending():
    # 2 of 200 conversations propose city: enough for the old absolute minimum, not for 5% of the corpus
    metadata = GovernedMetadata(min_support=governance.relative_min_support(2, 0.05, 200))
    for i in range(2):
        metadata, decision, _ = step(metadata, proposal(f"c{i}", scored("city")))
    assert metadata.columns == [] and [p.support for p in metadata.pending] == [2]
    for i in range(2, 10):
        metadata, decision, _ = step(metadata, proposal(f"c{i}", scored("city")))
    assert [c.name for c in metadata.columns] == ["city"]  # the tenth conversation is 5% of 200
