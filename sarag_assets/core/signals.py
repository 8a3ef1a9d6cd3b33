"""Signal detectors over (already redacted) support conversations: plain functions, no Dagster, no model.

What the embedded structuring backend builds its columns and values from. Everything here is general
English and general patterns, not the vocabulary of one dataset:

- text utilities: ``snake`` (column names), ``split_sentences`` (sentences with offsets);
- entity detectors on one piece of text, each returning ``Hit``s (name, value, span, strength):
  ``find_versions``, ``find_os``, ``find_browsers``, ``find_error_codes``, ``find_error_messages``,
  ``find_models``, ``find_dates``, ``find_amounts``, ``find_measurements``, ``find_identifiers``,
  ``find_plans``, ``find_key_values`` ("Key: value" lines), ``find_statements`` ("my X is Y");
- cue detectors: ``correction_cue``, ``is_negated``, ``instruction_score``, ``confirmation``,
  ``problem_score``, ``cause_clause``;
- conversation-level detectors: requested-slot answers (the agent asks "may I have your order ID?", the
  user answers "7916676427"), the problem statement (the user's earliest sentence stating a malfunction
  or need, not a greeting, a step already tried, a bare detail, background or an aside; without its
  framing: "So basically ..., and it's driving me crazy"), the resolution (the agent step the user
  confirmed worked - the first confirmation, the head of a step-by-step chain, never a step the user
  said failed - else the last concrete instruction when nothing failed or was escalated after it),
  whether it was resolved, the root cause, the product (a named thing the user owns or uses; never a
  person, the company where it greets, a carrier, a plan, a menu path or a kind of thing);
- ``analyze(turns)``: all of the above over one conversation, with corrections applied ("actually it's
  2.3, not 2.1": 2.3 wins, 2.1 is never a value), returning ``Finding``s with the turn, role and
  sentence each came from.

``strength`` (0..1) says how sure a detector is that the span is a value of that kind: a strong pattern
with an explicit key is ~0.9, a bare shape ~0.6, a heuristic guess lower.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Iterable, Sequence

__all__ = [
    "Hit",
    "Sentence",
    "Finding",
    "Analysis",
    "SIGNALS",
    "snake",
    "split_sentences",
    "is_placeholder_only",
    "find_versions",
    "find_os",
    "find_browsers",
    "find_error_codes",
    "find_error_messages",
    "find_models",
    "find_dates",
    "find_amounts",
    "find_measurements",
    "find_identifiers",
    "find_plans",
    "find_key_values",
    "find_statements",
    "requested_slots",
    "answer_value",
    "correction_cue",
    "is_negated",
    "instruction_score",
    "confirmation",
    "problem_score",
    "problem_statement",
    "cause_clause",
    "product_candidates",
    "analyze",
]

# The detectors (signal names) and the general support concepts.
SIGNALS: tuple[str, ...] = (
    "problem",
    "resolution",
    "resolved",
    "root_cause",
    "product",
    "attempted_steps",
    "escalated",
    "version",
    "os",
    "browser",
    "error_code",
    "error_message",
    "model",
    "date",
    "amount",
    "measurement",
    "identifier",
    "plan",
    "key_value",
    "statement",
    "answer",
)

# ---------------------------------------------------------------------------------------------------
# text utilities

_PLACEHOLDER = re.compile(r"\[(?:EMAIL|PHONE|NAME|IP|MENTION|URL)\]|\b(?:user|agent)\d+\b")
_PLACEHOLDER_ONLY = re.compile(r"^(?:\s|[,.;:!?'\"()-]|\[(?:EMAIL|PHONE|NAME|IP|MENTION|URL)\]|\b(?:user|agent)\d+\b)*$")


def is_placeholder_only(text: str) -> bool:
    """True when the text is nothing but redaction placeholders and punctuation (or empty)."""
    return bool(_PLACEHOLDER_ONLY.match(text or ""))


def snake(text: str, max_len: int = 40) -> str:
    """A column name: ASCII snake_case, at most ``max_len`` characters, never starting with a digit."""
    t = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode("ascii")
    t = re.sub(r"([a-z0-9]{2,})([A-Z])", r"\1_\2", t)  # errorCode -> error_Code (iPhone stays)
    t = re.sub(r"([A-Z]{2,})([A-Z][a-z]{2,})", r"\1_\2", t)  # HTTPStatus -> HTTP_Status
    t = t.replace("#", " number ").replace("%", " percent ").replace("&", " and ")
    t = re.sub(r"[^A-Za-z0-9]+", "_", t).lower().strip("_")
    t = re.sub(r"_+", "_", t)
    if not t:
        return "column"
    if t[0].isdigit():
        t = "n_" + t
    if len(t) > max_len:
        cut = t[:max_len]
        if t[max_len] != "_" and "_" in cut[max_len // 2 :]:
            cut = cut[: cut.rfind("_")]  # do not end on half a word
        t = cut
        t = t.strip("_")
    return t


_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs mr mrs ms dr st no nos approx incl jr sr inc ltd co corp fig ver min max sec dept est "
    "a.m p.m u.s u.k jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|\n+")
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s*$")
_LEADING_NOISE = re.compile(r"^(?:\s|\[MENTION\]|[-*•>]|\d{1,2}[.)](?=\s))+")


def split_sentences(text: str) -> list[tuple[int, int, str]]:
    """Sentences of one turn as (start, end, text), offsets into ``text``; list markers stay attached
    to their item ("1. Flash firmware 5.1.5 ..." is one sentence), abbreviations do not split."""
    if not text:
        return []
    pieces: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end() if m.group()[0] != "\n" else m.start()
        if m.group()[0] == ".":
            before = re.search(r"([A-Za-z][A-Za-z.]*)$", text[start : m.start()])
            word = before.group(1).lower().rstrip(".") if before else ""
            if word in _ABBREVIATIONS or (before and len(before.group(1)) == 1 and before.group(1).isupper()):
                continue
            if _LIST_MARKER.match(text[start : m.end()]):
                continue  # "1." belongs to the item that follows
        if m.group()[0] in ".!?" and re.match(r"\s+[a-z]", text[m.end() :]) and re.search(r"\.\.|[\"'”’]", m.group()):
            continue  # 'hangs at "Syncing..." and never finishes': an ellipsis or a quote, not an end
        pieces.append((start, end))
        start = m.end()
    pieces.append((start, len(text)))
    out = []
    for s, e in pieces:
        seg = text[s:e]
        lead = len(seg) - len(seg.lstrip())
        seg = seg.strip()
        if not seg or _LIST_MARKER.match(seg) or is_placeholder_only(seg):
            continue
        out.append((s + lead, s + lead + len(seg), seg))
    return out


def _strip_lead(text: str) -> str:
    """The sentence without leading @mentions, list markers and bullets."""
    return _LEADING_NOISE.sub("", text)


def _mostly_upper(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 6 and sum(c.isupper() for c in letters) / len(letters) > 0.6


_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from as into onto about over under up down
    out off is am are was were be been being do does did have has had will would can could shall should may
    might must not no yes i me my mine we us our you your he him his she her it its they them their this that
    these those there here what which who whom whose when where why how all any some each every both either
    neither just also only very really still already again too please thanks thank hi hello hey ok okay yeah
    sure now then than because while since until after before during s t don doesn didn isn wasn aren weren
    can't won't i'm i've i'd it's that's there's let's one two get got""".split()
)


def _words(text: str) -> list[str]:
    return [w.lower().strip("'’-") for w in _WORD.findall(text)]


def _content_words(text: str) -> list[str]:
    return [w for w in _words(text) if w and w not in _STOP]


# ---------------------------------------------------------------------------------------------------
# hits


@dataclass(frozen=True)
class Hit:
    """One detected value in one piece of text."""

    signal: str  # detector name
    name: str  # column name derived from the text ("firmware_version", "order_id")
    value: str  # the value (verbatim, except dates in ISO form and amounts without symbols)
    start: int  # span of the value in the text
    end: int
    strength: float  # 0..1
    type: str = "string"  # canonical type of the column it would fill
    key: str | None = None  # the words the name came from, when any

    def span_text(self, text: str) -> str:
        return text[self.start : self.end]


def _before(text: str, pos: int, n: int = 40) -> str:
    return text[max(0, pos - n) : pos]


def _after(text: str, pos: int, n: int = 40) -> str:
    return text[pos : pos + n]


# --- corrections and negation -----------------------------------------------------------------------

_CORRECTION = re.compile(
    r"\b(?:actually|correction|i\s+meant|i\s+mean|meant\s+to\s+say|my\s+bad|my\s+mistake|typo|no\s+wait|"
    r"wait,?\s+no|oops|scratch\s+that|to\s+clarify|sorry,?\s+(?:it'?s|it\s+is|i|that|the|make\s+that)|"
    r"not\s+\S+\s*,?\s+but|rather\s+than|instead\s+of|make\s+that|i\s+misspoke|"
    r"wrong\s+(?:number|version|one)|let\s+me\s+correct)\b",
    re.IGNORECASE,
)
_NEGATED_BEFORE = re.compile(
    r"(?:\bnot|n't|\bnever|\binstead\s+of|\brather\s+than|\bno\s+longer|\bisn'?t|\bwasn'?t|\bnor|\bmis(?:read|typed|spelled|heard)\s+(?:it\s+)?as|"
    r"\bconfused\s+(?:it\s+)?with|\bthought\s+it\s+was|\bwrote|\btyped)\s*"
    r"(?:\s(?:the|a|an|on|in|at|version|ver|v|firmware|build|release|number|no\.?|#|code|model|plan|from|"
    r"using|running|it|that|this|is|was|exactly|really|even))*\s*[\"'“(#]?\s*$",
    re.IGNORECASE,
)
_NEGATED_AFTER = re.compile(r"^[\"'”)]?\s*(?:is|was)\s+(?:wrong|incorrect|a\s+typo|not\s+right|a\s+mistake)\b", re.I)


def correction_cue(sentence: str) -> bool:
    """The sentence corrects something said before ("actually it's 2.3", "sorry, I meant X", "no wait")."""
    return bool(_CORRECTION.search(sentence))


def is_negated(text: str, start: int, end: int) -> bool:
    """The span is inside a denial ("not 2.1", "instead of X", "X is wrong"): it is not the value."""
    before = text[max(0, start - 40) : start]
    # a clause boundary between the cue and the span ends the negation
    before = re.split(r"[.;!?]|\bbut\b|,\s+(?=it|i|the)", before)[-1]
    if _NEGATED_BEFORE.search(before):
        # "doesn't work on 2.1" negates the working, not the version: only short denials count
        tail = before.lower()
        m = re.search(r"(?:not|n't|never|instead of|rather than|no longer|nor)\b(.*)$", tail)
        gap = m.group(1) if m else ""
        if len(gap.split()) <= 3 and not re.search(r"\b(?:work|working|works|help|load|start|open|run)\b", gap):
            return True
    return bool(_NEGATED_AFTER.match(text[end : end + 30]))


# --- versions ---------------------------------------------------------------------------------------

_VERSION_WORD = r"(?:version|ver|v|build|release|rev|revision|patch)"
_DOTTED = re.compile(
    r"(?<![\w.$€£¥#/:@\[-])(?P<v>[vV]?\d{1,5}(?:\.\d{1,6}){1,4}(?:-(?:[A-Za-z]+\d*|\d+)(?:\.\d+)*|\+[\w.]+|[a-z]\d{0,2})?)"
    r"(?![\w@]|\.\d|%|,\d)"
)
_KEYED_VERSION = re.compile(
    r"\b(?P<key>version|ver|build|release|rev|revision|patch|firmware|fw|bios|kernel|driver)\s*(?:number|no\.?|#)?\s*"
    r"(?:is\s+|:\s*|=\s*|of\s+)?(?P<v>[vV]?\d{1,6}(?:[.\-_]\w+)*)(?![\w.]*\w)",
    re.IGNORECASE,
)
_V_PREFIX = re.compile(r"(?<![\w.])(?P<v>[vV]\d{1,4}(?:\.\d{1,6}){0,4})(?![\w.]*\d)")
_UNIT_AFTER = re.compile(
    r"^\s?(?:%|x\b|gb|mb|kb|tb|gib|mib|ghz|mhz|khz|hz|mbps|gbps|kbps|mb/s|gb/s|ms|s\b|sec|secs|seconds|min|mins|minutes|"
    r"h\b|hr|hrs|hours|days|weeks|months|years|km|kg|g\b|lb|lbs|mi|miles|m\b|cm|mm|in\b|inch|inches|ft|feet|"
    r"stars?|points?|mp\b|mp|w\b|watts?|v\b|volts?|a\b|amps?|mah|°|degrees|k\b|fps|dpi|ppi|rating|percent|"
    r"usd|eur|gbp|dollars?|euros?|pounds?|bucks)",
    re.IGNORECASE,
)
_SOFTWARE_NOUNS = frozenset(
    """firmware fw app application software driver drivers bios uefi kernel client server plugin plug-in
    extension addon add-on package library lib sdk api tool module theme engine framework runtime database
    db game launcher agent service program utility os system build release patch update router modem
    console browser shell compiler interpreter python java node php ruby go rust perl npm pip docker
    image container cli gui ui desktop mobile web site website beta""".split()
)
_VERSION_SKIP = frozenset(
    "version versions ver v the a an is are was were on at of to from now currently still running using "
    "with my our its it's latest newest current old older new newer same running: - : 's".split()
)
_UPDATE_VERBS = re.compile(
    r"\b(?:update|updat(?:ed|ing)|upgrade|upgrad(?:ed|ing)|install|installing|flash|flashing|download|"
    r"get|grab|apply|move|roll(?:ing)?\s+back|rollback|downgrade|switch|patch|fixed|fix(?:es)?|resolved|"
    r"available|released|latest|newest|recommend(?:ed)?)\b",
    re.IGNORECASE,
)


def _looks_like_date(v: str) -> bool:
    parts = v.split(".")
    if len(parts) == 3 and all(p.isdigit() for p in parts):
        a, b, c = (int(p) for p in parts)
        if len(parts[2]) == 4 and 1 <= a <= 31 and 1 <= b <= 12 and 1900 <= c <= 2100:
            return True
        if len(parts[0]) == 4 and 1900 <= a <= 2100 and 1 <= b <= 12 and 1 <= c <= 31:
            return True
    return False


def _looks_like_ip(v: str, text: str, start: int) -> bool:
    parts = v.split(".")
    if len(parts) != 4 or not all(p.isdigit() and int(p) <= 255 for p in parts):
        return False
    ctx = _before(text, start, 40).lower()
    if re.search(r"\b(?:version|ver|v|build|firmware|fw|release|update|driver|bios)\W*$", ctx):
        return False
    return bool(re.search(r"\b(?:ip|address|addr|host|ping|gateway|dns|server|subnet|lan|wan|proxy|connect)", ctx))


