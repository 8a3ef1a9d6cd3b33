"""Error-code, error-message and model-number detectors."""

from __future__ import annotations

import re

from sarag_assets.backends.embedded.text import Hit, _before, is_placeholder_only
from sarag_assets.backends.embedded.versions import _UNIT_AFTER

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

# not after "%": "%2Fvar" of an encoded path is a byte, not a model
_MODEL_TOKEN = re.compile(r"(?<![\w./@#\[%-])(?P<m>(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+){0,3})(?![\w@\]]|\.\d|-\w)")
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
    upper-case letter, not a version, an error code, a unit ("20GB", "5G"), a seat/line label ("5D") or a
    byte of an encoded path ("%2Fvar").
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
