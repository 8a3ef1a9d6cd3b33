"""Issue and solution pseudo-queries (the SDR pseudo-documents): what the user asked, in several short
phrasings, and the steps that helped.

**Pseudo-documents.** Issue-centric queries (what the user needed), best first: the best problem
statement of the first unit (problem score, question bonus, words the rest of the conversation takes
up, small talk penalized); "<product> <symptom>" and "<error code> on <product> <version>" built from
the detected entities (user-stated, corrections applied, denied values dropped); the opening statement
of every later unit; further problem sentences and questions; the first unit's keywords with the
details the user gave in answer to the agent's questions (identifiers left out); the environment
(product, version, OS, plan). 1..8 (3+ when the conversation says enough), each <= 24 words, distinct,
without greetings, thanks, placeholders or chatter. Solution-centric queries (what resolved it or was
tried): the steps of the fix the user confirmed (or reported doing themselves, else the agent's last
concrete instructions), the stated cause, the agent's actions and verdicts ("I've issued a refund",
"we cannot accept the return after 90 days"), the other instructions, the informative answers to the
user's questions, and what was tried and failed, marked "tried: <step> (did not help)" (up to two
slots kept for them); 1..8 (2+ when there is anything to say). Neither is ever empty: the solution side
falls back to the agent's most substantive turn (the user's last turn if the agent never spoke), the
issue side to the user's longest sentences or turn (any turn if the user never spoke).
"""

from __future__ import annotations

import re

from sarag_assets.backends.embedded.phrasing import (
    _DIGIT,
    _GENERIC,
    _IDENTITY,
    _NEGATION,
    _PLACEHOLDER,
    _SUGGEST_Q,
    _TAG_QUESTION,
    _WORD,
    MAX_ISSUE_QUERIES,
    MAX_SOLUTION_QUERIES,
    _content_set,
    _details,
    _display,
    _is_filler,
    _keyphrase,
    _query,
    _tokens,
)
from sarag_assets.backends.embedded.products import product_candidates
from sarag_assets.backends.embedded.segmentation import (
    _ENTITY_SIGNALS,
    _FEEDBACK_WORDS,
    _NEG_OR_PROBLEM,
    _TICKET,
    _agent_core,
    _prepare,
    _Prepared,
    _Sent,
    _Unit,
)
from sarag_assets.core.structuring.interface import ConversationInput, PseudoDocuments

# ---------------------------------------------------------------------------------------------------
# pseudo-documents

_NOT_PRODUCT = ("plan", "identifier", "os", "browser", "answer", "key_value", "error_code", "error_message", "date", "amount")



class _Picker:
    """Collects distinct queries: a query whose content words are (nearly) covered by one already
    taken is a duplicate."""

    def __init__(self, limit: int):
        self.limit = limit
        self.items: list[str] = []
        self._sets: list[frozenset[str]] = []

    def add(self, text: str | None, *, min_content: int = 2, structured: bool = False) -> bool:
        """Take `text` unless it is empty, has a placeholder, says too little or repeats a query
        already taken; a `structured` query ("<code> on <product> <version>") may reuse the words
        of a sentence taken before, but not repeat another query."""
        if not text or len(self.items) >= self.limit:
            return False
        text = text.strip()
        if _PLACEHOLDER.search(text) or "[" in text and re.search(r"\[[A-Z_]+\]", text):
            return False
        cs = _content_set(text)
        if len(cs) < min_content:
            return False
        for other in self._sets:
            inter = len(cs & other)
            new = len(cs) - inter
            if structured and cs != other and inter / len(cs | other) < 0.7:
                continue
            if new == 0 or inter / len(cs | other) >= 0.7 or (new == 1 and len(cs) >= 8 and inter >= len(cs) * 0.85):
                return False
        self.items.append(text)
        self._sets.append(cs)
        return True

    def full(self) -> bool:
        return len(self.items) >= self.limit