def _version_owner(text: str, start: int, end: int) -> tuple[str | None, bool]:
    """The noun the version belongs to ("firmware 1.2.4" -> firmware) and whether a version cue is near."""
    before = text[max(0, start - 60) : start]
    toks = re.findall(r"[A-Za-z][\w+-]*|[:=]", before)
    cue = False
    owner = None
    m = re.search(r"\b(?:my|our|the|your)\s+([A-Za-z][\w-]*)\s+(?:is|are|was)\s+(?:still\s+|currently\s+|now\s+)?(?:on|at|running)\s+(?:version\s+|v\s*)?$", before, re.I)
    if m:
        return m.group(1).lower(), True
    for tok in reversed(toks[-5:]):
        low = tok.lower()
        if re.fullmatch(_VERSION_WORD, low):
            cue = True
            continue
        if low in _VERSION_SKIP or tok in ":=":
            continue
        if low in _SOFTWARE_NOUNS:
            owner, cue = low, True
        elif low not in _STOP and tok[0].isupper() and not _UPDATE_VERBS.fullmatch(tok) and len(tok) > 1:
            owner = low  # a product name right before: "Chrome 120.0", "iPhone is on 11.1.2"
            cue = True
        break
    if owner is None:
        nxt = re.match(r"\s*([A-Za-z][\w-]*)", text[end : end + 30])
        if nxt:
            low = nxt.group(1).lower()
            if low in _SOFTWARE_NOUNS and low not in ("update", "release", "build", "patch"):
                owner, cue = low, True
            elif low in ("update", "release", "build", "patch", "version", "beta"):
                cue = True
    if re.search(r"\b(?:on|to|from|with|running|version|v)\s*$", before, re.I):
        cue = True
    return owner, cue


def find_versions(text: str, *, role: str = "user", instruction: bool = False) -> list[Hit]:
    """Software/firmware versions: dotted numbers with at least three parts, or two parts / a bare
    number next to a version word ("version 11", "build 22621", "on 4.1"). Not IP addresses, dates,
    amounts or measurements. An agent telling the user to install one names ``target_version``."""
    hits: list[Hit] = []
    seen: set[tuple[int, int]] = set()
    os_spans = [(h.start, h.end) for h in find_os(text)] + [(h.start, h.end) for h in find_browsers(text)]

    def add(v: str, s: int, e: int, strength: float, cue_key: str | None = None) -> None:
        if any(s < oe and e > os_ for os_, oe in os_spans):
            return  # part of an OS or browser name: that detector owns it
        if any(s < b and e > a for a, b in seen):
            return
        owner, cue = _version_owner(text, s, e)
        if cue_key:
            owner = owner or (cue_key.lower() if cue_key.lower() in _SOFTWARE_NOUNS else None)
            if cue_key.lower() == "fw":
                owner = "firmware"
        n_parts = v.lstrip("vV").count(".") + 1
        if n_parts == 2 and not cue and not cue_key and not v[0] in "vV":
            return
        if n_parts >= 3 and cue:
            strength = max(strength, 0.95)
        before = _before(text, s, 50)
        target = role == "agent" and (instruction or bool(_UPDATE_VERBS.search(before)))
        if owner in ("update", "release", "patch", "build"):
            owner = None if owner != "build" else "build"
        if target:
            name = "target_version"
        elif owner == "build":
            name = "build_number"
        elif owner:
            name = snake(owner + "_version")
        else:
            name = "version"
        seen.add((s, e))
        hits.append(Hit("version", name, v, s, e, round(strength, 2), "string", owner))

    for m in _KEYED_VERSION.finditer(text):
        v = m.group("v").rstrip(".-_")
        if not re.search(r"\d", v) or _UNIT_AFTER.match(text[m.end("v") :]):
            continue
        if re.fullmatch(r"\d{1,2}", v) and m.group("key").lower() in ("release", "patch", "rev", "revision"):
            continue
        s = m.start("v")
        add(v, s, s + len(v), 0.85, m.group("key"))
    for m in _DOTTED.finditer(text):
        v = m.group("v")
        s, e = m.span("v")
        if _looks_like_date(v) or _looks_like_ip(v, text, s):
            continue
        if _UNIT_AFTER.match(text[e:]) or re.search(r"[$€£¥]\s*$", _before(text, s, 3)):
            continue
        n_parts = v.lstrip("vV").count(".") + 1
        if n_parts == 2 and re.match(r"^\s?(?:am|pm|a\.m|p\.m)\b", text[e:], re.I):
            continue
        add(v, s, e, 0.85 if n_parts >= 3 else 0.75)
    for m in _V_PREFIX.finditer(text):
        s, e = m.span("v")
        if re.fullmatch(r"[vV]\d{1,2}", m.group("v")) and not re.search(_VERSION_WORD + r"|\bon\b|\bto\b", _before(text, s, 20), re.I):
            continue
        add(m.group("v"), s, e, 0.8)
    hits.sort(key=lambda h: h.start)
    return hits


# --- operating systems and browsers -----------------------------------------------------------------

_VER = r"(?:\s+(?:version\s+)?v?\d{1,5}(?:\.\d{1,6}){0,4}(?:\s?(?:LTS|SP\d|R2|\(\d[\w.]*\)))?)"
_OS = re.compile(
    r"\b(?:"
    r"(?:Microsoft\s+)?Windows(?:\s+(?:XP|Vista|RT|ME|NT|Server(?:\s+\d{4})?(?:\s+R2)?|\d{1,2}(?:\.1)?))?(?:\s+(?:Home|Pro|Professional|Enterprise|Education|Ultimate|S))?(?:\s+(?:\d{2}H\d|version\s+\d{4}|build\s+\d{4,5}(?:\.\d+)?))?"
    r"|mac\s?OS(?:\s+X)?(?:\s+(?!(?:and|or|the|is|on|to|with|but)\b)[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)?" + _VER + r"?"
    r"|OS\s+X(?:\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)?" + _VER + r"?"
    r"|(?:iOS|iPadOS|watchOS|tvOS|visionOS|ChromeOS|Chrome\s+OS|HarmonyOS|Fire\s+OS|webOS|Tizen|FreeBSD|OpenBSD|NetBSD)" + _VER + r"?"
    r"|Android(?:\s+(?:version\s+)?\d{1,2}(?:\.\d){0,2}|\s+(?:Pie|Oreo|Nougat|Marshmallow|Lollipop|KitKat|Q|R))?"
    r"|(?:Ubuntu|Kubuntu|Xubuntu|Lubuntu|Debian|Fedora|CentOS|Rocky\s+Linux|AlmaLinux|Red\s+Hat(?:\s+Enterprise\s+Linux)?|RHEL|Linux\s+Mint|"
    r"Arch\s+Linux|Manjaro|openSUSE(?:\s+(?:Leap|Tumbleweed))?|SUSE(?:\s+Linux)?|Kali(?:\s+Linux)?|Pop!_OS|elementary\s+OS|Zorin\s+OS|"
    r"Raspbian|Raspberry\s+Pi\s+OS|Gentoo|Alpine(?:\s+Linux)?|Slackware|NixOS|Chromebook)" + _VER + r"?(?:\s+(?:LTS|Server|Desktop))?"
    r"|Linux(?:\s+kernel" + _VER + r")?"
    r")(?![\w])"
)


def find_os(text: str) -> list[Hit]:
    """Operating system names with their version or edition ("Windows 11 Pro", "macOS Sonoma 14.5",
    "Ubuntu 22.04 LTS", "Android 13", "iOS 11.1.2"). Only capitalized names ("windows" of a house is not)."""
    hits = []
    for m in _OS.finditer(text):
        v = m.group().strip()
        if v in ("Linux",) and re.match(r"\s+(?:Mint|kernel)", text[m.end() :]):
            continue
        strength = 0.9 if re.search(r"\d|\s", v) else 0.8
        hits.append(Hit("os", "os", v, m.start(), m.start() + len(v), strength, "string"))
    return hits


_BROWSER = re.compile(
    r"\b(?:Google\s+Chrome|Chrome(?!\s*(?:OS|book|cast))|Chromium|Mozilla\s+Firefox|Firefox|Safari|Microsoft\s+Edge|Edge(?=\s+(?:browser|\d))|"
    r"Opera(?:\s+GX)?|Brave(?=\s+(?:browser|\d))|Vivaldi|Internet\s+Explorer(?:\s+\d{1,2})?|IE\s?(?:[6-9]|1[01])\b|Samsung\s+Internet|"
    r"DuckDuckGo(?=\s+browser))(?:\s+(?:version\s+)?v?\d{1,4}(?:\.\d{1,6}){0,3})?(?!\w)"
)


def find_browsers(text: str) -> list[Hit]:
    """Web browsers with an optional version ("Chrome 120.0.6099", "Firefox", "Microsoft Edge")."""
    return [Hit("browser", "browser", m.group(), m.start(), m.end(), 0.85) for m in _BROWSER.finditer(text)]


# --- error codes and messages -----------------------------------------------------------------------

_ERROR_CONTEXT = re.compile(
    r"\b(?:error|errors|err|code|fault|fail|fails|failed|failing|failure|warning|exception|crash|crashes|crashed|"
    r"alert|status|message|says|said|saying|shows|showing|displays|popup|pop-up|prompt|blue\s+screen|bsod|stop)\b",
    re.IGNORECASE,
)
_STRONG_ERROR_CONTEXT = re.compile(
    r"\b(?:error|errors|err|code|fault|failed|failure|exception|warning|crash|crashes|crashed|bsod|blue\s+screen|alert)\b", re.I
)
_HEX_CODE = re.compile(r"(?<![\w])0x[0-9A-Fa-f]{4,16}(?!\w)")
_SNAKE_CODE = re.compile(r"(?<![\w])(?=[A-Z0-9_]*[A-Z]{2})[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){1,8}(?!\w)")
_KEYED_CODE = re.compile(
    r"\b(?:error|err|fault|exit|stop|status|return|result|reason|error\s+code|status\s+code|fault\s+code)"
    r"\s*(?:code|number|no\.?|#)?\s*(?:is\s+|was\s+|of\s+)?[:#=]?\s*[\"'“(]?(?P<c>[A-Za-z]{0,6}[-_]?[A-Za-z]?\d{2,8}[A-Za-z]?(?:[-.]\d{1,6})?)(?![\w.]*\w)",
    re.IGNORECASE,
)
_SHAPED_CODE = re.compile(r"(?<![\w.-])(?P<c>[A-Z]{1,6}[-_]?[A-Z]{0,2}\d{2,6}[A-Z]?|[A-Z]\d{3,5})(?![\w-])")
_HTTP_STATUS = re.compile(
    r"(?<![\w.])(?P<c>[45]\d\d)\s+(?:Not\s+Found|Forbidden|Unauthorized|Bad\s+Request|Internal\s+Server\s+Error|"
    r"Bad\s+Gateway|Service\s+Unavailable|Gateway\s+Time-?out|Too\s+Many\s+Requests|Method\s+Not\s+Allowed|Conflict|Gone)\b",
    re.IGNORECASE,
)
_CODE_WORDS = re.compile(r"ERR|ERROR|FAIL|EXCEPTION|DIED|DENIED|TIMEOUT|TIMED_OUT|INVALID|NOT_|UNKNOWN|REFUSED|CORRUPT|MISSING|UNABLE|VIOLATION")


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in re.finditer(r"\"([^\"\n]{2,200})\"|“([^”\n]{2,200})”|(?<![\w])'([^'\n]{2,200})'(?![\w])|‘([^’\n]{2,200})’", text):
        g = next(i for i in range(1, 5) if m.group(i) is not None)
        spans.append((m.start(g), m.end(g)))
    return spans


def find_error_codes(text: str) -> list[Hit]:
    """Error codes: hex codes (0x80070005), SYMBOLIC_CODES (ERR_CONNECTION_REFUSED), keyed codes
    ("error 1603", "error code: E-1042"), HTTP statuses ("404 Not Found"), and code-shaped tokens
    (LS-E854, ORA-00942) only inside an error context or a quoted message; a model number elsewhere
    in a sentence is not an error code."""
    hits: list[Hit] = []
    taken: list[tuple[int, int]] = []

    def add(v: str, s: int, e: int, strength: float) -> None:
        if any(s < b and e > a for a, b in taken):
            return
        taken.append((s, e))
        hits.append(Hit("error_code", "error_code", v, s, e, strength))

    context = bool(_ERROR_CONTEXT.search(text))
    quoted = _quoted_spans(text)
    for m in _HEX_CODE.finditer(text):
        add(m.group(), m.start(), m.end(), 0.95)
    for m in _KEYED_CODE.finditer(text):
        c = m.group("c")
        s = m.start("c")
        if _UNIT_AFTER.match(text[s + len(c) :]) or re.fullmatch(r"(?:19|20)\d\d", c):
            continue
        if re.search(r"\b(?:no|any)\s+(?:error\s+)?codes?\W*$", _before(text, s, 20), re.I):
            continue
        add(c, s, s + len(c), 0.9)
    for m in _HTTP_STATUS.finditer(text):
        add(m.group("c"), m.start("c"), m.end("c"), 0.85)
    for m in _SNAKE_CODE.finditer(text):
        if _CODE_WORDS.search(m.group()) or context:
            add(m.group(), m.start(), m.end(), 0.85 if _CODE_WORDS.search(m.group()) else 0.7)
    for m in _SHAPED_CODE.finditer(text):
        s, e = m.span("c")
        in_quote = any(a <= s and e <= b for a, b in quoted)
        local = text[max(0, s - 60) : e + 30]
        if in_quote or _STRONG_ERROR_CONTEXT.search(local):
            if re.fullmatch(r"[A-Z]\d{3,5}", m.group("c")) and not (in_quote or re.search(r"error|code|err", local, re.I)):
                continue
            add(m.group("c"), s, e, 0.85 if in_quote or re.search(r"error|code|err", local, re.I) else 0.7)
    hits.sort(key=lambda h: h.start)
    return hits


_MESSAGE_CUE = re.compile(
    r"\b(?:error|err|message|msg|says?|said|saying|shows?|showing|displays?|displaying|reads?|popup|pop[- ]?up|pops\s+up|"
    r"prompt|warning|alert|notification|get|gets|getting|got|see|seeing|receive|received|receiving|throws?|threw|"
    r"returns?|returned|complains?|tells\s+me|telling\s+me|appears?|keeps?\s+saying|this)\b",
    re.IGNORECASE,
)
_KEYED_MESSAGE = re.compile(
    r"(?:^|\b)(?:error(?:\s+message)?|err(?:or)?\s*msg|message|warning|exception)\s*:\s*(?P<m>[^\n\"“]{3,160}?)\s*(?:$|\n|(?<=[a-z0-9)\]])\.(?:\s|$))",
    re.IGNORECASE,
)
_EXCEPTION = re.compile(r"\b(?P<m>[A-Z][A-Za-z0-9_.]*(?:Error|Exception|Fault)\b(?::\s*[^\n]{1,160})?)")


