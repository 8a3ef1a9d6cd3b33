"""The fixes a retrieved conversation holds, chosen through its dialogue graph, each with the outcome the
asker's next move records. No Dagster.

**Steps.** A helper turn (after the asker's first turn) is a *step* when its substantive sentences hold at
least `MIN_STEP_WORDS` words; where the helpers wrote no such turn, every turn holding a substantive
sentence is one (real chat answers with a command or a menu path: "pwd"). Measured with
`evaluation.answer_quality.score_answers` on the real IRC follow-ups (CC BY 4.0), fix from gold / nugget
coverage over the queries whose gold thread ends on an answer: #ubuntu 0.293 / 0.297 with the minimum
everywhere, 0.318 / 0.329 with this fallback; the other channels 0.377 / 0.361 and 0.404 / 0.396. Without
any minimum a closing beside a full step ("Great to hear.") became the fix of the README's question.
Its sentences are those of the embedded backend's analysis, without a
letter's frame (salutation, signature). A sentence is substantive unless it is filler (greetings, thanks, sign-offs,
hold messages), a question or a request for information that gives no step (a statement followed by a
tag question, "your seat is 5D, is that okay?", is a statement), or a short aside (fewer than
`MIN_SENTENCE_WORDS` words, no digit); nor when its cosine to the problem is below `KEEP_SHARE` of the
turn's best sentence and the English step detector hears no step in it ("That's why it started.",
"Nothing you did wrong."), unless it stands between two that are kept (an item of a numbered list).
The words offered are those sentences, verbatim and in order, up to `FIX_CHARS`.

**The graph picks the words.** The anchor is the node (an issue-solution unit) most similar to the
question, by the larger of the cosines of its issue and its answer. From it the walk follows the
`refines` / `elaborates` edges both ways (the issue it refines, the later units that refine or elaborate
it, and theirs), and the steps of those units answer the question; the one that closed it is the first step from the anchor on that
the asker confirmed (a confirmed step closes its issue: what follows a "that worked" is about something
else, even where the graph joined it), else the last from the anchor on that did not fail. A unit no edge joins to the
anchor's (a second issue, a topic shift) offers nothing for this question. Without a graph every step of
the conversation is in the walk. Steps of the walk that failed are listed after the fix, as "tried, did
not work".

**Outcomes** are read from what the asker did next, by roles, turn order and embeddings:

- the source marks the step's turn as the accepted answer: ``confirmed`` (the asker's verdict put as
  structure);
- the asker never replied after the step: ``not_recorded``;
- else evidence adds up: the asker replied without asking anything, and the helpers had nothing more to
  say about the problem (their later turns, if any, are not similar to it: a closing) +1; the asker moved
  on to another issue (the helpers' next step answers what the asker raised after the reply) +1; the helpers went on
  with the problem after a reply longer than a short acknowledgement (`SHORT_REPLY_WORDS`) -1; the reply
  restates the problem (cosine >= `RESTATES_SIM`) -1; an English cue in the reply ("that worked", "still
  the same") ±0.5, which never decides alone. ``confirmed`` at +1 or more, ``failed`` at -1 or less.

Within the model's reach: all-MiniLM-L6-v2 reads German and Spanish only through the word pieces they
share with English, so the embedding rule (restating) works in them when the reply repeats the problem's
words or values (an error code, a product name); the structural rules hold in any language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from sarag_assets.backends.embedded import (
    FAILURE_REPORT,
    INFO_REQUEST,
    TAG_QUESTION,
    analyzed,
    confirmation,
    instruction_score,
    is_filler,
    split_sentences,
)
from sarag_assets.core.writing import QUESTION_MARKS, words

CONFIRMED, NOT_RECORDED, FAILED = "confirmed", "not_recorded", "failed"
OUTCOMES = (CONFIRMED, NOT_RECORDED, FAILED)

FIX_CHARS = 600  # the words offered from one step
MIN_STEP_WORDS = 4  # as the gist's answers (backends.embedded.gist.MIN_ANSWER_WORDS)
MIN_SENTENCE_WORDS = 3
KEEP_SHARE = 0.5  # as the gist: a sentence below half the best one's relevance is not part of it
SHORT_REPLY_WORDS = 12  # "ok, done", "läuft wieder": an acknowledgement (the graph's SHORT_REPORT_WORDS)
RESTATES_SIM = 0.55  # the graph's REFINE_SIM_WITH_DETAIL: the same issue told again


@dataclass
class Fix:
    text: str
    dialogue_ids: list[str]  # the retrieved conversations it comes from, best-ranked first
    outcome: str = NOT_RECORDED
    turn: int | None = None  # the helper turn it quotes (in the first conversation)

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "outcome": self.outcome, "dialogue_ids": list(self.dialogue_ids)}


@dataclass
class Step:
    turn: int
    text: str
    vector: np.ndarray
    outcome: str = NOT_RECORDED
    node: str | None = None


@dataclass
class Material:
    """What one retrieved conversation holds for an answer: its turns and its dialogue graph."""
    dialogue_id: str
    turns: list[dict[str, Any]]  # role, speaker, text, accepted
    nodes: list[dict[str, Any]] = field(default_factory=list)  # node_id, issue, answer, turn_start, turn_end
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (source = later, target, relation)


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _encode(embedder, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    vectors = np.asarray(embedder.encode(texts), dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _is_question(text: str) -> bool:
    return text.rstrip().endswith(QUESTION_MARKS)


def candidate_sentences(sentences: Sequence[str]) -> list[tuple[str, bool]]:
    """The sentences of a helper turn that may be part of a fix, each with whether it reads as a step: no
    filler, no question or request for information without a step, no short aside."""
    out = []
    for sentence in sentences:
        sentence = sentence.strip()
        if not sentence or is_filler(sentence):
            continue
        step = instruction_score(sentence) >= 0.5
        stated = TAG_QUESTION.sub("", sentence)  # "your seat is 5D, is that okay?" states the seat
        if not step and (_is_question(stated) or INFO_REQUEST.search(stated)):
            continue
        if not step and words(sentence) < MIN_SENTENCE_WORDS and not re.search(r"\d", sentence):
            continue
        out.append((sentence, step))
    return out


def _problem_text(turns: list[dict[str, Any]]) -> tuple[int, str]:
    """(index of the asker's first turn with text, the asker's opening turns joined)."""
    first = next((i for i, t in enumerate(turns) if t["role"] == "user" and (t["text"] or "").strip()), None)
    if first is None:
        return len(turns), ""
    parts = []
    for t in turns[first:]:
        if t["role"] != "user":
            break
        parts.append(t["text"] or "")
    return first, " ".join(parts)


def helper_steps(turns: list[dict[str, Any]], problem_vec: np.ndarray, embedder) -> list[Step]:
    """Each helper turn after the asker's first that holds a substantive answer, as quoted for a fix."""
    first, _ = _problem_text(turns)
    body: dict[int, list[str]] = {}  # a letter's frame (salutation, signature) is no part of a fix
    for sentence in analyzed([("user" if t["role"] == "user" else "agent", t["text"] or "") for t in turns]).body:
        body.setdefault(sentence.turn, []).append(sentence.text)
    pieces = [(i, sentence, step) for i, t in enumerate(turns) if i > first and t["role"] != "user"
              for sentence, step in candidate_sentences(body.get(i, []))]
    if not pieces:
        return []
    vectors = _encode(embedder, [s for _, s, _ in pieces])
    relevance = vectors @ problem_vec
    steps = []
    for turn in dict.fromkeys(i for i, _, _ in pieces):
        at = [k for k, (i, _, _) in enumerate(pieces) if i == turn]
        best = max(float(relevance[k]) for k in at)
        relevant = [k for k in at if pieces[k][2] or best <= 0 or float(relevance[k]) >= KEEP_SHARE * best]
        # what lies between two relevant sentences stays: a numbered list loses no item from its middle
        kept = [k for k in at if relevant[0] <= k <= relevant[-1]]
        text, used = [], 0
        for k in kept:
            sentence = pieces[k][1]
            if text and used + len(sentence) > FIX_CHARS:
                break
            text.append(sentence)
            used += len(sentence) + 1
        joined = " ".join(text)
        if len(joined) > FIX_CHARS:
            joined = joined[:FIX_CHARS].rsplit(" ", 1)[0] + " …"
        steps.append(Step(turn, joined, _unit(vectors[kept].mean(axis=0))))
    # Short answers ("pwd", a menu path) are the fix only where the helpers wrote no full step: beside one,
    # a short turn is a closing ("Great to hear.") as often as an answer, and no rule here tells which.
    full = [s for s in steps if words(s.text) >= MIN_STEP_WORDS]
    return full or steps


