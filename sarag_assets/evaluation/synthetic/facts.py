"""Which facts a customer gives (product, version, OS or plan, error, the domain's fields), which one is
said wrong first and corrected, and the sentences that state them."""

from __future__ import annotations

from . import phrases as P
from .dialogue import EXTRA_FIELDS, Move, Scene, Script


class Facts:
    def __init__(self, scene: Scene, script: Script) -> None:
        self.scene, self.script, self.rng = scene, script, scene.rng
        self.said: dict[str, bool] = {}
        self.err_form: str | None = None  # "error_msg" or "error_code": how the error is shown
        self.wrong: dict[str, str] = {}  # the fact to be said wrong first, with its wrong value

    def fact_key(self, fact: str) -> str:
        d = self.scene.dom.name
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

    def plan(self) -> None:
        rng, iss, dom, rates = self.rng, self.scene.issue, self.scene.dom, self.scene.rates
        said: dict[str, bool] = {}
        said["product"] = rng.random() < (rates.says_product_orders if dom.name == "orders" else rates.says_product)
        said["version"] = bool(self.scene.version) and iss.archetype.uses_version and rng.random() < rates.says_version
        said["option"] = bool(self.scene.option) and rng.random() < rates.says_option
        err = None
        if iss.error_code or iss.error_message:
            if rng.random() < rates.shows_error:
                if iss.error_message and (not iss.error_code or rng.random() < rates.error_as_message):
                    err = "error_msg"
                else:
                    err = "error_code"
        self.err_form = err
        said["error"] = err is not None
        for f in EXTRA_FIELDS:
            if self.scene.extras[f] is not None:
                said[f] = rng.random() < rates.says_extra[f]
        self.said = said
        # the wrong-then-corrected fact, if any
        self.wrong = {}
        if rng.random() < rates.correction:
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
        scene = self.scene
        if fact == "version":
            return bool(scene.version) and scene.issue.archetype.uses_version
        if fact == "option":
            return bool(scene.option)
        if fact == "error":
            return bool(scene.issue.archetype.errors)
        return scene.extras.get(fact) is not None

    def wrong_value(self, fact: str) -> str | None:
        scene, rng, iss = self.scene, self.rng, self.scene.issue
        if fact == "version":
            v = scene.version or ""
            band, _, patch = v.rpartition(".")
            others = [b for b in iss.product.bands if b != band]
            if others and rng.random() < scene.rates.wrong_version_other_band:
                return f"{rng.choice(others)}.{patch}"
            alt = str((int(patch) + 1 + int(rng.random() * 3)) % 10)
            return f"{band}.{alt}" if alt != patch else None
        if fact == "option":
            others = [o for o in iss.product.options if o != scene.option]
            return rng.choice(others) if others else None
        if fact == "product":
            others = [p for p in scene.dom.products if p.key != iss.product.key and p.kind == iss.product.kind]
            others = others or [p for p in scene.dom.products if p.key != iss.product.key]
            o = rng.choice(others)
            ref = scene.slots["prod"]
            return o.model if ref == iss.product.model else o.name
        if fact in ("order_number", "account_number"):
            v = scene.extras[fact] or ""
            digits = [i for i, c in enumerate(v) if c.isdigit()]
            i = rng.choice(digits)
            return v[:i] + str((int(v[i]) + 1 + int(rng.random() * 8)) % 10) + v[i + 1 :]
        return None

    def right_value(self, fact: str) -> str:
        scene = self.scene
        if fact == "product":
            return scene.slots["prod"]
        if fact == "version":
            return scene.version or ""
        if fact == "option":
            return scene.option or ""
        return scene.extras[fact] or ""

    def statement(self, fact: str, value: str | None = None) -> list:
        """A user sentence stating a fact (with the wrong value when it is to be corrected)."""
        extra = self.value_slots(fact, value) if value is not None else {}
        if fact == "error":
            return self.scene.px(P.STATE[self.err_form], **extra)
        return self.scene.px(P.STATE[self.fact_key(fact)], **extra)

    def answer(self, fact: str, value: str | None = None) -> list:
        extra = self.value_slots(fact, value) if value is not None else {}
        if fact == "error":
            return self.scene.px(P.ANSWER[self.err_form], **extra)
        if fact == "version":
            return self.scene.px(P.ANSWER["version"], **extra)
        if fact == "option":
            return self.scene.px(P.ANSWER[self.fact_key("option")], **extra)
        return self.scene.px(P.ANSWER[fact], **extra)

    def state_into(self, m: Move, fact: str, answer: bool = False) -> None:
        """Say a fact in move m; a fact scheduled for correction is said wrong first."""
        wrong = self.wrong.pop(fact, None)
        if wrong is not None:
            m.say(self.answer(fact, wrong) if answer else self.statement(fact, wrong))
            right = self.right_value(fact)
            sentence = self.scene.px(P.CORRECTION, right=right, wrong=wrong)
            if self.rng.random() < self.scene.rates.corrected_on_the_spot:
                m.say(sentence)
                self.script.noise["corrections"] += 1
            else:
                self.script.pending_correction = (len(self.script.moves) - 1, sentence)
            self.script.corrections.append({"field": "os_or_plan" if fact == "option" else fact, "said": wrong, "final": right})
        else:
            m.say(self.answer(fact) if answer else self.statement(fact))
