""""Key: value" lines, "my X is Y" statements, and the slots an agent requests with the answers the
user gives them."""

from __future__ import annotations

import re

from sarag_assets.backends.embedded.cues import _IMPERATIVE_VERBS
from sarag_assets.backends.embedded.text import (
    _STOP,
    Hit,
    _strip_lead,
    is_placeholder_only,
    snake,
)

# --- "Key: value" lines and "my X is Y" statements ---------------------------------------------------

_KV_LINE = re.compile(r"(?m)^[ \t>*•-]*(?P<k>[A-Za-z][A-Za-z0-9 /_().'-]{0,38}?)\s*(?::|=|-\s)\s*(?P<v>\S[^\n]{0,150}?)\s*$")
_KV_INLINE = re.compile(r"(?:^|(?<=[,;|(]))\s*(?P<k>[A-Za-z][A-Za-z0-9 /_'-]{0,30}?)\s*:\s*(?P<v>[^,;|()\n]{1,80}?)\s*(?=[,;|)]|$)")
_BAD_KEY_WORDS = frozenset(
    """i me you we he she it they this that my your our his her their there here note notes ps p.s edit edited
    update updated hi hello hey dear thanks thank regards cheers sorry correction example e.g q a question answer
    re fwd fw subject step steps tip tips warning important http https www am pm so and but or because if
    when then also btw fyi lol ok okay yes no please also just problem issue summary tl dr tldr result results
    reason why how what where who which said says reply quote output input log logs error""".split()
)
_KEY_SYNONYMS_TO_SIGNAL = {
    "error": "error_message",
    "error message": "error_message",
    "error msg": "error_message",
    "error code": "error_code",
    "os": "os",
    "operating system": "os",
    "browser": "browser",
    "version": "version",
    "model": "model",
}


def _valid_key(k: str) -> bool:
    if is_placeholder_only(k):
        return False  # "user1: try sudo": a chat line addressed to someone (redacted nick), not a field
    words = k.lower().split()
    if not 1 <= len(words) <= 4:
        return False
    if any(w in ("i", "me", "you", "we", "it", "this", "that", "they", "he", "she") for w in words):
        return False
    if len(words) == 1 and (words[0] in _BAD_KEY_WORDS or words[0] in _IMPERATIVE_VERBS):
        return False
    if "'" in k or "’" in k or any(w in _STOP and w not in ("of", "for", "on", "per", "no", "id") for w in words):
        return False  # "Forgot to say: ...", "It's a version mismatch: ..." are prose, not keys
    return not re.fullmatch(r"\d.*", k)


def find_key_values(text: str) -> list[Hit]:
    """"Key: value" statements, one per line or as a comma-separated list on one line
    ("Order ID: 3348917502", "Browser: Chrome, OS: Windows 11"); the column name is the key."""
    hits: list[Hit] = []
    for line_m in re.finditer(r"[^\n]+", text):
        line = line_m.group()
        off = line_m.start()
        pairs = [m for m in _KV_INLINE.finditer(line)]
        use_inline = len(pairs) >= 2 and all(_valid_key(p.group("k").strip()) for p in pairs)
        matches = pairs if use_inline else [m for m in _KV_LINE.finditer(line)]
        for m in matches:
            k = m.group("k").strip()
            v = m.group("v").strip().rstrip(".;,")
            if not _valid_key(k) or not v or is_placeholder_only(v):
                continue
            if re.match(r"//", v) or re.fullmatch(r"\d{1,2}", k):
                continue
            if v.endswith("?") or len(v.split()) > 10 or (m.re is _KV_LINE and "-" in line[m.end("k") : m.start("v")] and ":" not in line[m.end("k") : m.start("v")] and len(k.split()) > 2):
                continue
            if k[0].islower() and m.re is _KV_LINE and not re.match(r"^\s*[A-Za-z][\w ]*:", line):
                continue
            if v.startswith(("http", "www")):
                continue
            s = off + m.start("v")
            hits.append(Hit("key_value", snake(re.sub(r"\(.*?\)", "", k)), v, s, s + len(v), 0.9, "string", k))
    return hits


