"""Version, operating-system and browser detectors, and the correction and negation cues that decide
which mentioned value stands ("actually it's 2.3, not 2.1")."""

from __future__ import annotations

import re

from sarag_assets.backends.embedded.text import _STOP, Hit, _before, snake

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
_MULTI_PART = re.compile(r"[vV]?\d+(?:\.\d+){2,}")
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
            # a product name right before: "Chrome 120.0", "iPhone is on 11.1.2"; a model code ("AX3000
            # 1.2.3") names one device, not a kind of version, so its version is the plain one
            owner = None if any(c.isdigit() for c in tok) else low
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


def _is_quantity(number: str, after: str) -> bool:
    """A unit follows the number. Three dotted parts or more are never a quantity, so "4.7.6 in the About
    box" is no "4.7.6 inches"."""
    return bool(_UNIT_AFTER.match(after)) and not _MULTI_PART.match(number)


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
        verbs = _UPDATE_VERBS.findall(before)
        # "your hub updated to 2.8.1 on Saturday" reports what is installed; "update to 2.8.2" asks for it
        reported = bool(verbs) and re.fullmatch(r"(?:updat|upgrad)ed", verbs[-1], re.I) is not None and not instruction
        target = role == "agent" and (instruction or (bool(verbs) and not reported))
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
        if not re.search(r"\d", v) or _is_quantity(v, text[m.end("v") :]):
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
        if _is_quantity(v, text[e:]) or re.search(r"[$€£¥]\s*$", _before(text, s, 3)):
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
