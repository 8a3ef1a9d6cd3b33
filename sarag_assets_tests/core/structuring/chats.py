"""Small conversations written for the structuring tests."""

from __future__ import annotations

from sarag_assets.core.structuring.interface import ConversationInput, ConversationTurn


def chat(dialogue_id: str, *texts: str) -> ConversationInput:
    """A conversation whose turns alternate user and agent, starting with the user."""
    roles = ["user", "agent"]
    return ConversationInput(dialogue_id=dialogue_id, turns=[
        ConversationTurn(speaker=f"{roles[i % 2]}1", role=roles[i % 2], text=t) for i, t in enumerate(texts)])
