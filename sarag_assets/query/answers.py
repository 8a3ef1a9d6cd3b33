"""Grounded answers from the evidence gathered for a question (`query.evidence`). No Dagster.

An answer offers the most useful fix the close conversations hold, whatever is known of its outcome, each
with its label: ``confirmed`` (the asker or the source says it worked), ``not_recorded``, or ``failed``
(shown only as "tried, did not work"). Without an LLM the answer is extractive: those fixes, the same fix
told in several conversations merged, ordered by their conversations' support (1/rank each; a confirmed
fix goes before an unconfirmed one of similar support; `fixes.rank_fixes`); each sentence cites the
conversation whose words it is, and the sentence saying where a fix came from cites every conversation
that agrees. The answer is supported when it offers a fix that did not fail (the label says how sure it
is). With an LLM, the model writes the answer from that evidence only (rows, graph nodes and edges,
triples, cells and fixes, each marked with its outcome) and must cite evidence ids in every sentence; ids
it invents are dropped, and the answer is supported only when the model says so, every sentence cites
known evidence, and it cites a conversation that holds a fix that did not fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from sarag_assets.query.conversations import ConversationReader
from sarag_assets.query.evidence import Evidence, Gathered, outcome
from sarag_assets.query.fixes import CONFIRMED, FAILED, NOT_RECORDED, Fix, conversation_fixes, rank_fixes
from sarag_assets.query.strength import is_weak, weak_matches


@dataclass
class Answer:
    text: str
    citations: list[str]
    supported: bool  # False: the evidence does not answer the question
    generated_by: str  # "extractive" or "llm/<model>"
    evidence: Evidence
    notes: list[str] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)  # the fixes offered, best first, each with its outcome

    def as_dict(self) -> dict[str, Any]:
        return {"answer": self.text, "citations": self.citations, "supported": self.supported,
                "generated_by": self.generated_by, "notes": self.notes, "fixes": [f.as_dict() for f in self.fixes],
                "evidence": self.evidence.as_dict()}


# ---- extractive answer ---------------------------------------------------------------------------


def fixes_from_cells(rows: list[dict[str, Any]]) -> list[tuple[int, list[Fix]]]:
    """(rank, fixes) per row from its `resolution` and `resolved` cells: what stands in for a fix when
    the conversations were not read."""
    out = []
    for rank, r in enumerate(rows, start=1):
        text = " ".join(str(r["row"].get("resolution") or "").split())
        if text:
            label = {True: CONFIRMED, False: FAILED, None: NOT_RECORDED}[outcome(r["row"])]
            out.append((rank, [Fix(text, [r["dialogue_id"]], label)]))
    return out


_LABEL = {CONFIRMED: "Confirmed fix", NOT_RECORDED: "Suggested fix (outcome not recorded)",
          FAILED: "Tried, did not work"}


def extractive_answer(evidence: Evidence, notes: list[str], embedder=None, *, weak: set[str] = frozenset()) -> Answer:
    """The fixes the close conversations hold, best first, each labelled with its outcome and each
    sentence cited; conversations in `weak` (they do not stand out from the corpus for this question)
    offer a fix only when no other does, after the answer says nothing matches well, and the answer is then
    not supported. Supported when a close conversation's fix that did not fail is offered."""
    if not evidence.rows:
        return Answer("No similar conversation was found.", [], False, "extractive", evidence, notes)
    ids = [r["dialogue_id"] for r in evidence.rows]
    rank = {d: i for i, d in enumerate(ids, start=1)}
    close = [r for r in evidence.rows if r["dialogue_id"] not in weak]
    if evidence.fixes is None:
        found = fixes_from_cells(close)
    else:
        found = [(rank[f.dialogue_ids[0]], [f]) for f in evidence.fixes
                 if f.dialogue_ids[0] in rank and f.dialogue_ids[0] not in weak]
    fixes = rank_fixes(found, embedder) if embedder is not None and found else []
    loose = False
    if not fixes and embedder is not None and weak:  # offered all the same, said to be a weak match
        everything = fixes_from_cells(evidence.rows) if evidence.fixes is None else \
            [(rank[f.dialogue_ids[0]], [f]) for f in evidence.fixes if f.dialogue_ids[0] in rank]
        fixes, loose = rank_fixes(everything, embedder), True
    parts, citations = [], []
    if loose or not any(f.outcome != FAILED for f in fixes):
        closest = ids[:3]
        if not close:
            parts.append(f"Nothing in this home matches the question well; the closest conversations are "
                         f"{', '.join(closest)} [{', '.join(closest)}].")
        else:
            tried = " (what was tried that did not work follows)" if fixes else ""
            parts.append(f"None of the {len(ids)} similar conversations holds a fix that did not fail{tried}; "
                         f"the closest are {', '.join(closest)} [{', '.join(closest)}].")
        citations.extend(closest)
    for fix in fixes:
        where = f" in {len(fix.dialogue_ids)} of the {len(ids)} similar conversations [{', '.join(fix.dialogue_ids)}]" \
            if len(fix.dialogue_ids) > 1 else ""
        parts.append(f"{_LABEL[fix.outcome]}{where}: " + _each_sentence_cited(fix.text, fix.dialogue_ids[:1]))
        citations.extend(fix.dialogue_ids)
    text = "\n".join(parts)
    supported = not loose and any(f.outcome != FAILED for f in fixes) and not uncited_sentences(text, set(citations))
    return Answer(text, list(dict.fromkeys(citations)), supported, "extractive", evidence, notes, fixes)


