"""Product-name candidates: a named thing the user owns or uses; never a person, the company that
greets, a carrier, a plan, a menu path or a kind of thing. A bare model code is the model's cell, not
the product's too (`analysis.analyze` drops candidates another detector owns)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from sarag_assets.backends.embedded.codes import _ERROR_CONTEXT
from sarag_assets.backends.embedded.cues import _new_issue
from sarag_assets.backends.embedded.text import (
    _STOP,
    _mostly_upper,
    _strip_lead,
    is_placeholder_only,
)
from sarag_assets.backends.embedded.versions import (
    correction_cue,
    find_browsers,
    find_os,
    is_negated,
)

# --- product names ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProductEvidence:
    """How a candidate name's evidence adds up: a candidate is the product when its best sentence's evidence
    plus ``per_mention`` a mention (at most ``mention_cap``) reaches ``bar``. A bonus of 0.4 for a name in the
    problem statement first said elsewhere was deleted: it lost real cells (`docs/structuring.md`).

    Beside each, the real-data figure: the SGD test slice (CC BY-SA 4.0, `sarag eval-entities`) with that
    evidence set to 0, exact entity cells and query value recall, at 300 conversations (the batch's unit
    names correct the detector) and at its first 150 (below 200: the detector alone), against 97/300, 43/66
    and 31/150, 17/30 with all of it (at `29501ac`, with the deleted bonus; `docs/structuring.md`, *The
    product detector on real data*). "None alone" is a rule no real corpus here moves by itself: switched
    off together with the other such filters (people, organizations, claimed values, plans, menus,
    carriers, denied names), no labelled cell moves, the IRC #ubuntu triples (`trag`) lose 5 queries in
    the top 3 and the generated set 34 product cells (849 -> 815 of 1,000)."""

    # a thing's name is written as one: CamelCase or several words with lower case ("Cloudberry Drive");
    # a code or an acronym pair ("DSL500", "HP LaserJet") is weaker evidence. Without both: 73/300, 38/66
    # and 11/150, 12/30
    name_shape: float = 0.3
    code_shape: float = 0.1
    # ownership before the name ("I'm using X", "my router is the X"), or a possessive or a verb of use
    # ("my X", "with X"). Without both: 93/300, 43/66 and 16/150, 17/30
    ownership: float = 0.5
    near_ownership: float = 0.3
    # a device or app noun after it ("X app"): none alone
    head_noun: float = 0.5
    # named in the asker's problem statement; without it 102/300, 41/66 and 38/150, 19/30: SGD's askers
    # open with a city or a date and the helper names the place, a help desk's with the product. Kept
    # for the help-desk shape; no real help-desk corpus here labels the product
    problem_turn: float = 0.6
    # the asker's answer to "which model / app is it?": none alone
    answers_which: float = 0.6
    # the asker's corrected name ("sorry, it's X, not Y"); without it 96/300 and 30/150, 15/30
    corrected: float = 0.4
    # the company's own product, its name opening with the company's: none alone
    company_product: float = 0.3
    # a side remark ("One more thing: my X ..."), a second issue: none alone
    aside: float = 0.4
    # the helper's greeting names the company ("Thanks for contacting X"): none alone
    greeting_company: float = 1.0
    per_mention: float = 0.25
    mention_cap: int = 4
    # the evidence a candidate needs. Real corpora disagree: without it SGD 103/300, 43/66 and 52/150,
    # 18/30 (more cells); CrossWOZ, where the batch's unit names fill the cell, 84/300, 50/222 against
    # 91/300, 53/222 (a weak proposal outweighs the unit name), and the triples' R@3 on the IRC #ubuntu
    # follow-ups 0.240 against 0.255. Kept
    bar: float = 0.8


EVIDENCE = ProductEvidence()


def _function_word(token: str) -> bool:
    t = token.lower().strip(".,")
    return t in _NOT_PRODUCT_WORDS or t in _STOP


_CAP_TOKEN = r"(?:[A-Z][\w&+'’.-]*[\w+]|[A-Z]|[a-z]+[A-Z][\w]*|(?=[A-Z0-9-]*[A-Z])[A-Z0-9]+-?[A-Z0-9]+(?![\w-]))"
_CAP_SEQ = re.compile(
    r"(?<![\w@\[.\-/])" + _CAP_TOKEN + r"(?:\s+(?:" + _CAP_TOKEN + r"|\d{1,4}(?:\.\d)?(?:-[^\W\d_]+(?:-\d{1,2})?)*(?![-/.]?\d)\b|&|\+))*(?:\s+" + _CAP_TOKEN + r")?"
)
_PRODUCT_HEADS = (
    r"app|apps|application|account|card|router|modem|phone|smartphone|laptop|notebook|printer|device|service|subscription|console|tv|"
    r"watch|tablet|camera|speaker|headphones|earbuds|earphones|software|program|game|website|site|extension|plugin|player|drive|"
    r"monitor|keyboard|mouse|controller|box|stick|hub|doorbell|thermostat|vacuum|plan|membership|wallet|platform|portal|server|"
    r"client|tool|browser|tracker|bank|card|membership|insurance|policy|loan|ticket|pass|adapter|adaptor|system|unit|machine|"
    r"headset|bulb|lock|charger|cable|appliance|gadget|node|extender|repeater|gateway|receiver|projector|scanner|kit"
)
_HEAD_AFTER = re.compile(
    r"^\s+(?:(?!(?:and|or|but|on|in|at|to|for|with|from|of|the|a|an|my|your|is|was|are|it|that|this)\b)[a-z][\w-]*\s+)?(?:" + _PRODUCT_HEADS + r")\b", re.I
)  # "X app", "X cable modem"
_NOT_PRODUCT_WORDS = frozenset(
    """i i'm i've i'd i'll im ive ok okay hi hello hey dear thanks thank please sorry yes no yeah yep nope the this that these those
    my your our we it its they he she you what when where why how which who is are was were do does did can could would should
    will also just so and but or if then there here good great bad nice cool awesome perfect sure monday tuesday wednesday thursday
    friday saturday sunday january february march april may june july august september october november december jan feb mar apr
    jun jul aug sep sept oct nov dec am pm et pt pst est cet utc gmt dm faq fyi asap btw lol omg tbh imo imho idk na n/a usa us uk
    eu customer customers support service team agent staff manager department center centre desk help helpdesk care regards best
    kind warm cheers sincerely edit update note ps re fw fwd subject any all some every none mr mrs ms dr st tel fax url http https www
    today tomorrow yesterday morning afternoon evening night wifi internet email e-mail password account order refund item items
    error issue problem question thank-you after before since until while because however anyway actually still though although
    first second third finally also again now well oh ah hmm um uh wow ugh meanwhile otherwise instead let let's hope maybe
    unfortunately apologies apologize welcome glad happy one two three four five six seven eight nine ten ok. hai
    build version release patch v ver rev revision beta alpha""".split()
)
# Kinds of things, not names: "my TV", "the Wi-Fi", "the DNS server", "the ISP box".
_GENERIC_THINGS = frozenset(
    """tv tvs pc pcs wi-fi wifi wlan lan wan dns isp vpn usb sim pin otp 2fa mfa nas ssd hdd gpu cpu ram os ui ux api sdk pdf url
    sms mms gps hdmi wpa wpa2 wpa3 ssid nfc qr led lcd oled ac dc ip ipv4 ipv6 mac id ids faq eta vip ceo it hr dsl ethernet
    bluetooth internet email e-mail app apps""".split()
)
_ORG_TAIL = re.compile(r"\b(?:Team|Support|Department|Dept|Center|Centre|(?:Help|Service|Front)\s+Desk|Helpdesk|Care|Services|Help|Staff|Group|Inc|Ltd|LLC|Corp)\.?$")
_PERSON_WORD = r"[A-Z][a-z'’-]+"
# Where a personal name stands: self-introductions, agent introductions, a vocative ("Thank you, Hugo.").
_PERSON_CUES = (
    re.compile(r"\b(?i:my\s+name\s+is|my\s+name'?s|name'?s|call\s+me|(?:you'?re|you\s+are)\s+(?:chatting|speaking|talking)\s+with)\s+(?P<n>"
               + _PERSON_WORD + r"(?:\s+" + _PERSON_WORD + r")?)\b"),
    re.compile(r"\b(?:[Ii]'?m|[Ii]\s+am|[Tt]his\s+is)\s+(?P<n>" + _PERSON_WORD + r"(?:\s+" + _PERSON_WORD + r")?)(?=\s*(?:[,.!)]|$|\s+(?:here|from|at|with|and|by\s+the\s+way)\b))"),
    re.compile(r"^\W*(?P<n>" + _PERSON_WORD + r")\s+here\b"),  # "Bea here from ..."
    re.compile(r"^\W*(?i:hi|hello|hey|dear|thanks|thank\s+you|sorry(?:\s+about\s+that)?|cheers|bye|welcome)\W{0,2}\s*(?P<n>"
               + _PERSON_WORD + r")(?=\s*[,.!:]|\s*$)"),
    re.compile(r"\b(?i:thanks?|thank\s+you|sorry|apologies|welcome|hi|hello|hey|ok|okay|great|sure|no\s+problem|no\s+worries|got\s+it)\b[^,]{0,30},\s+(?P<n>"
               + _PERSON_WORD + r")\s*[.!]?\s*$"),  # "Sorry about that, Rosa.", "Thank you, Hugo."
)
_SIGN_OFF = re.compile(r"^\W*(?:(?:best|kind|warm)\s+regards|regards|thanks(?:\s+(?:again|in\s+advance))?|thank\s+you|cheers|sincerely|best|take\s+care|tia)\W*$", re.I)
_LONE_NAME = re.compile(r"^\W*(?P<n>" + _PERSON_WORD + r"(?:\s+" + _PERSON_WORD + r")?)\s*(?:[|,(-].*)?$")
# Where an organization's name stands: "Thanks for contacting X", "welcome to X support", "Dear X team", "the X Support Team".
_ORG_CUES = (
    re.compile(r"\b(?i:contacting|reaching\s+out\s+to|welcome\s+to|choosing|here\s+from|(?:chatting|speaking)\s+with\s+\w+\s+(?:from|at))\s+"
               r"(?P<n>[A-Z][\w&+'’.-]*(?:\s+[A-Z][\w&+'’.-]*){0,2})"),
    re.compile(r"(?P<n>[A-Z][\w&+'’.-]*(?:\s+[A-Z][\w&+'’.-]*){0,2})\s+(?:[Ss]upport|[Tt]eam|[Cc]ustomer\s+[Ss]ervice|[Hh]elp\s*[Dd]esk)\b"),
)
# Who delivers or takes the money is not what the user owns: "shipped with X", "paid with my X".
_THIRD_PARTY_BEFORE = re.compile(
    r"\b(?:ship(?:ped|s|ping)?|sent|deliver(?:ed|s|ing)?|dispatched|couriered|mailed)\s+(?:it\s+|them\s+)?(?:with|via|by|through)\s+$|"
    r"\b(?:paid|pay|paying|charged|checkout|checked\s+out)\s+(?:it\s+)?(?:with|by|using|via|through|on)\s+(?:my\s+|a\s+|the\s+)?$|"
    r"\b(?:carrier|courier|bank|card)\s+(?:is|was)\s+$",
    re.IGNORECASE,
)
_PLAN_AFTER = re.compile(
    r"^\s+(?:(?:[a-z][\w-]*\s+)?(?:plan|tier|subscription|package|bundle|membership|contract|level)|annual|annually|monthly|yearly|"
    r"per\s+(?:month|year)|a\s+(?:month|year))\b",
    re.I,
)  # "the Premium annual plan", "we have Super monthly": a plan
_OWNERSHIP_BEFORE = re.compile(
    r"(?:\b(?:(?:i'?m|i\s+am|we'?re|we\s+are|(?:i|we)(?:'ve|\s+have)\s+been)\s+(?:using|running)|(?:i|we)\s+(?:use|own|bought|ordered|purchased|installed|rely\s+on)|"
    r"(?:my|our|the)\s+(?:[\w-]+\s+){0,2}?(?:is|was)|(?:this|it)\s+is\s+(?:about|with|for|on)|(?:this|it)'s\s+(?:about|with|for|on)|"
    r"(?:it'?s|it\s+is))\s+(?:a\s+|an\s+|the\s+|my\s+|our\s+)?|\b(?:my|our)\s+)$",
    re.IGNORECASE,
)
_PRODUCT_QUESTION = re.compile(
    r"\b(?:which|what)\s+(?:\w+\s+){0,3}?(?:product|model|device|app|application|program|software|item|router|modem|phone|printer|"
    r"laptop|computer|service|tool|game|brand|make)s?\b|\b(?:product|device|app|program|item|model)\s+(?:name|is\s+(?:it|this|that))\b",
    re.IGNORECASE,
)
_OTHER_QUESTION = re.compile(
    r"\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:plan|tier|subscription|carrier|courier|payment|browser|os|operating\s+system|"
    r"email|address|country|city)\b|\bconfirm\s+(?:your|the)\s+(?:plan|tier|subscription|carrier|payment)\b",
    re.IGNORECASE,
)
_PRODUCT_SLOT = r"(?:^|_)(?:product|model|device|app|application|program|software|item|router|modem|phone|printer|laptop|computer|service|tool|game|brand|make|name)(?:_|$)"
_UI_AFTER = re.compile(r"\s+(?:box|tab|menu|screen|dialog|window|pane|panel|button|field|toggle|option|link|icon)\b", re.I)
_UI_BEFORE = re.compile(r"(?:[>»→]\s*|\b(?:click|tap|press|hit|select|choose|toggle|tick|untick|check|uncheck)\s+(?:on\s+)?(?:the\s+)?)$", re.I)


def _compact(v: str) -> str:
    return re.sub(r"[^a-z0-9]", "", v.lower())


def _names_same_thing(code: str, name: str) -> bool:
    """A model code and a longer name denote one product: the code is one of the name's tokens
    ("HC-31" and "Homelink HC31"), contains one ("LS-DSL700" and "Linkstar DSL700"), or its letters are
    the name's initials ("HE-1500" and "Harbor Espresso Machine")."""
    code = _compact(code)
    if not re.search(r"\d", code):
        return False
    toks = [t for t in (_compact(t) for t in name.split()) if t]
    if code in toks:
        return True  # "T3" and "Thermia T3": a short code only as a whole token
    if len(code) < 3:
        return False
    for t in toks:
        if (len(code) >= 4 and code in t) or (len(t) >= 4 and re.search(r"\d", t) and t in code):
            return True
    letters = re.match(r"[a-z]+", code)
    if letters and 2 <= len(letters.group()) <= len(toks):
        return "".join(t[0] for t in toks[: len(letters.group())]) == letters.group()
    return False


