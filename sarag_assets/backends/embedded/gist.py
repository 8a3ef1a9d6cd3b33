"""What a conversation is about and what fixed it, from roles, turn structure and sentence embeddings
rather than cue words, so that it carries to any language the model reads (docs/structuring.md).

**Answers.** A helper turn after the asker's first turn is an *answer* when its statements (not its
questions) hold at least `MIN_ANSWER_WORDS` words, when the English instruction detector reads a step
put as a question, or when a question brings a value nobody had named (a token with a digit) and the
asker's reply brings none. An answer is *substantive* when its cosine to the problem is at least
`KEEP_SHARE` of the best answer's (a sign-off, "I can only help in English", is not), or when that
detector hears a step in it: a step answers even where the cosine misleads (an English answer to a Dutch
problem, or "Happy to help!" closer to "any help appreciated" than the fix is).

**Problem.** From the asker's *stating* turns: the opening run, every asker turn before the first
substantive answer, and later turns that reply to a helper turn that was no answer (a question): those
add context, while turns after an answer report back. Each sentence of at least `MIN_SENTENCE_WORDS`
words scores 0.5 x its cosine to the opening's centroid + 0.5 x its cosine to the helpers' replies, plus
`OPENING_BONUS` in the opening and `LEAD_BONUS` halving with each sentence. The sentences are picked by
MMR (`MMR_LAMBDA`) up to `PROBLEM_CHARS`, none below `KEEP_SHARE` of the best, and quoted verbatim in
order. Two passes: the opening alone decides which answers are substantive, and so which turns state.

**Resolution.** The substantive answer the asker accepts, in the helper's words. That is the answer
before the asker's first "that worked" (the English confirmation detector), unless that turn replies to
a helper's question whose statements answer nothing ("Hello, I'm Jonas. Which model, and did it shake
before?" - "WM8, no it was perfect"), else the one before the asker's closing statement, else the
helpers' last substantive answer. One helper's answers separated
only by the asker's comments and acknowledgements (no question, no "it failed", no reply to the helper's
question) are one step-by-step answer; another helper's answer is not part of it (when the speakers are
known). Nothing resolved it (no cell, `resolved` false) when there is no answer, when the asker's last
turn after the last answer asks on, when the asker says it failed, when the answer ends in a refusal, or
when a helper passed it on and nobody said it was done. `resolved` is true only when the asker says it worked
(or the source marks the answer accepted, below).

A turn the source marks as the accepted answer (MSDialog's `is_answer`, a JSONL turn's `"accepted": true`,
a CSV's `accepted` column) is the resolution, and `resolved` is true, whatever the cues say: the forum's
mark is the asker's verdict put as structure, in any language. A marked turn with nothing to quote (a bare
link) leaves it to the cues.

It is quoted like the problem (relevance to the problem and to the answer itself, `RESOLUTION_CHARS`).
Non-adjacent pieces are joined by `GAP`, so every piece stays verbatim; the semantic gate checks each.

Neither cell quotes a letter's frame (`without_letter_frame`): a short line of its own ending in a comma
(salutation, valediction) and the name lines that close a turn after its last full sentence. That is
layout, not words, so it holds in any language written as letters.

The constants are round values, none varied to raise a score. `LEAD_BONUS`, the two-pass rule and the
step-by-step rule came from reading failing cases of the generator's and the out-of-domain sets'
conversations; choosing between variants of them used those sets' fidelity (docs/results.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from sarag_assets.backends.embedded.cues import confirmation as english_confirmation
from sarag_assets.backends.embedded.cues import instruction_score
from sarag_assets.backends.embedded.findings import Analysis, Finding, Sentence
from sarag_assets.backends.embedded.text import _strip_lead, in_pieces, without_letter_frame
from sarag_assets.core.structuring.gates import EXCERPT_GAP
from sarag_assets.core.writing import CJK_SENTENCE_END, QUESTION_MARKS, SPACED_SENTENCE_END, words

PROBLEM_CHARS = 400
RESOLUTION_CHARS = 400
KEEP_SHARE = 0.5  # a sentence (or answer) scoring below half the best one is not part of the gist
MMR_LAMBDA = 0.7  # relevance against redundancy when picking sentences
OPENING_BONUS = 0.1  # the asker's first run of turns states the problem more often than later ones
LEAD_BONUS = 0.1  # and its first sentences more often than its last (halving with each sentence)
MIN_SENTENCE_WORDS = 3
MIN_ANSWER_WORDS = 4
GAP = EXCERPT_GAP
GIST_SIGNALS = ("problem", "resolution", "resolved")

_VALUE = re.compile(r"\w*\d\w*", re.UNICODE)
Encode = Callable[[list[str]], np.ndarray]


def _words(text: str) -> int:
    return words(text)  # a run of Chinese or Japanese counts one word per two characters


def _is_question(text: str) -> bool:
    return text.rstrip().endswith(QUESTION_MARKS)


@dataclass(frozen=True)
class Gist:
    problem: Finding | None
    resolution: Finding | None
    resolved: Finding | None


def select(vectors: np.ndarray, relevance: np.ndarray, lengths: Sequence[int], budget: int) -> list[int]:
    """Indices picked by MMR until `budget` characters; none scoring below KEEP_SHARE of the best."""
    if len(relevance) == 0:
        return []
    best = float(relevance.max())
    floor = KEEP_SHARE * best if best > 0 else best
    picked: list[int] = []
    used = 0
    left = [i for i in range(len(relevance)) if relevance[i] >= floor]
    while left:
        def mmr(i: int) -> float:
            redundancy = max((float(vectors[i] @ vectors[j]) for j in picked), default=0.0)
            return MMR_LAMBDA * float(relevance[i]) - (1 - MMR_LAMBDA) * redundancy

        i = max(left, key=mmr)
        left.remove(i)
        if picked and used + lengths[i] > budget:
            continue  # a shorter one may still fit
        picked.append(i)
        used += lengths[i] + len(GAP)
    return sorted(picked)


def quote(sentences: Sequence[Sentence], turns: Sequence[tuple[str, str]], budget: int) -> tuple[str, str]:
    """(value, evidence): the sentences verbatim in order, adjacent ones as one span, gaps as GAP; a
    single sentence longer than the budget is cut at a word boundary."""
    pieces: list[str] = []
    run: list[Sentence] = []

    def flush() -> None:
        if run:
            text = turns[run[0].turn][1][run[0].start : run[-1].end]
            pieces.append(_strip_lead(text).strip())
            run.clear()

    for s in sentences:
        if run and not (s.turn == run[-1].turn and s.index == run[-1].index + 1):
            flush()
        run.append(s)
    flush()
    value = GAP.join(p for p in pieces if p)
    if len(value) > budget:
        value = value[:budget].rsplit(" ", 1)[0].rstrip(" …,;:")
    first = [s for s in sentences if s.turn == sentences[0].turn] if sentences else []
    span = turns[first[0].turn][1][first[0].start : first[-1].end] if first else ""
    return value, span  # evidence: one exact span of the conversation (where the excerpt starts)


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def gist(turns: Sequence[tuple[str, str]], sentences: Sequence[Sentence], encode: Encode, *,
         confirmation: Callable[[str, str], tuple[int, float]], escalated_turn: int | None = None,
         speakers: Sequence[str] | None = None, body: Sequence[Sentence] | None = None,
         accepted: Sequence[int] = ()) -> Gist:
    """The problem, resolution and resolved findings of one conversation. `confirmation(sentence, role)`
    is the (language-specific) cue detector, used only to veto or pin down what structure suggests;
    `escalated_turn` the helper turn that passed the problem on, if any; `body` the sentences that may be
    quoted (default: `sentences` without the letter frame); `accepted` the turns the source marks as the
    accepted answer, which are the resolution whatever the cues say. The verdicts read every sentence."""
    body = list(without_letter_frame(turns, sentences) if body is None else body)
    users, helpers, answer_turns = _parts(turns, body, speakers)
    texts = _texts(turns, users, helpers, answer_turns)
    if not texts:
        return Gist(None, None, None)
    vec = dict(zip(texts, np.asarray(encode(texts), dtype=np.float32)))

    def v(text: str) -> np.ndarray:
        key = _strip_lead(text).strip()
        if key not in vec:  # the rare text only one rule reads (`_replies_to_question`): encoded when read
            vec[key] = np.asarray(encode([key]), dtype=np.float32)[0]
        return vec[key]

    helper_mean = _unit(np.mean([v(s.text) for s in helpers], axis=0)) if helpers else None
    opening = _opening_turns(turns)
    # two passes: the opening tells which answers are substantive; the turns before the first of those
    # (and replies to the helpers' questions) state the problem
    _, opening_vec = _problem(turns, [s for s in users if s.turn in opening], opening, helper_mean, v)
    stepped = {k for k in answer_turns if _has_step(turns[k][1])}  # read once for both passes
    substantive = _substantive(turns, answer_turns, stepped, opening_vec, v)
    # the asker's reply to a question that told them something ("5D, is that okay?" - "no, a window seat")
    # still states what they want
    telling = _telling_questions(turns, _stated_answers(turns), speakers)
    stating = _stating_turns(turns, [k for k in substantive if k not in telling])
    problem, problem_vec = _problem(turns, [s for s in users if s.turn in stating] or users, opening, helper_mean, v)
    substantive = _substantive(turns, answer_turns, stepped, problem_vec, v)
    marked = [k for k in accepted if 0 <= k < len(turns) and k not in opening and turns[k][1].strip()]
    resolution, resolved = _quoted(turns, body, marked, marked[-1], problem_vec, v, None, marked=True) \
        if marked else (None, None)
    if resolution is None:  # no mark, or nothing in the marked turns to quote (a bare link): the cues decide
        resolution, resolved = _resolution(turns, sentences, body, answer_turns, substantive, stating, problem_vec, v,
                                           confirmation, escalated_turn, speakers)
    return Gist(problem, resolution, resolved)


def _problem(turns, stated: list[Sentence], opening: set[int], helper_mean, v) -> tuple[Finding | None, np.ndarray | None]:
    if not stated:
        return None, None
    vs = np.stack([v(s.text) for s in stated])
    first = [i for i, s in enumerate(stated) if s.turn in opening] or list(range(len(stated)))
    rel = vs @ _unit(vs[first].mean(axis=0))  # later sentences count as far as they are about the opening
    if helper_mean is not None:
        rel = 0.5 * rel + 0.5 * (vs @ helper_mean)
    rel = rel + np.array([(OPENING_BONUS if s.turn in opening else 0.0) + LEAD_BONUS * 0.5 ** k for k, s in enumerate(stated)])
    picked = [stated[i] for i in select(vs, rel, [len(s.text) for s in stated], PROBLEM_CHARS)]
    value, evidence = quote(picked, turns, PROBLEM_CHARS)
    if not value:
        return None, None
    return (Finding("problem", "problem", value, "string", 0.8, picked[0].turn, "user", evidence, value),
            _unit(np.mean([v(s.text) for s in picked], axis=0)))


def _substantive(turns, answer_turns: list[int], stepped: set[int], problem_vec, v) -> list[int]:
    """The answers at least KEEP_SHARE as similar to the problem as the best one (a sign-off, or "I can only
    help in English", is not an answer to it), and the `stepped` ones."""
    if not answer_turns or problem_vec is None:
        return list(answer_turns)
    sims = np.stack([v(turns[k][1]) for k in answer_turns]) @ problem_vec
    best = float(sims.max())
    if best <= 0:
        return list(answer_turns)
    # a turn the English step detector hears a step in is an answer, however its words compare
    return [k for k, sim in zip(answer_turns, sims) if sim >= KEEP_SHARE * best or k in stepped]


def _has_step(text: str) -> bool:
    return any(_is_step(x) for x in _pieces(text))


def _is_step(sentence: str) -> bool:
    return instruction_score(sentence) >= 0.5


def _pieces(text: str) -> list[str]:
    return [x for x in re.split(r"(?<=[" + SPACED_SENTENCE_END + r"])\s+|(?<=[" + CJK_SENTENCE_END + r"])\s*|\n+", _strip_lead(text).strip())
            if x.strip()]


def apply_gist(an: Analysis, encode: Encode) -> None:
    """Replace the analysis' problem, resolution and resolved findings by the gist's (once)."""
    escalations = [f.turn for f in an.by_signal("escalated")]
    sentences, body = _quotable(an)
    found = gist(an.turns, sentences, encode, confirmation=english_confirmation,
                 escalated_turn=escalations[0] if escalations else None, speakers=an.speakers or None, body=body,
                 accepted=an.accepted)
    kept = [f for f in an.findings if f.signal not in GIST_SIGNALS]
    an.findings = kept + [f for f in (found.problem, found.resolution, found.resolved) if f is not None]
    an.problem = found.problem
    an.gist_applied = True


def _parts(turns, sentences, speakers: Sequence[str] | None = None) -> tuple[list[Sentence], list[Sentence], list[int]]:
    first_user = next((k for k, (r, t) in enumerate(turns) if r == "user" and t.strip()), len(turns))
    users = [s for s in sentences if s.role == "user" and _words(_strip_lead(s.text)) >= MIN_SENTENCE_WORDS]
    # what the helpers replied (their welcome before the asker spoke answers nothing)
    helpers = [s for s in sentences if s.role != "user" and s.turn > first_user and _words(_strip_lead(s.text)) >= 2]
    return users, helpers, _answer_turns(turns, speakers)


def gist_texts(an: Analysis) -> list[str]:
    """Every text `gist` encodes (so that a batch can encode them in one call beforehand)."""
    return _texts(an.turns, *_parts(an.turns, _quotable(an)[1], an.speakers or None))


def _quotable(an: Analysis) -> tuple[list[Sentence], list[Sentence]]:
    """The analysis' sentences and body with long runs in pieces (`in_pieces`), cut once per analysis: the
    batch encodes their texts first (`gist_texts`), then the gist reads them."""
    if an.quotable is None:
        an.quotable = in_pieces(an.turns, an.sentences, an.body)
    return an.quotable


def _texts(turns, users: list[Sentence], helpers: list[Sentence], answer_turns: list[int]) -> list[str]:
    texts = list(dict.fromkeys(_strip_lead(s.text).strip() for s in users + helpers))
    return texts + [t for t in dict.fromkeys(_strip_lead(turns[k][1]).strip() for k in answer_turns) if t not in texts]


def _answer_turns(turns: Sequence[tuple[str, str]], speakers: Sequence[str] | None = None) -> list[int]:
    """The helper turns that state an answer and the questions that tell (`_telling_questions`)."""
    stated = _stated_answers(turns)
    return sorted(set(stated) | _telling_questions(turns, stated, speakers))


def _stated_answers(turns: Sequence[tuple[str, str]]) -> list[int]:
    """Helper turns after the asker's first turn whose statements (not their questions) hold at least
    MIN_ANSWER_WORDS words: "I see. What does the error say?" asks, it does not answer."""
    first_user = next((k for k, (r, t) in enumerate(turns) if r == "user" and t.strip()), len(turns))
    out = []
    for k, (role, text) in enumerate(turns):
        if role == "user" or k < first_user:
            continue
        parts = _pieces(text)
        statements = [x for x in parts if not _is_question(x)]
        # (the English instruction detector also hears a step put as a question: "Could you switch to TCP?")
        if sum(_words(x) for x in statements) >= MIN_ANSWER_WORDS or any(_is_step(x) for x in parts):
            out.append(k)
    return out


def _telling_questions(turns: Sequence[tuple[str, str]], answers: list[int],
                       speakers: Sequence[str] | None = None) -> set[int]:
    """Helper turns after the asker's first turn, other than `answers`, whose questions bring a value nobody
    has named yet (a token with a digit) and which the asker answers without one: they tell rather than
    ask, in any language. "your seat is 5D, is that okay?" - "ok thanks" tells; "(Ticket #8473) What
    version is installed?" - "2.2.4" asks. A participant's name ("user1: firewalld?") is no value."""
    first_user = next((k for k, (r, t) in enumerate(turns) if r == "user" and t.strip()), len(turns))
    names = {w.lower() for p in speakers or () for w in _VALUE.findall(p)}
    values = [{w.lower() for w in _VALUE.findall(text)} - names for _, text in turns]
    out = set()
    for k, (role, text) in enumerate(turns):
        if role == "user" or k < first_user or k in answers:
            continue
        named = set().union(*values[:k])
        new = {w.lower() for x in _pieces(text) if _is_question(x) for w in _VALUE.findall(x)} - named - names
        reply = next((j for j in range(k + 1, len(turns)) if turns[j][0] == "user" and turns[j][1].strip()), None)
        if new and (reply is None or not values[reply] - named - values[k]):
            out.add(k)
    return out


def _opening_turns(turns: Sequence[tuple[str, str]]) -> set[int]:
    first = next((k for k, (r, t) in enumerate(turns) if r == "user" and t.strip()), None)
    if first is None:
        return set()
    out = set()
    k = first
    while k < len(turns) and turns[k][0] == "user":
        out.add(k)
        k += 1
    return out


def _stating_turns(turns: Sequence[tuple[str, str]], answer_turns: list[int]) -> set[int]:
    """The asker's turns that state the problem: all before the first answer, and after it those that
    reply to a helper's question rather than to an answer (what comes after an answer reports back)."""
    first_answer = answer_turns[0] if answer_turns else len(turns)
    out = set()
    last_helper = None
    for k, (role, _) in enumerate(turns):
        if role != "user":
            last_helper = k
        elif k < first_answer or last_helper not in answer_turns:
            out.add(k)
    return out | _opening_turns(turns)


def _past_the_reply(turns, substantive: list[int], problem_vec, v) -> list[int]:
    """Answers after the asker's last turn count only when they answer the problem at least as well as the
    answer the asker replied to ("Glad I could help! Anything else?" after "ok thanks" is no new answer)."""
    last_user = max((k for k, (r, t) in enumerate(turns) if r == "user" and t.strip()), default=None)
    replied = [k for k in substantive if last_user is not None and k < last_user]
    if problem_vec is None or not replied or replied[-1] == substantive[-1]:
        return substantive
    bar = float(v(turns[replied[-1]][1]) @ problem_vec)
    return replied + [k for k in substantive if k > last_user and float(v(turns[k][1]) @ problem_vec) >= bar]


def _closing_turn(turns: Sequence[tuple[str, str]], answer_turns: list[int]) -> int | None:
    """The asker's last turn when it comes after the last (substantive) answer, whatever it says."""
    if not answer_turns:
        return None
    last_user = max((k for k, (r, t) in enumerate(turns) if r == "user" and t.strip()), default=None)
    if last_user is None or last_user < answer_turns[-1]:
        return None
    return last_user


def _resolution(turns, sentences, body, answer_turns, substantive, stating, problem_vec, v, confirmation, escalated_turn, speakers):
    if not substantive:
        return None, None
    substantive = [k for k in substantive if k != escalated_turn] or substantive  # passing it on answers nothing
    substantive = _past_the_reply(turns, substantive, problem_vec, v)
    closing = _closing_turn(turns, substantive)

    verdicts: dict[int, tuple[int, Sentence | None]] = {}

    def verdict(turn: int) -> tuple[int, Sentence | None]:
        """The asker's verdict in one turn by the cue detector: +1, -1 or 0, with its sentence (once per turn)."""
        if turn not in verdicts:
            found = 0, None
            for s in sentences:
                if s.turn == turn:
                    pol, _ = confirmation(s.text, "user")
                    if pol:
                        found = pol, s
            verdicts[turn] = found
        return verdicts[turn]

    # the asker's verdicts are in their replies; a turn stating the problem ("my card doesn't work") is none
    user_turns = [k for k, (r, t) in enumerate(turns) if r == "user" and t.strip() and k not in stating]
    chosen = ack = None
    confirmed = False
    # an explicit "that worked" pins the answer it follows (the first one: it answers the opening problem)
    for u in user_turns:
        pol, s = verdict(u)
        prior = [k for k in substantive if k < u]
        if pol > 0 and prior and not _replies_to_question(turns, u, answer_turns, problem_vec, v):
            chosen, ack, confirmed = prior[-1], s, True
            break
    if chosen is None:
        last = substantive[-1]
        if closing is None:
            chosen = last  # the helpers have the last word
        else:
            text = turns[closing][1]
            pol, s = verdict(closing)
            if pol < 0 or (pol == 0 and _is_question(text)):  # it failed, or the asker asks on
                return None, _not_resolved(turns, closing, s)
            chosen, ack, confirmed = last, s, pol > 0
    # a refusal that ends the answer, or comes after it ("we can't do that by email, but ..." is an answer)
    last_of_answer = max((x.index for x in body if x.turn == chosen and _words(x.text) >= 2), default=-1)
    refused = next((x for x in sentences if x.role != "user" and (x.turn > chosen or (x.turn == chosen and x.index == last_of_answer))
                    and confirmation(x.text, x.role)[0] < 0), None)
    if refused is not None and not any(u > refused.turn for u in user_turns if verdict(u)[0] > 0):
        return None, _not_resolved(turns, refused.turn, refused)  # "unfortunately we cannot ..."
    failed_after = [u for u in user_turns if u > chosen and verdict(u)[0] < 0]
    later_ok = [u for u in user_turns if u > chosen and verdict(u)[0] > 0]
    if failed_after and not (later_ok and later_ok[-1] > failed_after[-1]):
        return None, _not_resolved(turns, failed_after[-1], verdict(failed_after[-1])[1])
    outcome_after = any(confirmation(x.text, x.role)[0] > 0 for x in sentences
                        if escalated_turn is not None and x.turn >= escalated_turn and x.turn not in stating)
    if escalated_turn is not None and escalated_turn >= chosen and not outcome_after:
        return None, _not_resolved(turns, escalated_turn, None)  # passed on, and nobody said it was done

    chain = _chain(turns, answer_turns, chosen, lambda u: verdict(u)[0] < 0, speakers)
    return _quoted(turns, body, chain, chosen, problem_vec, v, ack if confirmed else None)


def _quoted(turns, body, chain, chosen: int, problem_vec, v, ack: Sentence | None, *, marked: bool = False):
    """The resolution quoted from the `chain` turns that end in `chosen`, and `resolved` when the asker's
    `ack` confirms it or the source marks those turns as the accepted answer (`ack` None, `marked`)."""
    own = [s for s in body if s.turn in chain and _words(_strip_lead(s.text)) >= 2]
    if not own:
        return None, None
    vs = np.stack([v(s.text) for s in own])
    centre = _unit(vs.mean(axis=0))
    rel = vs @ centre if problem_vec is None else 0.5 * (vs @ centre) + 0.5 * (vs @ problem_vec)
    picked = [own[i] for i in select(vs, rel, [len(s.text) for s in own], RESOLUTION_CHARS)]
    value, evidence = quote(picked, turns, RESOLUTION_CHARS)
    if not value:
        return None, None
    role = turns[chosen][0]
    confirmed = ack is not None or marked
    resolution = Finding("resolution", "resolution", value, "string", 0.75 if confirmed else 0.55, chosen, role, evidence, value)
    # resolved only when the asker says so, or the source marks the answer accepted; an answer they merely
    # took ("ok, will try") leaves it open
    if ack is not None:
        resolved = Finding("resolved", "resolved", "true", "boolean", 0.8, ack.turn, "user", ack.text, ack.text)
    elif marked:  # its evidence is the accepted answer itself
        resolved = Finding("resolved", "resolved", "true", "boolean", 0.8, picked[0].turn, role, picked[0].text,
                           picked[0].text)
    else:
        resolved = None
    return resolution, resolved


def _chain(turns: Sequence[tuple[str, str]], answer_turns: list[int], last: int, failed: Callable[[int], bool],
           speakers: Sequence[str] | None = None) -> list[int]:
    """One helper's answer turns that end in `last`, going back while the asker only acknowledged or
    commented in between (a step-by-step answer: "First, clear the cache." - "ok" - "Now sign in again.");
    a question or a "no luck" ends it (the step before failed), and so does a helper turn that asked for
    something, or another helper's turn."""
    chain = [last]
    for k in reversed([a for a in answer_turns if a < last]):
        if speakers is not None and speakers[k] != speakers[last]:
            break  # another helper's answer is not a step of this one
        between = [u for u in range(k + 1, chain[0]) if turns[u][0] == "user"]
        if any(_is_question(turns[u][1]) or failed(u) for u in between):
            break
        asked = _pieces(turns[k][1])[-1:]
        if asked and _is_question(asked[0]) and not _is_step(asked[0]):
            break  # the asker replied to the helper's question: what came before it was no step
        chain.insert(0, k)
    return chain


def _replies_to_question(turns: Sequence[tuple[str, str]], user_turn: int, answer_turns: list[int], problem_vec, v) -> bool:
    """Whether the asker's turn replies to a helper's question rather than to an answer: the helper turn
    before it ends in a question, holds no step, and what it states besides its questions is no answer
    (below KEEP_SHARE of the best answer's cosine to the problem). "Hello, I'm Jonas. I'm sorry to hear
    that! Which model, and did it shake before the move?" - "WM8, no it was perfect in the old flat" is no
    verdict on anything; "The driver left it at a parcel locker. Could you pick it up?" - "all sorted" is."""
    helper = next((k for k in range(user_turn - 1, -1, -1) if turns[k][0] != "user"), None)
    if helper is None or problem_vec is None or not answer_turns:
        return False
    text = turns[helper][1]
    asked = _pieces(text)[-1:]
    if not asked or not _is_question(asked[0]) or _has_step(text):
        return False
    best = max(float(v(turns[k][1]) @ problem_vec) for k in answer_turns)
    return best > 0 and float(v(_statements(text)) @ problem_vec) < KEEP_SHARE * best


def _statements(text: str) -> str:
    """What a turn states, without what it asks (the whole turn when it only asks)."""
    stated = [x for x in _pieces(text) if not _is_question(x)]
    return " ".join(stated) if stated else _strip_lead(text).strip()


def _not_resolved(turns, turn: int, sentence: Sentence | None) -> Finding:
    text = sentence.text if sentence is not None else turns[turn][1].strip()
    return Finding("resolved", "resolved", "false", "boolean", 0.7, turn, turns[turn][0], text, text)
