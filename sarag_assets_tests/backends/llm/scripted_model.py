"""A simple model behind `FakeOpenAIServer`: it answers every structuring and refinement task of the LLM
backend from the conversation it is given (two columns, `product` and `error_code`, found by regular
expressions), so the LLM path runs end to end over real HTTP. `broken` conversations (containing
BROKEN) always fail their row extraction with HTTP 500."""

from __future__ import annotations

import re

from sarag_assets_tests.backends.llm.fake_openai_server import Behaviour, tool_name, user_text

WIDGET = re.compile(r"Widget \w+")
ERROR = re.compile(r"\bE\d{3}\b")


class ScriptedModel:
    def __init__(self, product: re.Pattern = WIDGET, error: re.Pattern = ERROR):
        self.product, self.error = product, error
        self.broken = True

    def _first(self, pattern: re.Pattern, data: str) -> str | None:
        found = pattern.search(data)
        return found.group() if found else None

    def __call__(self, request) -> Behaviour:
        tool, data = tool_name(request), user_text(request)
        product, error = self._first(self.product, data), self._first(self.error, data)
        if tool == "CandidateSchemaAnswer":
            return Behaviour.answer({"problem": "a device fails", "columns": [
                {"name": "product", "type": "string", "meaning": "the product model the user has",
                 "example_value": product,
                 "score": {"relevance": 0.9, "answerability": 0.9, "overall": 0.9, "justification": "named"}},
                {"name": "Error Code", "type": "text", "meaning": "the error code shown",
                 "example_value": error,
                 "score": {"relevance": 0.8, "answerability": 0.8, "overall": 0.8, "justification": "shown"}},
            ]})
        if tool == "GovernanceOperations":
            ops = [{"operation": "ADD", "columns": [name], "candidate": name, "reason": "recurring fact"}
                   for name in ("product", "error_code") if f'"name": "{name}"' not in data.split("candidates")[0]]
            return Behaviour.answer({"operations": ops})
        if tool == "RowValues":
            if self.broken and "BROKEN" in data:
                return Behaviour.server_error(500)
            return Behaviour.answer({"values": [
                {"column": "product", "value": product, "evidence": product},
                {"column": "error_code", "value": error, "evidence": error},
            ]})
        if tool == "PseudoDocumentsAnswer":
            return Behaviour.answer({"issue_queries": [f"{product or 'device'} error"],
                                     "solution_queries": ["what fixed the device"]})
        if tool == "DialogueGraphAnswer":
            return Behaviour.answer({"nodes": [{"node_id": "n0", "issue": "device error", "answer": "a fix",
                                                "turn_start": 0, "turn_end": 1}], "edges": []})
        if tool == "ValueJudgements":
            return Behaviour.answer({"judgements": [
                {"column": c, "supported": True, "reason": "stated"} for c in ("product", "error_code")
            ]})
        return Behaviour.http_error(400, error_body={"error": {"message": f"unexpected tool {tool!r}"}})
