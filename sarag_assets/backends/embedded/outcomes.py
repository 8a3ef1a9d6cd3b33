"""How the conversation ended: the resolution (the agent step the user confirmed worked, the head of a
step-by-step chain, never a step the user said failed; else the last concrete instruction when nothing
failed or was escalated after it), attempts already made, escalation, and the stated root cause.
"""

from __future__ import annotations

import re
from typing import Sequence

from sarag_assets.backends.embedded.cues import _ASIDE, _new_issue, cause_clause, confirmation
from sarag_assets.backends.embedded.findings import Finding, Sentence
from sarag_assets.backends.embedded.text import _content_words, _strip_lead
from sarag_assets.backends.embedded.versions import correction_cue


def _resolution(turns: Sequence[tuple[str, str]], sentences: list[Sentence], instr: dict) -> list[Finding]:
    """The agent step the user confirmed worked, else the last concrete agent instruction; and whether
    the conversation ended resolved."""
    out: list[Finding] = []
    n = len(turns)
    events: list[tuple[int, int, float, Sentence]] = []  # (turn, polarity, strength, sentence)
    for s in sentences:
        pol, st = confirmation(s.text, s.role)
        if pol:
            events.append((s.turn, pol, st, s))
    # instructions per agent turn
    by_turn: dict[int, list[Sentence]] = {}
    for s in sentences:
        if s.role == "agent" and instr[id(s)] >= 0.5:
            by_turn.setdefault(s.turn, []).append(s)

    def span_of(turn: int) -> tuple[str, str]:
        ss = by_turn[turn]
        text = turns[turn][1]
        a, b = ss[0].start, ss[-1].end
        # "Try these steps:" / "1. ..." - the list items that follow belong to the step
        is_item = lambda x: bool(re.match(r"\s*(?:\d{1,2}[.)]|[-*•])\s", text[x.start : x.start + 5]))
        if ss[-1].text.rstrip().endswith(":") or is_item(ss[-1]):
            for x in (x for x in sentences if x.turn == turn and x.start >= b):
                if not is_item(x):
                    break
                b = x.end
        if b - a > 400:  # keep the first few steps
            b = max((x.end for x in ss if x.end - a <= 400), default=ss[0].end)
        return _strip_lead(text[a:b]).strip(), text[a:b]

    # a user who reports their own fix ("I disabled the add-in and now it opens fine")
    self_fix = None
    for s in sentences:
        if (
            s.role == "user"
            and _SELF_FIX.search(s.text)
            and not re.search(r"\b(?:tried|already|can'?t|cannot|won'?t|doesn'?t|isn'?t|not|never|error|fail\w*|problem|issue)\b", s.text, re.I)
            and not correction_cue(s.text)
            and not _ASIDE.match(_strip_lead(s.text))
        ):
            pol, st = confirmation(s.text, "user")
            same_turn_ok = any(e[0] == s.turn and e[1] > 0 and e[3].role == "user" for e in events)
            if pol > 0 or (same_turn_ok and pol == 0 and s.turn not in [e[0] for e in events if e[1] < 0]):
                self_fix = s
    user_neg_turns = {e[0] for e in events if e[1] < 0 and e[3].role == "user"}

    def fix_turn(t: int) -> int | None:
        """The instruction turn a user verdict at turn ``t`` is about: the last one before it, unless
        the user reported a failure in between (then that step did not fix it)."""
        prior = [k for k in by_turn if k < t]
        if not prior:
            return None
        k = max(prior)
        if any(k < u < t for u in user_neg_turns):
            return None
        return k

    def chain_head(k: int) -> int:
        """Steps given one after another ("First, clear the cache." - "Ok" - "Now sign in again."): the
        chain's first step is the substantive fix, the later ones its follow-through."""
        while True:
            prev = [j for j in by_turn if j < k]
            if not prev:
                return k
            j = max(prev)
            between = [i for i in range(j + 1, k) if turns[i][0] == "user"]
            if not between or any(i in user_neg_turns for i in between) or any(e[0] in between and e[1] > 0 for e in events if e[3].role == "user"):
                return k
            if any(len(turns[i][1].split()) > 8 for i in between):
                return k  # more than an acknowledgement
            lead = by_turn[k][0].text
            if not re.match(r"(?:\W*(?:[A-Za-z']+(?:\s+[A-Za-z']+)?)\s*[,.!]\s*)*\W*"
                            r"(?:now|next|then|after\s+that|afterwards|once\s+(?:that'?s|it'?s|it\s+is)\s+done|finally|lastly|also|"
                            r"step\s+(?:two|three|2|3)|second(?:ly)?|third(?:ly)?)\b", lead, re.I):
                return k
            k = j

    confirmed = None
    user_pos = [e for e in events if e[1] > 0 and e[3].role == "user"]
    # the first confirmation answers the opening problem (a later one may be about a second issue)
    ordered = [e for e in user_pos if e[2] >= 0.6] + [e for e in user_pos if e[2] < 0.6]
    for t, pol, st, s in ordered:
        k = fix_turn(t)
        if k is not None:
            confirmed = (chain_head(k), t, st, s)
            break
    if self_fix is not None and (confirmed is None or self_fix.turn >= confirmed[1]):
        value = _strip_lead(self_fix.text).strip()
        out.append(Finding("resolution", "resolution", value, "string", 0.8, self_fix.turn, "user", self_fix.text, value))
    elif confirmed is not None and span_of(confirmed[0])[0]:
        k, t, st, s = confirmed
        value, ev = span_of(k)
        out.append(Finding("resolution", "resolution", value, "string", round(min(0.9, 0.55 + 0.35 * st), 2), k, "agent", ev, value))
    elif by_turn:
        k = max(by_turn)
        # a failure reported after it, or the agent giving up / escalating after it: nothing resolved it
        failed_after = any(e[1] < 0 and e[0] > k for e in events)
        if not failed_after:
            value, ev = span_of(chain_head(k))
            if value:
                out.append(Finding("resolution", "resolution", value, "string", 0.5, k, "agent", ev, value))
    else:
        done = [e for e in events if e[1] > 0 and e[3].role == "agent" and re.search(r"\b(?:has|have)\s+been\b", e[3].text, re.I)]
        if done:
            s = done[-1][3]
            value = _strip_lead(s.text).strip()
            out.append(Finding("resolution", "resolution", value, "string", 0.45, s.turn, "agent", s.text, value))

    # resolved: the last explicit user cue near the end, else the agent's; when the user confirmed the
    # fix and then raised a second issue ("One more thing: ..."), the verdict is about the first one
    scope = n
    if confirmed is not None:
        second = _second_issue(sentences, (confirmed[1], confirmed[3].index))
        if second is not None:
            scope = second[0]
    late = [e for e in events if (e[0] >= n * 0.3 or e[0] > min(by_turn, default=n)) and e[0] <= scope]
    user_late = [e for e in late if e[3].role == "user"]
    last_instruction = max((k for k in by_turn if k < scope), default=-1)
    if user_late and user_late[-1][0] < last_instruction:
        user_late = []  # the user's last verdict came before the last step: its outcome is unknown
        late = [e for e in late if e[0] > last_instruction]
    if user_late:
        t, pol, st, s = user_late[-1]
        agent_after = [e for e in late if e[3].role == "agent" and e[0] > t and e[1] != pol]
        strength = st if not agent_after else st - 0.25
        out.append(Finding("resolved", "resolved", "true" if pol > 0 else "false", "boolean", round(strength, 2), t, "user", s.text, s.text))
    else:
        agent_late = [e for e in late if e[3].role == "agent"]
        if agent_late:
            t, pol, st, s = agent_late[-1]
            out.append(Finding("resolved", "resolved", "true" if pol > 0 else "false", "boolean", round(st, 2), t, "agent", s.text, s.text))
    return out


