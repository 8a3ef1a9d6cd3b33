"""One conversation's analysis: every detector over every sentence, corrections applied, and the
conversation-level findings (requested-slot answers, problem, resolution, attempts, escalation, root
cause), each with the turn, role and sentence it came from.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Sequence

from sarag_assets.backends.embedded.codes import find_error_codes, find_error_messages, find_models
from sarag_assets.backends.embedded.cues import instruction_score, problem_score
from sarag_assets.backends.embedded.findings import Analysis, Finding, Sentence
from sarag_assets.backends.embedded.memo import TextBoundedMemo, content_key
from sarag_assets.backends.embedded.outcomes import _attempts_and_escalation, _resolution, _root_cause
from sarag_assets.backends.embedded.products import _PRODUCT_SLOT, product_candidates
from sarag_assets.backends.embedded.quantities import (
    _id_shape,
    find_amounts,
    find_dates,
    find_identifiers,
    find_measurements,
    find_plans,
)
from sarag_assets.backends.embedded.statements import (
    _ID_SLOT,
    _KEY_SYNONYMS_TO_SIGNAL,
    _PII_SLOTS,
    _slot_name,
    answer_value,
    find_key_values,
    find_statements,
    requested_slots,
)
from sarag_assets.backends.embedded.text import (
    _PLACEHOLDER,
    Hit,
    _content_words,
    _strip_lead,
    is_placeholder_only,
    snake,
    split_sentences,
    without_letter_frame,
)
from sarag_assets.backends.embedded.versions import correction_cue, find_browsers, find_os, find_versions, is_negated
from sarag_assets.core.writing import has_cjk, without_cjk, words


def _entity_hits(text: str, role: str, instruction: bool) -> list[Hit]:
    hits: list[Hit] = []
    hits += find_error_codes(text)
    hits += find_error_messages(text)
    hits += find_os(text)
    hits += find_browsers(text)
    hits += find_versions(text, role=role, instruction=instruction)
    hits += find_dates(text)
    hits += find_amounts(text)
    hits += find_measurements(text)
    hits += find_identifiers(text)
    hits += find_plans(text)
    hits += find_models(text)
    hits += find_key_values(text)
    hits += find_statements(text, role=role)
    return hits


_SIGNAL_PRIORITY = {
    "identifier": 0,
    "error_code": 1,
    "os": 2,
    "browser": 2,
    "version": 3,
    "date": 4,
    "amount": 4,
    "plan": 5,
    "error_message": 6,
    "measurement": 7,
    "model": 8,
    "key_value": 9,
    "statement": 10,
}


def _resolve_overlaps(hits: list[Hit]) -> list[Hit]:
    """Among hits over the same characters keep the most specific detector; a key-value or statement
    hit that fully contains a typed hit gives way to it, except that its name is kept when the typed
    detector only had a generic one."""
    out: list[Hit] = []
    for h in sorted(hits, key=lambda h: (_SIGNAL_PRIORITY.get(h.signal, 20), -h.strength, h.start)):
        clash = None
        for o in out:
            if (h.signal == "error_message") != (o.signal == "error_message"):
                continue  # a message may contain its code
            if h.start < o.end and h.end > o.start:
                clash = o
                break
        if clash is None:
            out.append(h)
            continue
        if h.signal in ("key_value", "statement") and clash.signal not in ("key_value", "statement"):
            idx = out.index(clash)
            if clash.name == "version" and h.name not in ("version",):
                new_name = h.name if h.name.endswith(("version", "build")) else snake(h.name + "_version")
                out[idx] = replace(clash, name=new_name, key=h.key)
            elif clash.name in ("date", "amount") and (h.name.endswith(("date", "day")) or clash.name == "amount"):
                out[idx] = replace(clash, name=h.name, key=h.key)
    return sorted(out, key=lambda h: h.start)


def _kv_signal(h: Hit) -> Hit:
    """A "Key: value" or statement hit whose key names a known concept takes that concept's signal."""
    key = (h.key or "").strip().lower()
    if key in ("code", "the code", "err") and re.fullmatch(r"[A-Za-z0-9][\w.:-]{1,30}", h.value) and re.search(r"\d", h.value):
        return replace(h, signal="error_code", name="error_code")
    sig = _KEY_SYNONYMS_TO_SIGNAL.get(key)
    if sig:
        return replace(h, signal=sig, name=sig if sig != "version" else "version")
    if re.search(r"\b(?:number|no|id|#|code|reference|ref|username)$", key) and _id_shape(h.value):
        return replace(h, signal="identifier")
    if re.search(r"\b(?:plan|subscription|tier|membership|level)$", key):
        return replace(h, signal="plan")
    if re.search(r"\bmodel$", key):
        return replace(h, signal="model")
    if re.search(r"\bversion$", key):
        return replace(h, signal="version")
    if re.search(r"\bdate$", key):
        d = find_dates(h.value)
        if d and d[0].type == "date":
            return replace(h, signal="date", value=d[0].value, type="date")
    return h


