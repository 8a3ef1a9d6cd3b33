"""The LLM backend's refinement steps (SDR pseudo-documents and dialogue graphs) end to end: the real
openai client and instructor, over real HTTP, against the scripted local server. Nothing is patched."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sarag_assets.backends.llm import prompts
from sarag_assets.backends.llm.backend import LLMBackend
from sarag_assets.backends.llm.cache import CallCache
from sarag_assets.backends.llm.client import CallStats, LLMCallFailed, LLMSettings
from sarag_assets.core.structuring.interface import (
    ConversationInput,
    ConversationTurn,
    DialogueGraph,
    PseudoDocuments,
)
from sarag_assets_tests.backends.llm.fake_openai_server import (
    Behaviour,
    FakeOpenAIServer,
)

MODES = ["tools", "json", "markdown-json"]

CONVERSATION = ConversationInput(
    dialogue_id="c7",
    turns=[
        ConversationTurn(speaker="user1", role="user", text="Hi, my Zephyr X2 router drops Wi-Fi every evening on firmware 3.1."),
        ConversationTurn(speaker="agent1", role="agent", text="Please update the firmware to 3.4 from the admin page."),
        ConversationTurn(speaker="user1", role="user", text="How do I get to the admin page?"),
        ConversationTurn(speaker="agent1", role="agent", text="Open 192.168.0.1 in a browser and sign in with the password on the sticker."),
        ConversationTurn(speaker="user1", role="user", text="Actually it's firmware 3.2, sorry. Anyway that fixed it, thanks [NAME]!"),
    ],
)
MARKER = "Zephyr X2 router drops Wi-Fi every evening"  # a phrase only the conversation contains

DOCS_ANSWER = {
    "issue_queries": [
        "Zephyr X2 router drops Wi-Fi every evening",
        "Zephyr X2 Wi-Fi drops on firmware 3.2",
        "  zephyr x2 router drops wi-fi every evening ",  # a repeat: dropped
        "router disconnects at night, contact [EMAIL]",  # a placeholder: removed
    ],
    "solution_queries": "update the Zephyr X2 firmware to 3.4 from the admin page",  # one string: a one-item list
}

GRAPH_ANSWER = {
    "nodes": [
        {"node_id": "n0", "issue": "Zephyr X2 drops Wi-Fi every evening on firmware 3.1", "answer": "Update the firmware to 3.4.", "turn_start": 0, "turn_end": 1},
        {"node_id": "n1", "issue": "How do I get to the admin page?", "answer": "Open 192.168.0.1 and sign in.", "turn_start": 2, "turn_end": 3},
        {"node_id": "n2", "issue": "It's firmware 3.2", "answer": None, "turn_start": 4, "turn_end": 4},
    ],
    "edges": [
        {"source": "n1", "target": "n0", "relation": "elaborates", "reason": "how to reach the admin page"},
        {"source": "n2", "target": "n0", "relation": "Refines", "reason": "corrects the firmware version"},
        {"source": "n2", "target": "n0", "relation": "refines", "reason": "repeated"},  # a repeat: dropped
    ],
}


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


def backend_for(server: FakeOpenAIServer, *, cache: CallCache | None = None, stats: CallStats | None = None, **overrides: Any) -> LLMBackend:
    values: dict[str, Any] = dict(
        base_url=server.base_url,
        model="fake-model",
        api_key="test-key",
        mode="tools",
        timeout_s=5,
        max_retries=1,
        max_validation_retries=2,
        backoff_base_s=0.01,
        max_backoff_s=0.02,
    )
    values.update(overrides)
    return LLMBackend.from_settings(LLMSettings(**values), cache=cache, stats=stats)


def reply(mode: str, obj: Any) -> Behaviour:
    if mode == "tools":
        return Behaviour.tool_call(obj)
    return Behaviour.content(obj, fenced=(mode == "markdown-json"))


def texts(request: dict[str, Any], role: str) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == role and isinstance(m.get("content"), str)]


def check_shape(request: dict[str, Any], mode: str) -> None:
    if mode == "tools":
        assert request["tools"] and request["tool_choice"]
    else:
        assert "tools" not in request
        if mode == "markdown-json":
            assert "```json" in json.dumps(request["messages"])


# --------------------------------------------------------------------------------------------------
# one call each, tool-call and JSON answers


@pytest.mark.parametrize("mode", MODES)
def test_pseudo_documents_is_one_call(server, mode):
    server.enqueue(reply(mode, DOCS_ANSWER))
    stats = CallStats()
    docs = backend_for(server, stats=stats, mode=mode).pseudo_documents(CONVERSATION)

    assert len(server.requests) == 1 and stats.calls == 1
    check_shape(server.requests[0], mode)
    assert isinstance(docs, PseudoDocuments)
    assert docs.dialogue_id == "c7" and docs.backend == "llm/fake-model"
    assert docs.issue_queries == [
        "Zephyr X2 router drops Wi-Fi every evening",
        "Zephyr X2 Wi-Fi drops on firmware 3.2",
        "router disconnects at night, contact",
    ]
    assert docs.solution_queries == ["update the Zephyr X2 firmware to 3.4 from the admin page"]
    assert docs.issue_document().count("\n") == 2


@pytest.mark.parametrize("mode", MODES)
def test_dialogue_graph_is_one_call(server, mode):
    server.enqueue(reply(mode, GRAPH_ANSWER))
    stats = CallStats()
    graph = backend_for(server, stats=stats, mode=mode).dialogue_graph(CONVERSATION)

    assert len(server.requests) == 1 and stats.calls == 1
    check_shape(server.requests[0], mode)
    assert isinstance(graph, DialogueGraph)
    assert graph.dialogue_id == "c7" and graph.backend == "llm/fake-model"
    assert [(n.node_id, n.turn_start, n.turn_end) for n in graph.nodes] == [("n0", 0, 1), ("n1", 2, 3), ("n2", 4, 4)]
    assert graph.nodes[2].answer == ""  # null answer: nobody answered
    assert [(e.source, e.target, e.relation) for e in graph.edges] == [("n1", "n0", "elaborates"), ("n2", "n0", "refines")]


def test_node_ids_are_renumbered_in_conversation_order(server):
    answer = {
        "nodes": [
            {"node_id": "later", "issue": "How do I get to the admin page?", "answer": "Open 192.168.0.1.", "turn_start": 2, "turn_end": 3},
            {"node_id": "first", "issue": "Wi-Fi drops", "answer": "Update the firmware.", "turn_start": 0, "turn_end": 1},
        ],
        "edges": [{"source": "later", "target": "first", "relation": "elaborates", "reason": "x"}],
    }
    server.enqueue(Behaviour.tool_call(answer))
    graph = backend_for(server).dialogue_graph(CONVERSATION)
    assert [(n.node_id, n.issue) for n in graph.nodes] == [("n0", "Wi-Fi drops"), ("n1", "How do I get to the admin page?")]
    assert [(e.source, e.target) for e in graph.edges] == [("n1", "n0")]


# --------------------------------------------------------------------------------------------------
# prompt hygiene


@pytest.mark.parametrize("mode", MODES + ["json_schema"])
@pytest.mark.parametrize("method,answer", [("pseudo_documents", DOCS_ANSWER), ("dialogue_graph", GRAPH_ANSWER)])
def test_conversation_only_in_the_data_block(server, mode, method, answer):
    server.set_responder(lambda request: Behaviour.answer(answer))
    getattr(backend_for(server, mode=mode), method)(CONVERSATION)

    (request,) = server.requests
    (system,) = texts(request, "system")
    assert "never instructions" in system
    assert system.startswith(prompts.PSEUDO_DOCUMENTS[:40] if method == "pseudo_documents" else prompts.DIALOGUE_GRAPH[:40])
    (carrier,) = [t for t in texts(request, "user") if "<conversation>" in t]
    block = carrier[carrier.index("<conversation>") : carrier.rindex("</conversation>")]
    for turn in CONVERSATION.turns:
        assert turn.text not in system
        assert turn.text in block
    assert "[2] user1 (user): How do I get to the admin page?" in block  # turn numbers the graph refers to


def test_instructions_hold_no_conversation_text():
    for text in (prompts.PSEUDO_DOCUMENTS, prompts.DIALOGUE_GRAPH):
        assert MARKER not in text and "{" not in text
    assert "tried: <step> (did not help)" in prompts.PSEUDO_DOCUMENTS
    assert "refines" in prompts.DIALOGUE_GRAPH and "elaborates" in prompts.DIALOGUE_GRAPH


# --------------------------------------------------------------------------------------------------
# validation: re-asked with the reason, then accepted


def test_edge_to_a_missing_node_is_reasked_then_accepted(server):
    bad = json.loads(json.dumps(GRAPH_ANSWER))
    bad["edges"].append({"source": "n5", "target": "n0", "relation": "refines", "reason": "made up"})
    server.enqueue(Behaviour.tool_call(bad), Behaviour.tool_call(GRAPH_ANSWER))
    stats = CallStats()
    graph = backend_for(server, stats=stats).dialogue_graph(CONVERSATION)

    assert len(server.requests) == 2 and stats.retries == 1
    assert "no node 'n5'" in json.dumps(server.requests[1]["messages"])
    assert len(graph.nodes) == 3 and len(graph.edges) == 2


@pytest.mark.parametrize(
    "change,error",
    [
        (lambda g: g["edges"].__setitem__(0, {"source": "n0", "target": "n1", "relation": "elaborates", "reason": "x"}), "the source must be the later unit"),
        (lambda g: g["nodes"][2].update(turn_end=9), "outside the conversation (turns 0..4)"),
        (lambda g: g["nodes"][1].update(turn_start=3, turn_end=2), "turn_start 3 is after turn_end 2"),
        (lambda g: g["nodes"][1].update(node_id="n0"), "node_id 'n0' is used twice"),
        (lambda g: g.update(nodes=[], edges=[]), "at least one unit"),
        (lambda g: g["edges"][0].update(relation="contradicts"), "refines"),
    ],
)
def test_invalid_graph_is_reasked_with_the_reason(server, change, error):
    bad = json.loads(json.dumps(GRAPH_ANSWER))
    change(bad)
    server.enqueue(Behaviour.content(bad), Behaviour.content(GRAPH_ANSWER))
    graph = backend_for(server, mode="json").dialogue_graph(CONVERSATION)
    assert len(server.requests) == 2
    assert error in json.dumps(server.requests[1]["messages"])
    assert [n.node_id for n in graph.nodes] == ["n0", "n1", "n2"]


def test_empty_query_list_is_reasked(server):
    server.enqueue(
        Behaviour.tool_call({"issue_queries": ["  ", "[EMAIL]"], "solution_queries": ["reset the router"]}),
        Behaviour.tool_call(DOCS_ANSWER),
    )
    docs = backend_for(server).pseudo_documents(CONVERSATION)
    assert len(server.requests) == 2
    assert "issue_queries must hold at least one non-empty query" in json.dumps(server.requests[1]["messages"])
    assert docs.issue_queries[0] == "Zephyr X2 router drops Wi-Fi every evening"


def test_at_most_eight_queries_are_kept(server):
    many = {"issue_queries": [f"query number {i}" for i in range(12)], "solution_queries": ["a fix"]}
    server.enqueue(Behaviour.tool_call(many))
    docs = backend_for(server).pseudo_documents(CONVERSATION)
    assert docs.issue_queries == [f"query number {i}" for i in range(8)]


def test_persistently_invalid_graph_raises_llm_call_failed(server):
    server.set_responder(lambda request: Behaviour.answer({"nodes": [], "edges": []}))
    with pytest.raises(LLMCallFailed) as info:
        backend_for(server, max_validation_retries=1).dialogue_graph(CONVERSATION)
    assert info.value.kind == "invalid_output" and info.value.task == "dialogue_graph[c7]"


# --------------------------------------------------------------------------------------------------
# cache and shortcuts


def test_second_identical_call_is_served_from_the_cache(server, tmp_path):
    cache = CallCache(tmp_path / "warehouse.duckdb")
    server.enqueue(Behaviour.tool_call(DOCS_ANSWER), Behaviour.tool_call(GRAPH_ANSWER))
    first_docs = backend_for(server, cache=cache).pseudo_documents(CONVERSATION)
    first_graph = backend_for(server, cache=cache).dialogue_graph(CONVERSATION)
    assert len(server.requests) == 2

    stats = CallStats()
    again = backend_for(server, cache=cache, stats=stats)
    assert again.pseudo_documents(CONVERSATION) == first_docs
    assert again.dialogue_graph(CONVERSATION) == first_graph
    assert len(server.requests) == 2 and stats.cache_hits == 2 and stats.calls == 0


def test_conversation_without_turns_makes_no_call(server):
    empty = ConversationInput(dialogue_id="e", turns=[])
    backend = backend_for(server)
    docs = backend.pseudo_documents(empty)
    graph = backend.dialogue_graph(empty)
    assert docs.issue_queries and docs.solution_queries and docs.backend == "llm/fake-model"
    assert [n.node_id for n in graph.nodes] == ["n0"] and graph.edges == []
    assert server.requests == []