_ATTEMPT = re.compile(
    r"\b(?:i(?:'ve|\s+have)?\s+(?:already\s+|also\s+)?(?:tried|restarted|rebooted|reinstalled|reset|cleared|updated|checked|"
    r"uninstalled|disabled|unplugged|replaced|changed|power[- ]cycled)|(?:what|things?)\s+i(?:'ve|\s+have)?\s+(?:already\s+)?tried|"
    r"(?:tried|did)\s+that|already\s+(?:tried|did|done))\b",
    re.IGNORECASE,
)
_ESCALATION = re.compile(
    r"\b(?:escalat(?:e|ed|ing)\s+(?:this|it|your|the|to|with)|let\s+(?:my|our|the)\s+(?:manager|supervisor|team|specialist|engineers?)\s+know|(?:pass|passed|passing|forward|forwarded|transfer|transferred|refer|referred|"
    r"hand(?:ed)?\s+(?:this\s+)?over)\s+(?:this|it|you|your\s+\w+)?\s*(?:on\s+)?to\s+(?:a|an|our|the|my)\s+(?:\w+\s+)?"
    r"(?:specialist|manager|supervisor|team|department|engineer|technician|tier\s*2|second\s+line|colleague)|"
    r"(?:open(?:ed)?|raise[d]?|create[d]?|file[d]?)\s+(?:a|an)\s+(?:\w+\s+)?(?:ticket|case|report|investigation)\s+(?:with|for)\s+(?:our|the)\s+\w+|"
    r"someone\s+(?:from\s+\w+\s+)?will\s+(?:get\s+back|contact|call|reach\s+out))",
    re.IGNORECASE,
)


