"""The course of one conversation, written as moves: the opening post, the agent's questions, chatter, fixes
that fail, and the end (resolved, escalated, no reply, or tried later), with a second issue now and then.

Every choice draws from the scene's random stream in the order the conversation is written; the parts are
methods in that order, and reordering them changes every corpus.
"""

from __future__ import annotations

from . import phrases as P
from .dialogue import Move, Scene, Script, _cap
from .agent_lines import AgentLines
from .facts import Facts
from .grammar import decapitalize


class Course:
    def __init__(self, scene: Scene, script: Script) -> None:
        self.scene, self.script, self.rng, self.rates = scene, script, scene.rng, scene.rates
        self.ch = scene.ch
        self.facts = Facts(scene, script)
        self.agent = AgentLines(scene, script)
        self.first_agent = True  # the agent's next move is its first: it greets

    def write(self) -> None:
        self.facts.plan()
        opening, asked, volunteered, unknown, says, product_in_subject = self._when_facts_are_said()
        tried = self._opening_post(opening, asked, volunteered, says, product_in_subject)
        self._questions(asked, unknown)
        self._volunteered(volunteered)
        self._chatter()
        self._failed_suggestions(tried)
        self._end()
        self.script.correct_at_the_end()

    def _when_facts_are_said(self) -> tuple[list[str], list[str], list[str], list[str], str, bool]:
        """Which given facts open the conversation, which the agent asks for, which come unasked later, and
        which the agent asks for in vain; the symptom's sentence."""
        rng, rates, facts, iss = self.rng, self.rates, self.facts, self.scene.issue
        said = facts.said
        given = [f for f, v in said.items() if v]
        p_open = rates.fact_in_opening[self.ch]
        p_error = p_open + rates.error_in_opening_bonus
        opening = [f for f in given if rng.random() < (p_error if f == "error" else p_open)]
        later = [f for f in given if f not in opening]
        asked = [f for f in later if rng.random() < rates.later_fact_asked]
        volunteered = [f for f in later if f not in asked]
        unknown = [f for f, v in said.items()
                   if not v and f != "product" and facts.applies(f) and rng.random() < rates.unknown_fact]
        says = iss.archetype.says[int(rng.random() * len(iss.archetype.says))]
        product_in_subject = said["product"] and "{subj}" in says and rng.random() < rates.product_in_subject
        return opening, asked, volunteered, unknown, says, product_in_subject

    def _opening_post(self, opening: list[str], asked: list[str], volunteered: list[str], says: str,
                      product_in_subject: bool) -> list:
        """Who opens, the customer's greeting, the symptom and the opening facts; returns the fixes the
        customer says were tried already."""
        rng, rates, ch, scene, script = self.rng, self.rates, self.ch, self.scene, self.script
        px = scene.px
        if ch == "chat" and rng.random() < rates.chat_agent_greets_first:
            script.move("agent").say(px(P.AGENT_GREETING_CHAT))
        m = script.move("user")
        if ch != "chat" or rng.random() < rates.chat_user_greets:
            m.say(px(P.USER_GREETING[ch])).br("\n\n" if ch == "ticket" else "\n" if ch == "forum" else " ")
        if (self.facts.said["product"] and not product_in_subject and "product" not in opening
                and rng.random() < rates.product_context):
            ctx = P.CONTEXT_ORDERS if scene.dom.name == "orders" else P.CONTEXT
            m.say(px(ctx))
            said_product_context = True
        else:
            said_product_context = False
        if ch == "chat" and rng.random() < rates.chat_gives_name:
            m.say(px(P.GIVE_NAME))
        symptom = scene.x(says, subj=scene.subject(product_in_subject))
        prefix = px(P.SYMPTOM_PREFIX)
        if "".join(prefix).strip():
            symptom = prefix + decapitalize(symptom)
        m.say(symptom + px(P.SYMPTOM_SUFFIX) + ["."])
        if product_in_subject or said_product_context:
            for lst in (opening, asked, volunteered):
                if "product" in lst:
                    lst.remove("product")
        rng.shuffle(opening)
        for f in opening:
            self.facts.state_into(m, f)
        tried = []
        if rng.random() < rates.tried_fixes:
            tried = rng.sample(scene.dom.failed_fixes, 2)
            m.say(px(P.TRIED, past1=tried[0][1], past2=tried[1][1], past1_cap=_cap([tried[0][1]])))
            script.noise["failed_fixes"] += 1
        if rng.random() < rates.user_question[ch]:
            m.say(px(P.USER_QUESTION))
        if ch == "ticket":
            if rng.random() < rates.ticket_gives_email:
                m.say(px(P.GIVE_EMAIL))
            if rng.random() < rates.ticket_gives_phone:
                m.say(px(P.GIVE_PHONE))
            m.br().say(px(P.TICKET_SIGNOFF))
        elif ch == "forum":
            if rng.random() < rates.forum_gives_email:
                m.say(px(P.GIVE_EMAIL))
            if rng.random() < rates.forum_gives_phone:
                m.say(px(P.GIVE_PHONE))
            if rng.random() < rates.forum_signoff:
                m.br().say(px(P.FORUM_SIGNOFF))
        return tried

    def _agent_move(self) -> Move:
        """The agent's next move, opened with its greeting when it is the first."""
        a = self.script.move("agent")
        if self.first_agent:
            self.agent.opening(a)
            self.first_agent = False
        return a

    def _questions(self, asked: list[str], unknown: list[str]) -> None:
        """The agent asks for what is missing (in chat one or two questions a line), the customer answers."""
        rng, rates, ch, scene, script, facts = self.rng, self.rates, self.ch, self.scene, self.script, self.facts
        questions = asked + unknown
        rng.shuffle(questions)
        if not questions:
            return
        groups: list[list[str]] = []
        if ch == "chat":
            i = 0
            while i < len(questions):
                size = 1 + (rng.random() < rates.chat_two_questions)
                groups.append(questions[i : i + size])
                i += size
        else:
            groups = [questions]
        for g in groups:
            first = self.first_agent
            a = self._agent_move()
            if not first and rng.random() < rates.agent_ack_between_questions:
                a.say(scene.px(P.AGENT_ACK))
            for f in g:
                a.say(scene.px(P.ASK[facts.fact_key(f) if f in ("product", "version", "option") else f]))
                script.noise["clarifying_questions"] += 1
            u = script.move("user")
            for j, f in enumerate(g):
                if j and ch == "chat" and u.items and isinstance(u.items[-1], list):
                    u.items[-1] = u.items[-1] + [","]
                if f in unknown:
                    k = "option" if f == "option" else "error" if f == "error" else f
                    u.say(scene.px(P.DONT_KNOW.get(k, P.DONT_KNOW["version"])))
                else:
                    facts.state_into(u, f, answer=(ch == "chat"))
            if any(f in unknown for f in g) and rng.random() < rates.agent_no_matter:
                script.move("agent").say(scene.px(P.AGENT_NO_MATTER))

    def _volunteered(self, volunteered: list[str]) -> None:
        """Facts the customer adds unasked, after the agent's first reply."""
        if not volunteered:
            return
        scene, script = self.scene, self.script
        if not any(mv.role == "agent" for mv in script.moves[1:]):
            a = script.move("agent")
            self.agent.opening(a)
            self.first_agent = False
            a.say(scene.px(P.AGENT_ACK))
        u = script.move("user")
        k = len(u.items)
        for f in volunteered:
            self.facts.state_into(u, f)
        intro = scene.px(P.VOLUNTEER)
        if len(u.items) > k:
            u.items[k] = intro + [" "] + decapitalize(u.items[k])

    def _chatter(self) -> None:
        if self.rng.random() < self.rates.chatter:
            self.script.noise["offtopic"] += 1
            u = self.script.move("user", droppable=True)
            u.say(self.scene.px(P.CHATTER_USER))
            reply = self.scene.px(P.CHATTER_AGENT)
            if "".join(reply).strip():
                self.script.move("agent", droppable=True).say(reply)

    def _failed_suggestions(self, tried: list) -> None:
        """Zero to two fixes the agent suggests that do not help (never one the customer tried)."""
        rng, rates, scene = self.rng, self.rates, self.scene
        r = rng.random()
        n_failed = 0 if r < rates.no_failed_fix else 1 if r < rates.at_most_one_failed_fix else 2
        pool = [f for f in scene.dom.failed_fixes if f not in tried]
        frames = list(P.SUGGEST_FAILED)
        rng.shuffle(frames)
        for k, (imp, _past) in enumerate(rng.sample(pool, min(n_failed, len(pool)))):
            a = self._agent_move()
            a.say(scene.x(frames[k % len(frames)], imp=imp))
            self.script.move("user").say(scene.px(P.FAILED_REPLY))
            self.script.noise["failed_fixes"] += 1

    def _end(self) -> None:
        rng, rates, ch, scene, script = self.rng, self.rates, self.ch, self.scene, self.script
        if scene.secondary is not None:
            outcome = "resolved"
        else:
            r = rng.random()
            outcome = ("resolved" if r < rates.resolved else "no_reply" if r < rates.resolved + rates.no_reply
                       else "escalated" if r < rates.resolved + rates.no_reply_or_escalated else "later")
        script.outcome = outcome
        if outcome == "escalated":
            a = script.move("agent")
            if self.first_agent:
                self.agent.opening(a)
            a.say(scene.px(P.ESCALATE))
            if ch == "ticket" and rng.random() < rates.escalation_ticket_ref:
                a.say(scene.px(P.TICKET_REF))
            self.agent.sign(a)
            script.move("user").say(scene.px(P.ESCALATE_REPLY))
            return
        self.agent.fix(self.first_agent, explain_p=rates.explains_cause_resolved if outcome == "resolved"
                       else rates.explains_cause_otherwise)
        if outcome == "resolved":
            confirm = P.CONFIRM_SORTED if scene.dom.name == "orders" else P.CONFIRM
            script.move("user").say(scene.px(confirm[ch]))
            if scene.secondary is not None:
                self.agent.second_issue()
            if rng.random() < rates.agent_closes:
                script.move("agent", droppable=True).say(scene.px(P.CLOSING_AGENT))
                if ch == "chat" and rng.random() < rates.chat_user_closes:
                    script.move("user", droppable=True).say(scene.px(P.CLOSING_USER))
        elif outcome == "later":
            script.move("user").say(scene.px(P.TRY_LATER))
            if rng.random() < rates.agent_answers_try_later:
                script.move("agent", droppable=True).say(scene.px(P.TRY_LATER_AGENT))
        elif outcome == "no_reply" and (ch != "chat" or rng.random() < rates.chat_agent_follows_up):
            script.move("agent").say(scene.px(P.FOLLOW_UP_NO_REPLY))