def find_error_messages(text: str) -> list[Hit]:
    """Error messages: quoted text the user gets/sees/is shown ("it says "Unable to connect""),
    "Error: ..." lines, and exception lines ("ModuleNotFoundError: No module named 'x'")."""
    hits: list[Hit] = []
    for a, b in _quoted_spans(text):
        inner = text[a:b].strip()
        n_words = len(inner.split())
        if n_words < 2 or n_words > 25 or is_placeholder_only(inner):
            continue
        ctx = text[max(0, a - 60) : a]
        if _MESSAGE_CUE.search(ctx) or re.search(r"\b(?:error|fail|unable|cannot|can't|denied|invalid|not|timed?\s*out|down|lost)\b", inner, re.I):
            strength = 0.85 if re.search(r"error|message|says|shows|displays|get|see|reads|:", ctx, re.I) else 0.65
            hits.append(Hit("error_message", "error_message", inner.rstrip(".").strip(), a, a + len(inner.rstrip(".").strip()), strength))
    for m in _KEYED_MESSAGE.finditer(text):
        s, e = m.span("m")
        if any(s < h.end and e > h.start for h in hits) or len(m.group("m").split()) < 2:
            continue
        hits.append(Hit("error_message", "error_message", m.group("m").strip(), s, e, 0.8))
    for m in _EXCEPTION.finditer(text):
        s, e = m.span("m")
        v = m.group("m").rstrip(" .")
        if any(s < h.end and e > h.start for h in hits):
            continue
        hits.append(Hit("error_message", "error_message", v, s, s + len(v), 0.8))
    hits.sort(key=lambda h: h.start)
    return hits


# --- models -----------------------------------------------------------------------------------------

_MODEL_TOKEN = re.compile(r"(?<![\w./@#\[-])(?P<m>(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+){0,3})(?![\w@\]]|\.\d|-\w)")
_MODEL_CUE = re.compile(
    r"\b(?:model|models|router|modem|printer|laptop|notebook|phone|handset|device|unit|tv|television|monitor|camera|"
    r"console|tablet|watch|speaker|headset|headphones|earbuds|gateway|extender|repeater|switch|card|gpu|cpu|"
    r"motherboard|drive|ssd|hdd|controller|thermostat|appliance|machine|washer|dryer|fridge|car|vehicle|"
    r"scanner|projector|receiver|adapter|charger|battery)\b",
    re.IGNORECASE,
)
_NOT_MODEL = re.compile(
    r"^(?:\d+(?:st|nd|rd|th|am|pm|h|hr|hrs|s|ms|x|k|p|g|gb|mb|kb|tb|mbps|gbps|ghz|mhz|mp|mah|fps|hz|w|v|d|min|mins|"
    r"gen|yo|yr|yrs|days?|in|ft|cm|mm|km|kg|lb|lbs)|(?:mp3|mp4|h264|h265|x64|x86|ipv4|ipv6|wpa2|wpa3|usb2|usb3|"
    r"covid19|2fa|mfa|4g|5g|3g|24x7|24/7|b2b|p2p|w2|w9|1040)|[a-z]?\d{1,2}[a-z]?)$",
    re.IGNORECASE,
)


def find_models(text: str) -> list[Hit]:
    """Model numbers: tokens mixing letters and digits (R7000, SM-G991B, HC-31, DSL500), at least one
    upper-case letter, not a version, an error code, a unit ("20GB", "5G") or a seat/line label ("5D").
    Stronger after "model" or a device noun, or in parentheses after a product name."""
    hits = []
    error_spans = [(h.start, h.end) for h in find_error_codes(text)]
    for m in _MODEL_TOKEN.finditer(text):
        v = m.group("m")
        s, e = m.span("m")
        if not re.search(r"[A-Z]", v) or _NOT_MODEL.match(v) or len(v) < 3:
            continue
        letters = sum(c.isalpha() for c in v)
        digits = sum(c.isdigit() for c in v)
        if letters < 2 and digits < 3 and not re.search(r"\bmodel\b", _before(text, s, 25), re.I):
            continue
        if re.fullmatch(r"[A-Za-z]\d{1,2}", v) or re.search(r"\d{6,}", v):
            continue
        if any(s < b and e > a for a, b in error_spans):
            continue
        before = _before(text, s, 30)
        if re.search(r"\b(?:order|ticket|case|account|acct|ref|reference|booking|confirmation|tracking|invoice|"
                      r"transaction|serial|license|policy|claim|incident|request|reservation|receipt|id|number|no|#|pin|code|username|user)\W{0,3}(?:number|no\.?|#|id|is|:)?\W{0,3}$", before, re.I):
            continue
        strength = 0.6
        if re.search(r"\bmodel\s*(?:number|no\.?|#)?\s*(?:is|:)?\s*(?:the\s+)?$", before, re.I):
            strength = 0.9
        elif re.search(r"\($", before.rstrip()) and re.match(r"\s*\)", text[e:]):
            strength = 0.8
        elif _MODEL_CUE.search(text[max(0, s - 40) : e + 25]):
            strength = 0.75
        hits.append(Hit("model", "model", v, s, e, strength))
    return hits


# --- dates ------------------------------------------------------------------------------------------

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_MONTH_RE = r"(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
_DATE_PATTERNS = (
    ("iso", re.compile(r"(?<![\w.])(?P<y>(?:19|20)\d\d)[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?![\w]|[.:-]\d)")),
    ("mdy", re.compile(r"(?<![\w.])(?P<mn>" + _MONTH_RE + r")\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<y>(?:19|20)\d\d))?(?![\w:])")),
    ("dmy", re.compile(r"(?<![\w.])(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mn>" + _MONTH_RE + r")(?:,?\s+(?P<y>(?:19|20)\d\d))?(?![\w:])")),
    ("num", re.compile(r"(?<![\w./-])(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<y>(?:19|20)?\d\d)(?![\w]|[./-]\d)")),
    ("my", re.compile(r"(?<![\w.])(?P<mn>" + _MONTH_RE + r")\s+(?P<y>(?:19|20)\d\d)(?![\w])")),
)
_DATE_CONTEXT = (
    ("purchase_date", r"\b(?:bought|purchased?|purchasing|ordered|order\s+date|placed\s+(?:the|an|my)\s+order|paid|checkout)\b"),
    ("delivery_date", r"\b(?:deliver(?:ed|y)?|arriv(?:e|ed|al)|ship(?:ped|ping)?|dispatch(?:ed)?|received|expected|eta)\b"),
    ("billing_date", r"\b(?:charged?|billed?|billing|invoice[d]?|debited|payment|statement)\b"),
    ("expiry_date", r"\b(?:expir(?:e|es|ed|y|ation)|valid\s+(?:until|through|thru)|ends?\s+on)\b"),
    ("renewal_date", r"\b(?:renew(?:s|ed|al)?)\b"),
    ("cancellation_date", r"\b(?:cancel(?:l?ed|ling|lation)?)\b"),
    ("appointment_date", r"\b(?:appointment|scheduled|booked|visit|reservation|check-?in|flight|travel(?:l?ing)?|depart(?:ure|ing)?)\b"),
    ("start_date", r"\b(?:since|started|starting|began|begin|first\s+noticed|from)\b"),
)


def _iso(y: int, m: int, d: int) -> str | None:
    try:
        return date(y, m, d).isoformat()
    except ValueError:
        return None


def _date_name(text: str, s: int, e: int) -> str:
    ctx = text[max(0, s - 50) : e + 20].lower()
    best, best_pos = "date", -1
    for name, pat in _DATE_CONTEXT:
        for m in re.finditer(pat, ctx):
            pos = -abs(m.start() - (s - max(0, s - 50)))
            if best_pos == -1 or pos > best_pos:
                best, best_pos = name, pos
    return best


def find_dates(text: str) -> list[Hit]:
    """Calendar dates; the value is ISO YYYY-MM-DD when the year is given and the reading is
    unambiguous, else the text as written (then it cannot fill a date column). The name comes from the
    nearest cue ("bought" -> purchase_date, "delivered" -> delivery_date), else ``date``."""
    hits: list[Hit] = []
    taken: list[tuple[int, int]] = []
    for kind, pat in _DATE_PATTERNS:
        for m in pat.finditer(text):
            s, e = m.span()
            if any(s < b and e > a for a, b in taken):
                continue
            iso = None
            strength = 0.85
            if kind == "iso":
                iso = _iso(int(m["y"]), int(m["m"]), int(m["d"]))
            elif kind in ("mdy", "dmy"):
                month = _MONTHS[m["mn"].lower().rstrip(".")]
                if m["mn"].lower().rstrip(".") == "may" and kind == "mdy" and not m["y"]:
                    strength = 0.6
                if m["y"]:
                    iso = _iso(int(m["y"]), month, int(m["d"]))
                elif not 1 <= int(m["d"]) <= 31:
                    continue
            elif kind == "num":
                a, b = int(m["a"]), int(m["b"])
                y = int(m["y"]) if len(m["y"]) == 4 else 2000 + int(m["y"])
                if m["sep"] == "." and len(m["y"]) == 2:
                    continue  # 1.2.24 is more likely a version
                if a > 12 and b <= 12:
                    iso = _iso(y, b, a)
                elif b > 12 and a <= 12:
                    iso = _iso(y, a, b)
                elif a == b:
                    iso = _iso(y, a, b)
                else:
                    strength = 0.6  # 03/04/2022: day and month cannot be told apart
                if iso is None and strength > 0.6:
                    continue
            elif kind == "my":
                strength = 0.6
            value = iso or m.group().strip()
            if kind == "mdy" and m["mn"].lower().rstrip(".") in ("may", "mar", "jun", "jan", "sep", "dec", "oct", "aug") and not m["y"]:
                # "may 5" in lower-case is a verb; abbreviations need the capital
                if not m["mn"][0].isupper():
                    continue
            if kind in ("mdy", "dmy", "my") and not m["mn"][0].isupper():
                continue
            taken.append((s, e))
            hits.append(Hit("date", _date_name(text, s, e), value, s, e, strength if iso else min(strength, 0.6), "date" if iso else "string"))
    hits.sort(key=lambda h: h.start)
    return hits


# --- amounts and measurements -----------------------------------------------------------------------

_AMOUNT = re.compile(
    r"(?P<pre>(?:US|CA|AU|NZ|HK|S)?[$€£¥₹]|(?:USD|EUR|GBP|CAD|AUD|INR|JPY|CHF)\s?)\s?(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?)(?P<suf>\s?(?:k|m|bn|million|billion)\b)?"
    r"|(?<![\w.])(?P<n2>\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?)\s?(?P<cur>USD|EUR|GBP|CAD|AUD|INR|dollars?|euros?|pounds?|bucks|cents|rupees)\b",
    re.IGNORECASE,
)
_AMOUNT_CONTEXT = (
    ("refund_amount", r"\brefund(?:ed|s)?\b"),
    ("charge_amount", r"\b(?:charged?|charges|billed?|debited|deducted|took|taken|overcharged)\b"),
    ("fee", r"\bfees?\b"),
    ("price", r"\b(?:price[ds]?|costs?|priced|pay(?:ing)?\s+for|per\s+month|monthly|/mo\b|a\s+month|subscription)\b"),
    ("bill_amount", r"\b(?:bill|invoice|statement)\b"),
    ("balance", r"\bbalance\b"),
    ("payment_amount", r"\b(?:paid|payment|pay)\b"),
    ("credit_amount", r"\bcredit(?:ed)?\b"),
)


def find_amounts(text: str) -> list[Hit]:
    """Money amounts ("$49.99", "€20", "120 dollars"); the value is the number as written without the
    currency symbol or thousands separators (a float); the name comes from the nearest cue
    (refund_amount, charge_amount, price, fee, ...), else ``amount``."""
    hits = []
    for m in _AMOUNT.finditer(text):
        n = m.group("n") or m.group("n2")
        if n is None:
            continue
        if (m.group("pre") and m.group("pre").strip().upper() in ("USD", "EUR", "GBP", "CAD", "AUD", "INR", "JPY", "CHF")) and not re.match(r"\s?\d", text[m.end("pre") :]):
            continue
        value = n.replace(",", "")
        suf = (m.group("suf") or "").strip().lower()
        if suf:
            continue  # "$7.5bn" is not a customer's amount
        if (m.group("cur") or "").lower() == "cents":
            continue
        ctx = text[max(0, m.start() - 50) : m.end() + 30].lower()
        name, best = "amount", None
        for cand, pat in _AMOUNT_CONTEXT:
            for c in re.finditer(pat, ctx):
                d = abs(c.start() - min(50, m.start()))
                if best is None or d < best:
                    name, best = cand, d
        hits.append(Hit("amount", name, value, m.start(), m.end(), 0.9, "float"))
    return hits


_MEASURE = re.compile(
    r"(?<![\w.$€£])(?P<n>\d+(?:\.\d+)?)\s?(?P<u>[KMGT]bps|[kmgt]bps|[KMGT]b/s|[KMGT]B/s|Mbit/s|Gbit/s|"
    r"[KMGT]B|[KMGT]iB|[KMGT]b\b|mAh|GHz|MHz)(?!\w)",
)
_MEASURE_NAMES = {"bps": "speed", "b/s": "speed", "bit/s": "speed", "b": "data_size", "ib": "data_size", "mah": "battery_capacity", "hz": "frequency"}


def find_measurements(text: str) -> list[Hit]:
    """Quantities with a technical unit: data rates ("20 Mbps" -> speed), sizes ("64 GB" -> data_size),
    battery capacity, frequency. The value is the quantity as written."""
    hits = []
    for m in _MEASURE.finditer(text):
        unit = m.group("u").lower()
        name = next((v for k, v in _MEASURE_NAMES.items() if unit.endswith(k)), "quantity")
        hits.append(Hit("measurement", name, m.group().strip(), m.start(), m.end(), 0.7))
    return hits


# --- identifiers ------------------------------------------------------------------------------------

_ID_CUES = (
    r"order|ticket|case|account|acct|reference|ref|booking|confirmation|tracking|invoice|transaction|customer|"
    r"member|membership|subscriber|serial|license|licence|policy|claim|incident|request|reservation|receipt|"
    r"contract|imei|sku|item|product|shipment|parcel|return|rma|refund|payment|flight|seat|pnr|loyalty|"
    r"voucher|coupon|promo|gift\s+card|card|device|meter|service|user|client|patient|student|employee|application|"
    r"registration|warranty|job|work\s+order|pin|routing|tax"
)
_IDENTIFIER = re.compile(
    r"\b(?P<key>(?:(?:" + _ID_CUES + r")\s+){0,2}(?:" + _ID_CUES + r"))"
    r"\s*(?P<suf>number|numbers|no\.?|num|nbr|#|id|ids|code|ref|key|name)?"
    r"\s*(?:is|was|will\s+be|:|=|-)?\s*(?:#|no\.?\s*)?\s*(?P<v>[A-Za-z0-9][A-Za-z0-9_/-]{2,40}[A-Za-z0-9])(?![\w@.-]*\w)",
    re.IGNORECASE,
)
_USERNAME = re.compile(r"\b(?P<key>user\s?name|login|user\s+id|handle)\s*(?:is|:|=)?\s*(?P<v>[A-Za-z0-9][\w.-]{2,40}[A-Za-z0-9])(?![\w])", re.I)