_DETECTED: "TextBoundedMemo[Analysis]" = TextBoundedMemo()


def analyzed(turns: Sequence[tuple[str, str]]) -> Analysis:
    """`analyze`, once per process for the same (role, text) turns: the backend's steps read the raw
    text and the segmentation its display text, which for most conversations is the same text. The
    result is shared: callers copy it before changing it (the backend's gist does)."""
    key = content_key(*(part for role, text in turns for part in (role, text or "")))
    hit = _DETECTED.get(key)
    if hit is None:
        hit = _DETECTED.put(key, analyze(turns), sum(len(t or "") for _, t in turns))
    return hit


def analyze(turns: Sequence[tuple[str, str]]) -> Analysis:
    """Run every detector over a conversation given as (role, text) turns (role "user" or "agent")."""
    turns = [(r, t or "") for r, t in turns]
    sentences: list[Sentence] = []
    for ti, (role, text) in enumerate(turns):
        for si, (s, e, seg) in enumerate(split_sentences(text)):
            sentences.append(Sentence(ti, role, si, s, e, seg))
    an = Analysis(turns=turns, sentences=sentences, body=without_letter_frame(turns, sentences))
    findings: list[Finding] = []

    # the problem turns (what column relevance is measured against): the first substantive user turns
    user_sents = [s for s in sentences if s.role == "user"]
    first = next((s.turn for s in user_sents if problem_score(s.text) >= 0.3 and len(_content_words(s.text)) >= 3), None)
    if first is None:
        first = next((s.turn for s in user_sents if len(s.text.split()) >= 3 or has_cjk(s.text) and words(s.text) >= 3), None)
    if first is not None:
        problem_turns = [first]
        j = first + 1
        while j < len(turns) and turns[j][0] == "user" and len(problem_turns) < 3:
            problem_turns.append(j)
            j += 1
        an.problem_turns = tuple(problem_turns)
        an.problem_text = " ".join(_strip_lead(turns[t][1]).strip() for t in problem_turns)[:600]

    # entities, per sentence
    instr_scores = {id(s): (instruction_score(s.text) if s.role == "agent" else 0.0) for s in sentences}
    for s in sentences:
        text = s.text
        corr = correction_cue(text)
        hits = [_kv_signal(h) for h in _entity_hits(without_cjk(text), s.role, instr_scores[id(s)] >= 0.5)]
        hits = _resolve_overlaps([h for h in hits if not has_cjk(text[h.start : h.end])])
        for h in hits:
            negated = is_negated(text, h.start, h.end)
            strength = h.strength
            asking = text.rstrip().endswith("?") and re.match(
                r"(?:\[MENTION\]\s*)*(?:are|is|do|does|did|can|could|would|will|have|has|which|what|was|were|should)\b", text.strip(), re.I
            )
            if s.role == "agent" and h.signal != "key_value" and (asking or ("?" in text[h.end :] and "," not in text[h.end : text.find("?", h.end)])):
                strength = min(strength, 0.3)  # an agent asking "is it version 2.1?" has not stated it
            findings.append(
                Finding(h.signal, h.name, h.value, h.type, round(max(0.05, strength), 2), s.turn, s.role, text, h.span_text(text), h.key, corrected=corr and not negated, negated=negated)
            )
        # "it's X, not Y" without a cue word is a correction too
        sent_f = [f for f in findings[len(findings) - len(hits) :]]
        neg_sigs = {f.signal for f in sent_f if f.negated}
        for f in sent_f:
            if not f.negated and f.signal in neg_sigs:
                f.corrected = True

    # the agent asks for something, the user's next short turns answer it
    findings += _answers(turns, sentences, findings)

    findings += _shape_corrections(sentences, findings)
    _apply_corrections(findings)

    # the detectors' resolution and resolved (the pseudo-documents' fix step; the backend's cells come from
    # `gist`), root cause, product
    findings += _resolution(turns, sentences, instr_scores)
    findings += _root_cause(sentences, an.problem_turns)
    findings += _attempts_and_escalation(sentences)
    owned = {
        f.value.lower()
        for f in findings
        if f.usable
        and f.signal in ("plan", "identifier", "model", "os", "browser", "answer", "key_value", "error_code", "error_message")
        and not (f.signal in ("answer", "key_value") and re.search(_PRODUCT_SLOT, f.name))
    }
    claimed = [f.raw or f.value for f in findings if f.signal in ("plan", "identifier", "amount", "measurement", "date", "version", "error_code")]
    claimed += [f.value for f in findings if f.signal == "answer" and re.search(r"plan|tier|subscription|membership|carrier|courier|payment", f.name)]
    opening = set(an.problem_turns)
    j = min(opening, default=0) - 1
    while opening and j >= 0 and turns[j][0] == "user" and len(opening) < 5:
        opening.add(j)  # the user's turns right before the problem statement belong to the opening
        j -= 1
    body = {(s.turn, s.index) for s in an.body}
    addressing = {(s.turn, s.text) for s in sentences if (s.turn, s.index) not in body}
    # Chinese and Japanese read as spaces, so that a name written against them stands apart ("华为P40手机")
    shown = {(s.turn, without_cjk(s.text)): s.text for s in sentences}
    prods = product_candidates([(s.turn, s.role, without_cjk(s.text)) for s in sentences], opening, claimed,
                               {(t, without_cjk(x)) for t, x in addressing})
    # a name read across Chinese read as spaces ("P40手机P40" as "P40 P40") is no name of the text
    prods = [p for p in prods if p[0].lower() not in owned and (p[0] in shown[(p[2], p[3])] or not has_cjk(shown[(p[2], p[3])]))]
    if prods:
        name, score, turn, text = prods[0]
        text = shown[(turn, text)]
        role = turns[turn][0]
        findings.append(Finding("product", "product", name, "string", round(min(0.85, 0.35 + 0.25 * score), 2), turn, role, text, name))
    an.findings = findings
    return an