def _entities(p: _Prepared) -> dict[str, str]:
    """The best value per entity kind: the user's word over the agent's, corrections applied."""
    an = p.analysis
    out: dict[str, str] = {}
    for kind in _ENTITY_SIGNALS:
        fs = [f for f in an.by_signal(kind) if f.strength >= 0.5 and not _PLACEHOLDER.search(f.value)]
        if kind not in ("product", "model"):
            fs = [f for f in fs if f.role == "user"]  # the agent naming an OS in a question is not the user's
        if kind == "version":
            fs = [f for f in fs if f.name != "target_version"]
        if kind == "error_message":
            fs = [f for f in fs if len(f.value.split()) <= 10]
        fs = [f for f in fs if not _denied(p, f.value)]
        best = an.best(fs)
        if best is not None:
            out[kind] = _query(best.value, 12)
    return out


def _denied(p: _Prepared, value: str) -> bool:
    """A user correction denies the value ("Actually it's DSL Plus 80, not DSL Basic 25")."""
    v = value.strip().lower()
    if not v:
        return False
    for s in p.sents:
        if s.role == "user" and (s.correction or s.narrow or " not " in s.text.lower()):
            low = s.text.lower()
            if re.search(r"\b(?:not|instead\s+of|rather\s+than|misread\s+it\s+as|wrote)\s+(?:the\s+|a\s+|an\s+|version\s+|plan\s+)?" + re.escape(v), low):
                return True
    return False


def _unit_product(p: _Prepared, u: _Unit) -> str | None:
    """The product named in the unit's user turns (a second issue often names another one)."""
    sents = [(s.turn, s.role, s.text) for ti in u.user_turns for s in p.by_turn.get(ti, []) if not s.filler]
    if not sents:
        return None
    cands = product_candidates(sents, set(u.opening))
    owned = {f.value.lower() for f in p.analysis.findings if f.signal in _NOT_PRODUCT}
    cands = [c for c in cands if not _PLACEHOLDER.search(c[0]) and c[0].lower() not in owned]
    return _query(cands[0][0], 6) or None if cands else None


def _issue_sentences(p: _Prepared, u: _Unit, *, opening_only: bool) -> list[_Sent]:
    turns = u.opening if opening_only else u.user_turns
    out = [s for ti in turns for s in p.by_turn.get(ti, []) if s.role == "user" and s.issue_like and not s.attempt]
    return out


_WRONG_VALUE = re.compile(r"^\W*(?:i|we)\s+(?:misread|mistyped|misspoke|wrote|typed|said)\b", re.I)


def _rank_problem(sents: list[_Sent]) -> list[_Sent]:
    """Best problem statements first: the problem score, a question bonus, words the rest of the
    conversation takes up (a problem statement's words recur, small talk's do not), earlier first."""
    def score(s: _Sent) -> float:
        return (
            s.problem
            + (0.15 if s.question and s.content >= 3 else 0.0)
            + 0.1 * min(s.echo, 3)
            - (0.3 if s.shift == 1 else 0.0)
            - (0.5 if _WRONG_VALUE.match(s.text) else 0.0)
            + min(s.content, 8) * 0.01
        )

    return sorted(sents, key=lambda s: (-round(score(s), 3), s.order))