def _id_shape(v: str) -> bool:
    digits = sum(c.isdigit() for c in v)
    if digits >= 4 or (digits >= 2 and any(c.isalpha() for c in v) and len(v) >= 4):
        return not re.fullmatch(r"(?:19|20)\d\d", v)
    return False


def _id_name(key: str, suf: str | None) -> str:
    key = re.sub(r"\s+", " ", key.strip().lower())
    suf = (suf or "").strip().lower().rstrip(".")
    if suf in ("no", "num", "nbr", "#", "numbers", "number", ""):
        suf = "number"
    if suf == "ids":
        suf = "id"
    if key in ("acct",):
        key = "account"
    if key == "user" and suf == "name":
        return "username"
    return snake(f"{key} {suf}")


def find_identifiers(text: str) -> list[Hit]:
    """Identifiers named by a cue word: order/ticket/case/account/booking/tracking/... numbers or ids
    ("Order ID: 3348917502" -> order_id, "account 484-514455" -> account_number, "ticket #55812" ->
    ticket_number), and usernames. The value must look like an identifier (4+ digits, or letters with
    2+ digits); a phone number is already a [PHONE] placeholder, a version has dots."""
    hits = []
    for m in _IDENTIFIER.finditer(text):
        v = m.group("v")
        if not _id_shape(v) or is_placeholder_only(v):
            continue
        key = m.group("key")
        if re.fullmatch(r"(?i)(?:user|service|device|card|product|item|request|application|job|return|payment|customer|client|pin|tax)", key.strip()) and not m.group("suf"):
            continue  # "the device R7000", "payment 2022": too vague without number/id
        if re.fullmatch(r"(?i)card", key.strip()) and not m.group("suf"):
            continue
        between = text[m.end("key") : m.start("v")]
        if "\n" in between:
            continue
        if re.match(r"\s*(?:[-/.]\d|%|\s?(?:gb|mb|days|hours|items|times|minutes))", text[m.end("v") :], re.I):
            continue
        name = _id_name(key, m.group("suf"))
        strength = 0.9 if (m.group("suf") or re.search(r"[:#=]|\bis\b", between)) else 0.8
        hits.append(Hit("identifier", name, v, m.start("v"), m.end("v"), strength, "string", key.lower()))
    for m in _USERNAME.finditer(text):
        v = m.group("v")
        if is_placeholder_only(v) or v.lower() in _STOP:
            continue
        if any(h.start == m.start("v") for h in hits):
            continue
        hits.append(Hit("identifier", "username", v, m.start("v"), m.end("v"), 0.85, "string", "username"))
    return hits


# --- plans ------------------------------------------------------------------------------------------

_PLAN_KEYS = r"plan|subscription|tier|membership(?:\s+level)?|package|bundle|contract|level"
_NAME_TOKENS = r"[A-Z0-9][\w+&.'-]*(?:\s+(?:[A-Z0-9][\w+&.'-]*|of|and|&|\+))*"
_PLAN_IS = re.compile(
    r"\b(?:my|our|the|current|your)\s+(?:current\s+)?(?P<key>" + _PLAN_KEYS + r")\s+(?:is|was|:)\s+(?:the\s+|a\s+|an\s+)?(?P<v>"
    + _NAME_TOKENS + r"|[a-z][\w+-]*(?=\s*(?:[.,;!]|$|\s+(?:plan|tier|level|package))))",
    re.IGNORECASE,
)
_ON_PLAN = re.compile(
    r"\b(?:on|for|have|had|got|with|using|use|subscribed\s+to|signed\s+up\s+for|pay(?:ing)?\s+for|upgraded\s+to|switched\s+to|"
    r"downgraded\s+to|bought|purchased|am|i'm|is|a|an)\s+(?:the\s+|a\s+|an\s+|my\s+|our\s+)?(?P<v>" + _NAME_TOKENS + r")\s+"
    r"(?P<key>plan|subscription|tier|membership|package|bundle|contract|account|level)\b",
)


def find_plans(text: str) -> list[Hit]:
    """Plans, subscriptions, tiers, memberships ("my plan is Fiber 300", "I'm on the Cable 200 plan",
    "subscribed to Premium"); the name is the key word used (plan, subscription, tier, ...)."""
    hits = []
    for pat, strength in ((_PLAN_IS, 0.85), (_ON_PLAN, 0.85)):
        for m in pat.finditer(text):
            v = m.group("v").strip().rstrip(".,")
            if not v or is_placeholder_only(v) or v.lower() in _STOP or len(v.split()) > 5:
                continue
            if pat is _ON_PLAN and not re.search(r"[A-Z0-9]", v[0]):
                continue
            if pat is _ON_PLAN and v.split()[0] in ("I", "My", "The", "This", "That", "It", "A", "An", "Your", "Our"):
                continue
            key = m.group("key").lower()
            if key == "account" and not re.search(r"\d|Premium|Pro|Plus|Business|Basic|Free|Family", v):
                continue
            if key == "level" and pat is _ON_PLAN:
                key = "membership_level"
            s = m.start("v")
            name = snake(key) if key not in ("package", "bundle", "contract") else snake(key)
            if name == "account":
                name = "account_type"
            if any(h.start == s for h in hits):
                continue
            hits.append(Hit("plan", name, v, s, s + len(v), strength, "string", key))
    return hits


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


# ---------------------------------------------------------------------------------------------------
# cue detectors


_IMPERATIVE_VERBS = frozenset(
    """try restart reboot reset update upgrade downgrade install reinstall uninstall remove delete clear open close
    click tap press hold select choose go navigate check verify make ensure turn switch toggle enable disable unplug
    plug connect disconnect reconnect pair unpair re-pair repair sign log change set adjust configure run type enter
    use move replace flash download visit contact call follow allow add edit rename copy paste save restore sync
    refresh reload force power wait scroll drag launch quit kill stop start boot format scan test apply accept
    cancel return submit request upload attach export import grant revoke re-enter uncheck tick untick mount unmount
    put keep leave place insert eject charge give get take disable re-install re-enable re-add reopen reseat swap
    roll rollback delete disable empty unlink relink link purge flush renew release re-register register
    reactivate activate deactivate unblock block whitelist allowlist drop shut unpause resume pause raise lower
    increase decrease downgrade re-download redownload re-sync resync sudo edit uninstall reapply clean wipe
    do redo hit pin relocate reposition reissue approve refuse rerun re-run retry redeem re-login relogin reauthorize
    re-authorize regenerate recreate re-create rebuild reformat re-flash reflash reseat reconfigure re-configure tighten
    loosen hold point resend re-send resubmit re-submit reinvite re-invite""".split()
)
_INFO_REQUEST = re.compile(
    r"\b(?:let\s+(?:me|us)\s+know|(?:send|give|tell|provide|share|confirm|dm|message|email)\s+(?:me|us)\b|"
    r"(?:please\s+)?(?:hold|wait)\s+(?:on|a\s+moment|a\s+minute|a\s+second)|one\s+moment|bear\s+with|"
    r"follow\s+us|reach\s+(?:out\s+)?(?:to\s+)?us\s+(?:via|in|by)\s+dm|via\s+dm|in\s+dm|(?:send|shoot)\s+(?:a|us\s+a)\s+dm|"
    r"(?:check|look)\s+(?:that|this|it|into\s+(?:it|this|that))\s+(?:for\s+you|out)|give\s+me\s+a\s+(?:moment|minute|second)|"
    r"allow\s+me|have\s+a\s+(?:great|nice|good|wonderful)|keep\s+us\s+posted|take\s+care|enjoy|"
    r"make\s+sure\s+to\s+(?:rate|leave)|rate\s+(?:us|this)|take\s+your\s+time|no\s+(?:rush|hurry|worries)|"
    r"(?:pass|hand|forward|escalate|transfer)\s+(?:this|it|you)\s+(?:on|over|to)|"
    r"(?:move|switch|continue|take)\s+(?:this\s+|it\s+|the\s+conversation\s+)?(?:to|in|into|over\s+to|via)\s+(?:a\s+)?(?:dm|dms|private|direct\s+messages?|chat|email|e-mail|phone))\b",
    re.IGNORECASE,
)
_MODAL_INSTRUCTION = re.compile(
    r"\b(?:you\s+(?:can|could|should|need\s+to|must|may\s+want\s+to|might\s+want\s+to|will\s+need\s+to|have\s+to|"
    r"would\s+need\s+to)|you[’']ll\s+(?:need|have|want)\s+to|you[’']d\s+(?:need|have|want|better)\b|i(?:'d|\s+would)\s+(?:recommend|suggest|advise)|i\s+(?:recommend|suggest|advise)|we\s+(?:recommend|suggest|advise)|"
    r"(?:the\s+)?(?:fix|solution|workaround|remedy|answer)\s+(?:is|was)\s+(?:to\s+)?|(?:best|easiest)\s+(?:way|thing)\s+(?:is|would\s+be)\s+to|"
    r"(?:please\s+)?try\b|make\s+sure|go\s+ahead\s+and|what\s+(?:fixes|fixed|solves|solved)\s+(?:it|this)\s+is|"
    r"here'?s\s+(?:what\s+(?:you\s+(?:can|should|need\s+to)\s+do|to\s+(?:do|try)|(?:fixes|should\s+fix|will\s+fix)\s+it)|how)|steps?\s*:|follow\s+these\s+steps|what\s+(?:usually\s+|normally\s+|generally\s+)?(?:works|helps|fixes\s+(?:it|this))(?:\s+is|\s*:))",
    re.IGNORECASE,
)


_AGENT_ACTION = re.compile(
    r"\b(?:(?:i|we)(?:'ll|\s+will|\s+can|'ve|\s+have|\s+(?:am|are)\s+going\s+to|'m\s+going\s+to|\s+just|\s+went\s+ahead\s+and|\s+could)|let\s+(?:me|us))\s+"
    r"(?:now\s+|also\s+|go\s+ahead\s+and\s+|gladly\s+)?(?:send|sent|ship|shipped|refund|refunded|issue|issued|credit|credited|replace|replaced|"
    r"reset|cancel|cancel?led|process|processed|dispatch|dispatched|apply|applied|waive|waived|reverse|reversed|unlock|unlocked|reactivate|"
    r"reactivated|upgrade|upgraded|downgrade|downgraded|change|changed|update|updated|rebook|rebooked|restore|restored|remove|removed|add|added|"
    r"extend|extended|switch|switched|fix|fixed|set\s+up|activate|activated|arrange|arranged|schedule|scheduled|reship|resend|resent|"
    r"adjust|adjusted|correct|corrected|book|booked|move|moved|transfer|transferred|push|pushed|enable|enabled|disable|disabled|"
    r"reissue|reissued|reprovision|reprovisioned|provision|provisioned|assign|assigned|release|released|renew|renewed|"
    r"re-?send|re-?sent|finish|finished|complete|completed|unblock|unblocked|reinstate|reinstated|"
    r"(?:ask|get|have)\s+(?:the|our|your)\s+\w+(?:\s+\w+)?\s+to)\b",
    re.IGNORECASE,
)


# "Could you (please) (try to) X", "Can you X", "Would you mind Xing", "Let's X": a step put politely.
_POLITE_REQUEST = re.compile(
    r"(?:(?:could|can|would|will)\s+you\s+(?:please\s+|kindly\s+|also\s+|now\s+|just\s+)*(?:try\s+(?:to\s+)?|go\s+ahead\s+and\s+)?|"
    r"let[’']?s\s+(?:try\s+(?:to\s+)?|go\s+ahead\s+and\s+)?(?!(?:look|see|check|figure|find|get|move|take|continue|start|begin|"
    r"work|sort|chat|talk|discuss|review|go|hope|wait)\b))(?P<verb>[A-Za-z-]+)",
    re.IGNORECASE,
)
# A polite request for information, not a step: "Can you tell me ...", "Could you check the version?"
_INFO_VERB = re.compile(
    r"(?:tell|confirm|share|provide|let|verify|describe|explain|clarify|say|spell|repeat|look|see|find|"
    r"(?:send|give|email|dm|message|text|forward)\s+(?:me|us)|"
    r"check\s+(?:what|which|whether|if|the\s+(?:\w+\s+){0,2}(?:version|number|id|code|email|model|plan|address|name|status)\b))\b",
    re.IGNORECASE,
)


def instruction_score(sentence: str) -> float:
    """The best of ``_instruction_score`` over the sentence's clauses ("error 17 means X; reinstall grub")."""
    clauses = [c for c in re.split(r";\s+|\s+-{1,2}\s+|:\s+(?=[a-z])", sentence) if c.strip()]
    best = _instruction_score(sentence)
    if len(clauses) > 1:
        best = max([best] + [_instruction_score(c) for c in clauses[1:]])
    return best


