"""Reading the conversations of one published state: as stored, their origins, their dialogue graphs. No Dagster.

Every read goes to the state's read-only warehouse copy, and fails with `StateRetired` once newer
publications retired it (also the origins, which were read when the state was opened).
"""

from __future__ import annotations

from pathlib import Path

from sarag_assets.core import publication, warehouse
from sarag_assets.query.fixes import Material
from sarag_assets.query.published import PublishedTables, warehouse_copy


class ConversationReader:
    """The conversations of one opened state."""

    def __init__(self, state: publication.PublishedState, tables: PublishedTables):
        self.state = state
        self.tables = tables

    def warehouse(self) -> Path:
        """The state's warehouse copy; StateRetired once newer publications retired it."""
        return warehouse_copy(self.state)

    def origins(self, dialogue_ids: list[str]) -> dict[str, dict]:
        """Source file, format, first and last turn time and landing time of these conversations."""
        self.warehouse()  # StateRetired, as for every read of a retired state
        return {d: self.tables.origins[d] for d in dialogue_ids if d in self.tables.origins}

    def conversation(self, dialogue_id: str) -> dict | None:
        """A current conversation as stored (redacted turns), with its table cells and origin; None when
        the published state holds no conversation of that id."""
        with warehouse.connect(self.warehouse(), read_only=True) as con:
            turns = warehouse.conversation_turns(con, dialogue_id)
            origin = warehouse.conversation_origins(con, [dialogue_id]).get(dialogue_id)
        if not turns:
            return None
        return {"dialogue_id": dialogue_id, "turns": turns, "row": dict(self.tables.rows.get(dialogue_id, {})),
                **(origin or {})}

    def graphs(self, dialogue_ids: list[str]) -> tuple[list[dict], list[tuple[str, str, str, str]]]:
        """The dialogue-graph nodes (in turn order) and edges ``(dialogue id, source, target, relation)``
        of these conversations."""
        with warehouse.connect(self.warehouse(), read_only=True) as con:
            return warehouse.graph_of(con, dialogue_ids)

    def materials(self, dialogue_ids: list[str]) -> list[Material]:
        """What a fix is read from, per conversation: its turns, dialogue-graph nodes and edges. Nothing
        is read for no conversation."""
        if not dialogue_ids:
            return []
        with warehouse.connect(self.warehouse(), read_only=True) as con:
            turns = warehouse.turns_of(con, dialogue_ids)
            nodes, edges = warehouse.graph_of(con, dialogue_ids)
        return [Material(d, turns.get(d, []), [n for n in nodes if n["dialogue_id"] == d],
                         [(a, b, r) for e, a, b, r in edges if e == d]) for d in dialogue_ids]
