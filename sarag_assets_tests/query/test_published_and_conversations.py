"""What a reader reads once from a published state, and the conversations it reads from it later."""

from __future__ import annotations

from dataclasses import replace

import duckdb
import pytest

from sarag_assets.core import warehouse
from sarag_assets.query.conversations import ConversationReader
from sarag_assets.query.evidence import Gathered, graph_evidence
from sarag_assets.query.published import (
    HomeNotReady,
    StateRetired,
    entity_columns,
    published_state,
    read_tables,
    warehouse_copy,
)
from sarag_assets.settings import Home


def test_a_home_never_published_is_not_ready_and_says_what_to_run(tmp_path):
    home = Home(tmp_path / "home").ensure()
    with pytest.raises(HomeNotReady, match="no warehouse at .*sarag materialize"):
        published_state(home)
    duckdb.connect(str(home.warehouse)).close()
    with pytest.raises(HomeNotReady, match="nothing is published in this home yet"):
        published_state(home)


def test_the_tables_are_read_as_the_published_copy_holds_them(engine):
    tables = read_tables(engine.publication.warehouse)
    with warehouse.connect(engine.publication.warehouse, read_only=True) as con:
        ids = [d for (d,) in con.execute("SELECT dialogue_id FROM conversation_table ORDER BY dialogue_id").fetchall()]
    assert list(tables.rows) == ids and tables.rows == engine.rows
    assert all(v is not None for row in tables.rows.values() for v in row.values())
    assert tables.weights == engine.weights and tables.metadata_version == engine.metadata_version is not None
    assert tables.cluster_model is not None and tables.assignments.height > 0
    assert set(ids) <= set(tables.origins)
    assert {c["name"] for c in tables.columns} >= set(tables.entity_columns) and tables.entity_columns
    assert entity_columns([{"name": "product", "type": "string"}, {"name": "resolved", "type": "boolean"},
                           {"name": "opened", "type": "date"}]) == ["product"]


def test_a_retired_state_is_named_and_nothing_is_read_for_no_conversation(engine):
    gone = replace(engine.publication, id="retired-state")
    reader = ConversationReader(gone, engine.tables)
    with pytest.raises(StateRetired, match="retired-state .* refresh"):
        warehouse_copy(gone)
    with pytest.raises(StateRetired):
        reader.origins([sorted(engine.rows)[0]])
    assert reader.materials([]) == []
    assert graph_evidence([], None, engine.store, reader, m=2, radius=1) == []


def test_the_material_of_a_fix_is_each_conversations_own_turns_and_graph(engine, generated_queries):
    reader = engine.reader
    ids = engine.retrieve(generated_queries[0]["turns"], 3).ids()
    materials = reader.materials(ids)
    assert [m.dialogue_id for m in materials] == ids
    nodes, edges = reader.graphs(ids)
    for material in materials:
        stored = reader.conversation(material.dialogue_id)
        assert [t["text"] for t in material.turns] == [t["text"] for t in stored["turns"]]
        assert material.nodes == [n for n in nodes if n["dialogue_id"] == material.dialogue_id] and material.nodes
        assert material.edges == [(a, b, r) for d, a, b, r in edges if d == material.dialogue_id]
        own = {n["node_id"] for n in material.nodes}
        assert all(a in own and b in own for a, b, _ in material.edges)
    assert reader.conversation("no-such-conversation") is None


def test_evidence_names_the_search_result_and_what_was_gathered_from_it(engine, generated_queries):
    found = engine.evidence(generated_queries[0]["turns"], k=4)
    assert isinstance(found, Gathered)
    result, evidence = found
    assert result is found.result and evidence is found.evidence
    assert [r["dialogue_id"] for r in evidence.rows] == result.ids()
    assert evidence.nodes and {n.dialogue_id for n in evidence.nodes} <= set(result.ids())
    assert {c.dialogue_id for c in evidence.cells} <= set(result.ids()[:3])
