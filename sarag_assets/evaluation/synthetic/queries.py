"""Benchmark queries over a generated corpus: single-turn paraphrases and multi-turn follow-ups.

Every query targets one latent issue; its gold set is every conversation whose primary or secondary issue is
that issue, and its nuggets are the issue's root cause and resolution steps. Queries are written from their
own phrasings (the archetype's ``ask`` clauses and the frames below), never from conversation sentences.
A single-turn query states just enough (product, version, error code, OS/plan) to single out its issue
among issues with the same symptom; a follow-up states the entities in earlier turns and asks with a last
turn that names none of them.
"""

from __future__ import annotations

import bisect
from random import Random
from typing import Any

from .grammar import Slot, add_typos, capitalize, expand, join_pieces, pick
from .model import Issue
from .rates import RATES, GeneratorRates
from .world import DOMAIN_BY_NAME, PlanItem, World

SINGLE_FRAMES = (
    "{sym}{extras}. [How do I fix this?|What's the fix?|Is there a known fix?|What causes this?|Any solution?]",
    "{sym}{extras}",
    "[Anyone else seeing this:|Has anyone solved this:|Known issue?] {sym}{extras}",
    "[Help|Question|Problem]: {sym}{extras}[. Thanks!|. Ideas?|]",
    "[How to fix|Solution for|Fix for]: {sym}{extras}",
)
OPENERS = ("", "", "Hi. ", "Hey, ", "Quick question: ", "I've got a problem: ")
AGENT_MIDDLE = (
    "Thanks. Does it happen every time?",
    "I see. Did this start after an update?",
    "Got it, that sounds familiar.",
    "Okay. Is it on one device or all of them?",
    "Sorry to hear that. How long has this been going on?",
    "Understood, let me look into it.",
)
AGENT_GREET = ("Hi! What can I help you with?", "Hello, how can I help?", "Hi there, what's going on?")
AGENT_ASK_PROBLEM = ("Thanks. What seems to be the problem?", "OK. What's going wrong with it?", "Got it. What happens exactly?")
LAST_SAME = (
    "and what fixed it for that one?",
    "So how did people end up fixing it?",
    "Did anyone actually solve that?",
    "What was the cause in the end, and the fix?",
    "ok, and how do I get rid of it?",
    "What's the fix that worked for others?",
)
LAST_SYMPTOM_TAIL = ("How do people fix that?", "Any known fix?", "What's causing it?", "How was that solved for others?")
LAST_OLDER = (
    "did anyone solve that on the older version?",
    "What about the previous release, how was it fixed there?",
    "We still have a few on the older one. How did people fix it on that?",
    "and if it's the older release, what's the fix?",
)
LAST_NEWER = (
    "and on the newer version, what fixed it?",
    "What about after upgrading, same problem and how was it solved there?",
    "did anyone fix that on the newer release?",
)
LAST_OTHER = (
    "What about the other one, has anyone fixed that problem on it?",
    "and for the other device, how was it solved?",
    "Does the other one get the same thing, and what's the fix there?",
    "same question for the other one?",
)
OTHER_OPEN = (
    "I have {a} and {b}[ at home| in the office|].",
    "We use two of yours: {a} and {b}.",
    "Two things here, {a} and {b}.",
)
A_CAUSE = ("On that one it's usually {cause}.", "That's typically {cause} there.", "For that setup the known cause is {cause}.")


def _cum(weights: list[float]) -> list[float]:
    out, acc = [], 0.0
    for w in weights:
        acc += w
        out.append(acc)
    return out