def _cue(text: str) -> int:
    """The last English resolution cue of the asker's reply: +1 it worked, -1 it did not, 0 none."""
    polarity = 0
    for _, _, sentence in split_sentences(text or ""):
        p = confirmation(sentence, "user")[0] or (-1 if FAILURE_REPORT.search(sentence) else 0)
        polarity = p or polarity
    return polarity


def step_outcomes(turns: list[dict[str, Any]], steps: list[Step], problem_vec: np.ndarray, embedder) -> None:
    """Set each step's outcome from what the asker did next (see the module docstring)."""
    replies = {}
    for n, step in enumerate(steps):
        if turns[step.turn].get("accepted"):
            step.outcome = CONFIRMED
            continue
        until = steps[n + 1].turn if n + 1 < len(steps) else len(turns)
        reply = next((i for i in range(step.turn + 1, until) if turns[i]["role"] == "user"
                      and (turns[i]["text"] or "").strip()), None)
        if reply is None:
            continue  # no reply before the next step: not recorded
        replies[n] = (reply, until)
    if not replies:
        return
    texts = [turns[r]["text"] for r, _ in replies.values()]
    reply_vecs = _encode(embedder, texts)
    for (n, (reply, _)), vector in zip(replies.items(), reply_vecs):
        step, text = steps[n], turns[reply]["text"]
        later = next((s for s in steps[n + 1:] if s.turn > reply), None)
        evidence = 0.0
        went_on, moved_on = _goes_on(turns, step, later, reply, problem_vec, embedder)
        if not _is_question(text):
            if not went_on:
                evidence += 1.0
            elif words(text) > SHORT_REPLY_WORDS:
                evidence -= 1.0
        if moved_on:
            evidence += 1.0
        if float(vector @ problem_vec) >= RESTATES_SIM:
            evidence -= 1.0
        evidence += 0.5 * _cue(text)
        step.outcome = CONFIRMED if evidence >= 1.0 else FAILED if evidence <= -1.0 else NOT_RECORDED