def _issue_queries(p: _Prepared) -> list[str]:
    pick = _Picker(MAX_ISSUE_QUERIES)
    units = p.units
    ents = _entities(p)
    product = _unit_product(p, units[0]) if units else None
    product = product or ents.get("product") or ents.get("model")
    if product:
        ents["product"] = product
    first = units[0] if units else None
    main: _Sent | None = None
    if first is not None:
        ranked = _rank_problem(_issue_sentences(p, first, opening_only=True)) or _rank_problem(_issue_sentences(p, first, opening_only=False))
        if ranked:
            main = ranked[0]
            pick.add(main.query)
    # "<product> <symptom>", "<error code> on <product> <version>"
    if main is not None:
        drop = frozenset(_tokens(product or ""))
        symptom = _keyphrase(main.query, drop, 8)
        if product and symptom:
            pick.add(f"{product} {symptom}", structured=True)
        if product and first is not None:  # the product with the other symptoms the user stated ("won't print")
            for s in first.opening and [x for ti in first.opening for x in p.by_turn.get(ti, [])] or []:
                if (s is not main and s.role == "user" and not s.filler and s.polarity <= 0 and not s.attempt and s.problem >= 0.45
                        and not s.question and s.echo and s.shift != 1):
                    symptom = _keyphrase(s.query, drop, 8)
                    if symptom and (_NEG_OR_PROBLEM.search(s.text)) and len(symptom.split()) >= 2:
                        pick.add(f"{product} {symptom}", min_content=2, structured=True)
    env = ents.get("version") or ents.get("os") or ents.get("plan") or ents.get("browser")
    code = ents.get("error_code")
    if code:
        where = " ".join(x for x in (product, env) if x)
        pick.add(f"{code} on {where}" if where else f"error {code}", min_content=1, structured=True)
    if ents.get("error_message") and ents.get("error_message") != code:
        pick.add(f"{ents['error_message']}" + (f" {product}" if product else ""))
    # later units' opening statements
    for u in units[1:]:
        ranked = _rank_problem(_issue_sentences(p, u, opening_only=True))
        if ranked:
            pick.add(ranked[0].query)
    # further problem sentences and questions (first unit first), then details stated later
    if first is not None:
        for s in _rank_problem(_issue_sentences(p, first, opening_only=True))[1:]:
            if s.problem >= 0.45 and s.content >= 3 and (s.echo or _details(s.text)) and s.shift != 1:
                pick.add(s.query)
    for u in units:
        unit_sents = [x for ti in u.user_turns + u.agent_turns for x in p.by_turn.get(ti, []) if not x.filler]
        for s in _rank_problem(_issue_sentences(p, u, opening_only=False)):
            if s.turn in u.opening or s.problem < 0.6 or s.content < 3 or _closing_turn(p, s.turn):
                continue
            context = _content_set(" ".join(x.text for x in unit_sents if x is not s)) - _GENERIC
            if (_content_set(s.text) - _GENERIC) & context or _details(s.text):  # on topic, or a specific detail
                pick.add(s.query)
    # the first unit's keywords with the details the user gave later (answers to the agent's questions)
    if main is not None and first is not None:
        details = _detail_words(p, first, main, ents)
        if details:
            pick.add(f"{_keyphrase(main.query, _GENERIC, 8)} {' '.join(details)}")
    # the environment as a query
    env_parts = [x for x in (product, ents.get("version"), ents.get("os"), ents.get("browser"), ents.get("plan")) if x]
    if len(env_parts) >= 2 and main is not None:
        pick.add(" ".join(dict.fromkeys(env_parts)) + " " + _keyphrase(main.query, frozenset(_tokens(" ".join(env_parts))), 5))
    if not pick.items:
        _issue_fallback(p, pick)
    return pick.items


_CLOSING = re.compile(r"\b(?:that'?s\s+(?:all|it|everything)|nothing\s+else|no\s+(?:thanks|thank\s+you|need)|i'?m\s+(?:good|all\s+set)|all\s+good)\b", re.I)


def _closing_turn(p: _Prepared, ti: int) -> bool:
    """The user is wrapping up in this turn (a thank-you for a fix, "that's all")."""
    return any(s.polarity > 0 or _CLOSING.search(s.text) for s in p.by_turn.get(ti, []))


def _answer_turns(p: _Prepared) -> set[int]:
    """User turns that answer the agent's request for information (the user turns right after it)."""
    out: set[int] = set()
    asked = False
    for ti, t in enumerate(p.conv.turns):
        if t.role == "agent":
            asked = any(s.request and not s.filler for s in p.by_turn.get(ti, []))
        elif asked:
            out.add(ti)
    return out