class _QueryMaker:
    def __init__(self, world: World, gold: dict[int, list[str]], rng: Random, rates: GeneratorRates) -> None:
        self.world, self.gold, self.rng = world, gold, rng
        self.rates, self.typos = rates.queries, rates.typos
        self.eligible = [i for i in range(len(world.issues)) if gold.get(i)]
        self.cum = _cum([float(len(gold[i])) for i in self.eligible])
        self.same_arch: dict[tuple[str, str], list[Issue]] = {}
        for iss in world.issues:
            self.same_arch.setdefault((iss.domain, iss.archetype.key), []).append(iss)

    def idx(self, iss: Issue) -> int:
        return self.world.index[iss.issue_id]

    def pick_issue(self) -> int:
        rng = self.rng
        if rng.random() < self.rates.by_conversations:
            return self.eligible[bisect.bisect_left(self.cum, rng.random() * self.cum[-1])]
        return self.eligible[int(rng.random() * len(self.eligible))]

    # ------------------------------------------------------------ stating an issue
    def attrs(self, iss: Issue, force_product: bool) -> dict[str, Any]:
        """Which facts a query states about an issue: random, then added until the issue is unambiguous."""
        rng, rates = self.rng, self.rates
        st: dict[str, Any] = {
            "product": force_product or rng.random() < rates.states_product,
            "version": rng.choice(iss.versions) if iss.versions and rng.random() < rates.states_version else None,
            "code": iss.error_code if iss.error_code and rng.random() < rates.states_code else None,
            "option": rng.choice(iss.options) if iss.options and rng.random() < rates.states_option else None,
        }
        cands = self.same_arch[(iss.domain, iss.archetype.key)]

        def n_match() -> int:
            return sum(
                1
                for j in cands
                if (not st["product"] or j.product.key == iss.product.key)
                and (st["version"] is None or st["version"] in j.versions)
                and (st["code"] is None or j.error_code == st["code"])
                and (st["option"] is None or st["option"] in j.options)
            )

        if n_match() > 1 and not st["product"]:
            st["product"] = True
        if n_match() > 1 and st["version"] is None and iss.versions:
            st["version"] = rng.choice(iss.versions)
        if n_match() > 1 and st["code"] is None and iss.error_code:
            st["code"] = iss.error_code
        return st

    def slots(self, iss: Issue) -> dict[str, Any]:
        rng = self.rng
        return {
            "product": iss.product.name,
            "model": iss.product.model or iss.product.name,
            "speed": rng.choice(("10", "15", "25", "40", "70")),
            "port": rng.choice(("25565", "8080", "443", "3389", "32400")),
            "plan": iss.options[0] if iss.options else "",
            "carrier": "the carrier",
            "amount": "the full amount",
        }

    def product_ref(self, iss: Issue, stated: bool) -> list:
        if not stated:
            return [iss.product.generic if not iss.product.generic.startswith("my ") else iss.product.generic]
        dom = DOMAIN_BY_NAME[iss.domain]
        return pick(dom.query_refs, self.rng, self.slots(iss))

    def symptom(self, iss: Issue, p: list, templates: tuple[str, ...] | None = None) -> list:
        return pick(templates or iss.archetype.ask, self.rng, {**self.slots(iss), "p": p})

    def extras(self, iss: Issue, st: dict[str, Any], skip_product_version: bool = False) -> list:
        rng = self.rng
        dom = DOMAIN_BY_NAME[iss.domain]
        parts: list[list] = []
        if st["version"] is not None:
            parts.append(expand(" [on|with] " + dom.version_word + " {v}", rng, {"v": st["version"]}))
        if st["option"] is not None:
            if iss.domain == "software":
                parts.append(expand(" on {o}", rng, {"o": st["option"]}))
            else:
                parts.append(expand(" [({o} plan)|on the {o} plan]", rng, {"o": st["option"]}))
        if st["code"] is not None:
            parts.append(expand("[, error| - error| (code|, code] {c}", rng, {"c": st["code"]}))
            if parts[-1][0].startswith(" (code"):
                parts[-1].append(")")
        rng.shuffle(parts)
        return [p for part in parts for p in part]

    def noisy(self, template_pieces: list) -> str:
        pieces = capitalize(template_pieces)
        if self.rng.random() < self.rates.typo_turn:
            add_typos(pieces, self.rng, self.rates.typo_rate, self.typos)
        return join_pieces(pieces)

    def nuggets(self, iss: Issue) -> list[str]:
        return [iss.root_cause, *iss.steps]

    # ------------------------------------------------------------ query kinds
    def single(self, i: int) -> dict:
        iss = self.world.issues[i]
        st = self.attrs(iss, force_product=False)
        sym = self.symptom(iss, self.product_ref(iss, st["product"]))
        text = self.noisy(pick(SINGLE_FRAMES, self.rng, {"sym": sym, "extras": self.extras(iss, st)}))
        return self.record("single", "single", [("user", text)], iss)

    def followup(self) -> dict:
        rng, rates = self.rng, self.rates
        for _ in range(20):
            i = self.pick_issue()
            iss = self.world.issues[i]
            r = rng.random()
            if r < rates.followup_version:
                q = self.fu_older_newer(iss)
            elif r < rates.followup_version_or_product:
                q = self.fu_other_product(iss)
            elif r < rates.followup_version_product_or_symptom:
                q = self.fu_symptom_last(iss)
            else:
                q = self.fu_same(iss)
            if q is not None:
                return q
        return self.fu_same(self.world.issues[self.pick_issue()])  # type: ignore[return-value]

    def fu_same(self, iss: Issue) -> dict:
        rng = self.rng
        st = self.attrs(iss, force_product=True)
        sym = self.symptom(iss, self.product_ref(iss, True))
        u1 = self.noisy(expand("{o}{sym}{extras}.", rng, {"o": rng.choice(OPENERS), "sym": sym, "extras": self.extras(iss, st)}))
        turns = [("user", u1), ("agent", rng.choice(AGENT_MIDDLE)), ("user", self.noisy([rng.choice(LAST_SAME)]))]
        if rng.random() < self.rates.agent_greets_first:
            turns.insert(0, ("agent", rng.choice(AGENT_GREET)))
        return self.record("followup", "same_issue", turns, iss)

    def fu_symptom_last(self, iss: Issue) -> dict | None:
        """Entities first, the symptom only in the last turn (which names no product, version or code)."""
        rng = self.rng
        subject_first = tuple(t for t in iss.archetype.ask if t.startswith("{p}"))
        if not subject_first:
            return None
        st = self.attrs(iss, force_product=True)
        dom = DOMAIN_BY_NAME[iss.domain]
        bits = [self.product_ref(iss, True)]
        if st["version"] is not None:
            bits.append(expand(f"[on|with] {dom.version_word} {{v}}", rng, {"v": st["version"]}))
        if st["option"] is not None:
            bits.append(expand("[on {o}|({o})]" if iss.domain == "software" else "[on the {o} plan|({o})]", rng, {"o": st["option"]}))
        u1 = expand("[I have|I'm using|We run|Setup here:] {b}.", rng, {"b": [p for b in bits for p in (b + [" "])]})
        if st["code"] is not None:
            u1 += expand(" [It shows|I get|Error:] {c}.", rng, {"c": st["code"]})
        sym = self.symptom(iss, [iss.product.generic], subject_first)
        last = capitalize(sym) + [". "] + [rng.choice(LAST_SYMPTOM_TAIL)]
        turns = [("agent", rng.choice(AGENT_GREET)), ("user", self.noisy(u1)),
                 ("agent", rng.choice(AGENT_ASK_PROBLEM)), ("user", self.noisy(last))]
        return self.record("followup", "symptom_last", turns, iss)

    def fu_older_newer(self, iss: Issue) -> dict | None:
        rng = self.rng
        if not iss.band or not iss.product.bands:
            return None
        bands = iss.product.bands
        here = bands.index(iss.band)
        same = [j for j in self.same_arch[(iss.domain, iss.archetype.key)] if j.product.key == iss.product.key and j is not iss]
        older = [j for j in same if j.band is not None and bands.index(j.band) < here]
        newer = [j for j in same if j.band is not None and bands.index(j.band) > here]
        options = []
        if len(older) == 1 and self.gold.get(self.idx(older[0])):
            options.append(("older_version", older[0], LAST_OLDER))
        if len(newer) == 1 and self.gold.get(self.idx(newer[0])):
            options.append(("newer_version", newer[0], LAST_NEWER))
        if not options:
            return None
        pattern, target, lasts = rng.choice(options)
        st = self.attrs(iss, force_product=True)
        if st["version"] is None:
            st["version"] = rng.choice(iss.versions)
        sym = self.symptom(iss, self.product_ref(iss, True))
        u1 = self.noisy(expand("{o}{sym}{extras}.", rng, {"o": rng.choice(OPENERS), "sym": sym, "extras": self.extras(iss, st)}))
        if rng.random() < self.rates.agent_names_cause:
            agent = rng.choice(A_CAUSE).replace("{cause}", iss.root_cause)
        else:
            agent = rng.choice(AGENT_MIDDLE)
        turns = [("user", u1), ("agent", agent), ("user", self.noisy([rng.choice(lasts)]))]
        return self.record("followup", pattern, turns, target)

    def fu_other_product(self, iss: Issue) -> dict | None:
        """History names two products and describes the problem on one; the question is about the other."""
        rng = self.rng
        others = [j for j in iss.related if self.gold.get(self.idx(j))]
        if not others:
            return None
        target = rng.choice(others)
        same_target = [j for j in self.same_arch[(iss.domain, iss.archetype.key)] if j.product.key == target.product.key]
        st = self.attrs(iss, force_product=True)
        a_ref = self.product_ref(iss, True)
        by_name = rng.random() < self.rates.other_by_name or not target.product.model
        b_ref: list = ["the "] + [Slot(target.product.name)] if by_name else ["a "] + [Slot(target.product.model)]
        if len(same_target) > 1:  # the target needs its version to be unambiguous
            dom = DOMAIN_BY_NAME[iss.domain]
            b_ref = b_ref + [f" ({dom.version_word} "] + [Slot(rng.choice(target.versions))] + [")"]
        u1 = expand(rng.choice(OTHER_OPEN), rng, {"a": ["the "] + [Slot(iss.product.name)], "b": b_ref})
        sym = self.symptom(iss, a_ref)
        u1 += [" "] + capitalize(sym) + self.extras(iss, {**st, "product": True}) + ["."]
        turns = [("user", self.noisy(u1)), ("agent", rng.choice(AGENT_MIDDLE)), ("user", self.noisy([rng.choice(LAST_OTHER)]))]
        return self.record("followup", "other_product", turns, target)

    def record(self, kind: str, pattern: str, turns: list[tuple[str, str]], target: Issue) -> dict:
        return {
            "query_id": "",
            "kind": kind,
            "pattern": pattern,
            "issue_id": target.issue_id,
            "turns": [{"speaker": s, "text": t} for s, t in turns],
            "gold": list(self.gold[self.idx(target)]),
            "nuggets": self.nuggets(target),
        }


def query_count(n: int) -> int:
    return min(2000, max(50, n // 5))


def build_queries(world: World, plan: list[PlanItem], n: int, seed: int, rates: GeneratorRates = RATES) -> list[dict]:
    rng = Random(seed * 1_000_003 + 37)
    gold: dict[int, list[str]] = {}
    for item in plan:  # plan order = corpus order, so gold lists are in corpus order
        gold.setdefault(item.issue, []).append(item.dialogue_id)
        if item.secondary >= 0 and item.secondary != item.issue:
            gold.setdefault(item.secondary, []).append(item.dialogue_id)
    maker = _QueryMaker(world, gold, rng, rates)
    total = query_count(n)
    n_follow = total // 2
    out = [maker.single(maker.pick_issue()) for _ in range(total - n_follow)]
    out += [maker.followup() for _ in range(n_follow)]
    rng.shuffle(out)
    width = max(4, len(str(total)))
    for k, q in enumerate(out):
        q["query_id"] = f"q-{k:0{width}d}"
    return out
