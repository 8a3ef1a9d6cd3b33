"""Questions over many rows answered by SQL an LLM writes (SRAG). No Dagster.

The LLM reads the schema of the published warehouse copy (`schema_text`) and writes one read-only SELECT
(`plan_sql`); the statement runs within the home's SQL limits (`query.sql`), once more corrected by the
model if it fails; the model then answers from the result rows only (`answer_from_rows`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Callable

from pydantic import BaseModel, Field

from sarag_assets.query.sql import SqlError, SqlResult
from sarag_assets.query.understanding import QueryError


class LLMRequired(RuntimeError):
    """The operation needs an LLM endpoint and none is configured."""


class SqlPlan(BaseModel):
    sql: str = Field(description="One read-only DuckDB SELECT statement over the tables described.")
    columns: list[str] = Field(default_factory=list, description="The table columns the question needs.")


class SqlAnswer(BaseModel):
    answer: str = Field(description="The answer, derived only from the result rows.")
    supported: bool = Field(description="True only if the result rows answer the question.")


SQL_SYSTEM = (
    "You translate a question about support conversations into ONE read-only DuckDB SELECT statement over "
    "the schema given in the data. Use only the tables and columns listed; string comparisons should be "
    "case-insensitive (ILIKE) unless exact values are given. Return the SQL and the columns it needs."
)
SQL_ANSWER_SYSTEM = (
    "You answer a question from the result rows of a SQL query only. Do not use outside knowledge. If the "
    "rows do not answer the question (empty, or about something else), say so and set supported to false."
)


@dataclass
class SqlQuestionAnswer:
    question: str
    sql: str
    columns: list[str]
    rows: list[dict[str, Any]]
    answer: str
    supported: bool
    generated_by: str
    truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_sql(llm, question: str, schema: str, error: str | None = None) -> SqlPlan:
    data = f"SCHEMA:\n{schema}\n\nQUESTION:\n{question}"
    if error:
        data += f"\n\nYOUR PREVIOUS SQL FAILED WITH:\n{error}\nWrite a corrected statement."
    return llm.complete(system=SQL_SYSTEM, user_data=data, response_model=SqlPlan, task="ask_sql_plan",
                        data_tag="question")


def answer_from_rows(llm, question: str, sql: str, rows: list[dict[str, Any]]) -> SqlAnswer:
    shown = json.dumps(rows[:200], default=str, ensure_ascii=False)
    data = f"QUESTION:\n{question}\n\nSQL:\n{sql}\n\nRESULT ROWS ({len(rows)}):\n{shown}"
    return llm.complete(system=SQL_ANSWER_SYSTEM, user_data=data, response_model=SqlAnswer,
                        task="ask_sql_answer", data_tag="result")


def schema_text(columns: list[dict[str, str]], field_names: list[str]) -> str:
    """The tables a question can be answered from, for people and for the LLM."""
    lines = ["conversation_table: one row per current conversation. Columns:",
             "  dialogue_id VARCHAR, batch_key VARCHAR"]
    for c in columns:
        lines.append(f"  {c['name']} {c['type'].upper()}: {c['description']}".rstrip(": "))
    if field_names:
        lines.append("  source_fields JSON: the record's own fields as the source gave them, read one with "
                     f"source_fields->>'name'; names: {', '.join(field_names)}")
    lines += [
        "current_dialogues: one row per turn of the current conversations: dialogue_id, turn_index, "
        "role ('user' | 'agent'), speaker, text, ts, source_file, source_format, accepted (the source marks "
        "the turn as the accepted answer)",
        "graph_nodes: issue-solution units: dialogue_id, node_id, issue, answer, turn_start, turn_end",
        "pseudo_documents: dialogue_id, issue_document, solution_document",
    ]
    return "\n".join(lines)


def ask(llm, question: str, schema: str, run: Callable[[str], SqlResult]) -> SqlQuestionAnswer:
    """Question -> SQL (LLM) -> read-only rows (``run``) -> an answer from those rows only."""
    if not isinstance(question, str) or not question.strip():
        raise QueryError("the question is empty")
    if llm is None:
        raise LLMRequired("ask_sql needs an LLM: set SARAG_LLM_BASE_URL and SARAG_LLM_MODEL "
                          "(or write the SQL yourself: sarag sql)")
    plan = plan_sql(llm, question, schema)
    try:
        result = run(plan.sql)
    except SqlError as exc:
        plan = plan_sql(llm, question, schema, error=str(exc))
        result = run(plan.sql)
    rows = [{k: _plain(v) for k, v in r.items()} for r in result.records()]
    reply = answer_from_rows(llm, question, result.statement, rows)
    return SqlQuestionAnswer(question, result.statement, plan.columns, rows, reply.answer.strip(),
                             bool(reply.supported), f"llm/{llm.settings.model}", result.truncated)


def _plain(value):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