def _instruction_score(sentence: str) -> float:
    """How much an agent sentence reads as a concrete instruction to the user (0..1): imperative verbs
    ("Restart the router"), "you should/can/need to ...", "I recommend ...", "the fix is to ...", list
    items. Requests for information ("please send us your order ID", "let me know") score 0."""
    s = _strip_lead(sentence).strip()
    if not s or len(s.split()) < 2:
        return 0.0
    body = re.sub(r"^(?:(?:ok|okay|alright|so|now|next|then|first|firstly|second|secondly|finally|also|and|lastly|after\s+that|"
                  r"once\s+(?:that'?s|it'?s)\s+done|if\s+that\s+(?:doesn'?t|does\s+not)\s+work|if\s+not|otherwise|in\s+the\s+meantime|"
                  r"meanwhile|to\s+fix\s+(?:this|it|that)|to\s+do\s+(?:this|that)|for\s+now|step\s+\w+\s*:|"
                  r"[A-Za-z']+(?:\s+[A-Za-z']+)?(?=,))\W+)*", "", s, flags=re.I)  # "Nice, next please ...", "First thing, ..."
    body = re.sub(r"^(?:please|kindly|just|simply|go\s+ahead\s+and)\s+", "", body, flags=re.I)
    body = re.sub(r"^do\s+(?=(?:keep|let|feel|reach|contact|try|get|check|make|note|remember)\b)", "", body, flags=re.I)  # "Do keep us posted"
    first = re.match(r"[A-Za-z-]+", body)
    polite = _POLITE_REQUEST.match(body)
    if polite and (polite.group("verb").lower() not in _IMPERATIVE_VERBS or _INFO_VERB.match(body[polite.start("verb") :])):
        polite = None
    lead_verb = polite.group("verb").lower() if polite else first.group().lower() if first else ""
    if (
        not polite
        and lead_verb in ("have", "let")
        and not s.rstrip().endswith("?")
        and re.match(r"(?i:have|let)\s+(?:(?i:them|him|her|someone|your\s+\w+\s+(?:ready|handy|nearby))\b|[A-Z][\w+-]*\s+(?!know\b)[a-z])", body)  # "Have them update ...", "Let Postwise through ..."
        and not re.match(r"(?:let\s+(?:me|us)|have\s+(?:you|we|i))\b", body, re.I)
    ):
        first = None
        score_have = 0.8  # "Have them update their account country."
    else:
        score_have = 0.0
    info = _INFO_REQUEST.search(s)
    if polite and info and info.start() <= len(s) - len(body) + polite.start("verb") + 2:
        return 0.0  # "Could you allow me a moment?", "Can we move this to DM?"
    if info and (info.start() <= len(s) - len(body) + 2 or (lead_verb not in _IMPERATIVE_VERBS and not score_have)):
        if not re.search(r"\b(?:restart|reset|update|install|clear|reboot|turn|disable|enable)\b", s, re.I):
            return 0.0  # a request for information or a pleasantry, not a step
    if first and first.group().lower() in ("send", "give", "tell", "provide", "share", "confirm", "dm", "message", "email") and re.match(
        r"[A-Za-z-]+\s+(?:me|us)\b", body, re.I
    ):
        return 0.0
    score = score_have
    if first and first.group().lower() == "do" and s.rstrip().endswith("?"):
        first = None  # "Do the two devices sync?": a question, not "do the following"
    if first and first.group().lower() in _IMPERATIVE_VERBS:
        score = 0.8
    if polite:
        score = max(score, 0.7)  # "Could you change the protocol to TCP?", "Let's reset the password."
    if _MODAL_INSTRUCTION.search(s):
        score = max(score, 0.7)
    if _AGENT_ACTION.search(s) and not re.search(r"\b(?:escalat|specialist|manager|supervisor|team|department|look\s+into|check)", s, re.I):
        score = max(score, 0.6)  # "I can ship a replacement", "I've issued a refund": the agent's own step
    if score and s.rstrip().endswith("?"):
        score -= 0.15  # "Could you try ... and see if that helps?" suggests, a little weaker
    if score and re.match(r"^\s*(?:\d{1,2}[.)]|[-*•])\s", sentence):
        score = min(1.0, score + 0.1)
    if score and re.search(r"\b(?:if\s+you\s+(?:have|want|need|would\s+like)\s+(?:any|more|further)|any\s+(?:other|further)\s+questions)\b", s, re.I):
        score = 0.0
    return round(max(score, 0.0), 2)


_POSITIVE = re.compile(
    r"\b(?:(?:that|this|it|which|the\s+\w+|your\s+\w+)(?:\s+(?:has|have|totally|really|finally|actually|definitely|seems\s+to\s+have|did))?\s+"
    r"(?:worked|works|work|did\s+it|did\s+the\s+trick|fixed|solved|helped|resolved|sorted|resolves|fixes|solves|sorts|answers)|"
    r"(?:works|working|worked)\s+(?:now|again|fine|perfectly|great|properly|like\s+a\s+charm)|"
    r"(?:problem|issue|error|it)\s+(?:is\s+|has\s+been\s+|was\s+|seems\s+|appears\s+)?(?:fixed|solved|resolved|gone|sorted)|"
    r"(?:is\s+|are\s+|has\s+been\s+|was\s+)?(?:fixed|solved|resolved|sorted)\s+(?:now|it|the|this)|"
    r"all\s+(?:good|set|sorted|fixed|working)|back\s+to\s+normal|up\s+and\s+running|(?:^|\W)(?:perfect|awesome|excellent|brilliant)\b|"
    r"that\s+(?:answers|helps|clears\s+it\s+up|makes\s+sense)|(?:confirm|confirmed)\s+(?:the\s+)?(?:issue|problem)\s+is\s+(?:resolved|fixed)|"
    r"no\s+longer\s+(?:happening|an\s+issue|a\s+problem|getting|seeing|dropping|crashing)|thanks?,?\s+(?:that|this|it)\s+(?:helped|worked|did)|"
    r"it'?s\s+(?:working|fine|ok|okay|good)\s+now|problem\s+solved|issue\s+solved|(?:this|that)\s+solved\s+it|solved\s+it|"
    r"(?:one'?s|one\s+is|that'?s|it'?s|all)\s+(?:fixed|solved|sorted|resolved)|(?:now|and\s+now)\s+(?:it|everything|the\s+\w+|my\s+\w+)\s+\w+s\s+(?:fine|again|properly|normally|correctly|perfectly)|"
    r"\w+s\s+(?:fine|properly|normally|correctly|perfectly)\s+now|(?:^|[,.!]\s*)(?:fixed|solved|sorted|resolved)(?:\s+(?:now|it|as\s+well|too))?\s*(?:[.!,]|$))",
    re.IGNORECASE,
)
_NEGATIVE = re.compile(
    r"\b(?:(?:didn'?t|did\s+not|doesn'?t|does\s+not|won'?t|will\s+not|hasn'?t|has\s+not|haven'?t|have\s+not|isn'?t|is\s+not|wasn'?t|not)\s+"
    r"(?:\w+\s+)?(?:work|working|help|helped|fix|fixed|solve|solved|resolve|resolved|change|changed|do\s+anything|make\s+(?:a|any)\s+difference)|"
    r"still\s+(?:not|doesn'?t|won'?t|can'?t|isn'?t|broken|happening|happens|getting|seeing|the\s+same|having|no\b|failing|fails|crashing|crashes|"
    r"dropping|drops|down|stuck|waiting|same|an?\s+issue|a\s+problem|shows?|showing|says|saying|nothing)|"
    r"no\s+luck|no\s+(?:change|difference|improvement)|but\s+(?:it'?s\s+|it\s+is\s+|that'?s\s+)?still\b|"
    r"same\s+(?:problem|issue|error|thing|result)|nothing\s+(?:changed|works|worked|happened|helps|helped)|"
    r"unresolved|useless|not\s+helpful|(?:keeps|kept)\s+(?:happening|failing|crashing|dropping)|(?:tried|done)\s+(?:that|this|it)\s+already|"
    r"already\s+tried|gave\s+up|give\s+up|(?:going|gonna)\s+to\s+(?:cancel|switch|leave|get|use|go)|thanks?\s+for\s+trying|no\s+dice)",
    re.IGNORECASE,
)
_AGENT_NEGATIVE = re.compile(
    r"\b(?:unfortunately|i'?m\s+afraid|we\s+(?:can'?t|cannot|are\s+unable|won'?t\s+be\s+able|wouldn'?t\s+be\s+able|are\s+not\s+able)|"
    r"(?:not|n't)\s+(?:be\s+)?able\s+to|escalat\w*|(?:couldn'?t|could\s+not)\s+(?:be\s+of|help|assist|resolve|fix)|"
    r"(?:i'?ll|i\s+will|we'?ll|we\s+will)\s+(?:report|pass|forward|raise)|no\s+longer\s+(?:available|supported)|not\s+eligible|"
    r"ineligible|outside\s+(?:the|our)|cannot\s+accept|can'?t\s+accept)\b",
    re.IGNORECASE,
)
_AGENT_POSITIVE = re.compile(
    r"\b(?:(?:has|have)\s+been\s+(?:successfully\s+)?(?:changed|updated|processed|cancel?led|refunded|issued|reset|resolved|fixed|"
    r"completed|applied|sent|booked|rebooked|upgraded|credited|reversed|unlocked|restored|reactivated|confirmed|approved|removed|added|"
    r"scheduled|rescheduled|replaced|waived|moved|renewed|extended|activated|shipped|transferred|submitted|escalated(?=\s+and\s+resolved))|"
    r"(?:i|we)(?:'ve|\s+have)\s+(?:now\s+|just\s+|already\s+|successfully\s+)?(?:issued|processed|refunded|credited|sent|shipped|reset|"
    r"unlocked|restored|reactivated|cancel?led|rebooked|rescheduled|updated|changed|fixed|applied|waived|reversed)\b|successfully|glad\s+(?:that|it|to\s+hear|i\s+could|we\s+could)|(?:all\s+)?(?:done|set)\s*!|"
    r"you'?re\s+all\s+set|happy\s+to\s+hear)\b",
    re.IGNORECASE,
)


def confirmation(sentence: str, role: str) -> tuple[int, float]:
    """(polarity, strength) of a resolution cue in one sentence: +1 the problem is solved ("that
    worked", "works now", "perfect, thanks"), -1 it is not ("still not working", "didn't help",
    "unfortunately we cannot"), 0 neither. "No problem" is not a failure."""
    s = sentence
    if role == "user":
        neg = _NEGATIVE.search(s)
        pos = _POSITIVE.search(s)
        if pos and re.search(r"\b(?:not|n't|never)\s+(?:\w+\s+)?$", s[max(0, pos.start() - 20) : pos.start()], re.I):
            pos = None
        if pos and re.search(r"\b(?:if|whether|when|hope|hopefully|should|will|would|could|might)\b[^.]*$", s[max(0, pos.start() - 40) : pos.start()], re.I):
            pos = None  # "if that works", "hope it's fixed": not yet
        if pos and re.match(r"[^.!?]{0,25}\b(?:before|until|last\s+(?:week|month|year|time)|yesterday|previously|in\s+the\s+past|for\s+years)\b", s[pos.end() :], re.I):
            pos = None  # "it worked perfectly before": it does not now
        if pos and re.search(r"\b(?:used\s+to|always|previously)\s+$", s[max(0, pos.start() - 20) : pos.start()], re.I):
            pos = None
        if neg and re.search(r"\bno\s+(?:problem|worries|issue)\b", s, re.I) and not re.search(r"still|didn|doesn|not\s+work", s, re.I):
            neg = None
        if neg and pos:
            return (1, 0.6) if pos.start() > neg.start() else (-1, 0.6)
        if neg:
            return -1, 0.85
        if not pos and re.search(r"\b(?:thanks?(?:\s+you)?\s+(?:so\s+much\s+|very\s+much\s+)?for\s+(?:the|your|all\s+(?:the|your))\s+(?:help|assistance|support|info|information|answer|quick\s+\w+)|much\s+appreciated|that\s+helps|very\s+helpful|(?:that'?s|this\s+is)\s+(?:great|helpful|good\s+to\s+know))\b", s, re.I):
            return 1, 0.55  # thanked for help received: resolved, weakly
        if pos:
            weak = re.fullmatch(r"\W*(?:perfect|awesome|excellent|brilliant)\W*(?:thanks?(?:\s+you)?\W*)?", s.strip(), re.I)
            return 1, 0.65 if weak else 0.85
        return 0, 0.0
    if _AGENT_NEGATIVE.search(s):
        return -1, 0.55
    if _AGENT_POSITIVE.search(s) and not s.rstrip().endswith("?"):
        return 1, 0.5
    return 0, 0.0


_PROBLEM_CUE = re.compile(
    r"\b(?:can'?t|cannot|can\s+not|won'?t|doesn'?t|does\s+not|didn'?t|isn'?t|aren'?t|wasn'?t|not\s+(?:working|able|loading|showing|receiving|getting)|"
    r"unable|error|errors|fail|fails|failed|failing|failure|issue|issues|problem|problems|broken|stopped|stops|crash|crashes|crashed|"
    r"freez\w*|hang|hangs|stuck|slow|drop|drops|dropping|disconnect\w*|lost|missing|disappear\w*|wrong|never|incorrect|charged|"
    r"double|refund|return|cancel\w*|overcharged|late|delayed|damaged|defective|locked|blocked|denied|declined|rejected|"
    r"expired|won'?t|keeps|trouble|bug|glitch|gone|vanished|changed|weird|strange|odd|annoying|frustrat\w*|need|want|wanted|would\s+like|how\s+(?:do|can|to)|why|where|when|what|help|"
    r"check|status|change|update|expected|supposed|only|still|anymore|any\s+more|no\s+longer|"
    r"again|every\s+(?:time|minute|hour|day|night|morning|evening|few\s+\w+)|each\s+time|constantly|randomly|all\s+the\s+time)\b",
    re.IGNORECASE,
)
_GREETING_ONLY = re.compile(
    r"^\W*(?:(?:hi|hello|hey|hai|hiya|good\s+(?:morning|afternoon|evening)|greetings|dear\s+\w+|to\s+whom\s+it\s+may\s+concern|"
    r"thanks?(?:\s+you)?(?:\s+(?:so|very)\s+much)?|ok(?:ay)?|yes|no|sure|great|cool|hey\s+ho|hi\s+there|hello\s+there|"
    r"(?:best|kind|warm)\s+regards|regards|cheers|sincerely|please\s+advise|please\s+help|help|any\s+ideas|thoughts|"
    r"please\s+read\s+the\s+above|team|support|guys|all|everyone|folks)\W*)+$",
    re.IGNORECASE,
)


# A malfunction or an explicit need: what makes a sentence a problem statement rather than a detail.
_MALFUNCTION_CUE = re.compile(
    r"\b(?:can'?t|cannot|can\s+not|won'?t|doesn'?t|does\s+not|don'?t|do\s+not|isn'?t|aren'?t|wasn'?t|haven'?t|hasn'?t|never|"
    r"not\s+(?:working|able|loading|showing|receiving|getting|responding|connecting|syncing|arriving|arrived|accepted|reachable)|"
    r"unable|fail|fails|failed|failing|failure|broken|broke|stopped|stops|crash|crashes|crashed|crashing|freez\w*|froze|frozen|"
    r"hang|hangs|hanging|stuck|slow|slower|drop|drops|dropped|dropping|disconnect\w*|lost|missing|disappear\w*|wrong|incorrect|"
    r"overcharged|charged\s+(?:twice|double|me)|declined|rejected|denied|locked|blocked|expired|damaged|defective|dead|"
    r"keeps|kept|no\s+longer|anymore|any\s+more|bug|buggy|glitch\w*|trouble|gone|vanished|delayed|flaky|unstable|corrupt\w*|"
    r"offline|down|time\s+out|times\s+out|timing\s+out|timed\s+out|crawl\w*|lag|lags|laggy|lagging|terrible|awful|dies|died|"
    r"(?:has|have|had|got|getting|there'?s|there\s+is|with)\s+no|crack\w*|dent|dented|scratch\w*|leak\w*|torn|ripped|shattered|bent|"
    r"jam|jams|jammed|jamming|(?:logs?|kicks?|signs?|throws?)\s+(?:me\s+)?(?:out|off)|"
    r"need|needs|want|wanted|would\s+like|'d\s+like|trying\s+to|how\s+(?:do|can|should|to)\s+(?:i|we|you)?)\b",
    re.IGNORECASE,
)
# "I restarted it, it didn't help": the report of a step already tried, not the problem.
_TRIED_REPORT = re.compile(
    r"\b(?:(?:didn'?t|did\s+not)\s+(?:\w+\s+)?(?:help|work|fix|change|do\s+anything|make\s+(?:a|any)\s+difference)|"
    r"no\s+(?:change|luck|difference|dice)|same\s+(?:thing|problem|issue|result|error)|nothing\s+(?:changed|worked|helped|happened)|"
    r"still\s+the\s+same|(?:tried|did|done)\s+that)\b",
    re.IGNORECASE,
)
# "works fine", "with no issues", "for years without problems": said of what is NOT the problem.
_NOT_A_PROBLEM = re.compile(
    r"\b(?:(?:no|without(?:\s+any)?)\s+(?:issues?|problems?|trouble|complaints?)|(?:works?|worked|working|runs?|ran)\s+"
    r"(?:fine|great|perfectly|ok|okay|well|normally)|never\s+had\s+(?:an?\s+)?(?:issues?|problems?|trouble))\b",
    re.IGNORECASE,
)
# An aside ("btw", "oh and", "one more thing"): a detail, chatter or a second issue, not the opening problem.
_ASIDE = re.compile(r"^(?:btw|by\s+the\s+way|oh\s+and|also|ps|p\.s\.|forgot\s+to\s+(?:say|mention)|one\s+more\s+thing|another\s+thing|"
                    r"while\s+i\s+have\s+you|unrelated|off\s+topic)\b", re.IGNORECASE)