def _each_sentence_cited(text: str, dialogue_ids: list[str]) -> str:
    """`text` with the citation bracket after each of its sentences: each says what it rests on."""
    cite = f"[{', '.join(dialogue_ids)}]"
    return " ".join(f"{sentence} {cite}" for sentence in _sentences(text))


# ---- LLM answers -----------------------------------------------------------------------------------


class GroundedAnswer(BaseModel):
    answer: str = Field(description="The answer, written only from the evidence; say plainly when the "
                                    "evidence does not answer the question.")
    supported: bool = Field(description="True only if the evidence answers the question.")
    citations: list[str] = Field(default_factory=list,
                                 description="Ids in square brackets from the evidence that support the answer.")


ANSWER_SYSTEM = (
    "You answer a support engineer's question using ONLY the evidence provided: retrieved past support "
    "conversations as table rows, dialogue-graph nodes (a user issue and the helper's answer), table "
    "triples and cells, each with an id in square brackets. The question may be a conversation: read the "
    "whole of it, the last turn is what is asked now. Do not use outside knowledge. Offer the most useful "
    "fix the conversations hold, in the helper's words, and say its outcome: 'confirmed' (it worked), "
    "'not_recorded' (not known whether it worked) or 'failed' (offer it only as tried, did not work). Prefer "
    "a confirmed fix to an unconfirmed one of similar support, and a fix several conversations agree on. If "
    "no conversation holds a fix that did not fail, say so plainly and set supported to false. End every "
    "sentence with the ids it rests on in square brackets, and list the ids you used (without brackets) as "
    "citations."
)


def llm_answer(llm, question: str, evidence: Evidence, notes: list[str]) -> Answer:
    data = f"QUESTION:\n{question}\n\nEVIDENCE:\n{evidence.as_prompt()}"
    result = llm.complete(system=ANSWER_SYSTEM, user_data=data, response_model=GroundedAnswer,
                          task="grounded_answer", data_tag="evidence")
    known = evidence.conversations()
    cited = [c.strip().strip("[]") for c in result.citations]
    in_text = [c.strip() for group in _CITE.findall(result.answer) for c in group.split(",")]
    valid = [c for c in dict.fromkeys(cited + in_text) if c in known]
    dropped = [c for c in dict.fromkeys(cited) if c not in known]
    if dropped:
        notes = notes + [f"dropped citations not in the evidence: {', '.join(dropped[:5])}"]
    uncited = uncited_sentences(result.answer, set(known))
    if uncited:
        notes = notes + [f"{len(uncited)} sentence(s) of the answer cite no evidence"]
    # supported only when it cites a conversation holding a fix that did not fail: the model's word is not enough
    outcomes = evidence.outcomes()
    holds_fix = any(outcomes.get(known[c]) in (CONFIRMED, NOT_RECORDED) for c in valid)
    if result.supported and valid and not holds_fix:
        notes = notes + ["the answer cites no conversation holding a fix that did not fail"]
    supported = bool(result.supported and valid and not uncited and holds_fix)
    cited = {known[c] for c in valid}
    fixes = [f for f in evidence.fixes or [] if f.dialogue_ids[0] in cited]
    return Answer(result.answer.strip(), valid, supported, f"llm/{llm.settings.model}", evidence, notes, fixes)


# The conversations whose turns an answer reads for fixes: the fixes of those further down the list rarely
# gather the support to be shown (1/rank), and each costs an embedding of its helpers' sentences.
FIX_CONVERSATIONS = 3


def answer_question(found: Gathered, strength: dict[str, float | None], reader: ConversationReader, embedder,
                    llm=None) -> Answer:
    """`Sarag.answer`: the fixes the close conversations of the evidence hold (read from their turns and
    dialogue graphs), and the answer: generated by the LLM when one is given, else extractive. ``strength``:
    how far each hit stands out (`strength.match_strength`)."""
    result, evidence = found
    notes = list(result.query.notes)
    weak = weak_matches([(h.dialogue_id, is_weak(strength.get(h.dialogue_id), h.matched_columns))
                         for h in result.hits])
    read = result.ids()[:FIX_CONVERSATIONS]  # a weak match's fix is evidence for the LLM, never offered as the fix
    evidence.fixes = []
    for material in reader.materials(read):
        evidence.edges.extend((material.dialogue_id, a, b, r) for a, b, r in material.edges)
        evidence.fixes.extend(conversation_fixes(material, result.query_vector, embedder))
    if llm is None:
        return extractive_answer(evidence, notes, embedder, weak=weak)
    question = "\n".join(f"{t.speaker}: {t.text}" for t in result.query.turns)
    return llm_answer(llm, question, evidence, notes)


_CITE = re.compile(r"\[([^\[\]]+)\]")


def uncited_sentences(text: str, known: set[str]) -> list[str]:
    """The sentences of `text` that cite none of the `known` evidence ids."""
    return [s for s in _sentences(text)
            if not any(c.strip() in known for group in _CITE.findall(s) for c in group.split(","))]


_ENDS_WITH_LIST_MARKER = re.compile(r"(?:^|\s)\d{1,2}\.$")


def _sentences(text: str) -> list[str]:
    """The answer's sentences; a citation bracket after the full stop belongs to the sentence before, and
    a list item's number ("1.") to its item."""
    parts: list[str] = []
    for part in re.split(r"(?<=[.!?])\s+(?!\[)", text.strip()):
        if parts and _ENDS_WITH_LIST_MARKER.search(parts[-1]):
            parts[-1] += " " + part
        else:
            parts.append(part)
    return [p for p in parts if re.search(r"\w", _CITE.sub("", p))]
