"""update_clusters (the feature_clusters logic) with the real embedder: a conversation whose text changed
is assigned again, unchanged ones keep their assignment, and assignments stored by an older warehouse
(without text hashes) are migrated and redone."""

from __future__ import annotations

import polars as pl
import pytest

from sarag_assets.core import warehouse
from sarag_assets.core.encoding.embedder import text_hash
from sarag_assets.core.indices.cluster_updates import update_clusters
from sarag_assets.core.indices.clusters import CLUSTER_ASSIGNMENTS_SCHEMA, ClusterModel

PROBLEMS = {
    "router": ["router keeps rebooting after the firmware update", "wifi signal drops every few minutes",
               "cannot connect to the 5GHz wireless band", "router lights blink orange and there is no internet"],
    "billing": ["charged twice for the monthly subscription", "refund for the cancelled order never arrived",
                "invoice shows the wrong amount", "credit card payment declined at renewal"],
    "login": ["password reset email never arrives", "account locked after failed sign in attempts",
              "two factor authentication code rejected", "session expires right after logging in"],
}
NO_ASSIGNMENTS = pl.DataFrame(schema=CLUSTER_ASSIGNMENTS_SCHEMA)


def corpus() -> pl.DataFrame:
    records = [(f"{topic}-{i}", f"problem: {PROBLEMS[topic][i % 4]} | ticket: {100 + i}")
               for topic in PROBLEMS for i in range(12)]
    return pl.DataFrame(records, schema={"dialogue_id": pl.String, "text": pl.String}, orient="row")


def semantic(assignments: pl.DataFrame) -> dict[str, int]:
    frame = assignments.filter(pl.col("view") == "semantic")
    return dict(zip(frame["dialogue_id"], frame["cluster_id"]))


@pytest.fixture(scope="module")
def fitted():
    rows = corpus()
    first = update_clusters(None, rows, NO_ASSIGNMENTS, k=3)
    assert first.action == "fit"
    clusters = semantic(first.assignments)
    for topic in PROBLEMS:  # the three topics are the three semantic clusters
        assert len({c for d, c in clusters.items() if d.startswith(topic)}) == 1
    return rows, first


def stored(model: ClusterModel) -> ClusterModel:
    return ClusterModel.from_bytes(model.to_bytes())  # as the asset loads it; the fixture stays untouched


def test_unchanged_rows_keep_their_assignments(fitted):
    rows, first = fitted
    again = update_clusters(stored(first.model), rows, first.assignments)
    assert (again.action, again.new_rows, again.changed_rows) == ("unchanged", 0, 0)
    assert again.assignments.sort("dialogue_id", "view").equals(first.assignments.sort("dialogue_id", "view"))


def test_a_conversation_that_lands_again_with_other_content_is_reassigned(fitted):
    rows, first = fitted
    before = semantic(first.assignments)
    billing = before["billing-0"]
    assert before["router-0"] != billing
    new_text = "problem: charged twice for the annual subscription, refund requested | ticket: 100"
    changed = rows.with_columns(
        pl.when(pl.col("dialogue_id") == "router-0").then(pl.lit(new_text)).otherwise(pl.col("text")).alias("text"))

    update = update_clusters(stored(first.model), changed, first.assignments)

    assert (update.action, update.new_rows, update.changed_rows) == ("assign", 1, 1)
    assert update.assignments.height == first.assignments.height  # one row per conversation and view
    mine = update.assignments.filter(pl.col("dialogue_id") == "router-0")
    assert mine.height == 3
    assert set(mine["text_hash"]) == {text_hash(new_text)}
    assert semantic(update.assignments)["router-0"] == billing  # it moved to the topic it now talks about
    others = lambda frame: frame.filter(pl.col("dialogue_id") != "router-0").sort("dialogue_id", "view")  # noqa: E731
    assert others(update.assignments).equals(others(first.assignments))
    sizes = update.clusters.filter(pl.col("view") == "semantic")
    assert dict(zip(sizes["cluster_id"], sizes["size"]))[billing] == 13


def test_assignments_of_an_older_warehouse_are_migrated_and_redone(fitted, tmp_path):
    rows, first = fitted
    path = tmp_path / "warehouse.duckdb"
    old_columns = [(c, t) for c, t in warehouse.TABLES["cluster_assignments"] if c != "text_hash"]
    with warehouse.connect(path) as con:  # the table as a home made before text_hash existed holds it
        con.execute("CREATE TABLE cluster_assignments (" + ", ".join(f'"{c}" {t}' for c, t in old_columns) + ")")
        con.register("old", first.assignments.drop("text_hash").to_arrow())
        con.execute("INSERT INTO cluster_assignments SELECT * FROM old")
    with warehouse.connect(path) as con:
        previous = warehouse.read_table(con, "cluster_assignments")
        columns = [r[0] for r in con.execute("DESCRIBE cluster_assignments").fetchall()]
    assert columns == [c for c, _ in warehouse.TABLES["cluster_assignments"]]
    assert list(previous.columns) == list(CLUSTER_ASSIGNMENTS_SCHEMA)
    assert previous.height == first.assignments.height and previous["text_hash"].null_count() == previous.height

    update = update_clusters(stored(first.model), rows, previous)
    # nothing says what the old assignments were made from: every row is assigned again, which is
    # all of the fit rows, so the model is refitted
    assert update.new_rows == rows.height and update.action == "refit"
    assert update.assignments["text_hash"].null_count() == 0
    with warehouse.connect(path) as con:
        warehouse.replace_table(con, "cluster_assignments", update.assignments)
        back = warehouse.read_table(con, "cluster_assignments")
    assert back.sort("dialogue_id", "view").equals(update.assignments.sort("dialogue_id", "view"))
    assert update_clusters(update.model, rows, back).action == "unchanged"