_STATEMENT = re.compile(
    r"\b(?P<who>my|our|your|the\s+customer'?s|the)\s+(?P<x>(?:[A-Za-z][\w-]*\s+){0,3}?[A-Za-z][\w-]*)\s+(?P<verb>is|are|was|=)\s+"
    r"(?:currently\s+|still\s+|now\s+|set\s+to\s+|called\s+|named\s+|listed\s+as\s+|registered\s+(?:as|to)\s+)?"
    r"(?!not\b|the\s+same\b|broken\b|gone\b|empty\b|missing\b|wrong\b|down\b|slow\b|stuck\b|locked\b|very\b|too\b|so\b|really\b|"
    r"working\b|fine\b|ok\b|okay\b|good\b|bad\b|on\s+its\b|in\b|at\b|on\b|being\b|going\b|getting\b|showing\b|saying\b|having\b|"
    r"still\b|also\b|just\b|a\s+bit\b|kind\b|pretty\b|completely\b|totally\b|always\b|never\b|expired\b|charged\b|disabled\b|"
    r"blocked\b|suspended\b|cancel)"
    r"(?P<v>[^.,;!?\n]{1,80}?)(?=\s*(?:[.,;!?\n]|$|\s+(?:and|but|so|which|because|since|though|although|if|when|while|for|from|with|it|that|this|"
    r"who|is|was|are|were|i|we|you|they|he|she|please|thanks|thank)\b))",
    re.IGNORECASE,
)
_BAD_STATEMENT_KEYS = frozenset(
    """problem issue question concern name guess bad fault pleasure apologies apology hope point understanding
    experience worry goal main only biggest feeling thought thoughts idea request complaint frustration
    fear main concern situation story life day time turn bet assumption impression opinion mistake
    email e-mail phone mobile address job work husband wife son daughter friend mom dad mother father kids
    family partner boss internet connection wifi service screen computer phone app laptop device account
    order package delivery payment card refund""".split()
)


def find_statements(text: str, *, role: str = "user") -> list[Hit]:
    """"my X is Y" statements (user) and "your X is Y" statements (agent) where Y is a value: it has a
    digit, a capitalized word or a quote ("my username is cminh730", "your seat number is 5D", "my
    router is the Homelink HC31"). States ("my internet is slow", "my license is invalid") are not."""
    hits = []
    for m in _STATEMENT.finditer(text):
        who = m.group("who").lower()
        if (who == "your") != (role == "agent") and who not in ("the customer's", "the"):
            continue
        if who == "the" and (role != "user" or len(m.group("x").split()) > 2 or not re.match(r"[\"“]?[A-Z0-9]", m.group("v").strip())):
            continue  # "the carrier is ParcelNow": only a capitalized or numeric value
        x = m.group("x").strip()
        x_words = x.lower().split()
        x_words = [w for w in x_words if w not in ("current", "present", "existing", "own", "new", "old", "actual")]
        if not x_words or x_words[-1] in _BAD_STATEMENT_KEYS and len(x_words) == 1 or x_words[-1] in ("name", "email", "phone", "address", "problem", "issue", "question"):
            continue
        if any(w in _STOP for w in x_words) or len(x_words) > 3:
            continue
        v = m.group("v").strip()
        v = re.sub(r"^(?:the|a|an)\s+", "", v, flags=re.I).strip()
        if not v or is_placeholder_only(v) or len(v.split()) > 8:
            continue
        has_value_shape = bool(re.search(r"\d|[\"“]|(?<!^)\b[A-Z]|^[A-Z][a-z]*[A-Z]", v)) or (v[0].isupper() and v.split()[0] not in ("I", "It", "This", "That"))
        if not has_value_shape:
            continue  # "my license is invalid", "my account is locked": a state, not a value
        s = m.start("v") + m.group("v").find(v)
        hits.append(Hit("statement", snake(" ".join(x_words)), v, s, s + len(v), 0.8 if role == "user" else 0.75, "string", x))
    return hits


# --- requested slots (agent asks, user answers) -----------------------------------------------------