def _people_and_orgs(sentences: Sequence[tuple[int, str, str]]) -> tuple[set[str], set[str]]:
    """Personal names (introductions, vocatives, sign-offs) and organization names (greetings, team
    sign-offs) a conversation mentions; lower-cased, full names and their first words."""
    people: set[str] = set()
    orgs: set[str] = set()
    by_turn: dict[int, list[str]] = {}
    for turn, role, text in sentences:
        by_turn.setdefault(turn, []).append(text)
        body = _strip_lead(text)
        for pat in _PERSON_CUES:
            for m in pat.finditer(body):
                n = m.group("n").strip()
                if n.lower() not in _NOT_PRODUCT_WORDS and n.lower() not in _STOP and not _HEAD_AFTER.match(body[m.end("n") :]):
                    people.add(n.lower())
                    people.add(n.split()[0].lower())
        for pat in _ORG_CUES:
            for m in pat.finditer(body):
                n = m.group("n").strip()
                toks = [t.strip(".,!?:;'’") for t in n.split() if t.lower().strip(".,!?:;'’") not in _NOT_PRODUCT_WORDS and t.lower() not in _STOP]
                if toks:
                    orgs.add(" ".join(toks).lower())
    for turn, texts in by_turn.items():
        # a lone name on one of the last lines of a message, after a closing ("Thanks,\nYuki")
        for i, t in enumerate(texts[1:], 1):
            if i < len(texts) - 3:
                continue
            m = _LONE_NAME.match(t)
            if m and (_SIGN_OFF.match(texts[i - 1]) or re.search(r"[|]|,\s*[A-Z]\w*\s+(?:team|support)\b", t, re.I)):
                n = m.group("n")
                if n.lower() not in _NOT_PRODUCT_WORDS and not _ORG_TAIL.search(n):
                    people.add(n.lower())
                    people.add(n.split()[0].lower())
    return people, orgs