_ID_LIKE = re.compile(r"^(?:\d[\d-]{4,}|(?=[\w-]*\d)(?=[\w-]*[a-z])[a-z0-9-]{5,})$", re.I)


def _detail_words(p: _Prepared, u: _Unit, main: _Sent, ents: dict[str, str]) -> list[str]:
    """Content words of the unit's other user sentences (short answers, details), without
    identifiers (order numbers, booking codes) unless they are a detected entity."""
    keep = {v.lower() for v in ents.values()}
    have = {w.lower() for w in _tokens(main.query)}
    out: list[str] = []
    asked = _answer_turns(p)
    for ti in u.user_turns:
        if _closing_turn(p, ti) or ti not in asked:
            continue
        for s in p.by_turn.get(ti, []):
            if s is main or s.filler or s.polarity != 0 or s.attempt or not s.query or s.content > 6 or s.shift == 1:
                continue
            if _PLACEHOLDER.search(s.text) or _IDENTITY.search(s.text) or any(_ID_LIKE.match(w) and w.lower() not in keep for w in _WORD.findall(s.text)):
                continue  # identity details (a name, an order or booking number) are not what the user needed
            if any(_denied(p, f.value) for f in p.analysis.findings if f.turn == ti and f.value.lower() in s.text.lower()):
                continue  # a value the user corrected later
            for w in _keyphrase(s.query, _GENERIC, 6).split():
                lw = w.lower()
                if lw in have or (_ID_LIKE.match(w) and lw not in keep) or lw in _NEGATION:
                    continue
                have.add(lw)
                out.append(w)
                if len(out) >= 6:
                    return out
    return out


NO_ISSUE = "no issue stated"
NO_ANSWER = "no answer given"


def _usable(text: str, max_words: int = 40) -> str:
    """`text` as a query, or "" when nothing with letters or digits is left."""
    q = _query(_display(text), max_words)
    return q if re.search(r"[^\W_]", q) else ""


def _issue_fallback(p: _Prepared, pick: _Picker) -> None:
    """No problem statement: the user's most substantive sentences, else their longest turn that is
    not only a greeting, else what the agent said, else NO_ISSUE."""
    user = [s for s in p.sents if s.role == "user" and not s.filler and s.query]
    for s in sorted(user, key=lambda s: (-s.content, s.turn))[:3]:
        pick.add(s.query, min_content=1)
    if pick.items:
        return
    turns = p.conv.turns
    users = [t for t in turns if t.role == "user" and _usable(t.text) and not _is_filler(_display(t.text))]
    if users:
        pick.items.append(_usable(max(users, key=lambda t: len(t.text)).text))
        return
    agent = [s for s in p.sents if s.role == "agent" and not s.filler and s.query]
    for s in sorted(agent, key=lambda s: (-s.content, s.turn))[:2]:
        pick.add(s.query, min_content=1)
    if not pick.items:
        pick.items.append(NO_ISSUE)


