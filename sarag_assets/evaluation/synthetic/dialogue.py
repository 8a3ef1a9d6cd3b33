"""What one planned conversation is made of: its scene (the issue, the people, the values, and the random
stream every choice draws from) and its script (the moves written so far, and the noise they carry).

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
from .grammar import capitalize, decapitalize, expand, pick
from .model import Domain, Issue
from .rates import RATES, GeneratorRates
from .world import DOMAIN_BY_NAME, EPOCH, PlanItem, World

MAX_TURNS = 25
USER_ROLES = ("user", "customer", "client")
AGENT_ROLES = ("agent", "support", "assistant")
EPOCH_DT = datetime(EPOCH.year, EPOCH.month, EPOCH.day)
EXTRA_FIELDS = ("order_number", "carrier", "payment_method", "amount", "account_number", "account_email")


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


class Scene:
    """The issue, the customer and the agent, the values the conversation may state, and its random stream."""

    def __init__(self, item: PlanItem, world: World, seed: int, rates: GeneratorRates = RATES) -> None:
        self.rng = rng = Random((seed % 2**32) * 2_654_435_761 + item.position * 97 + 5)
        self.rates = dialogue = rates.dialogue
        self.typos = rates.typos
        self.item = item
        self.issue: Issue = world.issues[item.issue]
        self.secondary: Issue | None = world.issues[item.secondary] if item.secondary >= 0 else None
        self.dom: Domain = DOMAIN_BY_NAME[self.issue.domain]
        self.ch = item.channel
        iss, prod = self.issue, self.issue.product
        first, last = rng.choice(P.FIRST_NAMES), rng.choice(P.LAST_NAMES)
        agent = rng.choice(P.AGENT_NAMES)
        self.first, self.last, self.agent = first, last, agent
        brand = rng.choice(self.dom.brands) if self.dom.brands else prod.vendor
        self.version = rng.choice(iss.versions) if iss.versions else None
        self.option = rng.choice(iss.options) if iss.options else None
        separator = rng.choice(('.', '_', ''))
        digits = rng.randrange(1, 99) if rng.random() < dialogue.email_with_number else ''
        email = f"{first.lower()}{separator}{last.lower()}{digits}@{rng.choice(P.EMAIL_DOMAINS)}"
        if rng.random() < dialogue.us_phone:
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
            prod_ref = (prod.name if r < dialogue.product_ref_name
                        else prod.model if r < dialogue.product_ref_name_or_model else f"{prod.name} ({prod.model})")
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
        self.lower_user = self.ch == "chat" and rng.random() < dialogue.lowercase_chat_user

    def x(self, template: str, **extra: Any) -> list:
        slots = {**self.slots, **extra} if extra else self.slots
        return expand(template, self.rng, slots)

    def px(self, templates, **extra: Any) -> list:
        slots = {**self.slots, **extra} if extra else self.slots
        return pick(templates, self.rng, slots)

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


class Script:
    """The moves written so far, how the conversation ended, and the noise that went into it (the truth
    record reports it)."""

    def __init__(self, scene: Scene) -> None:
        self.moves: list[Move] = []
        self.noise: dict[str, Any] = {
            "typos": 0,
            "corrections": 0,
            "offtopic": 0,
            "failed_fixes": 0,
            "clarifying_questions": 0,
            "two_issues": scene.secondary is not None,
            "lowercase_style": scene.lower_user,
            "split_turns": 0,
        }
        self.corrections: list[dict] = []
        self.pending_correction: tuple[int, list] | None = None  # (move it follows, sentence)
        self.outcome = ""
        self.root_cause_said = False
        self.steps_said = False

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


    def correct_at_the_end(self) -> None:
        """A correction still pending when the customer never spoke again closes the conversation."""
        if self.pending_correction is not None:
            at, sentence = self.pending_correction
            self.pending_correction = None
            if self.moves[-1].role == "user":
                self.moves[-1].say(sentence)
            else:
                self.moves.append(Move("user").say(sentence))
            self.noise["corrections"] += 1