def _shape(v: str) -> str:
    return re.sub(r"[A-Za-z]", "a", re.sub(r"\d", "9", v))


_TOKEN = re.compile(r"(?<![\w.-])[A-Za-z0-9][\w.-]*[A-Za-z0-9](?![\w-])")


def _shape_corrections(sentences: list[Sentence], findings: list[Finding]) -> list[Finding]:
    """A correction that restates a value without its key ("Actually it's MK-7538795, not MK-7538395")
    corrects the earlier value of the same shape: the new token takes the earlier finding's kind."""
    out: list[Finding] = []
    for s in sentences:
        if not correction_cue(s.text) and not re.search(r"\bnot\s+\S", s.text, re.I):
            continue
        earlier = [f for f in findings if f.usable and f.turn <= s.turn and f.evidence != s.text and f.signal not in ("problem", "resolution", "resolved", "root_cause")]
        if not earlier:
            continue
        here = {(f.value.lower()) for f in findings if f.turn == s.turn and f.evidence == s.text}
        if not correction_cue(s.text):
            denied = {m.group().lower() for m in _TOKEN.finditer(s.text) if is_negated(s.text, m.start(), m.end())}
            if not denied & {f.value.lower() for f in earlier}:
                continue  # "not" without denying an earlier value is no correction
        for m in _TOKEN.finditer(s.text):
            tok = m.group()
            if tok.lower() in here or not re.search(r"\d", tok) or is_negated(s.text, m.start(), m.end()):
                continue
            same = [f for f in earlier if f.value != tok and " " not in f.value and _shape(f.value) == _shape(tok)]
            if not same:
                continue
            f = same[-1]
            out.append(replace(f, value=tok, turn=s.turn, role=s.role, evidence=s.text, raw=tok, corrected=True, negated=False, superseded=False))
            here.add(tok.lower())
    return out