_NEW_ISSUE = re.compile(
    r"\b(?:while\s+i\s+have\s+you|one\s+more\s+thing|another\s+(?:issue|problem|thing|question)|(?:a\s+)?different\s+(?:issue|problem|question)|"
    r"unrelated|separate\s+(?:issue|problem|question)|also\s+(?:having|have)\s+(?:an?\s+)?(?:issue|problem))\b",
    re.IGNORECASE,
)


def _new_issue(sentence: str) -> bool:
    """The user raises a second issue: "While I have you, ...", "One more thing: X won't ...", "Also, X crashes"."""
    s = _strip_lead(sentence).strip()
    return bool(_NEW_ISSUE.search(s[:60])) or bool(_ASIDE.match(s) and _MALFUNCTION_CUE.search(s))


_QUOTED = re.compile(r"[\"“][^\"”\n]{2,}[\"”]")
_DETAIL_WORDS = frozenset(
    """says say said shows show showed reads read get gets got getting see seeing error code message status page firmware
    version build running run installed install number model plan account order ticket pops popped appears displayed box
    settings app tab screen label exactly every time times always""".split()
)


def problem_score(sentence: str) -> float:
    """How much a user sentence states the problem or request (0..1). Greetings and sign-offs: 0.
    A malfunction or need ("won't", "keeps", "stopped", "I need", "how do I") counts most; a report of a
    step already tried ("restarted it, didn't help"), a bare detail ("Error code is E-12", "firmware
    is 2.1"), an aside ("btw ...") or a statement of what works fine counts less."""
    s = _strip_lead(sentence).strip()
    if not s or _GREETING_ONLY.match(s) or is_placeholder_only(s):
        return 0.0
    n = len(s.split())
    if n < 3:
        return 0.05
    # what works fine, what was already tried and what the software says (quoted) are not cues
    fine = _QUOTED.sub(" ", _TRIED_REPORT.sub(" ", _NOT_A_PROBLEM.sub(" ", s)))
    spans = {m.span() for m in _MALFUNCTION_CUE.finditer(fine)}
    strong = len(spans)
    for m in _PROBLEM_CUE.finditer(fine):
        if not any(a < m.end() and m.start() < b for a, b in spans):
            spans.add(m.span())
    cues = len(spans)
    score = 0.35 + min(0.5, 0.2 * cues) + (0.1 if strong else 0.0)
    if re.search(r"\b(?:my|our|the|i)\b", s, re.I):
        score += 0.1
    if re.match(r"^(?:thanks?|thank\s+you|regards|best|cheers|sorry|ok|okay)\b", s, re.I):
        score -= 0.3
    if re.match(r"^(?:what|things?)\s+(?:i|we)(?:'ve|\s+have)?\s+(?:already\s+)?tr(?:ied|yed)|^(?:i|we)\s+(?:already\s+|also\s+)?tried\b", s, re.I):
        score -= 0.3
    elif _TRIED_REPORT.search(s) or (
        re.search(r"\b(?:tried|already|restarted|rebooted|reinstalled|cleared|checked)\b", s, re.I)
        and re.search(r"\b(?:didn'?t|did\s+not|doesn'?t|no|nothing|still)\b", s, re.I)
    ):
        # what the user already tried, not the problem itself (less so when a malfunction is stated too)
        score -= 0.15 if _MALFUNCTION_CUE.search(fine) else 0.3
    if not strong:
        entity = re.search(r"\w*\d\w*|[\"“][^\"”]{2,}[\"”]", s)
        rest = [w for w in _content_words(re.sub(r"\S*\d\S*|[\"“][^\"”]*[\"”]", " ", s)) if len(w) > 2 and w not in _DETAIL_WORDS]
        if entity and len(rest) <= 1:
            score -= 0.3  # a bare detail: "The status page says firmware 1.2.6", "I get error 0x80070005"
        elif _NOT_A_PROBLEM.search(s):
            score -= 0.2  # "I've used it for months with no issues"
    if _ASIDE.match(s):
        score -= 0.2
    if _BACKGROUND.match(s) and not strong:
        score -= 0.15  # "I rely on X for work", "I've been using X for years": background, not the problem
    if len(_content_words(s)) < 3:
        score -= 0.4  # "Can someone help?", "How do I fix this?": a plea without the problem in it
    return round(max(0.0, min(1.0, score)), 2)


# Discourse lead-ins and affect that frame a problem statement without stating it: "So basically",
# "Weird one:", "Not sure what changed but", "..., and it's driving me crazy", "..., which is really annoying".
_FRAME_LEAD = re.compile(
    r"^(?:(?:so\s+basically|basically|so|well|ok(?:ay)?|um+|uh+|hi|hey|hello|hiya|ugh|argh|wow|omg|sigh|hmm+|help|"
    r"not\s+sure\s+what(?:'s|\s+is)?\s+(?:changed|happened|going\s+on)(?:,?\s+but)?|for\s+(?:some|whatever)\s+reason|"
    r"all\s+of\s+a\s+sudden|out\s+of\s+(?:nowhere|the\s+blue)|suddenly|"
    r"(?:(?:a|one|another|quick|small|big|major|serious|weird|strange|odd|annoying|frustrating|new|urgent)\s+){1,2}"
    r"(?:one|issue|problem|question|thing|bug)\s*:|(?:issue|problem|question)\s*:)[\s,!:.-]*)+",
    re.IGNORECASE,
)
_FRAME_TAIL = re.compile(
    r"(?:,?\s*(?:and\s+|which\s+|but\s+)?(?:it'?s|it\s+is|this\s+is|that'?s|that\s+is|is)\s+(?:really\s+|super\s+|so\s+|very\s+|"
    r"pretty\s+|extremely\s+|quite\s+|getting\s+)?(?:annoying|frustrating|infuriating|maddening|ridiculous|"
    r"driving\s+me\s+(?:nuts|crazy|mad|insane|up\s+the\s+wall|bananas))"
    r"|,?\s*(?:and\s+)?(?:i'?m|i\s+am)\s+(?:so\s+|really\s+|getting\s+)?(?:frustrated|annoyed|fed\s+up|losing\s+my\s+mind)"
    r"|,?\s*(?:and\s+i\s+have\s+)?(?:not\s+sure|no\s+idea|no\s+clue)\s+(?:why|what\s+(?:to\s+do|changed|happened))"
    r"|,?\s*and\s+nothing\s+(?:i|we)\s+(?:do|try|tried|did)\s+(?:helps|works|worked|helped|fixes\s+it)"
    r"|,?\s*(?:and|but)\s+(?:i|we)\s+(?:really\s+)?(?:have\s+a\s+deadline|need\s+(?:it|this)\s+(?:for\s+work|urgently|asap|today|now))"
    r"|,?\s*(?:once\s+(?:more|again)|yet\s+again|again|i\s+swear|lol|smh|ugh))+"
    r"\s*(?=[.!?…]*\s*$)",
    re.IGNORECASE,
)


_BACKGROUND = re.compile(
    r"^(?:(?:i|we)(?:'ve|\s+have)?\s+(?:been\s+)?(?:rely|relying|use|using|love|loved|like|bought|purchased|own|owned|got|subscribed)\b|"
    r"(?:long|long-time)\s+(?:time\s+)?\w+|(?:i|we)\s+(?:am|are|'m|'re)\s+a\s+(?:long|loyal|new)\b)",
    re.IGNORECASE,
)


def problem_statement(sentence: str) -> str:
    """The problem sentence without the discourse lead-in and the affect around it ("So basically my
    printer won't print, and it's driving me crazy." -> "my printer won't print."); the sentence as it
    is when nothing would remain."""
    s = _strip_lead(sentence).strip()
    core = _FRAME_LEAD.sub("", s).strip()
    cut = _FRAME_TAIL.sub("", core).strip()
    if cut != core:
        cut = cut.rstrip(" ,;:.!?…")  # "X, and it's driving me crazy." -> "X" (still a verbatim span)
    if len(_content_words(cut)) < 2:
        return s
    return cut


_CAUSE = re.compile(
    r"\b(?:(?:is|was|were|are|being|been)\s+caused\s+by|caused\s+by|due\s+to|because(?:\s+of)?|the\s+reason\s+(?:is|was)(?:\s+that)?|"
    r"(?:the\s+)?(?:root\s+)?cause\s+(?:is|was)(?:\s+that)?|(?:the\s+)?(?:problem|issue|culprit)\s+(?:is|was)\s+(?:that\s+)?(?=the|a|an|your|its|it)|"
    r"(?:this|it)\s+(?:is|was)\s+(?:a\s+)?(?:known\s+)?(?:bug|issue|problem)\s+(?:with|in)|known\s+(?:bug|issue)|"
    r"(?:this|it|that)\s+happens\s+(?:when|if|because)|(?:it\s+)?(?:seems|looks)\s+like|(?:it|this)\s+(?:seems|appears)\s+(?:that|to\s+be)|"
    r"turns?\s+out|turned\s+out|(?:error|code|message|this|that|it)\s+(?:\S+\s+)?means(?:\s+that)?|(?:we|i)\s+found\s+(?:that|the)|what'?s\s+(?:going\s+on|happening)(?:\s+here)?(?=\s*:)|here'?s\s+what'?s\s+(?:going\s+on|happening)(?=\s*:)|(?:it|this)\s+(?:seems|appears|looks)\b|(?:the|your)\s+\w+\s+(?:is|was)\s+(?:faulty|defective|corrupt(?:ed)?|outdated|incompatible|misconfigured))\b",
    re.IGNORECASE,
)
_STRONG_CAUSE = re.compile(r"caused\s+by|due\s+to|reason|cause|culprit|turn(?:s|ed)\s+out|known\s+(?:bug|issue)|bug|found\s+(?:that|the)|happens\s+(?:when|if|because)|going\s+on|happening", re.I)


def cause_clause(sentence: str) -> tuple[str, float] | None:
    """The stated cause in a sentence and how sure ("caused by a corrupted cache" -> "a corrupted
    cache"; "It seems this is a firmware bug: ..." -> the sentence), or None."""
    s = _strip_lead(sentence).strip()
    m = _CAUSE.search(s)
    if not m or s.endswith("?"):
        return None
    if re.search(r"\b(?:because|due\s+to)\b", m.group(), re.I) and re.search(r"\b(?:we|i)\s+(?:can'?t|cannot|need|want|have\s+to)\b", s[: m.start()], re.I):
        return None  # "I need a refund because ..." states a request, not a diagnosis
    strength = 0.75 if _STRONG_CAUSE.search(m.group()) or re.search(
        r"\b(?:bug|defect|corrupt\w*|outage|misconfigur\w*|incompatib\w*|outdated|faulty|conflict\w*|overheat\w*|mismatch)\b", s, re.I
    ) else 0.55
    tail = s[m.end() :].strip(" :,-")
    rest = re.sub(r"\b(?:this|it|that|is|was|a|an|the|known|issue|bug|problem|one|like|seems|looks|appears|to\s+be|on\s+our\s+end)\b", " ", tail, flags=re.I)
    if len(_content_words(rest)) < 2:
        return None  # "This looks like a known issue.": no cause stated
    if re.match(r"(?:you|we)\s+(?:need|should|have|must|can|could|will|'ll)\b|(?:please|try)\b", tail, re.I):
        return None  # "This means you need to update": an instruction, not a cause
    if re.search(r"caused\s+by|due\s+to|because|reason|cause|going\s+on|happening|means", m.group(), re.I) and len(tail.split()) >= 2:
        tail = re.split(r"(?<=\w)[.;!](?:\s|$)", tail)[0].strip()
        return tail.rstrip(". "), strength
    return s.rstrip(". "), strength


# --- product names ----------------------------------------------------------------------------------