def _goes_on(turns, step: Step, later: Step | None, reply: int, problem_vec: np.ndarray,
             embedder) -> tuple[bool, bool]:
    """(went on, moved on): the helpers went on with the same problem after the asker's reply (a later step
    at least `KEEP_SHARE` as close to the problem as this one, and not closer to something the asker raised
    after the reply than to the problem); the asker moved on to something else (the later step answers
    what they raised after the reply, a second issue, rather than the problem). An answer to a helper's
    question raises nothing."""
    if later is None:
        return False, False
    # the asker's answer to a helper's question raises nothing new: it is the same issue, told further
    raised = [turns[i]["text"] for i in range(reply + 1, later.turn)
              if turns[i]["role"] == "user" and (turns[i]["text"] or "").strip()
              and not (turns[i - 1]["role"] != "user" and _is_question(turns[i - 1]["text"] or ""))]
    to_problem = float(later.vector @ problem_vec)
    moved = bool(raised) and float(np.max(_encode(embedder, raised) @ later.vector)) > to_problem
    return (not moved and to_problem >= KEEP_SHARE * float(step.vector @ problem_vec)), moved


def _walk(material: Material, query_vec: np.ndarray, embedder) -> tuple[set[int], int] | None:
    """The turns of the anchor's unit and of the units joined to it by refines / elaborates edges (either
    way, transitively: the issue it refines and the answers that elaborate it), and the anchor's first
    turn; None without a graph."""
    nodes = material.nodes
    if not nodes:
        return None
    texts = [f"{n['issue'] or ''}"[:300] for n in nodes] + [f"{n['answer'] or ''}"[:300] for n in nodes]
    vectors = _encode(embedder, texts)
    sims = vectors @ query_vec
    score = [max(float(sims[i]), float(sims[len(nodes) + i]) if nodes[i]["answer"] else -1.0)
             for i in range(len(nodes))]
    anchor = nodes[int(np.argmax(score))]["node_id"]
    reached = {anchor}
    grew = True
    while grew:
        grew = False
        for source, target, _ in material.edges:
            if (target in reached) != (source in reached):
                reached |= {source, target}
                grew = True
    start = next(int(n["turn_start"]) for n in nodes if n["node_id"] == anchor)
    return {t for n in nodes if n["node_id"] in reached
            for t in range(int(n["turn_start"]), int(n["turn_end"]) + 1)}, start


