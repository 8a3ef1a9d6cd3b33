"""One planned conversation rendered into its JSONL record and its latent truth record; which facts
the final text mentions is measured on that text, so the truth's ``mentioned`` flags are exact.
"""

from __future__ import annotations

from . import phrases as P
from .course import Course
from .dialogue import AGENT_ROLES, EXTRA_FIELDS, USER_ROLES, Scene, Script, _iso
from .rates import RATES, GeneratorRates
from .turns import turns as written_turns
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


def render(item: PlanItem, world: World, seed: int, rates: GeneratorRates = RATES) -> tuple[dict, dict]:
    scene = Scene(item, world, seed, rates)
    script = Script(scene)
    Course(scene, script).write()
    turns = written_turns(scene, script)
    rng = scene.rng
    named = rng.random() < scene.rates.named_speakers[item.channel]
    if named:
        if item.channel == "forum":
            user_label = f"{scene.first.lower()}{scene.last[0].lower()}{rng.randrange(1, 99)}"
        else:
            user_label = scene.first
        with_initial = item.channel != "chat" or rng.random() < scene.rates.chat_agent_full_name
        agent_label = f"{scene.agent} {rng.choice(P.LAST_NAMES)[0]}." if with_initial else scene.agent
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
        "metadata": {"domain": scene.issue.domain, "channel": item.channel},
    }
    truth = _truth(scene, script, item, out_turns, user_label, agent_label, named)
    return conv, truth


def _truth(scene: Scene, script: Script, item: PlanItem, turns: list[dict], user_label: str, agent_label: str,
           named: bool) -> dict:
    iss = scene.issue
    text = "\n".join(t["text"] for t in turns).lower()
    prod = iss.product
    ex = scene.extras
    mentioned = {
        "product": _find(text, prod.name) or _find(text, prod.model),
        "model": _find(text, prod.model),
        "version": _find(text, scene.version, version_like=True),
        "os_or_plan": _find(text, scene.option),
        "error_code": _find(text, iss.error_code),
        "error_message": bool(iss.error_message) and iss.error_message.lower() in text,
        "symptom": True,
        "root_cause": script.root_cause_said,
        "resolution_steps": script.steps_said,
    }
    for f in EXTRA_FIELDS:
        mentioned[f] = _find(text, ex[f]) if f != "amount" else bool(ex[f]) and ex[f] in text
    pii = {
        "user_name": _find(text, scene.first.lower()) or _find(text, scene.last.lower()),
        "user_email": scene.email in text,
        "user_phone": scene.phone.lower() in text,
        "agent_name": _find(text, scene.agent.lower()),
        "named_speakers": named,
    }
    noise = dict(script.noise)
    noise["pii"] = pii
    noise["n_turns"] = len(turns)
    noise["outcome"] = script.outcome
    return {
        "dialogue_id": item.dialogue_id,
        "domain": iss.domain,
        "channel": item.channel,
        "issue_id": iss.issue_id,
        "secondary_issue_id": scene.secondary.issue_id if scene.secondary is not None else None,
        "product": prod.name,
        "model": prod.model,
        "version": scene.version,
        "os_or_plan": scene.option,
        "error_code": iss.error_code,
        "error_message": iss.error_message,
        "symptom": iss.symptom,
        "root_cause": iss.root_cause,
        "resolution_steps": list(iss.steps),
        "fix_version": iss.fix_version,
        "resolved": script.outcome == "resolved",
        "opened_date": turns[0]["ts"][:10],
        **{f: ex[f] for f in EXTRA_FIELDS},
        "mentioned": mentioned,
        "corrections": script.corrections,
        "speakers": {user_label: "user", agent_label: "agent"},
        "noise": noise,
    }