_CAP_TOKEN = r"(?:[A-Z][\w&+'’.-]*[\w+]|[A-Z]|[a-z]+[A-Z][\w]*|(?=[A-Z0-9-]*[A-Z])[A-Z0-9]+-?[A-Z0-9]+)"
_CAP_SEQ = re.compile(
    r"(?<![\w@\[.\-/])" + _CAP_TOKEN + r"(?:\s+(?:" + _CAP_TOKEN + r"|\d{1,4}(?:\.\d)?(?![-/.]?\d)\b|&|\+))*(?:\s+" + _CAP_TOKEN + r")?"
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
    if len(code) < 3 or not re.search(r"\d", code):
        return False
    toks = [t for t in (_compact(t) for t in name.split()) if t]
    for t in toks:
        if t == code or (len(code) >= 4 and code in t) or (len(t) >= 4 and re.search(r"\d", t) and t in code):
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
) -> list[tuple[str, float, int, str]]:
    """Named products, services or devices: capitalized or CamelCase names not at the start of a
    sentence ("the Cloudberry Drive app", "my iPhone", "Linkstar DSL500"), scored by repetition, by a
    device/app noun after them, by ownership before them ("my", "I'm using", "the device is a"), by
    answering the agent's "which model/app is it?" and by appearing in the user's problem statement.

    Not products: people (introductions, greetings, sign-offs), organizations ("Thanks for contacting
    X", "X Support"), carriers and payment services ("shipped with X", "paid with X"), plans ("the X
    plan", answers to "which plan?"), kinds of things ("my TV", "the DNS server"), menu paths
    ("Settings > About"), button labels ("tap Save"), names denied in a correction ("it's X, not Y"),
    and values ``claimed`` by other detectors (plans, amounts, identifiers, codes, ...). A model
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
        if _mostly_upper(body):
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
            at_start = not body[: m.start()].strip() or bool(re.search(r"[.!?:;\"“()]\s*$", body[: m.start()]))
            if at_start and len(tokens) == 1 and not re.search(r"[a-z][A-Z]|\d", tokens[0]):
                continue
            while tokens and (tokens[0].lower().strip(".,") in _NOT_PRODUCT_WORDS or tokens[0].lower().strip(".,") in _STOP):
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
            ):
                continue  # "Hi Phil", "... Phil." at the end of a message: a person, not a product ("I'm using Tasklane." is)
            if correction and is_negated(body, start, end):
                denied.add(key)
                continue
            named_here.append(key)
            paren = re.match(r"\s*\(\s*([A-Za-z0-9][\w-]*\d[\w-]*)\s*\)", body[end:])
            if paren and len(tokens) >= 2:
                aliases[paren.group(1).lower()] = key  # "Trailhead 45L Backpack (TH-45)"
            entry = found.setdefault(key, [name, 0.0, turn, text, 0])
            entry[4] += 1
            bonus = 0.0
            if _HEAD_AFTER.match(body[end:]):
                bonus += 0.5
            before = body[max(0, start - 40) : start]
            if _OWNERSHIP_BEFORE.search(before) or re.match(r"\s+(?:user|owner|customer|subscriber)s?\b", body[end:], re.I):
                bonus += 0.5  # "I'm using X", "the device is a X", "my router is the X", "long time X user"
            elif re.search(r"\b(?:my|our|the|your|using|use|with|on|for|of|bought|ordered|have|own|installed)\s+$", before, re.I):
                bonus += 0.3
            if re.search(r"[a-z][A-Z]", name) or (len(tokens) >= 2 and re.search(r"[a-z]", name)):
                bonus += 0.3  # a real name: "Cloudberry Drive", "iPhone"
            elif re.search(r"\d", name) or len(tokens) >= 2:
                bonus += 0.1  # a code or an acronym pair: weaker
            if turn in problem_turns:
                bonus += 0.6
            if len(tokens) >= 2 and tokens[0].lower() in orgs:
                bonus += 0.3  # the company's own product: "Thanks for contacting Lingo" ... "Lingo Lessons"
            if turn in answers_product and role == "user":
                bonus += 0.6  # the answer to "which model / app is it?"
            if correction and role == "user":
                bonus += 0.4  # "sorry, it's X, not Y": the corrected name
            if aside:
                bonus -= 0.4  # "One more thing: my X ...": a second issue or a side remark
            if role == "agent" and re.search(r"\b(?:contacting|reaching\s+out\s+to|calling|welcome\s+to|connected\s+to|reached|choosing|from)\s+$", body[max(0, start - 25) : start], re.I):
                bonus -= 1.0  # "Thanks for contacting X": the company, not the product
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
    problem_text = " ".join(t for turn, _, t in sentences if turn in problem_turns)
    all_text = " ".join(t for _, _, t in sentences)
    for key, (name, bonus, turn, text, count) in found.items():
        pat = re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")
        count = max(count, len(pat.findall(all_text)))
        if turn not in problem_turns and pat.search(problem_text):
            bonus += 0.4  # named (perhaps sentence-initially) in the problem statement
        score = bonus + 0.25 * min(count, 4)
        if score >= 0.8:
            out.append((name, round(score, 2), turn, text))
    out.sort(key=lambda x: (-x[1], x[2], x[0]))
    return out


# ---------------------------------------------------------------------------------------------------
# conversation analysis


@dataclass(frozen=True)
class Sentence:
    turn: int
    role: str
    index: int  # sentence index within the turn
    start: int  # offsets into the turn's text
    end: int
    text: str


@dataclass
class Finding:
    """A value found in a conversation, with where it came from."""

    signal: str
    name: str
    value: str
    type: str
    strength: float
    turn: int
    role: str
    evidence: str  # the sentence (or the verbatim span for multi-sentence values) it came from
    raw: str = ""  # the verbatim span
    key: str | None = None
    corrected: bool = False  # a correction said this value replaces an earlier one
    negated: bool = False  # denied ("not 2.1"): never a value
    superseded: bool = False  # replaced by a later correction

    @property
    def usable(self) -> bool:
        return not (self.negated or self.superseded)

    def where(self) -> str:
        return f"{self.role} turn {self.turn}"


@dataclass
class Analysis:
    turns: list[tuple[str, str]]  # (role, text)
    sentences: list[Sentence]
    findings: list[Finding] = field(default_factory=list)
    problem: Finding | None = None
    problem_text: str = ""  # the first substantive user turns (what relevance is measured against)
    problem_turns: tuple[int, ...] = ()

    def by_signal(self, signal: str) -> list[Finding]:
        return [f for f in self.findings if f.signal == signal and f.usable]

    def by_name(self, name: str) -> list[Finding]:
        return [f for f in self.findings if f.name == name and f.usable]

    def best(self, findings: Iterable[Finding]) -> Finding | None:
        """Corrections win; then the strongest; then the user's word over the agent's; then the earliest."""
        fs = [f for f in findings if f.usable]
        if not fs:
            return None
        return min(fs, key=lambda f: (not f.corrected, -round(f.strength, 1), f.role != "user", f.turn, f.evidence))

    def names(self) -> list[str]:
        return list(dict.fromkeys(f.name for f in self.findings if f.usable))


def _entity_hits(text: str, role: str, instruction: bool) -> list[Hit]:
    hits: list[Hit] = []
    hits += find_error_codes(text)
    hits += find_error_messages(text)
    hits += find_os(text)
    hits += find_browsers(text)
    hits += find_versions(text, role=role, instruction=instruction)
    hits += find_dates(text)
    hits += find_amounts(text)
    hits += find_measurements(text)
    hits += find_identifiers(text)
    hits += find_plans(text)
    hits += find_models(text)
    hits += find_key_values(text)
    hits += find_statements(text, role=role)
    return hits


_SIGNAL_PRIORITY = {
    "identifier": 0,
    "error_code": 1,
    "os": 2,
    "browser": 2,
    "version": 3,
    "date": 4,
    "amount": 4,
    "plan": 5,
    "error_message": 6,
    "measurement": 7,
    "model": 8,
    "key_value": 9,
    "statement": 10,
}


def _resolve_overlaps(hits: list[Hit]) -> list[Hit]:
    """Among hits over the same characters keep the most specific detector; a key-value or statement
    hit that fully contains a typed hit gives way to it, except that its name is kept when the typed
    detector only had a generic one."""
    out: list[Hit] = []
    for h in sorted(hits, key=lambda h: (_SIGNAL_PRIORITY.get(h.signal, 20), -h.strength, h.start)):
        clash = None
        for o in out:
            if (h.signal == "error_message") != (o.signal == "error_message"):
                continue  # a message may contain its code
            if h.start < o.end and h.end > o.start:
                clash = o
                break
        if clash is None:
            out.append(h)
            continue
        if h.signal in ("key_value", "statement") and clash.signal not in ("key_value", "statement"):
            idx = out.index(clash)
            if clash.name == "version" and h.name not in ("version",):
                new_name = h.name if h.name.endswith(("version", "build")) else snake(h.name + "_version")
                out[idx] = replace(clash, name=new_name, key=h.key)
            elif clash.name in ("date", "amount") and (h.name.endswith(("date", "day")) or clash.name == "amount"):
                out[idx] = replace(clash, name=h.name, key=h.key)
    return sorted(out, key=lambda h: h.start)


def _kv_signal(h: Hit) -> Hit:
    """A "Key: value" or statement hit whose key names a known concept takes that concept's signal."""
    key = (h.key or "").strip().lower()
    if key in ("code", "the code", "err") and re.fullmatch(r"[A-Za-z0-9][\w.:-]{1,30}", h.value) and re.search(r"\d", h.value):
        return replace(h, signal="error_code", name="error_code")
    sig = _KEY_SYNONYMS_TO_SIGNAL.get(key)
    if sig:
        return replace(h, signal=sig, name=sig if sig != "version" else "version")
    if re.search(r"\b(?:number|no|id|#|code|reference|ref|username)$", key) and _id_shape(h.value):
        return replace(h, signal="identifier")
    if re.search(r"\b(?:plan|subscription|tier|membership|level)$", key):
        return replace(h, signal="plan")
    if re.search(r"\bmodel$", key):
        return replace(h, signal="model")
    if re.search(r"\bversion$", key):
        return replace(h, signal="version")
    if re.search(r"\bdate$", key):
        d = find_dates(h.value)
        if d and d[0].type == "date":
            return replace(h, signal="date", value=d[0].value, type="date")
    return h


def analyze(turns: Sequence[tuple[str, str]]) -> Analysis:
    """Run every detector over a conversation given as (role, text) turns (role "user" or "agent")."""
    turns = [(r, t or "") for r, t in turns]
    sentences: list[Sentence] = []
    for ti, (role, text) in enumerate(turns):
        for si, (s, e, seg) in enumerate(split_sentences(text)):
            sentences.append(Sentence(ti, role, si, s, e, seg))
    an = Analysis(turns=turns, sentences=sentences)
    findings: list[Finding] = []

    # problem statement: the best problem sentence among the first substantive user turns
    user_sents = [s for s in sentences if s.role == "user"]
    first = next((s.turn for s in user_sents if problem_score(s.text) >= 0.3 and len(_content_words(s.text)) >= 3), None)
    if first is None:
        first = next((s.turn for s in user_sents if len(s.text.split()) >= 3), None)
    if first is not None:
        problem_turns = [first]
        j = first + 1
        while j < len(turns) and turns[j][0] == "user" and len(problem_turns) < 3:
            problem_turns.append(j)
            j += 1
        an.problem_turns = tuple(problem_turns)
        cands = [s for s in user_sents if s.turn in problem_turns]
        ranked = sorted(((problem_score(s.text) - 0.04 * k, k, s) for k, s in enumerate(cands)), key=lambda x: (-x[0], x[1]))
        score, _, best = ranked[0]
        score = problem_score(best.text)
        if score >= 0.3:
            text = problem_statement(best.text)
            an.problem = Finding("problem", "problem", text, "string", round(min(0.9, 0.3 + score * 0.65), 2), best.turn, "user", best.text, text)
            findings.append(an.problem)
        an.problem_text = " ".join(_strip_lead(turns[t][1]).strip() for t in problem_turns)[:600]

    # entities, per sentence
    instr_scores = {id(s): (instruction_score(s.text) if s.role == "agent" else 0.0) for s in sentences}
    for s in sentences:
        text = s.text
        corr = correction_cue(text)
        hits = [_kv_signal(h) for h in _entity_hits(text, s.role, instr_scores[id(s)] >= 0.5)]
        hits = _resolve_overlaps(hits)
        for h in hits:
            negated = is_negated(text, h.start, h.end)
            strength = h.strength
            asking = text.rstrip().endswith("?") and re.match(
                r"(?:\[MENTION\]\s*)*(?:are|is|do|does|did|can|could|would|will|have|has|which|what|was|were|should)\b", text.strip(), re.I
            )
            if s.role == "agent" and h.signal != "key_value" and (asking or ("?" in text[h.end :] and "," not in text[h.end : text.find("?", h.end)])):
                strength = min(strength, 0.3)  # an agent asking "is it version 2.1?" has not stated it
            findings.append(
                Finding(h.signal, h.name, h.value, h.type, round(max(0.05, strength), 2), s.turn, s.role, text, h.span_text(text), h.key, corrected=corr and not negated, negated=negated)
            )
        # "it's X, not Y" without a cue word is a correction too
        sent_f = [f for f in findings[len(findings) - len(hits) :]]
        neg_sigs = {f.signal for f in sent_f if f.negated}
        for f in sent_f:
            if not f.negated and f.signal in neg_sigs:
                f.corrected = True

    # the agent asks for something, the user's next short turns answer it
    findings += _answers(turns, sentences, findings)

    findings += _shape_corrections(sentences, findings)
    _apply_corrections(findings)

    # resolution, resolved, root cause, product
    findings += _resolution(turns, sentences, instr_scores)
    findings += _root_cause(sentences, an.problem_turns)
    findings += _attempts_and_escalation(sentences)
    owned = {
        f.value.lower()
        for f in findings
        if f.usable
        and f.signal in ("plan", "identifier", "os", "browser", "answer", "key_value", "error_code", "error_message")
        and not (f.signal in ("answer", "key_value") and re.search(_PRODUCT_SLOT, f.name))
    }
    claimed = [f.raw or f.value for f in findings if f.signal in ("plan", "identifier", "amount", "measurement", "date", "version", "error_code")]
    claimed += [f.value for f in findings if f.signal == "answer" and re.search(r"plan|tier|subscription|membership|carrier|courier|payment", f.name)]
    opening = set(an.problem_turns)
    j = min(opening, default=0) - 1
    while opening and j >= 0 and turns[j][0] == "user" and len(opening) < 5:
        opening.add(j)  # the user's turns right before the problem statement belong to the opening
        j -= 1
    prods = product_candidates([(s.turn, s.role, s.text) for s in sentences], opening, claimed)
    prods = [p for p in prods if p[0].lower() not in owned]
    if prods:
        name, score, turn, text = prods[0]
        role = turns[turn][0]
        findings.append(Finding("product", "product", name, "string", round(min(0.85, 0.35 + 0.25 * score), 2), turn, role, text, name))
    an.findings = findings
    return an


def _shape(v: str) -> str:
    return re.sub(r"[A-Za-z]", "a", re.sub(r"\d", "9", v))


_TOKEN = re.compile(r"(?<![\w.-])[A-Za-z0-9][\w.-]*[A-Za-z0-9](?![\w-])")


def _shape_corrections(sentences: list[Sentence], findings: list[Finding]) -> list[Finding]:
    """A correction that restates a value without its key ("Actually it's MK-7538795, not MK-7538395")
    corrects the earlier value of the same shape: the new token takes the earlier finding's kind."""
    out: list[Finding] = []
    for s in sentences:
        if not correction_cue(s.text) and not re.search(r"\bnot\s+\S", s.text, re.I):
            continue
        earlier = [f for f in findings if f.usable and f.turn <= s.turn and f.evidence != s.text and f.signal not in ("problem", "resolution", "resolved", "root_cause")]
        if not earlier:
            continue
        here = {(f.value.lower()) for f in findings if f.turn == s.turn and f.evidence == s.text}
        if not correction_cue(s.text):
            denied = {m.group().lower() for m in _TOKEN.finditer(s.text) if is_negated(s.text, m.start(), m.end())}
            if not denied & {f.value.lower() for f in earlier}:
                continue  # "not" without denying an earlier value is no correction
        for m in _TOKEN.finditer(s.text):
            tok = m.group()
            if tok.lower() in here or not re.search(r"\d", tok) or is_negated(s.text, m.start(), m.end()):
                continue
            same = [f for f in earlier if f.value != tok and " " not in f.value and _shape(f.value) == _shape(tok)]
            if not same:
                continue
            f = same[-1]
            out.append(replace(f, value=tok, turn=s.turn, role=s.role, evidence=s.text, raw=tok, corrected=True, negated=False, superseded=False))
            here.add(tok.lower())
    return out