def conversation_fixes(material: Material, query_vec: np.ndarray, embedder) -> list[Fix]:
    """The fix this conversation holds for the question (the step that closed the anchor's walk), then
    the latest step of the walk that failed; [] when it holds none."""
    turns = material.turns
    _, problem = _problem_text(turns)
    if not problem.strip():
        return []
    problem_vec = _encode(embedder, [problem[:1000]])[0]
    steps = helper_steps(turns, problem_vec, embedder)
    if not steps:
        return []
    walked = _walk(material, query_vec, embedder)
    anchor = 0
    if walked is not None:
        steps = [s for s in steps if s.turn in walked[0]]
        anchor = walked[1]
    if not steps:
        return []
    step_outcomes(turns, steps, problem_vec, embedder)
    after = [s for s in steps if s.turn >= anchor] or steps
    worked = [s for s in after if s.outcome == CONFIRMED]
    open_ = [s for s in after if s.outcome != FAILED]
    failed = [s for s in steps if s.outcome == FAILED]
    # a confirmed step closed the issue: the first one from the anchor on; else the last that did not fail
    closing = worked[0] if worked else open_[-1] if open_ else None
    out = []
    if closing is not None:
        out.append(Fix(closing.text, [material.dialogue_id], closing.outcome, closing.turn))
    if failed and (closing is None or failed[-1].turn < closing.turn or not worked):
        out.append(Fix(failed[-1].text, [material.dialogue_id], FAILED, failed[-1].turn))
    return out


# The level of close paraphrases for all-MiniLM-L6-v2 (`answers.SAME_FIX_COSINE`).
SAME_FIX_COSINE = 0.75
# A confirmed fix goes before an unconfirmed one whose support is at most this many times its own.
SIMILAR_SUPPORT = 1.5
MAX_FIXES = 3


def rank_fixes(found: Sequence[tuple[int, list[Fix]]], embedder) -> list[Fix]:
    """The fixes of several conversations (`found`: (rank, that conversation's fixes)), the same fix
    told in several merged; ordered by support (1/rank per conversation, a confirmed fix's weighed
    `SIMILAR_SUPPORT` times), failed ones last, at most `MAX_FIXES`."""
    flat = [(rank, fix) for rank, fixes in found for fix in fixes]
    if not flat:
        return []
    vectors = _encode(embedder, [fix.text for _, fix in flat])
    groups: list[list[int]] = []
    for i, (_, fix) in enumerate(flat):
        home = next((g for g in groups if (flat[g[0]][1].outcome == FAILED) == (fix.outcome == FAILED)
                     and float(vectors[g[0]] @ vectors[i]) >= SAME_FIX_COSINE), None)
        (home.append(i) if home is not None else groups.append([i]))
    merged = []
    for g in groups:
        first = flat[g[0]][1]
        ids = list(dict.fromkeys(d for i in g for d in flat[i][1].dialogue_ids))
        outcomes = {flat[i][1].outcome for i in g}
        outcome = CONFIRMED if CONFIRMED in outcomes else first.outcome
        support = sum(1.0 / r for r in dict.fromkeys(flat[i][0] for i in g).keys())
        weight = support * (SIMILAR_SUPPORT if outcome == CONFIRMED else 1.0)
        merged.append((outcome == FAILED, -weight, outcome != CONFIRMED, flat[g[0]][0],
                       Fix(first.text, ids, outcome, first.turn)))
    merged.sort(key=lambda x: x[:4])
    return [m[-1] for m in merged][:MAX_FIXES]