def _step_query(s: _Sent) -> str:
    """An instruction as a query: suggestion questions become imperatives."""
    text = s.text
    m = _SUGGEST_Q.match(text)
    if m and text.rstrip().endswith("?"):
        rest = text[m.end() :].rstrip(" ?")
        rest = re.sub(r"\s+(?:and\s+see\s+if|to\s+see\s+if)\b.*$", "", rest, flags=re.I)
        return _query("try " + rest)
    q = _query(_agent_core(s.text))
    q = re.sub(r"^(?:(?:could|can|would|will)\s+you\s+(?:please\s+|kindly\s+|just\s+)*)", "", q, flags=re.I)
    q = re.sub(r"^(?:(?:you\s+(?:can|could|should|need\s+to|must|may\s+want\s+to|might\s+want\s+to|will\s+need\s+to|have\s+to)|"
               r"i(?:'d|\s+would)\s+(?:recommend|suggest)(?:\s+(?:that\s+)?you)?|(?:please\s+)?try\s+to|make\s+sure\s+(?:to|that\s+you)|"
               r"go\s+ahead\s+and|the\s+(?:fix|solution|workaround)\s+is\s+to)\s+)", "", q, flags=re.I)
    q = re.sub(r"\s+(?:and\s+see\s+if|to\s+see\s+if|and\s+(?:tell|let)\s+(?:me|us)\s+(?:know\s+)?(?:if|whether|how|what))\b.*$", "", q, flags=re.I).rstrip(" ?")
    q = re.sub(r"\s+and\s+let\s+(?:me|us)\s+know\s*$", "", q, flags=re.I)
    if q and q[0].islower():
        q = q[0].upper() + q[1:]
    return q


def _statement_query(s: _Sent, min_words: int = 3) -> str:
    """An agent statement as a query ("" when it says too little, or only gives a ticket number)."""
    text = _TAG_QUESTION.sub("", s.text.rstrip())
    if _TICKET.search(text) or len(_content_set(text) - _GENERIC) < min_words:
        return ""
    return _query(text)


def _failed_after(p: _Prepared, agent_turn: int) -> bool:
    """The user's next turns (until the agent speaks again) say it did not work."""
    turns = p.conv.turns
    for j in range(agent_turn + 1, len(turns)):
        if turns[j].role == "agent":
            if j > agent_turn + 1:
                break
            continue
        if any(s.polarity < 0 for s in p.by_turn.get(j, [])):
            return True
        if any(s.polarity > 0 for s in p.by_turn.get(j, [])):
            return False
    return False


def _solution_queries(p: _Prepared) -> list[str]:
    an = p.analysis
    pick = _Picker(MAX_SOLUTION_QUERIES)
    tried: list[str] = []
    agent = [s for s in p.sents if s.role == "agent" and not s.filler and s.query]
    # 1. the fix: the step the user confirmed worked (or reported doing), else the last instruction
    res = an.best(an.by_signal("resolution"))
    fixed_turn = None
    if res is not None:
        if res.role == "user":
            pick.add(_query(re.sub(r"^\W*(?:i(?:'ve|\s+have|\s+just|\s+finally)?)\s+", "", res.value, flags=re.I)))
        else:
            fixed_turn = res.turn
            for s in agent:
                if s.turn == res.turn and s.instr >= 0.5:
                    pick.add(_step_query(s))
    # 2. the cause
    causes = [s for s in agent if s.cause] + [s for s in p.sents if s.role == "user" and s.cause]
    rc = an.best(an.by_signal("root_cause"))
    if rc is not None and len(_content_set(rc.evidence) - _GENERIC) >= 3:
        pick.add(_query(rc.evidence))
    for s in causes[:1]:
        pick.add(_statement_query(s))
    # 3. the agent's actions and verdicts; 4. other instructions (failed ones are marked)
    failed_turns = {s.turn for s in agent if s.instr >= 0.5 and s.turn != fixed_turn and _failed_after(p, s.turn)}
    for s in agent:
        if s.outcome and s.instr < 0.5 and not s.request and s.content >= 3:
            pick.add(_statement_query(s))
    for s in agent:
        if s.instr >= 0.5 and s.content >= 2:
            q = _step_query(s)
            if s.turn in failed_turns:
                q = re.sub(r"^(?:try|attempt)\s+(?:to\s+)?", "", q, flags=re.I)
                if q:
                    tried.append(f"tried: {q[0].lower() + q[1:]} (did not help)")
            else:
                pick.add(q)
    # 5. informative answers to the user's questions
    for u in p.units:
        cands = [s for ti in u.agent_turns for s in p.by_turn.get(ti, []) if not s.filler and not s.request and s.instr < 0.5 and s.content >= 2]
        if any(s.content >= 3 for s in cands):
            cands = [s for s in cands if s.content >= 3]
        issue_words = _content_set(" ".join(s.text for ti in u.user_turns for s in p.by_turn.get(ti, [])))
        cands.sort(key=lambda s: (-(min(len(_content_set(s.text) & issue_words), 2) + (1 if _DIGIT.search(s.text) else 0)
                                     + (1 if s.outcome else 0) + min(s.content, 8) / 8), s.turn))
        asked = any(x.question for ti in u.opening for x in p.by_turn.get(ti, []) if x.role == "user")
        for s in cands[:2]:
            pick.add(_statement_query(s, 2 if asked else 3))
    # 6. what the user already tried
    for s in p.sents:
        if s.role == "user" and s.attempt and s.content >= 2:
            q = _query(re.sub(r"^\W*(?:i|we)(?:'ve|\s+have|\s+had)?\s+(?:already\s+|also\s+|even\s+)?(?=tried\b)", "", s.text, flags=re.I))
            q = re.sub(r"^(?:i|we)(?:'ve|\s+have|\s+had)?\s+(?:already\s+|also\s+|even\s+)?", "", q, flags=re.I)
            q = re.sub(r"^(?:(?:things|what)\s+(?:i|we)(?:'ve|\s+have)?\s+(?:already\s+)?)?tried\s*:?\s*", "", q, flags=re.I)
            if re.match(r"^(?:that|this|it|those|them|everything|all)\b", q, re.I) or len(_content_set(q) - _GENERIC - _FEEDBACK_WORDS) < 2:
                continue  # "Tried that already, still the same": feedback, not a step
            if q:
                tried.append(f"tried: {q[0].lower() + q[1:]}")
    reserve = min(2, len(dict.fromkeys(tried)))  # failed attempts keep up to two slots
    keep = MAX_SOLUTION_QUERIES - reserve
    if len(pick.items) > keep:
        pick.items, pick._sets = pick.items[:keep], pick._sets[:keep]
    for t in tried:
        pick.add(t)
    if len(pick.items) < 2:
        _solution_fallback(p, pick)
    return pick.items