def _apply_corrections(findings: list[Finding]) -> None:
    """A corrected value supersedes the value it denies ("5.1.3, not 5.3.3"), else the latest earlier
    value of the same kind from the same side; it takes over that value's name."""
    for i, f in enumerate(findings):
        if not f.corrected or f.negated:
            continue
        same_sentence_denied = {g.value.lower() for g in findings if g.negated and g.turn == f.turn and g.evidence == f.evidence and g.signal == f.signal}
        earlier = [g for g in findings[:i] if g.signal == f.signal and g.usable and g is not f and (g.turn, g.evidence) != (f.turn, f.evidence)]
        target = None
        if same_sentence_denied:
            matching = [g for g in earlier if g.value.lower() in same_sentence_denied]
            target = matching[-1] if matching else None
            for g in matching:
                g.superseded = True
        if target is None:
            same_side = [g for g in earlier if g.role == f.role and g.value != f.value]
            if same_side and not same_sentence_denied:
                target = same_side[-1]
                target.superseded = True
        if target is not None and f.name in ("version", "model", "error_code", "date", "amount", "quantity") and target.name != f.name:
            f.name = target.name
        # denied values anywhere earlier never count
        for g in earlier:
            if g.value.lower() in same_sentence_denied:
                g.superseded = True


def _answers(turns: Sequence[tuple[str, str]], sentences: list[Sentence], findings: list[Finding]) -> list[Finding]:
    out: list[Finding] = []
    found_values = {(f.turn, f.value) for f in findings if f.usable}
    for ti, (role, text) in enumerate(turns):
        if role != "agent":
            continue
        sents = [s for s in sentences if s.turn == ti]
        asks: list[str] = []
        for s in sents:
            asks += requested_slots(s.text)
        if not asks:
            continue
        # answer turns: the user turns right after this agent turn (agent "please" continuations allowed)
        answer_turns = []
        j = ti + 1
        skipped = 0
        while j < len(turns) and len(answer_turns) < 4:
            r, t = turns[j]
            if r == "agent":
                if answer_turns:
                    break
                if len(t.split()) > 3:
                    if skipped >= 2 or any(requested_slots(x) for _, _, x in split_sentences(t)):
                        break
                    skipped += 1
                j += 1
                continue
            answer_turns.append(j)
            j += 1
        slots = [a for a in asks if not _PII_SLOTS.match(a.strip())]
        pii = len(asks) - len(slots)
        if not slots:
            continue
        id_slots = [a for a in slots if _ID_SLOT.search(a)]
        other = [a for a in slots if a not in id_slots]
        tokens: list[tuple[int, str, str]] = []  # (turn, token, turn text)
        free: list[tuple[int, str]] = []
        for aj in answer_turns:
            at = _strip_lead(turns[aj][1]).strip()
            if not at or len(at.split()) > 12:
                continue
            idt = [tok for tok in re.findall(r"[A-Za-z0-9][\w-]*[A-Za-z0-9]", at) if _id_shape(tok) and not _PLACEHOLDER.fullmatch(tok)]
            if idt:
                tokens += [(aj, tok, turns[aj][1]) for tok in idt]
            elif not is_placeholder_only(at) and not re.fullmatch(r"[\w.+-]+", at) or (len(at.split()) == 1 and not is_placeholder_only(at)):
                free.append((aj, at))
        for slot, (aj, tok, ttext) in zip(id_slots, tokens):
            if (aj, tok) in found_values:
                weak = [f for f in findings if f.turn == aj and f.value == tok and f.signal in ("model", "error_code", "version", "statement")]
                if not weak:
                    continue
                for f in weak:
                    f.superseded = True
            out.append(Finding("answer", _slot_name(slot), tok, "string", 0.7 if len(id_slots) == 1 else 0.6, aj, "user", ttext.strip(), tok, slot))
        if len(other) == 1 and free and (pii == 0 or len(free) == 1):
            aj, at = free[0]
            v = answer_value(at)
            if v and not _id_shape(v.replace(" ", "")) and (aj, v) not in found_values:
                out.append(Finding("answer", _slot_name(other[0]), v, "string", 0.65, aj, "user", turns[aj][1].strip(), v, other[0]))
    return out


def _resolution(turns: Sequence[tuple[str, str]], sentences: list[Sentence], instr: dict) -> list[Finding]:
    """The agent step the user confirmed worked, else the last concrete agent instruction; and whether
    the conversation ended resolved."""
    out: list[Finding] = []
    n = len(turns)
    events: list[tuple[int, int, float, Sentence]] = []  # (turn, polarity, strength, sentence)
    for s in sentences:
        pol, st = confirmation(s.text, s.role)
        if pol:
            events.append((s.turn, pol, st, s))
    # instructions per agent turn
    by_turn: dict[int, list[Sentence]] = {}
    for s in sentences:
        if s.role == "agent" and instr[id(s)] >= 0.5:
            by_turn.setdefault(s.turn, []).append(s)

    def span_of(turn: int) -> tuple[str, str]:
        ss = by_turn[turn]
        text = turns[turn][1]
        a, b = ss[0].start, ss[-1].end
        # "Try these steps:" / "1. ..." - the list items that follow belong to the step
        is_item = lambda x: bool(re.match(r"\s*(?:\d{1,2}[.)]|[-*•])\s", text[x.start : x.start + 5]))
        if ss[-1].text.rstrip().endswith(":") or is_item(ss[-1]):
            for x in (x for x in sentences if x.turn == turn and x.start >= b):
                if not is_item(x):
                    break
                b = x.end
        if b - a > 400:  # keep the first few steps
            b = max((x.end for x in ss if x.end - a <= 400), default=ss[0].end)
        return _strip_lead(text[a:b]).strip(), text[a:b]

    # a user who reports their own fix ("I disabled the add-in and now it opens fine")
    self_fix = None
    for s in sentences:
        if (
            s.role == "user"
            and _SELF_FIX.search(s.text)
            and not re.search(r"\b(?:tried|already|can'?t|cannot|won'?t|doesn'?t|isn'?t|not|never|error|fail\w*|problem|issue)\b", s.text, re.I)
            and not correction_cue(s.text)
            and not _ASIDE.match(_strip_lead(s.text))
        ):
            pol, st = confirmation(s.text, "user")
            same_turn_ok = any(e[0] == s.turn and e[1] > 0 and e[3].role == "user" for e in events)
            if pol > 0 or (same_turn_ok and pol == 0 and s.turn not in [e[0] for e in events if e[1] < 0]):
                self_fix = s
    user_neg_turns = {e[0] for e in events if e[1] < 0 and e[3].role == "user"}

    def fix_turn(t: int) -> int | None:
        """The instruction turn a user verdict at turn ``t`` is about: the last one before it, unless
        the user reported a failure in between (then that step did not fix it)."""
        prior = [k for k in by_turn if k < t]
        if not prior:
            return None
        k = max(prior)
        if any(k < u < t for u in user_neg_turns):
            return None
        return k

    def chain_head(k: int) -> int:
        """Steps given one after another ("First, clear the cache." - "Ok" - "Now sign in again."): the
        chain's first step is the substantive fix, the later ones its follow-through."""
        while True:
            prev = [j for j in by_turn if j < k]
            if not prev:
                return k
            j = max(prev)
            between = [i for i in range(j + 1, k) if turns[i][0] == "user"]
            if not between or any(i in user_neg_turns for i in between) or any(e[0] in between and e[1] > 0 for e in events if e[3].role == "user"):
                return k
            if any(len(turns[i][1].split()) > 8 for i in between):
                return k  # more than an acknowledgement
            lead = by_turn[k][0].text
            if not re.match(r"(?:\W*(?:[A-Za-z']+(?:\s+[A-Za-z']+)?)\s*[,.!]\s*)*\W*"
                            r"(?:now|next|then|after\s+that|afterwards|once\s+(?:that'?s|it'?s|it\s+is)\s+done|finally|lastly|also|"
                            r"step\s+(?:two|three|2|3)|second(?:ly)?|third(?:ly)?)\b", lead, re.I):
                return k
            k = j

    confirmed = None
    user_pos = [e for e in events if e[1] > 0 and e[3].role == "user"]
    # the first confirmation answers the opening problem (a later one may be about a second issue)
    ordered = [e for e in user_pos if e[2] >= 0.6] + [e for e in user_pos if e[2] < 0.6]
    for t, pol, st, s in ordered:
        k = fix_turn(t)
        if k is not None:
            confirmed = (chain_head(k), t, st, s)
            break
    if self_fix is not None and (confirmed is None or self_fix.turn >= confirmed[1]):
        value = _strip_lead(self_fix.text).strip()
        out.append(Finding("resolution", "resolution", value, "string", 0.8, self_fix.turn, "user", self_fix.text, value))
    elif confirmed is not None and span_of(confirmed[0])[0]:
        k, t, st, s = confirmed
        value, ev = span_of(k)
        out.append(Finding("resolution", "resolution", value, "string", round(min(0.9, 0.55 + 0.35 * st), 2), k, "agent", ev, value))
    elif by_turn:
        k = max(by_turn)
        # a failure reported after it, or the agent giving up / escalating after it: nothing resolved it
        failed_after = any(e[1] < 0 and e[0] > k for e in events)
        if not failed_after:
            value, ev = span_of(chain_head(k))
            if value:
                out.append(Finding("resolution", "resolution", value, "string", 0.5, k, "agent", ev, value))
    else:
        done = [e for e in events if e[1] > 0 and e[3].role == "agent" and re.search(r"\b(?:has|have)\s+been\b", e[3].text, re.I)]
        if done:
            s = done[-1][3]
            value = _strip_lead(s.text).strip()
            out.append(Finding("resolution", "resolution", value, "string", 0.45, s.turn, "agent", s.text, value))

    # resolved: the last explicit user cue near the end, else the agent's; when the user confirmed the
    # fix and then raised a second issue ("One more thing: ..."), the verdict is about the first one
    scope = n
    if confirmed is not None:
        c_turn, c_index = confirmed[1], confirmed[3].index
        second = next((x.turn for x in sentences if x.role == "user" and (x.turn, x.index) > (c_turn, c_index) and _new_issue(x.text)), None)
        if second is not None:
            scope = second
    late = [e for e in events if (e[0] >= n * 0.3 or e[0] > min(by_turn, default=n)) and e[0] <= scope]
    user_late = [e for e in late if e[3].role == "user"]
    last_instruction = max((k for k in by_turn if k < scope), default=-1)
    if user_late and user_late[-1][0] < last_instruction:
        user_late = []  # the user's last verdict came before the last step: its outcome is unknown
        late = [e for e in late if e[0] > last_instruction]
    if user_late:
        t, pol, st, s = user_late[-1]
        agent_after = [e for e in late if e[3].role == "agent" and e[0] > t and e[1] != pol]
        strength = st if not agent_after else st - 0.25
        out.append(Finding("resolved", "resolved", "true" if pol > 0 else "false", "boolean", round(strength, 2), t, "user", s.text, s.text))
    else:
        agent_late = [e for e in late if e[3].role == "agent"]
        if agent_late:
            t, pol, st, s = agent_late[-1]
            out.append(Finding("resolved", "resolved", "true" if pol > 0 else "false", "boolean", round(st, 2), t, "agent", s.text, s.text))
    return out


_ATTEMPT = re.compile(
    r"\b(?:i(?:'ve|\s+have)?\s+(?:already\s+|also\s+)?(?:tried|restarted|rebooted|reinstalled|reset|cleared|updated|checked|"
    r"uninstalled|disabled|unplugged|replaced|changed|power[- ]cycled)|(?:what|things?)\s+i(?:'ve|\s+have)?\s+(?:already\s+)?tried|"
    r"(?:tried|did)\s+that|already\s+(?:tried|did|done))\b",
    re.IGNORECASE,
)
_ESCALATION = re.compile(
    r"\b(?:escalat(?:e|ed|ing)\s+(?:this|it|your|the|to|with)|let\s+(?:my|our|the)\s+(?:manager|supervisor|team|specialist|engineers?)\s+know|(?:pass|passed|passing|forward|forwarded|transfer|transferred|refer|referred|"
    r"hand(?:ed)?\s+(?:this\s+)?over)\s+(?:this|it|you|your\s+\w+)?\s*(?:on\s+)?to\s+(?:a|an|our|the|my)\s+(?:\w+\s+)?"
    r"(?:specialist|manager|supervisor|team|department|engineer|technician|tier\s*2|second\s+line|colleague)|"
    r"(?:open(?:ed)?|raise[d]?|create[d]?|file[d]?)\s+(?:a|an)\s+(?:\w+\s+)?(?:ticket|case|report|investigation)\s+(?:with|for)\s+(?:our|the)\s+\w+|"
    r"someone\s+(?:from\s+\w+\s+)?will\s+(?:get\s+back|contact|call|reach\s+out))",
    re.IGNORECASE,
)


_SELF_FIX = re.compile(
    r"\bi(?:'ve|\s+have|\s+just|\s+finally|\s+then)?\s+(?:disabled|enabled|reinstalled|installed|uninstalled|updated|upgraded|downgraded|"
    r"removed|deleted|changed|replaced|reset|cleared|turned\s+(?:off|on)|switched|rolled\s+back|moved|renamed|edited|added|unplugged|"
    r"restarted|rebooted|power[- ]cycled|flashed|repaired|reconnected|re-?paired|set|fixed\s+it\s+by|solved\s+it\s+by)\b",
    re.IGNORECASE,
)


def _attempts_and_escalation(sentences: list[Sentence]) -> list[Finding]:
    """What the user already tried (a user sentence with "I tried / restarted / already ..."), and
    whether the agent escalated (passed it on to a specialist, manager or another team)."""
    out: list[Finding] = []
    for s in sentences:
        if s.role == "user" and _ATTEMPT.search(s.text) and len(_content_words(s.text)) >= 2 and confirmation(s.text, "user")[0] <= 0:
            text = _strip_lead(s.text).strip()
            if not re.fullmatch(r"(?i)\W*(?:tried|did|done)\s+that\W*(?:\w+\W*){0,3}", text):
                out.append(Finding("attempted_steps", "attempted_steps", text.rstrip(". "), "string", 0.7, s.turn, "user", s.text, text))
                break
    for s in sentences:
        if s.role == "agent" and _ESCALATION.search(s.text) and not s.text.rstrip().endswith("?"):
            out.append(Finding("escalated", "escalated", "true", "boolean", 0.75, s.turn, "agent", s.text, s.text))
            break
    return out


def _root_cause(sentences: list[Sentence], problem_turns: tuple[int, ...]) -> list[Finding]:
    best: tuple[float, Sentence, str] | None = None
    for s in sentences:
        if s.role == "user" and s.turn in problem_turns and not re.search(r"turn(?:s|ed)\s+out|found", s.text, re.I):
            continue  # the user's own guess in the opening statement is part of the problem
        c = cause_clause(s.text)
        if c is None:
            continue
        clause, st = c
        if s.role == "agent":
            st += 0.1
        if len(clause.split()) < 2:
            continue
        if best is None or st > best[0]:
            best = (st, s, clause)
    if best is None:
        return []
    st, s, clause = best
    return [Finding("root_cause", "root_cause", clause, "string", round(min(0.85, st), 2), s.turn, s.role, s.text, clause)]
