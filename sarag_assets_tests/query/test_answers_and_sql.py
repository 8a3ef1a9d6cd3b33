"""Answers, SQL and the CLI over a home the real pipeline built; the LLM path through a real HTTP server."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import duckdb
import pytest

from sarag_assets.backends.embedded.cues import instruction_score
from sarag_assets.backends.llm.client import LLMSettings, StructuredLLM
from sarag_assets.query.answers import GroundedAnswer, uncited_sentences
from sarag_assets.query.engine import LLMRequired, Sarag
from sarag_assets.query.sql import SqlError, SqlRefused
from sarag_assets.query.text_to_sql import SqlAnswer, SqlPlan
from sarag_assets_tests.backends.llm.fake_openai_server import (
    Behaviour,
    FakeOpenAIServer,
)


def _truth(built_home) -> dict[str, dict]:
    from sarag_assets.cli import DEMO_N, DEMO_SEED

    path = built_home.root / "generated" / f"n{DEMO_N}-seed{DEMO_SEED}" / "truth.jsonl"
    return {t["dialogue_id"]: t for t in map(json.loads, path.read_text().splitlines())}


def test_an_answer_offers_a_close_conversations_fix_in_the_helpers_words_with_its_outcome(
        engine, built_home, generated_queries):
    from sarag_assets.query.fixes import OUTCOMES

    truth = _truth(built_home)
    offered = right = labelled = 0
    for query in generated_queries[:40]:
        answer = engine.answer(query["turns"])
        assert answer.generated_by == "extractive"
        assert answer.citations and set(answer.citations) <= answer.evidence.ids()
        # every sentence of the answer cites the evidence it rests on
        assert not uncited_sentences(answer.text, answer.evidence.ids()), answer.text
        for fix in answer.fixes:
            assert fix.outcome in OUTCOMES
            conversation = engine.conversation(fix.dialogue_ids[0])
            helper = " ".join(" ".join(t["text"].split()) for t in conversation["turns"] if t["role"] != "user")
            first = fix.text.split(". ")[0]
            assert first.rstrip(" …") in helper, (fix.text, fix.dialogue_ids)  # the helper's own words
            # never a clarifying question: a question in a fix puts a step ("Can you reset ...?")
            assert all(instruction_score(q) >= 0.5 for q in re.findall(r"[^.!?]*\?", fix.text)), fix.text
            assert fix.text[:40] in re.sub(r" \[[^\[\]]+\]", "", answer.text)  # the fix, its citations aside
            labelled += 1
            right += (fix.outcome == "confirmed") == truth[fix.dialogue_ids[0]]["resolved"]
        offered += bool(answer.fixes)
        assert answer.supported == any(f.outcome != "failed" for f in answer.fixes)
        assert answer.as_dict()["fixes"] == [f.as_dict() for f in answer.fixes]
    assert offered >= 36  # nearly every question has a fix among its close conversations
    assert right >= 0.7 * labelled  # the generator knows each conversation's outcome


def _rows(*specs):
    """Evidence rows, best-ranked first, from (dialogue id, resolved, resolution)."""
    return [{"dialogue_id": d, "score": 1.0, "row": {"problem": "p", "resolved": resolved, "resolution": fix}}
            for d, resolved, fix in specs]


REINSTALL = "Reinstall the printer driver from the vendor's site, then print a test page."
RESET = "Reset the router to its factory settings and set up the wireless network again."


def test_the_closest_conversation_is_not_outvoted_by_two_far_down_the_list(engine):
    from sarag_assets.query.answers import extractive_answer
    from sarag_assets.query.evidence import Evidence

    rows = _rows(("c1", "true", REINSTALL), ("c2", "false", "Opened a case."), ("c3", None, None),
                 ("c4", "true", RESET), ("c5", "true", RESET))
    answer = extractive_answer(Evidence(rows, [], [], []), [], engine.embedder)
    # 1/1 against 1/4 + 1/5; what failed comes last, as what was tried
    assert [(f.dialogue_ids, f.outcome) for f in answer.fixes] == [
        (["c1"], "confirmed"), (["c4", "c5"], "confirmed"), (["c2"], "failed")]
    assert answer.text.startswith("Confirmed fix: Reinstall")
    assert "Confirmed fix in 2 of the 5 similar conversations [c4, c5]: Reset" in answer.text
    assert "Tried, did not work: Opened a case. [c2]" in answer.text


def test_a_fix_close_conversations_agree_on_comes_first(engine):
    from sarag_assets.query.answers import extractive_answer
    from sarag_assets.query.evidence import Evidence

    rows = _rows(("c1", "true", RESET), ("c2", "true", REINSTALL), ("c3", "true", RESET))
    answer = extractive_answer(Evidence(rows, [], [], []), [], engine.embedder)
    assert [f.dialogue_ids for f in answer.fixes] == [["c1", "c3"], ["c2"]]  # 1/1 + 1/3 against 1/2
    # the fix's sentences cite the conversation whose words they are; where it worked cites both
    assert answer.text.splitlines()[0] == (
        "Confirmed fix in 2 of the 3 similar conversations [c1, c3]: Reset the router to its factory settings "
        "and set up the wireless network again. [c1]")


def test_a_confirmed_fix_goes_before_an_unconfirmed_one_of_similar_support(engine):
    from sarag_assets.query.answers import extractive_answer
    from sarag_assets.query.evidence import Evidence

    update = "Update the firmware to version 5.1 from the support site."
    rows = _rows(("c1", None, update), ("c2", None, REINSTALL), ("c3", "true", RESET))
    answer = extractive_answer(Evidence(rows, [], [], []), [], engine.embedder)
    assert [(f.dialogue_ids, f.outcome) for f in answer.fixes] == [
        (["c1"], "not_recorded"), (["c3"], "confirmed"), (["c2"], "not_recorded")]
    assert answer.text.startswith("Suggested fix (outcome not recorded): Update the firmware")
    assert answer.supported


def test_a_list_items_number_stays_with_its_item():
    from sarag_assets.query.answers import _sentences

    assert _sentences("Follow these steps: 1. Flush the cache. 2. Restart it. Update to 6.1.8. Done [c1].") == [
        "Follow these steps: 1. Flush the cache.", "2. Restart it.", "Update to 6.1.8.", "Done [c1]."]


def test_an_evidence_id_names_its_conversation_without_being_parsed():
    from sarag_assets.query.evidence import CellEvidence, Evidence, NodeEvidence, Triple

    evidence = Evidence(_rows(("ZD:4711", "true", RESET), ("forum/thread#42", None, None)),
                        [Triple("v", "product", "x", "ZD:4711", 1)],
                        [NodeEvidence("forum/thread#42", "n1", "i", "a", 0, 1, 0.5, True)],
                        [CellEvidence("ZD:4711", "model", "m", 0.3)])
    assert evidence.conversations() == {"ZD:4711": "ZD:4711", "forum/thread#42": "forum/thread#42",
                                        "ZD:4711:product": "ZD:4711", "forum/thread#42#n1": "forum/thread#42",
                                        "ZD:4711:model": "ZD:4711"}


def test_a_question_nothing_matches_gets_no_fix(engine):
    answer = engine.answer("how do I knit a scarf with circular needles")
    assert not answer.supported  # what the closest conversations hold may follow, said to match weakly
    assert answer.text.startswith("Nothing in this home matches the question well")


def test_fixes_that_failed_are_offered_only_as_tried_and_the_answer_is_not_supported(engine):
    from sarag_assets.query.answers import extractive_answer
    from sarag_assets.query.evidence import Evidence

    rows = [{"dialogue_id": d, "score": 1.0, "row": {**row, "resolved": "false"}} for d, row in engine.rows.items()
            if row.get("resolution")][:5]
    answer = extractive_answer(Evidence(rows, [], [], []), [], engine.embedder)
    assert answer.fixes and all(f.outcome == "failed" for f in answer.fixes) and not answer.supported
    assert answer.text.startswith("None of the 5 similar conversations holds a fix that did not fail")
    assert "Confirmed" not in answer.text and "Suggested" not in answer.text
    assert answer.text.count("Tried, did not work: ") == len(answer.fixes)


def test_a_fix_whose_outcome_is_not_recorded_is_offered_as_such(engine):
    from sarag_assets.query.answers import extractive_answer
    from sarag_assets.query.evidence import Evidence

    unknown = [{"dialogue_id": d, "score": 1.0, "row": {**row, "resolved": None}} for d, row in engine.rows.items()
               if row.get("resolution")][:1]
    answer = extractive_answer(Evidence(unknown, [], [], []), [], engine.embedder)
    assert [(f.dialogue_ids, f.outcome) for f in answer.fixes] == [([unknown[0]["dialogue_id"]], "not_recorded")]
    assert answer.supported and answer.text.startswith("Suggested fix (outcome not recorded): ")


def test_a_fix_of_several_sentences_cites_each_of_them(engine):
    from sarag_assets.query.answers import extractive_answer
    from sarag_assets.query.evidence import Evidence

    dialogue_id, row = next((d, r) for d, r in engine.rows.items() if r.get("resolution"))
    row = {**row, "resolved": "true", "resolution": "This looks like a known issue. Reinstall it. Then reboot!"}
    answer = extractive_answer(Evidence([{"dialogue_id": dialogue_id, "score": 1.0, "row": row}], [], [], []), [],
                               engine.embedder)
    assert answer.supported and answer.text.count(f"[{dialogue_id}]") == 3, answer.text
    assert not uncited_sentences(answer.text, {dialogue_id})


def test_graph_walk_follows_edges_from_the_anchors(engine, built_home):
    con = duckdb.connect(str(built_home.warehouse), read_only=True)
    dialogue_id, source, target = con.execute(
        "SELECT dialogue_id, source, target FROM graph_edges ORDER BY dialogue_id LIMIT 1").fetchone()
    con.close()
    from sarag_assets.query.evidence import walk_nodes

    nodes = [{"dialogue_id": dialogue_id, "node_id": n, "issue": "i", "answer": "a", "turn_start": i, "turn_end": i}
             for i, n in enumerate(sorted({source, target, "zz-unlinked"}))]
    walked = walk_nodes(nodes, [(source, target, "refines")], {source: 0.9, target: 0.1, "zz-unlinked": 0.5},
                        m=1, radius=1)
    assert {n.node_id for n in walked} == {source, target}
    assert [n.node_id for n in walked if n.anchor] == [source]
    assert {n.node_id for n in walk_nodes(nodes, [(source, target, "refines")], {source: 0.9}, m=1, radius=0)} == {source}


@pytest.mark.parametrize("statement", [
    "DELETE FROM raw_dialogues",
    "INSERT INTO quarantine SELECT * FROM quarantine",
    "CREATE TABLE x AS SELECT 1",
    "ATTACH '/tmp/other.duckdb' AS other",
    "COPY raw_dialogues TO '/tmp/out.csv'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT 1; DROP TABLE raw_dialogues",
    "INSTALL httpfs",
    "SET enable_external_access = true",
    "PRAGMA enable_profiling",
    "PRAGMA database_list",
    "SELECT path FROM duckdb_databases()",
])
def test_sql_refuses_writes_attachments_file_reads_and_multiple_statements(engine, built_home, statement):
    before = duckdb.connect(str(built_home.warehouse), read_only=True)
    counts = before.execute("SELECT (SELECT count(*) FROM raw_dialogues), (SELECT count(*) FROM quarantine)").fetchone()
    before.close()
    # Refused before running, or (a bare path, which DuckDB then reads as a table name) it fails without
    # reading the file: no replacement scan, no external access.
    with pytest.raises(SqlRefused if "passwd'" not in statement or "read_csv" in statement else SqlError):
        engine.sql(statement)
    after = duckdb.connect(str(built_home.warehouse), read_only=True)
    assert after.execute("SELECT (SELECT count(*) FROM raw_dialogues), (SELECT count(*) FROM quarantine)").fetchone() == counts
    after.close()


def test_sql_reads_the_wide_table(engine):
    result = engine.sql("SELECT product, count(*) AS n FROM conversation_table WHERE product IS NOT NULL "
                        "GROUP BY product ORDER BY n DESC, product LIMIT 3")
    assert result.columns == ["product", "n"] and len(result.rows) == 3
    top = max(sum(r.get("product") == p for r in engine.rows.values()) for p in {r.get("product") for r in engine.rows.values()} - {None})
    assert result.rows[0][1] == top


def test_the_records_own_fields_are_in_the_table_as_the_source_gave_them(engine, built_home):
    from sarag_assets.cli import DEMO_N, DEMO_SEED

    corpus = built_home.root / "generated" / f"n{DEMO_N}-seed{DEMO_SEED}" / "corpus.jsonl"
    metadata = {r["dialogue_id"]: r["metadata"] for r in map(json.loads, corpus.read_text().splitlines())}
    result = engine.sql("SELECT dialogue_id, source_fields->>'domain', source_fields->>'channel' "
                        "FROM conversation_table ORDER BY dialogue_id", max_rows=10_000)
    assert not result.truncated
    # the home also holds the demo's real samples, whose records name other fields
    generated = [r for r in result.rows if r[0] in metadata]
    assert generated == [(d, m["domain"], m["channel"]) for d, m in sorted(metadata.items())]
    names = re.search(r"source_fields JSON: .*; names: ([^\n]*)", engine.schema())
    assert names and {"channel", "domain"} <= set(names.group(1).split(", ")), engine.schema()
    first = sorted(metadata)[0]
    assert engine.conversation(first)["fields"] == metadata[first]
    shown = _cli("show", first, home=built_home)
    assert f"channel: {metadata[first]['channel']} (the record's field)" in shown.stdout


def test_ask_sql_without_an_llm_says_it_needs_one(engine):
    with pytest.raises(LLMRequired, match="needs an LLM"):
        engine.ask_sql("how many conversations mention a refund?")


def _llm(server, mode="tools") -> StructuredLLM:
    return StructuredLLM(LLMSettings(base_url=server.base_url, model="test-model", mode=mode, max_retries=1,
                                     backoff_base_s=0.01))


def test_llm_answer_from_evidence_only_and_invented_citations_are_dropped(built_home, generated_queries):
    query = next(q for q in generated_queries if q["kind"] == "single")
    with FakeOpenAIServer() as server:
        def respond(request):
            prompt = request["messages"][-1]["content"]
            real = prompt.split("[", 1)[1].split("]", 1)[0]  # the first evidence id the prompt shows
            return Behaviour.answer({"answer": "Reinstall it [from the evidence].", "supported": True,
                                     "citations": [real, "conv-does-not-exist#n9"]})

        server.set_responder(respond)
        with Sarag(built_home, llm=_llm(server)) as engine:
            answer = engine.answer(query["turns"])
        request = server.requests[0]
    assert answer.generated_by == "llm/test-model"
    assert answer.citations and all(c in answer.evidence.ids() for c in answer.citations)
    assert any("conv-does-not-exist" in n for n in answer.notes)
    system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
    assert "ONLY the evidence" in system and "<evidence>" in user
    assert query["turns"][-1]["text"] in user
    # the graph's nodes and edges, the triples, the top cells and the fixes with their outcomes
    for part in ("DIALOGUE GRAPH NODES", "DIALOGUE GRAPH EDGES", "TABLE TRIPLES", "TOP CELLS"):
        assert part in user
    fixes = user.split("FIXES THE CONVERSATIONS HOLD", 1)[1].split("DIALOGUE GRAPH NODES", 1)[0]
    assert re.search(r"^\[[^\]]+\] \((?:confirmed|not_recorded|failed)\) \S", fixes, re.M), fixes
    assert answer.evidence.edges and all(f"{d}#{a} {r} {d}#{b}" in user for d, a, b, r in answer.evidence.edges)


@pytest.mark.parametrize("sentences, outcome, supported, note", [
    (["Use the fix from {id} [{id}].", "It worked there [{id}]."], "(?:confirmed|not_recorded)", True, None),
    (["Use the fix from {id} [{id}].", "It always works."], "(?:confirmed|not_recorded)", False,  # no evidence backs it
     "cite no evidence"),
    # every sentence cited, but the conversation holds no fix, or only one that failed
    (["Use the fix from {id} [{id}].", "It worked there [{id}]."], "(?:failed|none)", False,
     "cites no conversation holding a fix that did not fail"),
])
def test_llm_answer_is_supported_only_when_every_sentence_cites_evidence_of_a_fix_that_did_not_fail(
        built_home, sentences, outcome, supported, note):
    with FakeOpenAIServer() as server:
        def respond(request):
            prompt = request["messages"][-1]["content"]
            cited = re.search(r"^\[([^\]]+)\] outcome: " + outcome + ";", prompt, re.M).group(1)
            return Behaviour.answer({"answer": " ".join(x.format(id=cited) for x in sentences), "supported": True,
                                     "citations": [cited]})

        server.set_responder(respond)
        with Sarag(built_home, llm=_llm(server)) as engine:
            # the first turn names what the second asks about: fixed and unfixed conversations both come up
            answer = engine.answer("my printer jams on every page", k=10)
    assert answer.supported is supported
    notes = " ".join(answer.notes)
    for expected in ("cite no evidence", "cites no conversation holding a fix that did not fail"):
        assert (expected in notes) is (expected == note), notes


def test_llm_saying_the_evidence_does_not_answer_is_kept(built_home):
    with FakeOpenAIServer() as server:
        server.set_responder(lambda request: Behaviour.answer(
            {"answer": "The evidence does not say.", "supported": False, "citations": []}))
        with Sarag(built_home, llm=_llm(server)) as engine:
            answer = engine.answer("what is the airspeed of an unladen swallow?")
    assert not answer.supported and answer.citations == []


def test_ask_sql_runs_the_models_sql_read_only_and_answers_from_the_rows(built_home):
    with FakeOpenAIServer() as server:
        server.enqueue(
            Behaviour.answer({"sql": "DELETE FROM raw_dialogues", "columns": []}),  # refused, then re-planned
            Behaviour.answer({"sql": "SELECT count(*) AS n FROM conversation_table", "columns": ["dialogue_id"]}),
        )
        server.set_responder(lambda request: Behaviour.answer(
            {"answer": "There are " + request["messages"][-1]["content"].split('"n": ')[1].split("}")[0]
                       + " conversations.", "supported": True}))
        with Sarag(built_home, llm=_llm(server)) as engine:
            reply = engine.ask_sql("How many conversations are there?")
            expected = engine.sql("SELECT count(*) FROM conversation_table").rows[0][0]
        requests = server.requests
    assert reply.sql.startswith("SELECT count(*)") and reply.rows == [{"n": expected}]
    assert reply.answer == f"There are {expected} conversations." and reply.supported
    assert "only SELECT" in requests[1]["messages"][-1]["content"]  # the refusal went back to the model
    assert "conversation_table" in requests[0]["messages"][-1]["content"]  # it was given the schema


def _cli(*args, home):
    return subprocess.run([sys.executable, "-m", "sarag_assets.cli", *args, "--home", str(home.root)],
                          capture_output=True, text=True)


def test_cli_search_ask_sql_readable_and_json(built_home, generated_queries, tmp_path):
    query = next(q for q in generated_queries if q["kind"] == "followup")
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps(query["turns"]))
    found = _cli("search", "--conversation", str(conversation), "--json", home=built_home)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert len(hits) == 10 and all({"dialogue_id", "score", "channels", "matched_columns"} <= set(h) for h in hits)
    jsonl = tmp_path / "conversation.jsonl"
    jsonl.write_text("".join(json.dumps(t) + "\n" for t in query["turns"]))
    again = _cli("search", "--conversation", str(jsonl), "--json", home=built_home)
    assert [h["dialogue_id"] for h in json.loads(again.stdout)["hits"]] == [h["dialogue_id"] for h in hits]

    readable = _cli("ask", query["turns"][0]["text"], home=built_home)
    assert readable.returncode == 0 and "citations: conv-" in readable.stdout
    rows = _cli("sql", "SELECT count(*) AS n FROM conversation_table", "--json", home=built_home)
    assert json.loads(rows.stdout)["columns"] == ["n"]


def test_cli_search_reads_for_people_and_explains_on_request(built_home, engine):
    plain = _cli("search", "my router keeps dropping the connection", "--k", "3", home=built_home)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    ranked = [line for line in lines if line[:3].strip().rstrip(".").isdigit()]
    assert len(ranked) == 3
    first = ranked[0].split()[1]
    assert first in engine.rows and any(w in ranked[0] for w in ("[resolved]", "[not resolved]", "[outcome unknown]"))
    assert "score" not in plain.stdout and "#1" not in plain.stdout  # fusion details only with --explain
    assert lines[-1] == f"(published state {engine.publication.id})"
    explained = _cli("search", "my router keeps dropping the connection", "--k", "3", "--explain", home=built_home)
    assert "fused score" in explained.stdout and "passages #" in explained.stdout
    assert "stands out by" in explained.stdout


def test_cli_show_prints_a_conversation_as_stored(built_home, engine):
    dialogue_id = sorted(engine.rows)[0]
    shown = _cli("show", dialogue_id, "--json", home=built_home)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["dialogue_id"] == dialogue_id and data["row"] == engine.rows[dialogue_id]
    assert [t["turn_index"] for t in data["turns"]] == list(range(len(data["turns"])))
    readable = _cli("show", dialogue_id, home=built_home)
    assert data["turns"][0]["text"].splitlines()[0] in readable.stdout
    missing = _cli("show", "no-such-id", home=built_home)
    assert missing.returncode == 2 and "no conversation 'no-such-id'" in missing.stderr


def test_cli_version_and_examples():
    version = subprocess.run([sys.executable, "-m", "sarag_assets.cli", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("sarag ")
    helped = subprocess.run([sys.executable, "-m", "sarag_assets.cli", "--help"], capture_output=True, text=True)
    assert "examples:" in helped.stdout and "sarag serve" in helped.stdout
    from sarag_assets.cli import build_parser

    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    for name, parser in commands.items():  # every command's own --help ends with how to call it
        assert parser.epilog and parser.epilog.startswith("examples:") and f"sarag {name}" in parser.epilog, name


def test_serve_binds_this_machine_only_unless_told():
    from sarag_assets.cli import build_parser

    assert build_parser().parse_args(["serve"]).host == "127.0.0.1"
    assert build_parser().parse_args(["serve", "--host", "0.0.0.0"]).host == "0.0.0.0"


@pytest.mark.parametrize("args", [
    ("sql", "DROP TABLE raw_dialogues"),
    ("sql", "SELECT * FROM read_csv('/etc/passwd')"),
    ("search", ""),
    ("search", "--conversation", "/no/such/file.json"),
    ("sql", "--ask", "how many?"),
])
def test_cli_refusals_are_one_line_errors_not_tracebacks(built_home, args):
    result = _cli(*args, home=built_home)
    assert result.returncode == 2
    assert result.stderr.startswith("sarag: error:") and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_bad_conversation_file_is_a_clear_error(built_home, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"speaker": "user", "text": ')
    result = _cli("search", "--conversation", str(bad), home=built_home)
    assert result.returncode == 2 and "not JSON or JSONL" in result.stderr


def test_models_used_by_the_llm_paths_are_strict():
    assert set(GroundedAnswer.model_fields) == {"answer", "supported", "citations"}
    assert set(SqlPlan.model_fields) == {"sql", "columns"} and set(SqlAnswer.model_fields) == {"answer", "supported"}


@pytest.mark.parametrize("damage", ["lancedb folder gone", "one table gone"])
def test_a_published_state_missing_its_lancedb_tables_is_one_line_not_an_empty_answer(built_home, tmp_path, damage):
    """A half-deleted index is never served as if it held nothing (the state names its tables)."""
    import shutil

    from sarag_assets.settings import Home

    copy = Home(tmp_path / "home")
    shutil.copytree(built_home.root, copy.root, ignore=shutil.ignore_patterns("dagster_home"))
    if damage == "lancedb folder gone":
        shutil.rmtree(copy.lancedb)
    else:
        shutil.rmtree(copy.lancedb / "conversation_passages.lance")
    for args in (("search", "my router keeps dropping"), ("ask", "my router keeps dropping")):
        result = _cli(*args, home=copy)
        assert result.returncode == 2, (args, result.stdout[-500:], result.stderr[-2000:])
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "LanceDB" in result.stderr and "sarag materialize" in result.stderr, result.stderr
    # the warehouse copy is whole: SQL still answers from it
    sql = _cli("sql", "SELECT count(*) AS n FROM current_dialogues", "--json", home=copy)
    assert sql.returncode == 0, sql.stderr


def test_cli_show_and_search_print_a_source_file_name_with_control_characters_as_escapes(built_home, engine, tmp_path):
    """A file name may hold an ESC (Linux allows it); `show` and `search` print where a conversation came from."""
    import shutil

    from sarag_assets.settings import Home

    copy = Home(tmp_path / "home")
    shutil.copytree(built_home.root, copy.root)
    dialogue_id = sorted(engine.rows)[0]
    published = next((copy.root / "published").glob("*.duckdb"))
    with duckdb.connect(str(published)) as con:
        con.execute("UPDATE raw_dialogues SET source_file = 'in' || chr(27) || '[2Jbox.jsonl' WHERE dialogue_id = ?",
                    [dialogue_id])
    shown = _cli("show", dialogue_id, home=copy)
    assert shown.returncode == 0, shown.stderr
    assert "in\\x1b[2Jbox.jsonl" in shown.stdout.splitlines()[0]
    problem = engine.rows[dialogue_id]["problem"]
    found = _cli("search", problem, "--k", "10", home=copy)
    assert found.returncode == 0, found.stderr
    assert "in\\x1b[2Jbox.jsonl" in found.stdout
    assert "\x1b" not in shown.stdout + found.stdout