def _solution_fallback(p: _Prepared, pick: _Picker) -> None:
    """Fewer than two solution queries: add the agent's most substantive other statement; with none
    at all, the agent's most substantive turn, else (the agent never said anything but pleasantries)
    the user's last turn, else NO_ANSWER."""
    turns = p.conv.turns
    if pick.items:
        others = [s for s in p.sents if s.role == "agent" and not s.filler and not s.request and s.content >= 2]
        for s in sorted(others, key=lambda s: (-s.content, s.turn)):
            if pick.add(_statement_query(s)):
                break
        return

    def substance(i: int) -> int:
        return sum(s.content for s in p.by_turn.get(i, []) if not s.filler)

    agent_turns = [i for i, t in enumerate(turns) if t.role == "agent" and substance(i) > 0]
    if agent_turns:
        best = max(agent_turns, key=lambda i: (substance(i), -i))
        sents = [s for s in p.by_turn.get(best, []) if not s.filler and s.query]
        pick.add(_query(" ".join(s.text for s in sents), 40), min_content=1)
        if pick.items:
            return
    for t in reversed(turns):
        if t.role == "user" and _usable(t.text) and not _is_filler(_display(t.text)):
            pick.items.append(_usable(t.text))
            return
    pick.items.append(NO_ANSWER)


def pseudo_documents(conv: ConversationInput, *, backend_name: str) -> PseudoDocuments:
    """Issue-centric and solution-centric predicted queries (see the module docstring). Both lists
    are non-empty for every conversation."""
    p = _prepare(conv)
    return PseudoDocuments(
        dialogue_id=conv.dialogue_id,
        issue_queries=_issue_queries(p),
        solution_queries=_solution_queries(p),
        backend=backend_name,
    )
