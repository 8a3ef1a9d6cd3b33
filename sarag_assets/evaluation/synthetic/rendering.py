"""One planned conversation rendered into its JSONL record and its latent truth record; which facts
the final text mentions is measured on that text, so the truth's ``mentioned`` flags are exact.
"""

from __future__ import annotations

from sarag_assets.evaluation.synthetic.dialogue import (
    AGENT_ROLES,
    EXTRA_FIELDS,
    P_NAMED_SPEAKERS,
    USER_ROLES,
    _Builder,
    _iso,
)

from . import phrases as P
from .world import PlanItem, World


def _find(text: str, value: str | None, version_like: bool = False) -> bool:
    """Case-insensitive whole-token search (a version must not continue with more digits or .digits)."""
    if not value:
        return False
    v = value.lower()
    start = 0
    n = len(text)
    while True:
        i = text.find(v, start)
        if i < 0:
            return False
        j = i + len(v)
        before = text[i - 1] if i > 0 else " "
        after = text[j] if j < n else " "
        ok = not (before.isalnum() or (version_like and before == "."))
        if ok and (after.isalnum() or after in "-_"):
            ok = False
        if ok and version_like and after == "." and j + 1 < n and text[j + 1].isdigit():
            ok = False
        if ok:
            return True
        start = i + 1


def render(item: PlanItem, world: World, seed: int) -> tuple[dict, dict]:
    b = _Builder(item, world, seed)
    b.build()
    turns = b.turns()
    rng = b.rng
    named = rng.random() < P_NAMED_SPEAKERS[item.channel]
    if named:
        if item.channel == "forum":
            user_label = f"{b.first.lower()}{b.last[0].lower()}{rng.randrange(1, 99)}"
        else:
            user_label = b.first
        agent_label = f"{b.agent} {rng.choice(P.LAST_NAMES)[0]}." if item.channel != "chat" or rng.random() < 0.5 else b.agent
        if agent_label == user_label:
            agent_label = agent_label + " (staff)"
    else:
        user_label, agent_label = rng.choice(USER_ROLES), rng.choice(AGENT_ROLES)
    t = item.day * 86400 + item.second
    out_turns = []
    prev_role = None
    for k, (role, text) in enumerate(turns):
        if k:
            if item.channel == "chat":
                gap = 8 + int(rng.random() * (150 if role != prev_role else 40))
            elif item.channel == "ticket":
                gap = 1800 + int(rng.random() * 30 * 3600)
            else:
                gap = 600 + int(rng.random() * 20 * 3600)
            t += gap
        prev_role = role
        out_turns.append({"speaker": user_label if role == "user" else agent_label, "text": text, "ts": _iso(t)})
    conv = {
        "dialogue_id": item.dialogue_id,
        "turns": out_turns,
        "metadata": {"domain": b.issue.domain, "channel": item.channel},
    }
    truth = _truth(b, item, out_turns, user_label, agent_label, named)
    return conv, truth


def _truth(b: _Builder, item: PlanItem, turns: list[dict], user_label: str, agent_label: str, named: bool) -> dict:
    iss = b.issue
    text = "\n".join(t["text"] for t in turns).lower()
    prod = iss.product
    ex = b.extras
    mentioned = {
        "product": _find(text, prod.name) or _find(text, prod.model),
        "model": _find(text, prod.model),
        "version": _find(text, b.version, version_like=True),
        "os_or_plan": _find(text, b.option),
        "error_code": _find(text, iss.error_code),
        "error_message": bool(iss.error_message) and iss.error_message.lower() in text,
        "symptom": True,
        "root_cause": b.root_cause_said,
        "resolution_steps": b.steps_said,
    }
    for f in EXTRA_FIELDS:
        mentioned[f] = _find(text, ex[f]) if f != "amount" else bool(ex[f]) and ex[f] in text
    pii = {
        "user_name": _find(text, b.first.lower()) or _find(text, b.last.lower()),
        "user_email": b.email in text,
        "user_phone": b.phone.lower() in text,
        "agent_name": _find(text, b.agent.lower()),
        "named_speakers": named,
    }
    noise = dict(b.noise)
    noise["pii"] = pii
    noise["n_turns"] = len(turns)
    noise["outcome"] = b.outcome
    return {
        "dialogue_id": item.dialogue_id,
        "domain": iss.domain,
        "channel": item.channel,
        "issue_id": iss.issue_id,
        "secondary_issue_id": b.secondary.issue_id if b.secondary is not None else None,
        "product": prod.name,
        "model": prod.model,
        "version": b.version,
        "os_or_plan": b.option,
        "error_code": iss.error_code,
        "error_message": iss.error_message,
        "symptom": iss.symptom,
        "root_cause": iss.root_cause,
        "resolution_steps": list(iss.steps),
        "fix_version": iss.fix_version,
        "resolved": b.outcome == "resolved",
        "opened_date": turns[0]["ts"][:10],
        **{f: ex[f] for f in EXTRA_FIELDS},
        "mentioned": mentioned,
        "corrections": b.corrections,
        "speakers": {user_label: "user", agent_label: "agent"},
        "noise": noise,
    }