_REQUEST = re.compile(
    r"\b(?:may\s+i\s+(?:please\s+)?(?:have|get|ask(?:\s+for|\s+you\s+for)?|know|see)|(?:you\s+)?would\s+(?:you\s+)?(?:please\s+)?(?:give|provide|tell|share|confirm|send)(?:\s+(?:me|us))?|can\s+i\s+(?:please\s+)?(?:have|get|ask\s+for)|"
    r"could\s+(?:you|i)\s+(?:please\s+)?(?:give|provide|tell|share|confirm|send|have|get|let\s+me\s+know|verify|enter|type)(?:\s+(?:me|us))?|"
    r"can\s+you\s+(?:please\s+)?(?:give|provide|tell|share|confirm|send|let\s+me\s+know|verify)(?:\s+(?:me|us))?|"
    r"would\s+you\s+(?:please\s+)?(?:give|provide|tell|share|confirm|send)(?:\s+(?:me|us))?|"
    r"(?:please\s+)?(?:provide|share|confirm|send|enter|verify)(?:\s+(?:me|us))?|please\s+(?:give|tell)(?:\s+(?:me|us))|"
    r"let\s+(?:me|us)\s+know|what(?:'s|\s+is|\s+was|\s+are)|which|do\s+you\s+have|i(?:'ll|\s+will)?\s+(?:need|just\s+need)|"
    r"i\s+would\s+need|need\s+your)\s+"
    r"(?P<rest>(?:[^?.!\n]|\.(?=\S)|(?<=\b[A-Z])\.){2,120})",
    re.IGNORECASE,
)
_PII_SLOTS = re.compile(r"^(?:(?:full|first|last|user'?s?|customer'?s?|your)\s+)?(?:name|e-?mail(?:\s+address)?|phone(?:\s+number)?|"
                        r"mobile(?:\s+number)?|(?:home|mailing|billing|shipping|street)?\s*address|date\s+of\s+birth|dob|zip(?:\s+code)?|postcode|postal\s+code)$", re.I)
_ID_SLOT = re.compile(r"\b(?:number|no|num|id|code|#|confirmation|reference|ref|username|user\s?name|account|pin|key|serial|tracking|imei)\b", re.I)


def _slot_name(phrase: str) -> str:
    p = re.sub(r"\s+", " ", phrase.strip().lower())
    m = re.fullmatch(r"(.+?)\s+(?:of|for)\s+(?:the|your|this|that|my)?\s*(.+)", p)
    if m and len(m.group(2).split()) <= 2:
        p = f"{m.group(2)} {m.group(1)}"
    words = [w for w in re.findall(r"[a-z0-9#]+", p) if w not in ("the", "your", "a", "an", "this", "that", "full")]
    return snake(" ".join(words))