def product_candidates(
    sentences: Sequence[tuple[int, str, str]],
    problem_turns: set[int],
    claimed: Iterable[str] | None = None,
    addressing: set[tuple[int, str]] | None = None,
) -> list[tuple[str, float, int, str]]:
    """Named products, services or devices: capitalized or CamelCase names not at the start of a
    sentence ("the Cloudberry Drive app", "my iPhone", "Linkstar DSL500"), scored by repetition, by a
    device/app noun after them, by ownership before them ("my", "I'm using", "the device is a"), by
    answering the agent's "which model/app is it?" and by appearing in the user's problem statement.

    Not products: people (introductions, greetings, sign-offs), organizations ("Thanks for contacting
    X", "X Support"), carriers and payment services ("shipped with X", "paid with X"), plans ("the X
    plan", answers to "which plan?"), kinds of things ("my TV", "the DNS server"), menu paths
    ("Settings > About"), button labels ("tap Save"), identifiers and settings written in code
    ("STRIPE_KEY", "ExecStart=..."), names denied in a correction ("it's X, not Y"),
    and values ``claimed`` by other detectors (plans, amounts, identifiers, codes, ...), nor names in the
    ``addressing`` sentences, (turn, text) of a letter's salutation and signature lines ("Dear Crate & Co
    team,"): whom a message addresses or who signs it. A model
    number that is part of a longer name ("HC-31" of "Homelink HC31", "Trailhead 45L (TH-45)")
    counts for the longer name. ``sentences``: (turn, role, text). Returns (name, score, turn,
    sentence) best first."""
    found: dict[str, list] = {}
    os_names = set()
    people, orgs = _people_and_orgs(sentences)
    claimed_set = {c.lower() for c in (claimed or ()) if c}
    denied: set[str] = set()
    claimed_anywhere: set[str] = set()  # plan names and the like: a plan where it is called one is a plan everywhere
    aliases: dict[str, str] = {}  # code -> the longer name it stands for
    # the user turns that answer an agent question about the product (or about something else)
    answers_product: set[int] = set()
    answers_other: set[int] = set()
    turn_roles: dict[int, str] = {}
    for turn, role, _ in sentences:
        turn_roles.setdefault(turn, role)
    for turn, role, text in sentences:
        if role != "agent" or "?" not in text:
            continue
        target = answers_product if _PRODUCT_QUESTION.search(text) else answers_other if _OTHER_QUESTION.search(text) else None
        if target is None:
            continue
        if turn_roles.get(turn + 1) == "user":
            target.add(turn + 1)  # the reply right after the question
    answers_other -= answers_product
    for turn, role, text in sentences:
        for h in find_os(text) + find_browsers(text):
            os_names.add(h.value.lower())
        body = _strip_lead(text)
        if _mostly_upper(body) or (turn, text) in (addressing or ()):
            continue
        correction = correction_cue(body) or bool(re.search(r",\s+not\s+|\bmis(?:read|typed|spelled|heard|took)\b", body, re.I))
        org_spans = [m.span("n") for pat in _ORG_CUES for m in pat.finditer(body)]
        claimed_here: list[str] = []
        named_here: list[str] = []
        aside = _new_issue(body)  # "One more thing: X won't ...": a second issue
        for m in _CAP_SEQ.finditer(body):
            if _ORG_TAIL.search(m.group()):
                continue  # "our New Accounts Team": an organization
            tokens = m.group().split()
            start = m.start()
            # a sentence-initial capital says nothing: a lone capitalized word there is not a name
            # so is one after an opening quote: a quoted message or label ("'Preparing shaders (x%)'") starts its own sentence
            at_start = not body[: m.start()].strip() or bool(re.search(r"[.!?:;\"“()]\s*$|(?:^|\s)['‘]$", body[: m.start()]))
            if at_start and len(tokens) == 1 and not re.search(r"[a-z][A-Z]|\d", tokens[0]):
                continue
            while tokens and _function_word(tokens[0]):
                start += len(tokens[0]) + 1
                tokens = tokens[1:]
            while tokens and (tokens[-1].lower().strip(".,") in _NOT_PRODUCT_WORDS or tokens[-1].lower().strip(".,") in _STOP or tokens[-1].lower().strip(".,") in claimed_set):
                tokens = tokens[:-1]
            if not tokens:
                continue
            name = " ".join(tokens).strip(".,'’")
            end = start + len(name)
            key = name.lower()
            if re.search(r"\d{6,}", name):
                continue  # "MK-4782627": an order or account number, not a name
            if "_" in name or re.match(r"\s*=", body[end:]):
                continue  # "SPRING_PROFILES_ACTIVE", "ExecStart=...": an identifier or a setting in code, not a name
            if start == m.start() and at_start and len(tokens) == 1 and not re.search(r"[a-z][A-Z]|\d", name):
                continue  # what is left is a lone sentence-initial word ("Things I tried: ...")
            if len(name) < 2 or is_placeholder_only(name) or re.fullmatch(r"[\d.\s]+|\d{1,3}[A-Za-z]{1,2}", name):
                continue
            if _ORG_TAIL.search(name) or key in os_names or any(key in o for o in os_names):
                continue
            if find_os(name) or find_browsers(name) or re.fullmatch(r"[A-Z]{2,5}", name) and not (
                _HEAD_AFTER.match(body[end:]) and re.search(r"\b(?:my|our)\s+$", body[max(0, start - 6) : start], re.I)
            ):
                continue  # an acronym alone ("DM", "LTS") or a kind of thing ("the SMTP server") is not a product; "my HP printer" is
            if key in _GENERIC_THINGS or re.fullmatch(_PRODUCT_HEADS, key):
                continue  # "my TV", "the Wi-Fi": a kind of thing, not a name
            if re.fullmatch(r"(?:[A-Z]{1,6}[-_]?[A-Z]?\d{2,6}[A-Z]?)", name) and _ERROR_CONTEXT.search(text):
                continue
            if key in people or tokens[0].lower() in people:
                continue  # a person ("This is Chloe Brown", "Thanks, Hugo", a sign-off)
            if key in orgs and any(a <= start and end <= b for a, b in org_spans):
                continue  # the company where it greets or signs ("Thanks for contacting X", "X Support")
            if key in claimed_set or any(key in c and re.search(r"(?<![\w-])" + re.escape(key) + r"(?![\w-])", c) for c in claimed_set):
                claimed_here.append(key)
                claimed_anywhere.add(key)
                continue  # a plan, an amount, an identifier, a code ... another detector owns it
            rest = key
            for c in claimed_set:
                if len(c) >= 3 and re.search(r"\d", c) and c in rest:
                    rest = re.sub(r"(?<![\w-])" + re.escape(c) + r"(?![\w-])", " ", rest)
            if rest != key and len(rest.split()) <= 1 and not re.search(r"\d|[a-z][A-Z]", rest):
                claimed_here.append(key)
                continue  # "Pro 2 TB" around a measurement, "Code MD-3163" around an error code
            if re.search(r"[>»→]\s*$", body[:start]) or re.match(r"\s*[>»→]", body[end:]) or _UI_BEFORE.search(body[max(0, start - 20) : start]) or (
                re.search(r"\b(?:in|on|under|from|at)\s+the\s+$", body[max(0, start - 12) : start], re.I) and _UI_AFTER.match(body[end:])
            ):
                continue  # "Settings > About", "tap Save", "in the About box": a menu path, a button, a dialog
            if _THIRD_PARTY_BEFORE.search(body[max(0, start - 40) : start]):
                continue  # "shipped with X", "paid with my X": a carrier or a payment service
            if _PLAN_AFTER.match(body[end:]):
                claimed_here.append(key)
                claimed_anywhere.add(key)
                continue  # "the Premium annual plan": a plan
            if turn in answers_other and role == "user" and len(body.split()) <= 8:
                claimed_here.append(key)
                claimed_anywhere.add(key)
                continue  # the answer to "which plan / carrier / card?"
            if len(tokens) == 1 and not re.search(r"[a-z][A-Z]|\d", name) and (
                re.search(r"\b(?:hi|hello|hey|dear|thanks|thank\s+you|sorry|me|bye|cheers|regards|welcome|no|yes|ok|okay|oh|well)\s*,?\s*$", body[max(0, start - 14) : start], re.I)
                or re.match(r"\s*[.!]?\s*$", body[end:]) and not _OWNERSHIP_BEFORE.search(body[max(0, start - 40) : start])
                and not (turn in answers_product and role == "user")
            ):
                # "Hi Phil", "... Phil." at the end of a message: a person, not a product ("I'm using Tasklane." is,
                # and so is the name that ends the reply to "which program is it?": "It says 12.0, Postwise")
                continue
            if correction and is_negated(body, start, end):
                denied.add(key)
                continue
            named_here.append(key)
            paren = re.match(r"\s*\(\s*([A-Za-z0-9][\w-]*\d[\w-]*)\s*\)", body[end:])
            if paren and len(tokens) >= 2:
                aliases[paren.group(1).lower()] = key  # "Trailhead 45L Backpack (TH-45)"
            entry = found.setdefault(key, [name, 0.0, turn, text, 0])
            entry[4] += 1
            if entry[0].isupper() and not name.isupper():
                entry[0] = name  # "HOBSONS HOUSE" then "Hobsons House": capitals shout, the mixed case is the name's
            ev = EVIDENCE
            bonus = 0.0
            if _HEAD_AFTER.match(body[end:]):
                bonus += ev.head_noun
            before = body[max(0, start - 40) : start]
            if _OWNERSHIP_BEFORE.search(before) or re.match(r"\s+(?:user|owner|customer|subscriber)s?\b", body[end:], re.I):
                bonus += ev.ownership  # "I'm using X", "the device is a X", "my router is the X", "long time X user"
            elif re.search(r"\b(?:my|our|the|your|using|use|with|on|for|of|bought|ordered|have|own|installed)\s+$", before, re.I):
                bonus += ev.near_ownership
            if re.search(r"[a-z][A-Z]", name) or (len(tokens) >= 2 and re.search(r"[a-z]", name)):
                bonus += ev.name_shape  # a real name: "Cloudberry Drive", "iPhone"
            elif re.search(r"\d", name) or len(tokens) >= 2:
                bonus += ev.code_shape  # a code or an acronym pair: weaker
            if turn in problem_turns:
                bonus += ev.problem_turn
            if len(tokens) >= 2 and tokens[0].lower() in orgs:
                bonus += ev.company_product  # the company's own product: "Thanks for contacting Lingo" ... "Lingo Lessons"
            if turn in answers_product and role == "user":
                bonus += ev.answers_which  # the answer to "which model / app is it?"
            if correction and role == "user":
                bonus += ev.corrected  # "sorry, it's X, not Y": the corrected name
            if aside:
                bonus -= ev.aside  # "One more thing: my X ...": a second issue or a side remark
            if role == "agent" and re.search(r"\b(?:contacting|reaching\s+out\s+to|calling|welcome\s+to|connected\s+to|reached|choosing|from)\s+$", body[max(0, start - 25) : start], re.I):
                bonus -= ev.greeting_company  # "Thanks for contacting X": the company, not the product
            entry[1] = max(entry[1], bonus)
        if correction and claimed_here:
            # "it's DSL Basic 25, not DSL Plus 80" where DSL Plus 80 is the plan: the correction is a plan too
            for k in named_here:
                if k in found and found[k][3] == text and found[k][4] <= 1:
                    del found[k]
    for key in list(found):
        if key in denied or key in claimed_anywhere:
            del found[key]
    # a model number inside a longer name counts for the longer name
    for key in list(found):
        name = found[key][0]
        if not re.search(r"\d", key) or len(name.split()) > 1:
            continue
        longer = aliases.get(key)
        if longer is None:
            longer = next((k for k in found if k != key and len(found[k][0].split()) >= 2 and _names_same_thing(key, found[k][0])), None)
        if longer in found:
            found[longer][4] += found[key][4]
            found[longer][1] = max(found[longer][1], found[key][1])  # what was said of the code was said of the product
            del found[key]
    out = []
    all_text = " ".join(t for _, _, t in sentences)
    for key, (name, bonus, turn, text, count) in found.items():
        pat = re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")
        count = max(count, len(pat.findall(all_text)))
        score = bonus + EVIDENCE.per_mention * min(count, EVIDENCE.mention_cap)
        if score >= EVIDENCE.bar:
            out.append((name, round(score, 2), turn, text))
    out.sort(key=lambda x: (-x[1], x[2], x[0]))
    return out
