"""The pipeline benchmark's sample of the index texts, on which the model's own rate is timed, and the order
of its steps."""

from __future__ import annotations

from sarag_assets.evaluation.bench.pipeline_throughput import spread_sample, step_order

GROUPS = [
    ("b1", "conversation_texts", [f"long {i}" for i in range(10)]),
    ("b1", "conversation_passages", [f"passage {i}" for i in range(30)]),
    ("b2", "conversation_texts", [f"long b2 {i}" for i in range(10)]),
    ("b2", "table_rows", [f"row {i}" for i in range(50)]),
]


def test_the_sample_spreads_over_every_table_in_proportion():
    kept = spread_sample(GROUPS, 20)
    sizes = {(batch, table): len(texts) for batch, table, texts in kept}
    assert sum(sizes.values()) == 20
    assert sizes == {("b1", "conversation_texts"): 2, ("b1", "conversation_passages"): 6,
                     ("b2", "conversation_texts"): 2, ("b2", "table_rows"): 10}


def test_the_sample_keeps_each_groups_order_and_texts():
    kept = spread_sample(GROUPS, 20)
    originals = {(batch, table): texts for batch, table, texts in GROUPS}
    for batch, table, texts in kept:
        positions = [originals[(batch, table)].index(t) for t in texts]
        assert positions == sorted(positions)


def test_a_sample_as_large_as_the_texts_is_all_of_them():
    assert spread_sample(GROUPS, 100) == GROUPS
    assert spread_sample(GROUPS, 0) == GROUPS


def test_the_steps_are_reported_in_the_order_the_runner_runs_them(defs):
    order = step_order(defs)
    assert order[:2] == ["ingest_batch", "candidate_schemas"]  # the ingest op writes raw_dialogues and quarantine
    assert order.index("governed_metadata") < order.index("validated_rows") < order.index("lancedb_indices")
    assert order.index("lancedb_indices") < order.index("staged_state") < order.index("retrieval_evaluation")
    assert len(order) == len(set(order)) == 15