def requested_slots(sentence: str) -> list[str]:
    """What an agent sentence asks the user for ("may I have your username, email address and order ID
    please?" -> ["username", "email address", "order ID"]). Yes/no questions ask for nothing."""
    m = _REQUEST.search(sentence)
    if not m:
        return []
    rest = m.group("rest")
    cue = m.group().lower()
    if cue.startswith("which"):
        head = re.match(r"((?:[\w.-]+\s+){0,4}?[\w.-]+?)\s+(?:is|are|was|were|do|does|did|would|will|can|should|have|has|you|it)\b", rest, re.I)
        phrase = head.group(1) if head else rest
        words = [w for w in phrase.split() if re.fullmatch(r"[A-Za-z][a-z-]*", w)]
        if len(words) >= 2 and re.search(r"(?:ed|es)$", words[-1].lower()) and words[-1].lower() not in ("series", "devices", "services"):
            words = words[:-1]  # "which carrier shipped it": the verb is not the slot
        if not words or words[-1].lower() in _STOP:
            return []
        if len(words) >= 2 and words[-2].lower() not in _STOP and not re.search(r"(?:ed|al|ic|ive|ous|ful|less|able|ible|est|er)$", words[-2].lower()):
            return [" ".join(words[-2:])]
        return [words[-1]]
    if cue.startswith(("what", "let")):
        if not re.match(r"\s*(?:your|the)\b", rest, re.I) and not cue.startswith("let"):
            return []
    rest = re.split(r"\b(?:so\s+(?:that\s+)?i|so\s+we|to\s+(?:check|verify|look|confirm|validate|help|see|locate|find|process|pull)|in\s+order|"
                    r"please|for\s+(?:me|us|verification|security)|if\s+(?:you|possible)|as\s+well)\b|\[[A-Z]+\]|\b(?:user|agent)\d+\b", rest, flags=re.I)[0]
    if cue.startswith("let"):
        rest = re.sub(r"^(?:what|which)\s+(?:is\s+|are\s+)?", "", rest.strip(), flags=re.I)
    parts = re.split(r",|\band\b|\bor\b|&|/|\balong\s+with\b|\bplus\b", rest)
    slots = []
    for part in parts:
        part = re.sub(r"^\s*(?:also\s+)?(?:your|the|a|an|me|us|with|additional(?:ly)?|also)\s+", "", part.strip(), flags=re.I)
        part = re.sub(r"^\s*(?:your|the|a|an)\s+", "", part, flags=re.I).strip(" :-'\"")
        words = part.split()
        if not 1 <= len(words) <= 4:
            continue
        if words[0].lower() in _STOP and words[0].lower() not in ("pin",):
            continue
        if re.search(r"\b(?:help|assist|moment|minute|second|know|do|go|check|wait|look|issue|problem|concern|question|details?|info(?:rmation)?)\b", part, re.I):
            continue
        slots.append(part)
    return slots


_LEAD_IN = re.compile(
    r"^(?:(?:yes|yeah|yep|sure|ok|okay|well|um|uh|so|oh|hi|hello)[,!.]?\s+)*(?:it'?s|it\s+is|it\s+was|its|i'?m(?:\s+a)?|i\s+am(?:\s+a)?|"
    r"we\s+have|i\s+have(?:\s+a)?|i\s+got|i'?ve\s+got|that'?s|that\s+is|the\s+\w+\s+is|my\s+[\w ]{1,30}?\s+is|mine\s+is|"
    r"it'?s\s+a|it\s+was\s+the|it\s+was\s+a|it\s+is\s+the|it'?s\s+the|i\s+use|we\s+use|using|on)\s+",
    re.IGNORECASE,
)
_NON_ANSWERS = re.compile(
    r"^(?:yes|yeah|yep|no|nope|ok|okay|sure|thanks|thank\s+you|thx|hi|hello|hey|hold\s+on|one\s+sec(?:ond)?|wait|"
    r"i\s+don'?t\s+know|not\s+sure|idk|no\s+idea|what|why|huh|sorry|great|cool|fine|alright|right|k)\W*$",
    re.IGNORECASE,
)


_UNKNOWN_ANSWER = re.compile(
    r"^\W*(?:not\s+sure|no\s+idea|i\s+(?:don'?t|do\s+not)\s+(?:know|have|remember|recall)|whatever|dunno|no\s+clue|unsure|"
    r"i\s+(?:can'?t|cannot|couldn'?t)\s+(?:remember|recall|find|see|tell)|i'?d\s+have\s+to\s+check|idk|none|n/?a)\b",
    re.IGNORECASE,
)


def answer_value(answer: str) -> str | None:
    """The value in a short answer to a question ("I'm a bronze" -> "bronze", "It was the Delta sky
    miles card." -> "Delta sky miles card"), or None for non-answers ("ok", "I don't know")."""
    a = _strip_lead(answer).strip()
    if not a or _NON_ANSWERS.match(a) or _UNKNOWN_ANSWER.match(a) or is_placeholder_only(a) or a.endswith("?"):
        return None
    a = _LEAD_IN.sub("", a).strip()
    a = re.sub(r"^(?:the|a|an)\s+", "", a, flags=re.I)
    a = a.rstrip(" .!")
    a = re.sub(r"(?<=\w)\s+one$", "", a) if len(a.split()) >= 2 else a
    if not a or len(a.split()) > 8 or is_placeholder_only(a) or _NON_ANSWERS.match(a):
        return None
    return a
