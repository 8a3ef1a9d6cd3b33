"""QUERIES.jsonl / CORPUS.jsonl loading: valid files load, every bad line is named with its problem."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sarag_assets.evaluation.queries import (
    CorpusFileError,
    QueryFileError,
    check_gold,
    corpus_summary,
    load_corpus,
    load_queries,
    parse_query,
    read_queries,
)


def _write(tmp_path: Path, lines: list, name: str = "queries.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def test_valid_file_with_turns_text_nuggets_and_extra_fields(tmp_path):
    path = _write(tmp_path, [
        {"query_id": "q1", "text": "printer offline after update", "gold": ["c1"]},
        "",
        {"query_id": "q2", "kind": "followup", "pattern": "same_issue",
         "turns": [{"speaker": "user", "text": "My printer is offline."}, {"speaker": "agent", "text": "Which model?"},
                   {"speaker": "user", "text": "How did people fix it?"}],
         "gold": ["c2", "c3"], "nuggets": ["reinstall the driver"]},
        {"query_id": "q3", "text": "x", "gold": ["c1"], "nuggets": []},
    ])
    q1, q2, q3 = load_queries(path)
    assert q1.turns == [{"speaker": "user", "text": "printer offline after update"}]
    assert q1.nuggets is None and q1.kind is None and q1.extra == {}
    assert q2.kind == "followup" and q2.extra == {"pattern": "same_issue"}
    assert q2.gold == ["c2", "c3"] and q2.nuggets == ["reinstall the driver"]
    assert q2.text == "My printer is offline.\nWhich model?\nHow did people fix it?"
    assert q2.last_text == "How did people fix it?" and q2.is_multi_turn
    assert q3.nuggets is None  # an empty list means no nuggets


@pytest.mark.parametrize(
    "record, problem",
    [
        ({"text": "a", "gold": ["c"]}, "'query_id' must be a non-empty string"),
        ({"query_id": 7, "text": "a", "gold": ["c"]}, "'query_id' must be a non-empty string, got a number"),
        ({"query_id": "q", "gold": ["c"]}, "has neither 'turns' nor 'text'"),
        ({"query_id": "q", "text": "a", "turns": [{"speaker": "u", "text": "b"}], "gold": ["c"]}, "both 'turns' and 'text'"),
        ({"query_id": "q", "text": "  ", "gold": ["c"]}, "'text' must be a non-empty string, got an empty string"),
        ({"query_id": "q", "turns": [], "gold": ["c"]}, "'turns' must be a non-empty list"),
        ({"query_id": "q", "turns": ["hello"], "gold": ["c"]}, "'turns'[0] must be an object"),
        ({"query_id": "q", "turns": [{"text": "hi"}], "gold": ["c"]}, "'turns'[0].speaker must be a non-empty string"),
        ({"query_id": "q", "turns": [{"speaker": "user", "text": 3}], "gold": ["c"]}, "'turns'[0].text must be a non-empty string"),
        ({"query_id": "q", "text": "a"}, "'gold' must be a non-empty list of dialogue ids, got nothing"),
        ({"query_id": "q", "text": "a", "gold": "c1"}, "'gold' must be a non-empty list of dialogue ids, got a string"),
        ({"query_id": "q", "text": "a", "gold": []}, "got an empty list"),
        ({"query_id": "q", "text": "a", "gold": ["c", 5]}, "'gold'[1] must be a non-empty dialogue id"),
        ({"query_id": "q", "text": "a", "gold": ["c", "c"]}, "lists 'c' more than once"),
        ({"query_id": "q", "text": "a", "gold": ["c"], "nuggets": "fact"}, "'nuggets' must be a list of strings or null"),
        ({"query_id": "q", "text": "a", "gold": ["c"], "nuggets": ["ok", ""]}, "'nuggets'[1] must be a non-empty string"),
        ({"query_id": "q", "text": "a", "gold": ["c"], "kind": 1}, "'kind' must be a non-empty string"),
        (["not", "an", "object"], "a query must be a JSON object, got a list"),
    ],
)
def test_each_bad_line_is_named_with_its_problem(tmp_path, record, problem):
    good = {"query_id": "ok", "text": "fine", "gold": ["c"]}
    path = _write(tmp_path, [good, record])
    with pytest.raises(QueryFileError) as info:
        load_queries(path)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.problems[0][0] == 2
    assert problem in err.problems[0][1]
    assert "queries.jsonl line 2:" in str(err)
    with pytest.raises(ValueError, match=re.escape(problem)):
        parse_query(record)


def test_invalid_json_duplicates_and_several_bad_lines_are_all_reported(tmp_path):
    path = _write(tmp_path, [
        {"query_id": "a", "text": "x", "gold": ["c"]},
        '{"query_id": "b", "text": "x", "gold": ["c"]',  # truncated
        {"query_id": "a", "text": "y", "gold": ["c"]},
        {"query_id": "c", "text": "z"},
    ])
    with pytest.raises(QueryFileError) as info:
        load_queries(path)
    lines = [n for n, _ in info.value.problems]
    assert lines == [2, 3, 4]
    text = str(info.value)
    assert "3 bad line(s)" in text
    assert "line 2: invalid JSON" in text
    assert "line 3: duplicate query_id 'a' (first on line 1)" in text
    assert "line 4: query 'c': 'gold'" in text


def test_invalid_utf8_empty_and_missing_files(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"query_id": "a", "text": "x", "gold": ["c"]}\n{"query_id": "\xff"}\n')
    with pytest.raises(QueryFileError, match="line 2: invalid UTF-8"):
        load_queries(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(QueryFileError, match="no queries"):
        load_queries(empty)
    with pytest.raises(QueryFileError, match="cannot read the file"):
        load_queries(tmp_path / "missing.jsonl")


def test_read_queries_accepts_lines_in_memory():
    qs = read_queries(['{"query_id": "a", "text": "x", "gold": ["c"]}'], source="inline")
    assert [q.query_id for q in qs] == ["a"]
    with pytest.raises(QueryFileError, match="inline line 1"):
        read_queries(["{}"], source="inline")


def test_corpus_loading_summary_and_gold_check(tmp_path):
    path = _write(tmp_path, [
        {"dialogue_id": "c1", "turns": [{"speaker": "user", "text": "hello"}, {"speaker": "agent", "text": "hi"}]},
        {"dialogue_id": 2, "turns": [{"speaker": "user", "text": "x"}], "metadata": {"channel": "chat"}},
    ], name="corpus.jsonl")
    corpus = load_corpus(path)
    assert [d.dialogue_id for d in corpus] == ["c1", "2"]
    assert corpus[0].text == "hello\nhi"
    summary = corpus_summary(corpus)
    assert summary["n_dialogues"] == 2 and summary["n_turns"] == 3 and summary["dialogue_ids"] == ["c1", "2"]
    qs = read_queries(['{"query_id": "a", "text": "x", "gold": ["c1", "c9"]}'])
    assert check_gold(qs, summary["dialogue_ids"]) == ["query 'a': gold dialogue 'c9' is not in the corpus"]


def test_corpus_errors_name_the_line(tmp_path):
    path = _write(tmp_path, [
        {"dialogue_id": "c1", "turns": [{"speaker": "user", "text": "hello"}]},
        {"dialogue_id": "c1", "turns": [{"speaker": "user", "text": "again"}]},
        {"dialogue_id": "c3", "turns": []},
        {"turns": [{"speaker": "user", "text": "x"}]},
    ], name="corpus.jsonl")
    with pytest.raises(CorpusFileError) as info:
        load_corpus(path)
    assert [n for n, _ in info.value.problems] == [2, 3, 4]
    assert "duplicate dialogue_id 'c1'" in str(info.value)
    assert "'turns' must be a non-empty list" in str(info.value)
