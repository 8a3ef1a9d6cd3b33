"""What the agent writes: its greeting and signature, the fix (root cause and steps, in the channel's style),
and the fix of a second issue the customer brings once the first is resolved."""

from __future__ import annotations

from . import phrases as P
from .dialogue import Move, Scene, Script, _cap
from .grammar import Slot, capitalize, expand, pick
from .model import Issue


class AgentLines:
    def __init__(self, scene: Scene, script: Script) -> None:
        self.scene, self.script, self.rng, self.rates = scene, script, scene.rng, scene.rates
        self.ch = scene.ch

    def opening(self, a: Move) -> None:
        """The agent's greeting in its first move."""
        rng, rates, ch, px = self.rng, self.rates, self.ch, self.scene.px
        if ch in ("forum", "ticket"):
            hello = P.AGENT_HELLO_NAMED[ch] if rng.random() < rates.hello_named else P.AGENT_HELLO[ch]
            a.say(px(hello)).br("\n\n")
            thanks = px(P.THANKS_OPEN)
            if "".join(thanks).strip():
                a.say(thanks)
            if ch == "ticket" and rng.random() < rates.opening_ticket_ref:
                a.say(px(P.TICKET_REF))
        else:
            a.say(px(P.AGENT_ACK_NAMED if rng.random() < rates.chat_ack_named else P.AGENT_ACK))

    def sign(self, a: Move) -> None:
        if self.ch == "ticket" and self.rng.random() < self.rates.ticket_signature:
            a.br().say(self.scene.px(P.TICKET_AGENT_SIGN))
        elif self.ch == "forum" and self.rng.random() < self.rates.forum_signature:
            sig = self.scene.px(P.FORUM_AGENT_SIGN)
            if "".join(sig).strip():
                a.br("\n").say(sig)

    def fix(self, first_agent: bool, explain_p: float) -> None:
        """The fix: the root cause (with probability explain_p) and the steps, one by one in chat, as a
        numbered list in forums and tickets, or inline."""
        rng, rates, ch, scene, script = self.rng, self.rates, self.ch, self.scene, self.script
        iss = scene.issue
        steps = scene.steps_pieces(iss)
        a = script.move("agent")
        if first_agent:
            self.opening(a)
        intro = scene.px(P.RESOLVE_INTRO)
        if "".join(intro).strip():
            a.say(intro)
        if rng.random() < explain_p:
            a.say(scene.explain(iss))
            script.root_cause_said = True
        script.steps_said = True
        user_steps = [s for s, actor in steps if actor == "user"]
        if ch == "chat" and len(user_steps) >= 2 and rng.random() < rates.chat_steps_one_by_one:
            first = True
            for s, actor in steps:
                if actor == "agent":
                    (a if first else script.move("agent")).say(scene.px(P.AGENT_STEP, s=s))
                    first = False
                    continue
                if not first:
                    script.move("user", droppable=True).say(scene.px(P.STEP_ACK))
                    script.move("agent").say(scene.px(P.STEP_NEXT, s=s))
                else:
                    a.say(scene.px(P.STEP_FIRST, s=s))
                first = False
            return
        if ch in ("forum", "ticket") and len(steps) >= 2 and rng.random() < rates.listed_steps:
            a.br("\n\n").say(scene.px(P.STEPS_INTRO_LIST))
            for k, (s, actor) in enumerate(steps, 1):
                if actor == "agent":
                    item = scene.px(P.AGENT_STEP_LIST, s=s, s_cap=_cap(s))
                else:
                    item = _cap(s) + ["."]
                a.br("\n").say([f"{k}. "] + item)
            a.br("\n\n")
            if rng.random() < rates.asks_report_back:
                a.say(scene.x("[Let us know if that helps.|Please report back.|Hope this helps!]"))
        else:
            a.say(self.inline_steps(steps))
        self.sign(a)

    def inline_steps(self, steps: list[tuple[list, str]]) -> list:
        """All steps in one stretch of text; steps support carries out are said as "I'll ..."."""
        px = self.scene.px
        if all(actor == "user" for _, actor in steps) and len(steps) <= 3:
            ss = [s for s, _ in steps]
            if len(ss) == 1:
                return px(P.INLINE_STEPS_1, s1=ss[0], s1_cap=_cap(ss[0]))
            if len(ss) == 2:
                return px(P.INLINE_STEPS_2, s1=ss[0], s2=ss[1], s1_cap=_cap(ss[0]))
            return px(P.INLINE_STEPS_3, s1=ss[0], s2=ss[1], s3=ss[-1], s1_cap=_cap(ss[0]))
        out: list = []
        for s, actor in steps:
            if out:
                out.append(" ")
            templates = P.AGENT_STEP if actor == "agent" else P.USER_STEP_SINGLE
            out += capitalize(px(templates, s=s, s_cap=_cap(s)))
        return out

    def second_issue(self) -> None:
        """The customer brings a second issue after the first is resolved, and the agent fixes it inline."""
        rng, rates, scene, script = self.rng, self.rates, self.scene, self.script
        sec: Issue | None = scene.secondary
        assert sec is not None
        same = sec.product.key == scene.issue.product.key
        subj = [rng.choice(("it", "the same app" if scene.dom.name == "software" else "it"))] \
            if same and rng.random() < rates.second_same_product_as_it else [Slot(sec.product.name)]
        if not same and rng.random() < rates.second_my_product:
            subj = ["my "] + [Slot(sec.product.name)]
        u = script.move("user")
        slots = {**scene.slots, "subj": subj, "product": sec.product.name, "model": sec.product.model or sec.product.name}
        u.say(pick(P.SECOND_INTRO, rng, slots) + [" "] + pick(sec.archetype.says, rng, slots) + ["."])
        if sec.error_code and rng.random() < rates.second_error_code:
            u.say(expand("[It shows|Error|Code] {c}.", rng, {"c": sec.error_code}))
        a = script.move("agent")
        if rng.random() < rates.second_explained:
            a.say(scene.explain(sec))
        a.say(self.inline_steps(scene.steps_pieces(sec)))
        if rng.random() < rates.second_confirmed:
            script.move("user").say(scene.px(P.SECOND_CONFIRM))