def _apply_corrections(findings: list[Finding]) -> None:
    """A corrected value supersedes the value it denies ("5.1.3, not 5.3.3"), else the latest earlier
    value of the same kind from the same side; it takes over that value's name."""
    for i, f in enumerate(findings):
        if not f.corrected or f.negated:
            continue
        same_sentence_denied = {g.value.lower() for g in findings if g.negated and g.turn == f.turn and g.evidence == f.evidence and g.signal == f.signal}
        earlier = [g for g in findings[:i] if g.signal == f.signal and g.usable and g is not f and (g.turn, g.evidence) != (f.turn, f.evidence)]
        target = None
        if same_sentence_denied:
            matching = [g for g in earlier if g.value.lower() in same_sentence_denied]
            target = matching[-1] if matching else None
            for g in matching:
                g.superseded = True
        if target is None:
            same_side = [g for g in earlier if g.role == f.role and g.value != f.value]
            if same_side and not same_sentence_denied:
                target = same_side[-1]
                target.superseded = True
        if target is not None and f.name in ("version", "model", "error_code", "date", "amount", "quantity") and target.name != f.name:
            f.name = target.name
        # denied values never count where they were said before, in this sentence too ("8.4.0 wait: 9.0.0,
        # not 8.4.0") or as the answer to a question that the correction amends
        for g in findings:
            if g is not f and g.signal == f.signal and g.turn <= f.turn and g.value.lower() in same_sentence_denied:
                g.superseded = True


def _answers(turns: Sequence[tuple[str, str]], sentences: list[Sentence], findings: list[Finding]) -> list[Finding]:
    out: list[Finding] = []
    found_values = {(f.turn, f.value) for f in findings if f.usable}
    for ti, (role, text) in enumerate(turns):
        if role != "agent":
            continue
        sents = [s for s in sentences if s.turn == ti]
        asks: list[str] = []
        for s in sents:
            asks += requested_slots(s.text)
        if not asks:
            continue
        # answer turns: the user turns right after this agent turn (agent "please" continuations allowed)
        answer_turns = []
        j = ti + 1
        skipped = 0
        while j < len(turns) and len(answer_turns) < 4:
            r, t = turns[j]
            if r == "agent":
                if answer_turns:
                    break
                if len(t.split()) > 3:
                    if skipped >= 2 or any(requested_slots(x) for _, _, x in split_sentences(t)):
                        break
                    skipped += 1
                j += 1
                continue
            answer_turns.append(j)
            j += 1
        slots = [a for a in asks if not _PII_SLOTS.match(a.strip())]
        pii = len(asks) - len(slots)
        if not slots:
            continue
        id_slots = [a for a in slots if _ID_SLOT.search(a)]
        other = [a for a in slots if a not in id_slots]
        tokens: list[tuple[int, str, str]] = []  # (turn, token, turn text)
        free: list[tuple[int, str]] = []
        for aj in answer_turns:
            at = _strip_lead(turns[aj][1]).strip()
            if not at or len(at.split()) > 12:
                continue
            idt = [tok for tok in re.findall(r"[A-Za-z0-9][\w-]*[A-Za-z0-9]", at) if _id_shape(tok) and not _PLACEHOLDER.fullmatch(tok)]
            if idt:
                tokens += [(aj, tok, turns[aj][1]) for tok in idt]
            elif not is_placeholder_only(at) and not re.fullmatch(r"[\w.+-]+", at) or (len(at.split()) == 1 and not is_placeholder_only(at)):
                free.append((aj, at))
        for slot, (aj, tok, ttext) in zip(id_slots, tokens):
            if (aj, tok) in found_values:
                weak = [f for f in findings if f.turn == aj and f.value == tok and f.signal in ("model", "error_code", "version", "statement")]
                if not weak:
                    continue
                for f in weak:
                    f.superseded = True
            out.append(Finding("answer", _slot_name(slot), tok, "string", 0.7 if len(id_slots) == 1 else 0.6, aj, "user", ttext.strip(), tok, slot))
        if len(other) == 1 and free and (pii == 0 or len(free) == 1):
            aj, at = free[0]
            v = answer_value(at)
            if v and not _id_shape(v.replace(" ", "")) and (aj, v) not in found_values:
                out.append(Finding("answer", _slot_name(other[0]), v, "string", 0.65, aj, "user", turns[aj][1].strip(), v, other[0]))
    return out
