"""Date, amount, measurement, identifier and plan detectors."""

from __future__ import annotations

import re
from datetime import date

from sarag_assets.backends.embedded.text import _STOP, Hit, is_placeholder_only, snake

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
