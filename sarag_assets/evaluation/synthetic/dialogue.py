"""Render one planned conversation into turns, and its latent truth record.

A conversation is first built as a list of *moves* (role + sentences, each sentence a list of pieces from
grammar.py); channel style then decides how moves become turns (forum and ticket merge a speaker's
consecutive moves into one long post, chat keeps short lines and sometimes splits them further). Noise is
applied to template text only. Which facts ended up in the text is measured on the final text, so the
truth's ``mentioned`` flags are exact.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from random import Random
from typing import Any

from . import phrases as P
from .catalog_orders import CARRIERS, PAYMENTS
from .grammar import (
    Slot,
    add_typos,
    capitalize,
    decapitalize,
    expand,
    lowercase,
    pick,
    tidy,
)
from .model import Domain, Issue
from .world import DOMAIN_BY_NAME, EPOCH, PlanItem, World

MAX_TURNS = 25
USER_ROLES = ("user", "customer", "client")
AGENT_ROLES = ("agent", "support", "assistant")
EPOCH_DT = datetime(EPOCH.year, EPOCH.month, EPOCH.day)
EXTRA_FIELDS = ("order_number", "carrier", "payment_method", "amount", "account_number", "account_email")

P_OPENING = {"forum": 0.75, "ticket": 0.75, "chat": 0.35}
P_TYPO_MOVE = {"forum": 0.3, "ticket": 0.1, "chat": 0.45}
P_NAMED_SPEAKERS = {"forum": 0.35, "ticket": 0.05, "chat": 0.08}
RESOLVED_RATE = 0.78
CORRECTION_RATE = 0.14
CHATTER_RATE = 0.25


class Move:
    __slots__ = ("role", "items", "droppable", "noisy")

    def __init__(self, role: str, droppable: bool = False, noisy: bool = True) -> None:
        self.role = role
        self.items: list[Any] = []  # sentences (lists of pieces) and paragraph breaks ("\n", "\n\n")
        self.droppable = droppable
        self.noisy = noisy

    def say(self, sentence: list) -> "Move":
        if sentence and any(p.strip() for p in sentence):
            self.items.append(capitalize(sentence))
        return self

    def br(self, sep: str = "\n\n") -> "Move":
        if self.items and not isinstance(self.items[-1], str):
            self.items.append(sep)
        return self

    def empty(self) -> bool:
        return not any(isinstance(i, list) for i in self.items)


def _cap(pieces: list) -> list:
    return capitalize(list(pieces))


def _iso(seconds: int) -> str:
    return (EPOCH_DT + timedelta(seconds=seconds)).isoformat() + "Z"


class _Builder:
    def __init__(self, item: PlanItem, world: World, seed: int) -> None:
        self.rng = rng = Random((seed % 2**32) * 2_654_435_761 + item.position * 97 + 5)
        self.item = item
        self.issue: Issue = world.issues[item.issue]
        self.secondary: Issue | None = world.issues[item.secondary] if item.secondary >= 0 else None
        self.dom: Domain = DOMAIN_BY_NAME[self.issue.domain]
        self.ch = item.channel
        self.moves: list[Move] = []
        self.noise: dict[str, Any] = {
            "typos": 0,
            "corrections": 0,
            "offtopic": 0,
            "failed_fixes": 0,
            "clarifying_questions": 0,
            "two_issues": self.secondary is not None,
            "lowercase_style": False,
            "split_turns": 0,
        }
        self.corrections: list[dict] = []
        iss, prod = self.issue, self.issue.product
        first, last = rng.choice(P.FIRST_NAMES), rng.choice(P.LAST_NAMES)
        agent = rng.choice(P.AGENT_NAMES)
        self.first, self.last, self.agent = first, last, agent
        brand = rng.choice(self.dom.brands) if self.dom.brands else prod.vendor
        self.version = rng.choice(iss.versions) if iss.versions else None
        self.option = rng.choice(iss.options) if iss.options else None
        email = f"{first.lower()}{rng.choice(('.', '_', ''))}{last.lower()}{rng.randrange(1, 99) if rng.random() < 0.5 else ''}@{rng.choice(P.EMAIL_DOMAINS)}"
        if rng.random() < 0.7:
            phone = f"+1 ({rng.randrange(201, 989)}) 555-01{rng.randrange(0, 100):02d}"
        else:
            phone = f"+44 7700 900{rng.randrange(0, 1000):03d}"
        self.email, self.phone = email, phone
        # domain fields that apply to this conversation
        ex: dict[str, str | None] = {f: None for f in EXTRA_FIELDS}
        applicable = set(iss.archetype.extras)
        if self.dom.name == "telecom":
            applicable.add("account_number")
        store_prefix = {"Marketly": "MK", "Crate & Co": "CC", "ShopSphere": "SS"}.get(brand, "OR")
        values = {
            "order_number": f"{store_prefix}-{rng.randrange(1_000_000, 9_999_999)}",
            "carrier": rng.choice(CARRIERS),
            "payment_method": rng.choice(PAYMENTS),
            "amount": f"${rng.randrange(15, 480)}.{rng.choice(('00', '99', '49', '95'))}",
            "account_number": f"{rng.randrange(100, 999)}-{rng.randrange(100000, 999999)}",
            "account_email": email,
        }
        for f in EXTRA_FIELDS:
            if f in applicable:
                ex[f] = values[f]
        self.extras = ex
        if prod.model and self.dom.name in ("telecom", "orders"):
            r = rng.random()
            prod_ref = prod.name if r < 0.5 else prod.model if r < 0.7 else f"{prod.name} ({prod.model})"
        else:
            prod_ref = prod.name
        self.slots: dict[str, Any] = {
            "product": prod.name,
            "model": prod.model or prod.name,
            "prod": prod_ref,
            "vendor": prod.vendor,
            "brand": brand,
            "version": self.version or "",
            "fix_version": iss.fix_version or "",
            "os": self.option or "",
            "plan": self.option or "",
            "code": iss.error_code or "",
            "msg": iss.error_message or "",
            "first": first,
            "last": last,
            "agent": agent,
            "email": email,
            "phone": phone,
            "order": values["order_number"],
            "carrier": values["carrier"],
            "payment": values["payment_method"],
            "amount": values["amount"],
            "account": values["account_number"],
            "speed": rng.choice(("12", "20", "35", "48", "60", "90")),
            "port": rng.choice(("25565", "8080", "443", "3389", "32400")),
            "ticket": f"#{rng.randrange(100000, 999999)}",
            **iss.params,
        }
        self.lower_user = self.ch == "chat" and rng.random() < 0.3
        self.noise["lowercase_style"] = self.lower_user
        self.pending_correction: tuple[int, list] | None = None

    # ------------------------------------------------------------ helpers
    def x(self, template: str, **extra: Any) -> list:
        slots = {**self.slots, **extra} if extra else self.slots
        return expand(template, self.rng, slots)

    def px(self, templates, **extra: Any) -> list:
        slots = {**self.slots, **extra} if extra else self.slots
        return pick(templates, self.rng, slots)

    def move(self, role: str, droppable: bool = False) -> Move:
        m = Move(role, droppable)
        if role == "user" and self.pending_correction is not None:
            at, sentence = self.pending_correction
            if any(mv.role == "agent" for mv in self.moves[at + 1 :]):
                m.say(sentence)
                m.droppable = False
                self.pending_correction = None
                self.noise["corrections"] += 1
        self.moves.append(m)
        return m

    def fact_key(self, fact: str) -> str:
        d = self.dom.name
        if fact == "product":
            return "product_telecom" if d == "telecom" else "product_orders" if d == "orders" else "product"
        if fact == "version":
            return "version_telecom" if d == "telecom" else "version_accounts" if d == "accounts" else "version"
        if fact == "option":
            return "option_software" if d == "software" else "option_plan"
        return fact

    def value_slots(self, fact: str, value: str) -> dict:
        return {
            "product": {"prod": value},
            "version": {"version": value},
            "option": {"os": value, "plan": value},
            "order_number": {"order": value},
            "account_number": {"account": value},
        }.get(fact, {})

    def subject(self, with_product: bool) -> list:
        if with_product:
            return self.px(self.dom.subjects)
        return [self.issue.product.generic]

    def steps_pieces(self, iss: Issue) -> list[list]:
        slots = {**self.slots, **iss.params, "fix_version": iss.fix_version or "", "product": iss.product.name,
                 "model": iss.product.model or iss.product.name}
        return [(pick(s.phrasings, self.rng, slots), s.actor) for s in iss.cause.steps]

    def explain(self, iss: Issue) -> list:
        slots = {**self.slots, **iss.params, "product": iss.product.name, "model": iss.product.model or iss.product.name}
        body = pick(iss.cause.explain, self.rng, slots)
        intro = self.px(P.CAUSE_INTRO)
        outro = self.px(P.CAUSE_OUTRO)
        if "".join(intro).strip():
            return intro + [" "] + decapitalize(body) + ["."] + outro
        return body + ["."] + outro

    # ------------------------------------------------------------ the plan of facts
    def plan_facts(self) -> None:
        rng, iss, dom = self.rng, self.issue, self.dom
        said: dict[str, bool] = {}
        said["product"] = rng.random() < (0.9 if dom.name == "orders" else 0.95)
        said["version"] = bool(self.version) and iss.archetype.uses_version and rng.random() < 0.75
        said["option"] = bool(self.option) and rng.random() < 0.65
        err = None
        if iss.error_code or iss.error_message:
            if rng.random() < 0.75:
                if iss.error_message and (not iss.error_code or rng.random() < 0.5):
                    err = "error_msg"
                else:
                    err = "error_code"
        self.err_form = err
        said["error"] = err is not None
        rates = {"order_number": 0.85, "account_number": 0.45, "account_email": 0.5, "payment_method": 0.5,
                 "amount": 0.45, "carrier": 0.35}
        for f in EXTRA_FIELDS:
            if self.extras[f] is not None:
                said[f] = rng.random() < rates[f]
        self.said = said
        # the wrong-then-corrected fact, if any
        self.wrong: dict[str, str] = {}
        if rng.random() < CORRECTION_RATE:
            options = []
            if said["version"]:
                options += ["version", "version"]
            if said["option"] and len(iss.product.options) > 1:
                options.append("option")
            if said["product"] and dom.name in ("telecom", "orders"):
                options.append("product")
            for f in ("order_number", "account_number"):
                if said.get(f):
                    options.append(f)
            if options:
                f = rng.choice(options)
                wrong = self.wrong_value(f)
                if wrong:
                    self.wrong[f] = wrong

    def applies(self, fact: str) -> bool:
        if fact == "version":
            return bool(self.version) and self.issue.archetype.uses_version
        if fact == "option":
            return bool(self.option)
        if fact == "error":
            return bool(self.issue.archetype.errors)
        return self.extras.get(fact) is not None

    def wrong_value(self, fact: str) -> str | None:
        rng, iss = self.rng, self.issue
        if fact == "version":
            v = self.version or ""
            band, _, patch = v.rpartition(".")
            others = [b for b in iss.product.bands if b != band]
            if others and rng.random() < 0.6:
                return f"{rng.choice(others)}.{patch}"
            alt = str((int(patch) + 1 + int(rng.random() * 3)) % 10)
            return f"{band}.{alt}" if alt != patch else None
        if fact == "option":
            others = [o for o in iss.product.options if o != self.option]
            return rng.choice(others) if others else None
        if fact == "product":
            others = [p for p in self.dom.products if p.key != iss.product.key and p.kind == iss.product.kind]
            others = others or [p for p in self.dom.products if p.key != iss.product.key]
            o = rng.choice(others)
            ref = self.slots["prod"]
            return o.model if ref == iss.product.model else o.name
        if fact in ("order_number", "account_number"):
            v = self.extras[fact] or ""
            digits = [i for i, c in enumerate(v) if c.isdigit()]
            i = rng.choice(digits)
            return v[:i] + str((int(v[i]) + 1 + int(rng.random() * 8)) % 10) + v[i + 1 :]
        return None

    def right_value(self, fact: str) -> str:
        if fact == "product":
            return self.slots["prod"]
        if fact == "version":
            return self.version or ""
        if fact == "option":
            return self.option or ""
        return self.extras[fact] or ""

    def statement(self, fact: str, value: str | None = None) -> list:
        """A user sentence stating a fact (with the wrong value when it is to be corrected)."""
        extra = self.value_slots(fact, value) if value is not None else {}
        if fact == "error":
            return self.px(P.STATE[self.err_form], **extra)
        return self.px(P.STATE[self.fact_key(fact)], **extra)

    def answer(self, fact: str, value: str | None = None) -> list:
        extra = self.value_slots(fact, value) if value is not None else {}
        if fact == "error":
            return self.px(P.ANSWER[self.err_form], **extra)
        if fact == "version":
            return self.px(P.ANSWER["version"], **extra)
        if fact == "option":
            return self.px(P.ANSWER[self.fact_key("option")], **extra)
        return self.px(P.ANSWER[fact], **extra)

    def state_into(self, m: Move, fact: str, answer: bool = False) -> None:
        """Say a fact in move m; a fact scheduled for correction is said wrong first."""
        wrong = self.wrong.pop(fact, None)
        if wrong is not None:
            m.say(self.answer(fact, wrong) if answer else self.statement(fact, wrong))
            right = self.right_value(fact)
            sentence = self.px(P.CORRECTION, right=right, wrong=wrong)
            if self.rng.random() < 0.2:  # corrected on the spot
                m.say(sentence)
                self.noise["corrections"] += 1
            else:
                self.pending_correction = (len(self.moves) - 1, sentence)
            self.corrections.append({"field": "os_or_plan" if fact == "option" else fact, "said": wrong, "final": right})
        else:
            m.say(self.answer(fact) if answer else self.statement(fact))

    # ------------------------------------------------------------ conversation
    def build(self) -> None:
        rng, ch, dom, iss = self.rng, self.ch, self.dom, self.issue
        self.plan_facts()
        said = self.said
        facts = [f for f, v in said.items() if v]
        p_open = P_OPENING[ch]
        opening = [f for f in facts if rng.random() < (p_open + 0.1 if f == "error" else p_open)]
        later = [f for f in facts if f not in opening]
        asked = [f for f in later if rng.random() < 0.8]
        volunteered = [f for f in later if f not in asked]
        unknown = [f for f, v in said.items() if not v and f != "product" and self.applies(f) and rng.random() < 0.18]
        says = iss.archetype.says[int(rng.random() * len(iss.archetype.says))]
        product_in_subject = said["product"] and "{subj}" in says and rng.random() < 0.7

        # -- who opens
        if ch == "chat" and rng.random() < 0.6:
            self.move("agent").say(self.px(P.AGENT_GREETING_CHAT))
        m = self.move("user")
        if ch != "chat" or rng.random() < 0.6:
            m.say(self.px(P.USER_GREETING[ch])).br("\n\n" if ch == "ticket" else "\n" if ch == "forum" else " ")
        if said["product"] and not product_in_subject and "product" not in opening and rng.random() < 0.5:
            ctx = P.CONTEXT_ORDERS if dom.name == "orders" else P.CONTEXT
            m.say(self.px(ctx))
            said_product_context = True
        else:
            said_product_context = False
        if ch == "chat" and rng.random() < 0.2:
            m.say(self.px(P.GIVE_NAME))
        symptom = self.x(says, subj=self.subject(product_in_subject))
        prefix = self.px(P.SYMPTOM_PREFIX)
        if "".join(prefix).strip():
            symptom = prefix + decapitalize(symptom)
        m.say(symptom + self.px(P.SYMPTOM_SUFFIX) + ["."])
        if product_in_subject or said_product_context:
            for lst in (opening, asked, volunteered):
                if "product" in lst:
                    lst.remove("product")
        rng.shuffle(opening)
        for f in opening:
            self.state_into(m, f)
        tried = []
        if rng.random() < 0.25:
            tried = rng.sample(dom.failed_fixes, 2)
            m.say(self.px(P.TRIED, past1=tried[0][1], past2=tried[1][1], past1_cap=_cap([tried[0][1]])))
            self.noise["failed_fixes"] += 1
        if ch != "chat" and rng.random() < 0.6 or ch == "chat" and rng.random() < 0.2:
            m.say(self.px(P.USER_QUESTION))
        if ch == "ticket":
            if rng.random() < 0.5:
                m.say(self.px(P.GIVE_EMAIL))
            if rng.random() < 0.35:
                m.say(self.px(P.GIVE_PHONE))
            m.br().say(self.px(P.TICKET_SIGNOFF))
        elif ch == "forum":
            if rng.random() < 0.08:
                m.say(self.px(P.GIVE_EMAIL))
            if rng.random() < 0.03:
                m.say(self.px(P.GIVE_PHONE))
            if rng.random() < 0.6:
                m.br().say(self.px(P.FORUM_SIGNOFF))

        # -- clarifying questions
        questions = asked + unknown
        rng.shuffle(questions)
        first_agent = True
        if questions:
            groups: list[list[str]] = []
            if ch == "chat":
                i = 0
                while i < len(questions):
                    size = 1 + (rng.random() < 0.35)
                    groups.append(questions[i : i + size])
                    i += size
            else:
                groups = [questions]
            for g in groups:
                a = self.move("agent")
                if first_agent:
                    self.agent_opening(a)
                    first_agent = False
                elif rng.random() < 0.5:
                    a.say(self.px(P.AGENT_ACK))
                for f in g:
                    a.say(self.px(P.ASK[self.fact_key(f) if f in ("product", "version", "option") else f]))
                    self.noise["clarifying_questions"] += 1
                u = self.move("user")
                for j, f in enumerate(g):
                    if j and ch == "chat" and u.items and isinstance(u.items[-1], list):
                        u.items[-1] = u.items[-1] + [","]
                    if f in unknown:
                        k = "option" if f == "option" else "error" if f == "error" else f
                        u.say(self.px(P.DONT_KNOW.get(k, P.DONT_KNOW["version"])))
                    else:
                        self.state_into(u, f, answer=(ch == "chat"))
                if any(f in unknown for f in g) and rng.random() < 0.5:
                    self.move("agent").say(self.px(P.AGENT_NO_MATTER))
        if volunteered:
            if not any(mv.role == "agent" for mv in self.moves[1:]):
                a = self.move("agent")
                self.agent_opening(a)
                first_agent = False
                a.say(self.px(P.AGENT_ACK))
            u = self.move("user")
            k = len(u.items)
            for f in volunteered:
                self.state_into(u, f)
            intro = self.px(P.VOLUNTEER)
            if len(u.items) > k:
                u.items[k] = intro + [" "] + decapitalize(u.items[k])

        # -- off-topic chatter
        if rng.random() < CHATTER_RATE:
            self.noise["offtopic"] += 1
            u = self.move("user", droppable=True)
            u.say(self.px(P.CHATTER_USER))
            reply = self.px(P.CHATTER_AGENT)
            if "".join(reply).strip():
                self.move("agent", droppable=True).say(reply)

        # -- failed suggestions (abandoned fixes)
        r = rng.random()
        n_failed = 0 if r < 0.5 else 1 if r < 0.8 else 2
        pool = [f for f in dom.failed_fixes if f not in tried]
        frames = list(P.SUGGEST_FAILED)
        rng.shuffle(frames)
        for k, (imp, _past) in enumerate(rng.sample(pool, min(n_failed, len(pool)))):
            a = self.move("agent")
            if first_agent:
                self.agent_opening(a)
                first_agent = False
            a.say(self.x(frames[k % len(frames)], imp=imp))
            self.move("user").say(self.px(P.FAILED_REPLY))
            self.noise["failed_fixes"] += 1

        # -- resolution
        if self.secondary is not None:
            outcome = "resolved"
        else:
            r = rng.random()
            outcome = "resolved" if r < RESOLVED_RATE else "no_reply" if r < RESOLVED_RATE + 0.09 else "escalated" if r < RESOLVED_RATE + 0.17 else "later"
        self.outcome = outcome
        self.root_cause_said = False
        self.steps_said = False
        if outcome == "escalated":
            a = self.move("agent")
            if first_agent:
                self.agent_opening(a)
            a.say(self.px(P.ESCALATE))
            if ch == "ticket" and rng.random() < 0.6:
                a.say(self.px(P.TICKET_REF))
            self.sign(a)
            self.move("user").say(self.px(P.ESCALATE_REPLY))
        else:
            self.resolution(first_agent, explain_p=0.82 if outcome == "resolved" else 0.5)
            if outcome == "resolved":
                confirm = P.CONFIRM_SORTED if self.dom.name == "orders" else P.CONFIRM
                self.move("user").say(self.px(confirm[ch]))
                if self.secondary is not None:
                    self.second_issue()
                if rng.random() < 0.7:
                    a = self.move("agent", droppable=True).say(self.px(P.CLOSING_AGENT))
                    if ch == "chat" and rng.random() < 0.5:
                        self.move("user", droppable=True).say(self.px(P.CLOSING_USER))
            elif outcome == "later":
                self.move("user").say(self.px(P.TRY_LATER))
                if rng.random() < 0.5:
                    self.move("agent", droppable=True).say(self.px(P.TRY_LATER_AGENT))
            elif outcome == "no_reply" and (ch != "chat" or rng.random() < 0.5):
                self.move("agent").say(self.px(P.FOLLOW_UP_NO_REPLY))

        if self.pending_correction is not None:  # the user never spoke again: correct at the end
            at, sentence = self.pending_correction
            self.pending_correction = None
            if self.moves[-1].role == "user":
                self.moves[-1].say(sentence)
            else:
                self.moves.append(Move("user").say(sentence))
            self.noise["corrections"] += 1

    def agent_opening(self, a: Move) -> None:
        rng, ch = self.rng, self.ch
        if ch in ("forum", "ticket"):
            hello = P.AGENT_HELLO_NAMED[ch] if rng.random() < 0.6 else P.AGENT_HELLO[ch]
            a.say(self.px(hello)).br("\n\n")
            thanks = self.px(P.THANKS_OPEN)
            if "".join(thanks).strip():
                a.say(thanks)
            if ch == "ticket" and rng.random() < 0.5:
                a.say(self.px(P.TICKET_REF))
        else:
            a.say(self.px(P.AGENT_ACK_NAMED if rng.random() < 0.25 else P.AGENT_ACK))

    def sign(self, a: Move) -> None:
        if self.ch == "ticket" and self.rng.random() < 0.9:
            a.br().say(self.px(P.TICKET_AGENT_SIGN))
        elif self.ch == "forum" and self.rng.random() < 0.5:
            sig = self.px(P.FORUM_AGENT_SIGN)
            if "".join(sig).strip():
                a.br("\n").say(sig)

    def resolution(self, first_agent: bool, explain_p: float) -> None:
        rng, ch, iss = self.rng, self.ch, self.issue
        steps = self.steps_pieces(iss)
        a = self.move("agent")
        if first_agent:
            self.agent_opening(a)
        intro = self.px(P.RESOLVE_INTRO)
        if "".join(intro).strip():
            a.say(intro)
        if rng.random() < explain_p:
            a.say(self.explain(iss))
            self.root_cause_said = True
        self.steps_said = True
        user_steps = [s for s, actor in steps if actor == "user"]
        if ch == "chat" and len(user_steps) >= 2 and rng.random() < 0.6:
            first = True
            for s, actor in steps:
                if actor == "agent":
                    (a if first else self.move("agent")).say(self.px(P.AGENT_STEP, s=s))
                    first = False
                    continue
                if not first:
                    self.move("user", droppable=True).say(self.px(P.STEP_ACK))
                    self.move("agent").say(self.px(P.STEP_NEXT, s=s))
                else:
                    a.say(self.px(P.STEP_FIRST, s=s))
                first = False
            return
        if ch in ("forum", "ticket") and len(steps) >= 2 and rng.random() < 0.7:
            a.br("\n\n").say(self.px(P.STEPS_INTRO_LIST))
            for k, (s, actor) in enumerate(steps, 1):
                if actor == "agent":
                    item = self.px(P.AGENT_STEP_LIST, s=s, s_cap=_cap(s))
                else:
                    item = _cap(s) + ["."]
                a.br("\n").say([f"{k}. "] + item)
            a.br("\n\n")
            if rng.random() < 0.5:
                a.say(self.x("[Let us know if that helps.|Please report back.|Hope this helps!]"))
        else:
            a.say(self.inline_steps(steps))
        self.sign(a)

    def inline_steps(self, steps: list[tuple[list, str]]) -> list:
        """All steps in one stretch of text; steps support carries out are said as "I'll ..."."""
        if all(actor == "user" for _, actor in steps) and len(steps) <= 3:
            ss = [s for s, _ in steps]
            if len(ss) == 1:
                return self.px(P.INLINE_STEPS_1, s1=ss[0], s1_cap=_cap(ss[0]))
            if len(ss) == 2:
                return self.px(P.INLINE_STEPS_2, s1=ss[0], s2=ss[1], s1_cap=_cap(ss[0]))
            return self.px(P.INLINE_STEPS_3, s1=ss[0], s2=ss[1], s3=ss[-1], s1_cap=_cap(ss[0]))
        out: list = []
        for s, actor in steps:
            if out:
                out.append(" ")
            templates = P.AGENT_STEP if actor == "agent" else P.USER_STEP_SINGLE
            out += capitalize(self.px(templates, s=s, s_cap=_cap(s)))
        return out

    def second_issue(self) -> None:
        rng, sec = self.rng, self.secondary
        assert sec is not None
        same = sec.product.key == self.issue.product.key
        subj = [rng.choice(("it", "the same app" if self.dom.name == "software" else "it"))] if same and rng.random() < 0.5 else [Slot(sec.product.name)]
        if not same and rng.random() < 0.5:
            subj = ["my "] + [Slot(sec.product.name)]
        u = self.move("user")
        slots = {**self.slots, "subj": subj, "product": sec.product.name, "model": sec.product.model or sec.product.name}
        u.say(pick(P.SECOND_INTRO, rng, slots) + [" "] + pick(sec.archetype.says, rng, slots) + ["."])
        if sec.error_code and rng.random() < 0.5:
            u.say(expand("[It shows|Error|Code] {c}.", rng, {"c": sec.error_code}))
        a = self.move("agent")
        if rng.random() < 0.5:
            a.say(self.explain(sec))
        a.say(self.inline_steps(self.steps_pieces(sec)))
        if rng.random() < 0.8:
            self.move("user").say(self.px(P.SECOND_CONFIRM))

    # ------------------------------------------------------------ turns
    def turns(self) -> list[tuple[str, str]]:
        rng, ch = self.rng, self.ch
        moves = [m for m in self.moves if not m.empty()]
        # bound the length: drop optional moves from the end, then merge a speaker's consecutive moves
        def count(ms: list[Move]) -> int:
            c, prev = 0, None
            for mv in ms:
                if ch == "chat" or mv.role != prev:
                    c += 1
                prev = mv.role
            return c

        if count(moves) < 3:  # too short to be a conversation: the user promises to try
            moves.append(Move("user").say(self.px(P.TRY_LATER)))
            if self.outcome == "no_reply":
                self.outcome = "later"
        while count(moves) > MAX_TURNS and any(mv.droppable for mv in moves):
            k = max(i for i, mv in enumerate(moves) if mv.droppable)
            moves.pop(k)
        out: list[tuple[str, list]] = []
        merge_all = ch != "chat" or count(moves) > MAX_TURNS
        for mv in moves:
            text = self.realize(mv)
            if out and out[-1][0] == mv.role and merge_all:
                out[-1][1].append(text)
            else:
                out.append((mv.role, [text]))
        sep = " " if ch == "chat" else "\n\n"
        turns = [(role, sep.join(texts)) for role, texts in out]
        # chat: sometimes a user sends one thought as several short lines
        if ch == "chat":
            split: list[tuple[str, str]] = []
            budget = MAX_TURNS - len(turns)
            for role, text in turns:
                parts = text.split(". ")
                if (
                    role == "user"
                    and budget > 0
                    and len(parts) >= 2
                    and parts[0].count('"') % 2 == 0
                    and rng.random() < 0.35
                ):
                    split.append((role, parts[0] + ("" if self.lower_user else ".")))
                    split.append((role, ". ".join(parts[1:])))
                    budget -= 1
                    self.noise["split_turns"] += 1
                else:
                    split.append((role, text))
            turns = split
        return turns

    def realize(self, mv: Move) -> str:
        rng = self.rng
        user = mv.role == "user"
        typo_p = P_TYPO_MOVE[self.ch] if user else 0.03
        typo = mv.noisy and rng.random() < typo_p
        rate = 0.05 + 0.1 * rng.random()
        chunks: list[str] = []
        prev_sentence = False
        for it in mv.items:
            if isinstance(it, str):
                chunks.append(it)
                prev_sentence = False
                continue
            pieces = it
            if user and self.lower_user:
                pieces = lowercase(pieces)
            if typo:
                self.noise["typos"] += add_typos(pieces, rng, rate)
            if prev_sentence:
                chunks.append(" ")
            chunks.extend(pieces)
            prev_sentence = True
        text = tidy("".join(chunks))
        if user and self.lower_user and text.endswith("."):
            text = text[:-1]
        return text