_SELF_FIX = re.compile(
    r"\bi(?:'ve|\s+have|\s+just|\s+finally|\s+then)?\s+(?:disabled|enabled|reinstalled|installed|uninstalled|updated|upgraded|downgraded|"
    r"removed|deleted|changed|replaced|reset|cleared|turned\s+(?:off|on)|switched|rolled\s+back|moved|renamed|edited|added|unplugged|"
    r"restarted|rebooted|power[- ]cycled|flashed|repaired|reconnected|re-?paired|set|fixed\s+it\s+by|solved\s+it\s+by)\b",
    re.IGNORECASE,
)


def _attempts_and_escalation(sentences: list[Sentence]) -> list[Finding]:
    """What the user already tried (a user sentence with "I tried / restarted / already ..."), and
    whether the agent escalated (passed it on to a specialist, manager or another team)."""
    out: list[Finding] = []
    for s in sentences:
        if s.role == "user" and _ATTEMPT.search(s.text) and len(_content_words(s.text)) >= 2 and confirmation(s.text, "user")[0] <= 0:
            text = _strip_lead(s.text).strip()
            if not re.fullmatch(r"(?i)\W*(?:tried|did|done)\s+that\W*(?:\w+\W*){0,3}", text):
                out.append(Finding("attempted_steps", "attempted_steps", text.rstrip(". "), "string", 0.7, s.turn, "user", s.text, text))
                break
    for s in sentences:
        if s.role == "agent" and _ESCALATION.search(s.text) and not s.text.rstrip().endswith("?"):
            out.append(Finding("escalated", "escalated", "true", "boolean", 0.75, s.turn, "agent", s.text, s.text))
            break
    return out


def _second_issue(sentences: list[Sentence], confirmed: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """(turn, index) of the sentence in which the user, after confirming a fix (at `confirmed`, else at
    their first "that worked"), raises a second issue ("Works now, thanks! Also, unrelated: ..."): what
    follows is about that one."""
    if confirmed is None:
        confirmed = next(((s.turn, s.index) for s in sentences if s.role == "user" and confirmation(s.text, "user")[0] > 0), None)
    if confirmed is None:
        return None
    return next(((s.turn, s.index) for s in sentences if s.role == "user" and (s.turn, s.index) > confirmed and _new_issue(s.text)), None)


def _root_cause(sentences: list[Sentence], problem_turns: tuple[int, ...]) -> list[Finding]:
    best: tuple[float, Sentence, str] | None = None
    second = _second_issue(sentences)
    for s in sentences:
        if second is not None and (s.turn, s.index) >= second:
            break  # the cause of the second issue is not this row's
        if s.role == "user" and s.turn in problem_turns and not re.search(r"turn(?:s|ed)\s+out|found", s.text, re.I):
            continue  # the user's own guess in the opening statement is part of the problem
        c = cause_clause(s.text)
        if c is None:
            continue
        clause, st = c
        if s.role == "agent":
            st += 0.1
        if len(clause.split()) < 2:
            continue
        if best is None or st > best[0]:
            best = (st, s, clause)
    if best is None:
        return []
    st, s, clause = best
    return [Finding("root_cause", "root_cause", clause, "string", round(min(0.85, st), 2), s.turn, s.role, s.text, clause)]
