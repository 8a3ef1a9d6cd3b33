"""Redaction of personal data in conversation text, before anything leaves the machine.

``Redactor(names).redact(text)`` replaces

- e-mail addresses -> ``[EMAIL]``
- phone numbers -> ``[PHONE]``: only with separators, parentheses or a ``+`` prefix
  ("(977) 625-2661", "555-123-4567", "555.123.4567", "+44 20 7946 0958"), or digit groups separated by
  spaces right after a phone word ("call 877 399 3086"); bare digit runs are order/ticket numbers.
- IPv4 / IPv6 addresses -> ``[IP]``; a dotted quad right after a version word (version, ver, v, build,
  firmware, fw, release, rev, patch, update, driver, bios, kernel) is a version, not an address.
- @mentions / handles ("@AppleSupport", "@135060", "u/someone") -> ``[MENTION]``
- known names (``names``; whole word, case-insensitive; a multi-word name also by each part of 3+
  letters when that part is capitalized in the text) -> the placeholder ``speaker_placeholders`` gives
  for that name (e.g. ``user1``), else ``[NAME]``
- names given in self-introductions ("my name is X", "this is X from/at/with ...", "I'm X from ..."),
  greetings ("Hi X.") and sign-offs at the end of a message ("Regards, X", "Thanks, X", "^X") -> ``[NAME]``

Precision matters as much as recall: the redacted text feeds extraction of support facts, so versions
(2.3.1, v10.0.19045.3803), error codes (0x80070005, E-1042), dates, times, amounts, bare order or
ticket numbers and model numbers (R7000, SM-G991B) are left alone. URLs are kept, except an IP host.
Names that are role words ("agent", "customer"), single letters, digit runs or very common words
("help", "ubuntu") are not treated as names: redacting them would destroy the text.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Iterable, Mapping

from sarag_assets.core.ingest.roles import is_neutral_label, role_of_label

__all__ = ["Redactor", "EMAIL", "PHONE", "IP", "MENTION", "NAME"]

EMAIL = "[EMAIL]"
PHONE = "[PHONE]"
IP = "[IP]"
MENTION = "[MENTION]"
NAME = "[NAME]"

# Span priorities: when two findings overlap, the higher one wins.
_P_EMAIL, _P_IP, _P_PHONE, _P_MENTION, _P_NAME, _P_CUE, _P_PART = 90, 80, 70, 60, 50, 45, 40

# Capitalized words that follow "Hi", "Thanks," or "this is" without being names, and very common words
# that cannot be redacted as a name without destroying the text.
_NOT_NAMES = frozenset(
    """i me my we us our you your he she it they them his her its their this that these those there here
    the a an and or but nor so yet for of in on at to from with by as into onto about over under again
    all any some every everyone everybody anyone someone nobody team guys folks friend friends sir madam
    maam mam mate bro dude buddy pal gentlemen ladies people everything nothing something
    is am are was were be been being do does did have has had will would can could shall should may
    might must not no yes yeah yep ok okay please sorry thanks thank regards cheers best sincerely kind
    warm hi hello hey dear good great nice fine happy glad new old just still also really actually
    very much more most less advance anyway morning afternoon evening night day today tomorrow
    yesterday now then soon later again unable trying having going looking calling writing
    correct wrong right incorrect spelled listed missing different already shown changed same
    support customer agent help service admin user users guest root test system server
    windows linux ubuntu debian mac apple google microsoft android ios iphone ipad chrome firefox
    update upgrade version error issue problem account order password email phone""".split()
)

_VERSION_WORDS = r"(?:version|ver|v|build|firmware|fw|release|rev|revision|patch|update|driver|bios|kernel)"
_VERSION_BEFORE = re.compile(r"\b" + _VERSION_WORDS + r"\s*[:#.]?\s*$", re.IGNORECASE)
# Around a dotted quad that is not right after a version word, the nearest of these words decides
# whether it is a version ("roll back to 1.0.9.88") or an address ("ping 81.2.69.160"); private,
# loopback and link-local addresses always count as addresses.
_VERSION_CONTEXT = frozenset(
    """version versions ver build firmware fw release rev revision patch update updated updating upgrade
    upgraded upgrading downgrade downgraded downgrading rollback roll rolled install installed installing
    driver drivers bios kernel software package app""".split()
)
_IP_CONTEXT = frozenset(
    """ip ips ipv4 address addresses addr host hostname ping gateway dns nameserver server subnet netmask lan
    wan proxy ssh telnet rdp port static dhcp vpn connect connected connecting traceroute tracert ifconfig
    ipconfig""".split()
)
_CONTEXT_WORD = re.compile(r"[a-z0-9]+")

_URL = re.compile(r"\b(?:https?://|ftp://|www\.)[^\s<>\"']+", re.IGNORECASE)

_EMAIL = re.compile(
    r"(?<![\w.%+-])(?:mailto:)?[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,63})@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?!\w|\.\d)")
_IPV6_CANDIDATE = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})(?:%\w+)?(?![\w:])"
)

_PHONE_PATTERNS = (
    # international: +44 20 7946 0958, +1-800-555-1234, +33 (0)1 23 45 67 89
    re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(\d{1,4}\)|[ .-]?\d{1,5}){1,7}(?!\w|[.-]\d)"),
    # (977) 625-2661, 1 (800) 555-1234
    re.compile(r"(?<![\w(])(?:1[ .-]?)?\(\d{3}\)[ .-]?\d{3}[ .-]?\d{4}(?!\w|[.-]\d)"),
    # 555-123-4567, 555.123.4567, 1-800-555-1234 (one separator style throughout)
    re.compile(r"(?<![\w.+#/-])(?:1([.-]))?\d{3}([.-])\d{3}\2\d{4}(?!\w|[.-]\d)"),
)
# Digit groups separated by spaces only count right after a phone word.
_SPACED_PHONE = re.compile(r"(?<![\w.+-])\d{2,5}(?: \d{2,4}){1,3}(?![\w]|[.-]\d)")
_PHONE_CUE = re.compile(
    r"\b(?:phone|tel|telephone|call(?:ing)?|mobile|cell(?:phone)?|fax|whats[ -]?app|dial|ring|hotline|helpline)"
    r"\b[^\n]{0,25}$",
    re.IGNORECASE,
)

_MENTION = re.compile(r"(?<![\w@.+-])@([A-Za-z0-9_]{1,30})(?![\w@]|:\d)")
_REDDIT_USER = re.compile(r"(?<![\w/])/?u/[A-Za-z0-9_-]{3,20}(?![\w/-])")
_TIME_LIKE = re.compile(r"^\d{1,2}(?:am|pm)?$", re.IGNORECASE)

_CAP = r"[A-Z][A-Za-z'’-]*[a-z][A-Za-z]*"  # a capitalized name token ("Phil", "O'Brien", "Anne-Marie"), not "HO"
_ANY = r"[A-Za-z][A-Za-z'’-]*[A-Za-z]"  # a name token in any case ("raja")
_CUE_PATTERNS = (
    # my name is X / last name is X / name: X (at the start of a line)
    re.compile(
        rf"(?:\b(?i:my|his|her|their|the\s+customer'?s|your|full|first|last|user'?s)\s+(?i:name)\s*(?:(?i:is)|:|=)"
        rf"|\b(?i:my\s+name'?s)|(?:^|\n)[ \t]*(?i:name)\s*:)\s+({_ANY}(?:\s+{_CAP}){{0,2}})"
    ),
    # this is X from/at/with ...; I'm X from ...; I am X with ...
    re.compile(
        rf"\b(?:[Tt]his\s+is|I['’]m|I\s+am)\s+({_CAP}(?:\s+{_CAP})?)\s*,?\s+(?:from|at|with|of|here)\b"
    ),
    # Hi X. / Hello X, / Dear X: at the start of a message or sentence (after any @mentions)
    re.compile(
        rf"(?:^|[.!?]\s+|\n)\s*(?:@\w+\s+)*(?i:hi|hello|hey|hiya|dear|good\s+(?:morning|afternoon|evening))"
        rf"\s+({_CAP})(?=\s*[,.!:;]|\s*$)"
    ),
    # Regards, X / Thanks, X / Cheers X at the very end of the message
    re.compile(
        rf"(?:^|[\s.!?])(?i:best\s+regards|kind\s+regards|warm\s+regards|regards|many\s+thanks|thanks|thank\s+you"
        rf"|thx|cheers|best\s+wishes|best|sincerely|take\s+care|yours)\s*[,!.\-–—]*\s*\n?\s*"
        rf"({_CAP}(?:\s+{_CAP}){{0,2}})\s*[.!]?\s*$"
    ),
    # -- X / ~X at the very end
    re.compile(rf"(?:^|\s)(?:--|~|—)\s*({_CAP}(?:\s+{_CAP})?)\s*$"),
    # Twitter-style agent signature at the end: ^SH, ^Clarissa (any word: the caret marks a signature)
    re.compile(r"\^([A-Z][A-Za-z]{0,20})\s*$"),
)
_SIGNATURE = _CUE_PATTERNS[-1]


def _dotted_quad_is_version(text: str, m: re.Match) -> bool:
    if _VERSION_BEFORE.search(text, max(0, m.start() - 24), m.start()):
        return True
    octets = [int(x) for x in m.group().split(".")]
    if octets[0] in (10, 127) or octets[:2] == [192, 168] or octets[:2] == [169, 254]:
        return False
    if octets[0] == 172 and 16 <= octets[1] <= 31:
        return False
    after = _CONTEXT_WORD.search(text[m.end() : m.end() + 20].lower())
    if after and after.group() in _VERSION_CONTEXT and text[m.end() : m.end() + after.start()].strip(" ,;:()") == "":
        return True
    for word in reversed(_CONTEXT_WORD.findall(text[max(0, m.start() - 40) : m.start()].lower())):
        if word in _VERSION_CONTEXT:
            return True
        if word in _IP_CONTEXT:
            return False
    return False


def _norm(name: str) -> str:
    return " ".join(name.lower().split())


def _usable_name(name: str) -> bool:
    key = _norm(name)
    if len(key.replace(" ", "")) < 2 or key.isdigit() or key in _NOT_NAMES:
        return False
    if role_of_label(name) is not None or is_neutral_label(name):
        return False
    return True


def _name_pattern(name: str) -> str:
    return r"\s+".join(re.escape(tok) for tok in name.split())


class Redactor:
    """Replaces personal data in text; see the module docstring for what counts.

    ``names``: personal names and handles known for the conversation (e.g. ``metadata["_names"]``).
    ``enabled=False`` makes ``redact`` return its input unchanged.
    """

    def __init__(self, names: Iterable[str] = (), *, enabled: bool = True):
        self.enabled = enabled
        self._names: dict[str, str] = {}  # normalized -> as given
        for name in names:
            if isinstance(name, str) and name.strip() and _usable_name(name):
                self._names.setdefault(_norm(name), " ".join(name.split()))
        self._parts: dict[str, set[str]] = {}  # lower part -> normalized full names owning it
        for key in self._names:
            tokens = key.split()
            if len(tokens) < 2:
                continue
            for tok in tokens:
                if len(tok) >= 3 and tok.isalpha() and tok not in _NOT_NAMES:
                    self._parts.setdefault(tok, set()).add(key)
        ordered = sorted(self._names.values(), key=len, reverse=True)
        self._full_re = (
            re.compile(r"(?<!\w)(?:" + "|".join(_name_pattern(n) for n in ordered) + r")(?!\w)", re.IGNORECASE)
            if ordered
            else None
        )
        parts = sorted(self._parts, key=len, reverse=True)
        self._part_re = (
            re.compile(r"(?<!\w)(?:" + "|".join(re.escape(p) for p in parts) + r")(?!\w)", re.IGNORECASE)
            if parts
            else None
        )

    @property
    def names(self) -> list[str]:
        return list(self._names.values())

    def redact(self, text: str, speaker_placeholders: Mapping[str, str] | None = None) -> str:
        if not self.enabled or not text:
            return text
        placeholders = {_norm(k): v for k, v in (speaker_placeholders or {}).items() if isinstance(k, str)}
        spans: list[tuple[int, int, int, str]] = []  # (priority, start, end, replacement)
        urls = [m.span() for m in _URL.finditer(text)]  # sorted, non-overlapping
        url_starts = [s for s, _ in urls]

        def in_url(start: int, end: int) -> bool:
            i = bisect.bisect_left(url_starts, end) - 1  # the last URL starting before `end`
            return i >= 0 and urls[i][1] > start

        for m in _EMAIL.finditer(text):
            spans.append((_P_EMAIL, m.start(), m.end(), EMAIL))
        for m in _IPV4.finditer(text):
            if not _dotted_quad_is_version(text, m):
                spans.append((_P_IP, m.start(), m.end(), IP))
        for m in _IPV6_CANDIDATE.finditer(text):
            candidate = m.group().split("%", 1)[0]
            if not re.search(r"[0-9A-Fa-f]", candidate):
                continue
            try:
                ipaddress.IPv6Address(candidate)
            except ValueError:
                continue
            spans.append((_P_IP, m.start(), m.end(), IP))
        for pattern in _PHONE_PATTERNS:
            for m in pattern.finditer(text):
                digits = sum(ch.isdigit() for ch in m.group())
                if 7 <= digits <= 15 and not in_url(*m.span()):
                    if "." in m.group() and _VERSION_BEFORE.search(text, max(0, m.start() - 24), m.start()):
                        continue
                    spans.append((_P_PHONE, m.start(), m.end(), PHONE))
        for m in _SPACED_PHONE.finditer(text):
            digits = sum(ch.isdigit() for ch in m.group())
            cue = _PHONE_CUE.search(text, max(0, m.start() - 48), m.start())
            if cue and 9 <= digits <= 13 and not in_url(*m.span()):
                spans.append((_P_PHONE, m.start(), m.end(), PHONE))
        for m in _MENTION.finditer(text):
            if not _TIME_LIKE.match(m.group(1)) and not in_url(*m.span()):
                spans.append((_P_MENTION, m.start(), m.end(), MENTION))
        for m in _REDDIT_USER.finditer(text):
            if not in_url(*m.span()):
                spans.append((_P_MENTION, m.start(), m.end(), MENTION))
        if self._full_re is not None:
            for m in self._full_re.finditer(text):
                if not in_url(*m.span()):
                    spans.append((_P_NAME, m.start(), m.end(), self._placeholder(m.group(), placeholders)))
        if self._part_re is not None:
            for m in self._part_re.finditer(text):
                if m.group()[0].isupper() and not in_url(*m.span()):
                    spans.append((_P_PART, m.start(), m.end(), self._placeholder(m.group(), placeholders)))
        for pattern in _CUE_PATTERNS:
            for m in pattern.finditer(text):
                span = m.span(1) if pattern is _SIGNATURE else self._cue_name_span(m)
                if span is not None and not in_url(*span):
                    name = text[span[0] : span[1]]
                    spans.append((_P_CUE, span[0], span[1], self._placeholder(name, placeholders)))
        if not spans:
            return text
        return _apply(text, spans)

    def _placeholder(self, name: str, placeholders: Mapping[str, str]) -> str:
        """The placeholder for a found name: its own, or its full name's for a part; else [NAME]."""
        key = _norm(name)
        if key in placeholders:
            return placeholders[key]
        owners = self._parts.get(key)
        if owners:
            chosen = {placeholders.get(o, NAME) for o in owners}
            if len(chosen) == 1:
                return chosen.pop()
        return NAME

    @staticmethod
    def _cue_name_span(m: re.Match) -> tuple[int, int] | None:
        """The span of the name tokens in a cue match, stopping at the first word that is not a name."""
        start = m.start(1)
        tokens = list(re.finditer(r"\S+", m.group(1)))
        end = None
        for tok in tokens:
            word = tok.group().strip("'’-").lower()
            if word in _NOT_NAMES or role_of_label(word) is not None:
                break
            end = m.start(1) + tok.end()
        if end is None:
            return None
        return start, end


def _apply(text: str, spans: list[tuple[int, int, int, str]]) -> str:
    """Replace the winning spans: higher priority first, then longer, then earlier; no overlaps."""
    spans.sort(key=lambda s: (-s[0], -(s[2] - s[1]), s[1]))
    used = bytearray(len(text))
    taken: list[tuple[int, int, str]] = []
    for _, start, end, repl in spans:
        if used.find(1, start, end) == -1:
            used[start:end] = b"\x01" * (end - start)
            taken.append((start, end, repl))
    taken.sort()
    out, pos = [], 0
    for start, end, repl in taken:
        out.append(text[pos:start])
        out.append(repl)
        pos = end
    out.append(text[pos:])
    return "".join(out)
