"""Speaker roles: which side of a support conversation a label or a turn belongs to (asker or helper),
from explicit roles, role words, and who opens the conversation."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sarag_assets.core.conversation import Role

# --------------------------------------------------------------------------------------------------
# Speaker roles
# --------------------------------------------------------------------------------------------------

# Words that name the asking side / the helping side of a support conversation. Kept general on
# purpose (chat logs, help desks, forums, call transcripts, dialogue datasets), not fitted to a dataset.
USER_WORDS = frozenset(
    """user customer client human caller requester requestor op poster asker questioner guest visitor
    seeker consumer buyer shopper enduser submitter reporter""".split()
)
AGENT_WORDS = frozenset(
    """agent support assistant asst helper staff rep representative operator advisor adviser expert
    moderator mod bot chatbot system sys technician tech answerer responder specialist engineer admin
    administrator helpdesk desk service care team wizard consultant associate officer ai""".split()
)
# Words that may qualify a role word without changing which side it names ("live agent",
# "end user", "customer service rep", "technical support", "staff member", "original poster").
_MODIFIER_WORDS = frozenset(
    """the a an live virtual end human technical it help chat online senior junior lead main original
    first second member center centre side account sales billing product community forum site
    level tier customer""".split()
)
# Labels that name a participant without being a role or a personal name ("Speaker 1", "A", "B").
_NEUTRAL_RE = re.compile(
    r"^(?:speaker|participant|person|party|interlocutor|spk|p|s|a|b|c|x|y|q|r|unknown|anonymous|anon)?"
    r"[\s_#.-]*\d*$",
    re.IGNORECASE,
)
_LABEL_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


def _label_words(label: str) -> list[str]:
    words = []
    for w in _LABEL_WORD_RE.findall(label):
        w = w.lower()
        if w not in USER_WORDS and w not in AGENT_WORDS and w.endswith("s") and (
            w[:-1] in USER_WORDS or w[:-1] in AGENT_WORDS
        ):
            w = w[:-1]  # plural: "Agents", "Users"
        words.append(w)
    return words


def role_of_label(label: str) -> Role | None:
    """The role a speaker label names, or None when it is not made of role words.

    Case-insensitive; digits and punctuation are ignored ("Agent_2", "user1", "SupportBot"); in a
    multi-word label the last role word decides ("customer service rep" -> agent, "end user" -> user).
    A label containing any other word ("Agent Smith", "dave_99") is not a role label.
    """
    if not isinstance(label, str):
        return None
    words = _label_words(label)
    if not words:
        return None
    role_words = [w for w in words if w in USER_WORDS or w in AGENT_WORDS]
    if not role_words or any(w not in USER_WORDS and w not in AGENT_WORDS and w not in _MODIFIER_WORDS for w in words):
        return None
    return "user" if role_words[-1] in USER_WORDS else "agent"


def role_hint_of_label(label: str) -> Role | None:
    """The side a label names beside a personal name ("Agent Priya", "Mod_Pauline", "customer_john"):
    role words of one side only, any other words taken as a name. None without role words or with
    both sides' ("support_user"). Weaker than `role_of_label`: used only to settle a conversation
    whose other speakers are named by role words."""
    if not isinstance(label, str):
        return None
    words = _label_words(label)
    sides = {"user" if w in USER_WORDS else "agent" for w in words if w in USER_WORDS or w in AGENT_WORDS}
    return sides.pop() if len(sides) == 1 else None  # type: ignore[return-value]


def is_neutral_label(label: str) -> bool:
    """True for labels that are neither role words nor personal names ("Speaker 1", "A", "2")."""
    return bool(_NEUTRAL_RE.match(label.strip()))


def _explicit_role(value: Any) -> Role | None:
    """An explicit ``role`` field: "user"/"agent" or any role word; None when it names neither."""
    if not isinstance(value, str):
        return None
    v = value.strip().lower()
    if v in ("user", "agent"):
        return v  # type: ignore[return-value]
    return role_of_label(value)


class _Reject(Exception):
    """A record cannot become a conversation; the message is the quarantine reason."""


@dataclass
class _RawTurn:
    speaker: str
    text: str
    ts: str | None = None
    role: Role | None = None  # decided by the source (explicit field or a format-level rule)
    accepted: bool = False  # the source marks it as the accepted answer


# An opening turn that offers help ("how can I help you?") is a helper's, not the asker's.
_OFFERS_HELP = re.compile(
    r"\b(?:how|what)\s+(?:can|may|could|shall)\s+(?:i|we)\s+(?:help|assist|do\s+for)"
    r"|\b(?:thanks?|thank\s+you)\s+for\s+(?:contacting|reaching\s+out|calling|getting\s+in\s+touch)"
    r"|\b(?:welcome\s+to|you(?:'ve|\s+have)\s+reached)\b"
    r"|\bhere\s+(?:from|at|with)\s+[A-Z]"  # "Dana here from ShopSphere"
    r"|\bwhat(?:'s|\s+is|\s+seems\s+to\s+be)\s+(?:going\s+on|the\s+(?:issue|problem|trouble))",
    re.IGNORECASE,
)


def _asking_speaker(turns: list[_RawTurn]) -> str:
    """The speaker who brings the problem: the opener, unless the opener only offers help."""
    opener = turns[0].speaker
    if _OFFERS_HELP.search(turns[0].text):
        for t in turns[1:]:
            if t.speaker != opener:
                return t.speaker
    return opener


def resolve_roles(turns: list[_RawTurn]) -> tuple[list[Role], str]:
    """Roles for turns whose role is not fixed yet; returns (roles, how they were inferred).

    Raises ``_Reject`` when a conversation mixes a user named by a role word with a label that names no
    side (another user, or a helper?).
    """
    label_role: dict[str, Role] = {}
    for t in turns:
        if t.role is not None:
            label_role.setdefault(t.speaker, t.role)
    roles: list[Role | None] = []
    unknown: list[str] = []
    used_vocabulary = False
    for t in turns:
        if t.role is not None:
            r: Role | None = t.role
        elif t.speaker in label_role:
            r = label_role[t.speaker]
        else:
            r = role_of_label(t.speaker)
            if r is None:
                if t.speaker not in unknown:
                    unknown.append(t.speaker)
            else:
                used_vocabulary = True
        roles.append(r)
    if unknown and (label_role or used_vocabulary):
        # "customer" beside "Agent Priya": the name carries its side; a bare "dave_99" stays ambiguous
        hints = {u: h for u in unknown if (h := role_hint_of_label(u)) is not None}
        roles = [hints.get(t.speaker) if r is None else r for t, r in zip(turns, roles)]
        unknown = [u for u in unknown if u not in hints]
        if unknown and "user" not in roles:
            # a thread of handles with a bot or a moderator in it: the first handle to speak asks, as in a
            # thread of names only; the other handles help
            return ["user" if t.speaker == unknown[0] else r or "agent" for t, r in zip(turns, roles)], "opener"
    if unknown:
        if label_role or used_vocabulary:
            known = sorted({t.speaker for t, r in zip(turns, roles) if r is not None})
            raise _Reject(
                f"ambiguous speaker label(s) {', '.join(repr(u) for u in unknown)}: not role words, while other "
                f"speakers of the conversation are ({', '.join(repr(k) for k in known)}); "
                "give those turns an explicit 'role'"
            )
        asker = _asking_speaker(turns)
        return ["user" if t.speaker == asker else "agent" for t in turns], "opener"
    if all(t.role is not None for t in turns):
        return [t.role for t in turns], "explicit"  # type: ignore[misc]
    return roles, "vocabulary"  # type: ignore[return-value]
