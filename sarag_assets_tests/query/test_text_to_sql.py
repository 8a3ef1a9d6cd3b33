"""The schema the LLM reads and the checks before it is asked (the LLM path: test_answers_and_sql.py)."""

from __future__ import annotations

import pytest

from sarag_assets.query.sql import SqlResult
from sarag_assets.query.text_to_sql import LLMRequired, ask, schema_text
from sarag_assets.query.understanding import QueryError


def test_the_schema_lists_the_governed_columns_and_the_records_own_fields():
    columns = [{"name": "product", "type": "string", "description": "what broke"},
               {"name": "resolved", "type": "boolean", "description": ""}]
    text = schema_text(columns, ["channel", "domain"])
    assert "  product STRING: what broke" in text.splitlines()
    assert "  resolved BOOLEAN" in text.splitlines()  # no dangling colon without a description
    assert "names: channel, domain" in text
    assert "source_fields" not in schema_text(columns, [])
    assert text.splitlines()[0].startswith("conversation_table:")


def test_an_empty_question_is_refused_before_the_llm_is_needed_and_none_is_named():
    ran = []

    def run(statement: str) -> SqlResult:
        ran.append(statement)
        return SqlResult(["n"], [(1,)])

    with pytest.raises(QueryError, match="empty"):
        ask(None, "   ", "schema", run)
    with pytest.raises(LLMRequired, match="SARAG_LLM_BASE_URL"):
        ask(None, "how many conversations?", "schema", run)
    assert ran == []
