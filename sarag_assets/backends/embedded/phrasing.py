"""Limits of the refinement outputs, and how text becomes a node or a short query: display cleanup,
filler (greetings, thanks, hold messages) recognized and dropped, content words, details, keyphrases."""

from __future__ import annotations

import html
import re
import unicodedata

import regex

from sarag_assets.backends.embedded.cues import instruction_score
from sarag_assets.core.writing import CJK_RANGES, cjk_bigrams

MAX_ISSUE_QUERIES = 8
MAX_SOLUTION_QUERIES = 8
MAX_QUERY_WORDS = 24
MAX_NODE_CHARS = 2000
MAX_SENTENCES_PER_TURN = 40  # very long posts (logs, pasted configs): the rest is not read

# embedding thresholds (cosine, all-MiniLM-L6-v2)
REFINE_SIM = 0.75  # a restatement of an earlier issue
REFINE_SIM_WITH_DETAIL = 0.55  # the same issue with a new detail
ELABORATE_SIM = 0.40  # a clarifying question about the previous answer

# ---------------------------------------------------------------------------------------------------
# text cleaning

_DIGIT = re.compile(r"\d")
_URL = re.compile(r"(?:https?://|www\.)\S+", re.I)
_MENTION = re.compile(r"\[MENTION\]|(?<![\w.])@\w+")
_SIGNATURE = re.compile(r"\s*\^\s*(?:\[[A-Z_]+\]|[A-Za-z]{1,4}\b)")
_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]{1,20}\]|\b(?:user|agent)\d+\b")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_LEAD = re.compile(
    r"^(?:\s|[-*•>:,;.!]|\d{1,2}[.)]\s"
    r"|(?:hi|hello|hey|hai|hiya|dear|greetings)(?:\s+(?:there|team|all|guys|everyone|folks|support|again))?\s*(?:[,!.:]+|-(?=\s))"
    r"|(?:hi|hello|hey|hai|hiya)\s+(?=[a-z])"
    r"|(?:yes|yeah|yep|no|nope|ok|okay|so|well|oh|ah|alright|right|sure|great|hmm|um|also|and|but|plus|then|ps|p\.s\.|"
    r"btw|fyi|update|edit|question|quick\s+question|problem|issue|one\s+more\s+thing|by\s+the\s+way|while\s+i\s+have\s+you|"
    r"thanks|thank\s+you|sorry|please)\s*(?:[,!.:]+|-(?=\s))"
    r"|(?:oh,?\s+and\s+)?(?:(?:strange|weird|annoying|quick|big|small|serious|odd|new|another|one\s+more|a\s+second|a\s+different|different|"
    r"unrelated|separate)\s+)?(?:issue|problem|question|bug|thing)\s*[:-]"
    r"|(?:and|but|so|also|then|plus|please|kindly|just|basically|honestly|literally|suddenly)\s+)+",
    re.I,
)
_TRAIL = re.compile(
    r"(?:[\s,;:-]+(?:thanks?(?:\s+(?:you|again))?(?:\s+(?:so|very)\s+much)?(?:\s+in\s+advance)?|tia|please(?:\s+(?:advise|help))?|"
    r"any\s+(?:ideas|help|suggestions|thoughts)|cheers|regards|lol|haha|:\)|:\()\W*)+$",
    re.I,
)
_PARENTHETICAL_NAME = re.compile(r"\((?:name'?s|i'?m|this\s+is|it'?s)\s+[^)]{1,30}\)", re.I)
_CLAUSE_CUT = re.compile(r",\s|;\s|\s-{1,2}\s|:\s|\s(?:and|but|because|so|which|while|although|though)\s", re.I)


def _display(text: str) -> str:
    """A turn's text for nodes and sentence splitting: HTML entities decoded, URLs, @mentions and tweet
    signatures removed, runs of spaces collapsed (line breaks kept). Redaction placeholders stay."""
    t = html.unescape(text or "").replace("’", "'").replace("‘", "'")
    t = _URL.sub(" ", t)
    t = _SIGNATURE.sub(" ", t)
    t = _MENTION.sub(" ", t)
    t = _SPACES.sub(" ", t)
    t = re.sub(r" *\n *", "\n", t)
    return t.strip()


def _no_symbols(text: str) -> str:
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith(("So", "Cn", "Co", "Cs")))


def _mostly_upper(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 6 and sum(c.isupper() for c in letters) / len(letters) > 0.7


def _shorten(text: str, max_words: int = MAX_QUERY_WORDS) -> str:
    words = text.split()
    if len(words) <= max_words:
        return text
    head = " ".join(words[:max_words])
    cuts = [m.start() for m in _CLAUSE_CUT.finditer(head) if len(head[: m.start()].split()) >= max(6, max_words // 3)]
    return head[: cuts[-1]] if cuts else head


def _query(text: str, max_words: int = MAX_QUERY_WORDS) -> str:
    """A sentence as a query: no placeholders, symbols, greetings or thanks around it; all-caps text
    lowered (codes kept); at most `max_words` words, cut at a clause boundary."""
    t = re.sub(r"(?:\s+(?:at|to|on|via|is|are|by|from|with|me|us))?\s*:?\s*(?:" + _PLACEHOLDER.pattern + ")", " ", text or "")
    t = _PARENTHETICAL_NAME.sub(" ", t)
    t = _no_symbols(t)
    t = re.sub(r"\((?:\s|[,.;:])*\)", " ", t)  # "( )" left by a removed placeholder
    t = re.sub(r"\s+", " ", t).strip()
    t = re.sub(r"\s+([,.;:!?])", r"\1", t)
    t = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", t)
    for _ in range(3):
        t = _LEAD.sub("", t).strip()
        t = _TRAIL.sub("", t).strip()
        t = _drop_filler_clauses(t)
    if _mostly_upper(t):
        t = " ".join(w if _DIGIT.search(w) else w.lower() for w in t.split())
    t = _shorten(t, max_words)
    t = t.strip(" ,;:-")
    t = re.sub(r"[.!]+$", "", t).strip()
    t = re.sub(r"\?+$", "?", t)
    if t and t[0].islower() and not re.match(r"[a-z]+[A-Z0-9]", t):  # "iPhone" stays
        t = t[0].upper() + t[1:]
    return t


_CLAUSE_SPLIT = re.compile(r"(?<=[,;:!])\s+|\s+-{1,2}\s+|(?<=\.)\s+")


def _drop_filler_clauses(text: str) -> str:
    """Leading and trailing clauses that are only pleasantries ("Sorry to keep you waiting, your seat
    is 5D" -> "your seat is 5D")."""
    if not re.search(r"[,;:!.]\s|\s-", text):
        return text
    parts = [p for p in _CLAUSE_SPLIT.split(text) if p]
    if len(parts) < 2:
        return text
    i, j = 0, len(parts)
    while i < j - 1 and _is_filler(parts[i]):
        i += 1
    while j - 1 > i and _is_filler(parts[j - 1]):
        j -= 1
    if (i, j) == (0, len(parts)):
        return text
    out = " ".join(parts[i:j]).strip(" ,;:-")
    return out[0].upper() + out[1:] if out and text[:1].isupper() else out


# a word of any script, its combining marks included (Cyrillic, Arabic, Devanagari, Thai, a Latin letter
# with an accent): with ASCII letters only, a Russian or Arabic sentence held no word and read as a
# greeting. Han and kana are left to `cjk_bigrams`; ASCII text splits as it did.
_LETTER = rf"[[\p{{L}}\p{{N}}]--[{CJK_RANGES}]]"
_WORD = regex.compile(rf"(?V1){_LETTER}(?:[[\p{{L}}\p{{N}}\p{{M}}'’._+-]--[{CJK_RANGES}]]*[[\p{{L}}\p{{N}}\p{{M}}]--[{CJK_RANGES}]])?")
_STOP = frozenset(
    """a an the and or nor but if then so of to in on at by for with from as into onto about over under up down out off
    is am are was were be been being do does did doing have has had having will would can could shall should may might
    must i me my mine myself we us our ours you your yours he him his she her it its they them their this that these
    those there here what which who whom whose when where why how all any some each every both either neither just
    also only very really still already again too please thanks thank hi hello hey ok okay yeah yes sure now than
    because while since until after before during get got gets getting one let lets i'm i've i'd i'll it's that's
    there's let's you're we're they're im ive dont pls plz thx u ur hai much many more most lot lots bit kind sort
    way thing things something anything everything someone anyone everyone like well oh ah um hmm guys team
    suddenly basically honestly literally usually always sometimes maybe perhaps probably actually currently
    today yesterday tomorrow tonight time times thankyou dude bro mate ideas idea above seems seem think feel guess
    wow lol hmm says say""".split()
)
_NEGATION = frozenset(
    "not no never cannot can't cant won't wont don't doesn't didn't isn't aren't wasn't weren't haven't hasn't couldn't "
    "shouldn't wouldn't nothing nobody unable".replace("'", "'").split()
)
_GENERIC = frozenset(
    """need want know help fix work works working worked use using used make made go going see try tried check
    change changed set get give take call tell ask asked say said look find thing issue problem question help
    please thanks issue error""".split()
)


def _tokens(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text or "")] + cjk_bigrams(text or "")


def _content(text: str) -> list[str]:
    """Content words: not stop words, not negations, not bare short numbers."""
    out = []
    for w in _tokens(text):
        if w in _STOP or w in _NEGATION:
            continue
        if w.isdigit() and len(w) <= 2:
            continue
        out.append(w)
    return out


def _content_set(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _content(text))


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf) and not _DIGIT.search(w):
            return w[: -len(suf)]
    return w


def _keyphrase(text: str, drop: frozenset[str] = frozenset(), max_words: int = 10) -> str:
    """The content words of `text` in order (negations kept), as a short keyword query."""
    out: list[str] = []
    for raw in _WORD.findall(_PLACEHOLDER.sub(" ", text or "")):
        w = raw.lower().replace("’", "'")
        if w in drop or (w in _STOP and w not in _NEGATION):
            continue
        if not out and w in _NEGATION and w not in ("no", "never", "cannot", "unable"):
            continue
        out.append(raw if re.search(r"[A-Z].*\d|\d.*[A-Z]|^[A-Z]", raw) else w)
        if len(out) >= max_words:
            break
    return " ".join(out)


# ---------------------------------------------------------------------------------------------------
# cues (general English)

_FILLER_PARTS = re.compile(
    r"\b(?:hi|hello|hey|hai|hiya|greetings|good\s+(?:morning|afternoon|evening|day)|dear\s+\w+|to\s+whom\s+it\s+may\s+concern|"
    r"thanks?(?:\s+you)?(?:\s+(?:so|very)\s+much)?(?:\s+(?:again|a\s+lot|in\s+advance))?"
    r"(?:\s+for\s+(?:contacting|reaching\s+out|reaching|getting\s+in\s+touch|your\s+(?:patience|help|time|understanding|message|"
    r"business|reply|response|assistance|support|cooperation|feedback|loyalty|confirmation|details|info(?:rmation)?)|waiting|"
    r"holding|the\s+(?:help|info(?:rmation)?|details|update|reply|quick\s+\w+|assistance|support)|letting\s+(?:me|us)\s+know|"
    r"choosing\s+\w+|(?:all\s+)?(?:the|your)\s+(?:help|assistance)|that|this|everything|understanding|trying(?:\s+to\s+help)?|"
    r"checking|confirming|asking|sharing\s+(?:this|that)?|(?:the|this|that)?\s*info))?|much\s+appreciated|appreciate\s+(?:it|that|your\s+\w+)|"
    r"(?:have|enjoy)\s+an?\s+(?:great|nice|good|wonderful|safe|lovely|fantastic|pleasant|amazing|blessed)\s+(?:\w+\s+)?"
    r"(?:day|night|evening|weekend|flight|trip|one|time|afternoon|morning|holiday|week)(?:\s+ahead)?|"
    r"you'?re\s+(?:very\s+|most\s+)?welcome|you\s+are\s+welcome|(?:it'?s\s+)?(?:my|our)\s+pleasure|no\s+problem(?:\s+at\s+all)?|"
    r"not\s+a\s+problem|no\s+worries(?:\s+at\s+all)?|(?:happy|glad)\s+to\s+(?:help|assist|hear(?:\s+(?:that|it))?)|"
    r"glad\s+(?:i|we)\s+could\s+(?:help|assist)|(?:it\s+)?(?:was\s+)?(?:great|nice|a\s+pleasure)\s+(?:assisting|helping|talking\s+to|"
    r"chatting\s+with)\s+you|(?:is|will|would)\s+there\s+be\s+anything\s+else|(?:is\s+there\s+)?anything\s+else(?:\s+(?:that\s+)?"
    r"(?:i|we)\s+(?:can|could|may|might)\s+(?:help|assist|do)(?:\s+you)?(?:\s+with)?(?:\s+today)?)?|"
    r"(?:how|what)\s+(?:can|may|could)\s+i\s+(?:help|assist|do\s+for)\s*(?:you)?(?:\s+(?:today|with))?|"
    r"(?:what|how)\s+can\s+(?:i|we)\s+do\s+for\s+you(?:\s+today)?|"
    r"(?:one|a)\s+(?:moment|minute|second|sec)(?:\s+please)?|please\s+(?:hold|wait|bear\s+with\s+me)(?:\s+(?:on|a\s+moment))?|"
    r"(?:please\s+)?allow\s+me\s+(?:a\s+)?(?:moment|minute|second|some\s+time)|bear\s+with\s+(?:me|us)|"
    r"let\s+me\s+(?:check|look|see|verify|pull\s+up|have\s+a\s+look|take\s+a\s+look|look\s+into)(?:\s+(?:that|this|it|into\s+(?:it|this|that)))?(?:\s+for\s+you)?|"
    r"give\s+me\s+a\s+(?:moment|minute|second|sec)|(?:sorry|apologies)\s+(?:to\s+keep\s+you\s+waiting|for\s+(?:the|your)\s+(?:wait|delay|waiting))|"
    r"sorry\s+(?:to\s+hear(?:\s+(?:that|about\s+(?:that|this|it)))?|about\s+(?:that|this)|for\s+(?:the|any|this|that)\s+(?:inconvenience|trouble|hassle|difficulty|frustration|confusion))|"
    r"(?:i\s+)?apologi[sz]e\s+for\s+(?:the|any|this)\s+(?:inconvenience|trouble|hassle|delay|difficulty|frustration|confusion)|"
    r"(?:we\s+)?(?:are|'re)\s+(?:always\s+)?(?:here|happy)\s+to\s+help|(?:i'?ll|i\s+will|i'?d|we'?d|we'?ll)\s+be\s+(?:happy|glad)\s+to\s+(?:help|assist)(?:\s+you)?(?:\s+with\s+that)?|"
    r"(?:my\s+name\s+is|this\s+is)\s+\S+(?:\s+(?:from|with|here))?|you'?ve\s+(?:reached|been\s+connected\s+to)\s+[\w\s]{0,30}|welcome\s+to\s+[\w\s]{0,30}|"
    r"(?:please\s+)?(?:read|see)\s+(?:the\s+)?above|take\s+care|good\s*bye|bye|dear|"
    r"(?:ok(?:ay)?,?\s+)?i\s+think\s+i\s+(?:know|see|understand)\s+what'?s\s+(?:going\s+on|happening|wrong)|"
    r"(?:it'?s|this\s+is)\s+(?:fairly\s+|pretty\s+|quite\s+|very\s+)?common(?:\s+with\s+this\s+(?:setup|model|device|plan))?|"
    r"we\s+see\s+this\s+(?:a\s+lot|often|quite\s+often)|i'?ve\s+seen\s+this\s+(?:a\s+few\s+times|quite\s+a\s+bit|a\s+lot|before)(?:\s+lately)?|"
    r"annoying,?\s+i\s+know|that'?s\s+the\s+whole\s+story|that\s+explains\s+it|that'?s\s+why\s+it\s+(?:started|happens|happened)|"
    r"luckily,?\s+it'?s\s+(?:easy|simple|quick)\s+to\s+fix|it'?s\s+not\s+something\s+you\s+did|(?:i\s+)?hope\s+(?:this|that)\s+helps|"
    r"thanks?\s+(?:you\s+)?for\s+the\s+detailed\s+(?:post|message|description|report|info(?:rmation)?)|(?:thank\s+you,?\s+|thanks,?\s+)?that\s+helps|"
    r"totally\s+understand|take\s+your\s+time|no\s+(?:rush|hurry)|ha,?\s+i\s+hear\s+that\s+a\s+lot|"
    r"(?:this|it)\s+(?:looks|seems|sounds)\s+like\s+a\s+known\s+(?:issue|problem|bug)|(?:talk|speak)\s+(?:to\s+you\s+)?soon|"
    r"\S+\s+here\s+from\s+[\w\s&]{1,30}|let'?s\s+(?:investigate|look\s+into|figure\s+out|sort\s+out|work\s+on)\s+(?:this|it)(?:\s+out)?(?:\s+together)?|see\s+you|cheers|(?:best|kind|warm|warmest)\s+regards|regards|sincerely|"
    r"(?:i\s+)?understand(?:ed)?|i\s+see|got\s+it|sure(?:\s+thing)?|surely|certainly|of\s+course|absolutely|perfect|great|awesome|excellent|"
    r"(?:a|my|our|it'?s\s+a|it\s+was\s+a)\s+pleasure(?:\s+to\s+(?:help|assist|serve)(?:\s+you)?)?|sorry\s+to\s+see\s+(?:this|that)|"
    r"(?:apologies|sorry)(?:\s+again)?\s+for\s+(?:the|any|this|all\s+the)\s+(?:difficulty|difficulties|trouble|inconvenience|hassle|frustration|confusion|delay|wait)(?:\s+(?:you'?ve|you\s+have)\s+(?:had|experienced|faced))?|"
    r"i\s+(?:understand|appreciate|know|can\s+see)\s+(?:this|that|how|it)\s+(?:is|must\s+be|can\s+be|has\s+been)\s+(?:\w+\s+)?(?:frustrating|annoying|inconvenient|difficult|stressful|upsetting)|"
    r"(?:thanks?|thank\s+you)\s+(?:to\s+you\s+)?(?:too|as\s+well)(?:\s+for\s+\w+)?|appreciate\s+your\s+\w+|(?:and\s+)?get\s+back\s+to\s+you|"
    r"wonderful|fantastic|alright|okay|ok|yes|yeah|yep|no|nope|nothing\s+else|that'?s\s+(?:all|it)(?:\s+for\s+(?:now|today))?|"
    r"(?:please\s+)?(?:do\s+)?keep\s+(?:us|me)\s+posted|(?:for|if\s+you\s+have|with)\s+any\s+(?:further|other|more)\s+(?:concerns?|questions?|issues?|queries|query)|"
    r"(?:please\s+)?(?:do\s+)?let\s+(?:us|me)\s+know\s+if\s+(?:you\s+(?:have|need)|there'?s)\s+anything(?:\s+else)?|"
    r"(?:feel\s+free\s+to\s+)?(?:reach\s+out|contact\s+us)(?:\s+(?:again|anytime|any\s+time))?(?:\s+if\s+you\s+(?:have|need)\s+(?:any(?:thing)?|further)\s*\w*)?|"
    r"(?:i|we)\s+(?:can|could|will|'ll)\s+(?:definitely\s+|certainly\s+|surely\s+)?help\s+(?:you\s+)?(?:out\s+)?(?:with\s+(?:that|this))?|"
    r"(?:i'?m|i\s+am)\s+(?:happy|glad)\s+to\s+(?:help|assist)|(?:i'?ll|i\s+will)\s+be\s+able\s+to\s+(?:help|do\s+that)(?:\s+for\s+you)?|please|kindly|team|support|guys|folks|everyone|all)\b",
    re.I,
)
_HOLD = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|alright|sure|great|perfect|thanks?(?:\s+you)?)\W+)*(?:(?:please\s+)?allow\s+me|(?:one|a)\s+(?:moment|minute|second|sec)|"
    r"(?:please\s+)?(?:hold|wait)\s+(?:on|a\s+(?:moment|minute|second|sec)|while)|let\s+me\s+(?:check|look|see|verify|pull|have\s+a\s+look|take\s+a\s+look|confirm)|"
    r"give\s+me\s+a\s+(?:moment|minute|second|sec)|bear\s+with\s+(?:me|us)|(?:i'?ll|i\s+will|i\s+am\s+going\s+to)\s+(?:check|look\s+into|verify)\s+(?:that|this|it|the\s+details))",
    re.I,
)

_SHIFT = re.compile(
    r"\b(?:one\s+more\s+(?:thing|question|issue|problem)|another\s+(?:question|issue|problem|thing|matter|topic)|"
    r"(?:a\s+)?(?:separate|different|unrelated|second|other)\s+(?:issue|question|problem|topic|matter|note|thing)|unrelated|"
    r"while\s+i\s+(?:have|got)\s+you|on\s+(?:a|an)\s+(?:different|other|unrelated|separate|another)\s+note|"
    r"(?:i\s+)?(?:also|too)\s+(?:have|had|need|got)\s+(?:a|another)\s+(?:question|issue|problem)|(?:a|my)\s+new\s+(?:question|issue|problem))",
    re.I,
)
_WEAK_SHIFT = re.compile(r"\b(?:by\s+the\s+way|btw|something\s+else)\b|^\W*(?:also\s*,|oh,?\s+and\b|and\s+also\b)", re.I)
_FAILED = re.compile(
    r"\b(?:no\s+(?:change|luck|difference|improvement|dice)|(?:didn'?t|did\s+not|doesn'?t|does\s+not)\s+(?:work|help|change|fix|do\s+anything)|"
    r"same\s+(?:thing|problem|issue|result|error|here)|still\s+(?:the\s+same|not|broken|happening|doesn'?t|won'?t|no\b|nothing)|"
    r"nothing\s+(?:changed|happened|worked|helped))\b",
    re.I,
)
_VALUE_CORRECTION = re.compile(
    r"(?:\b[\w.-]*\d[\w.-]*|\b[A-Z][\w.-]+(?:\s+[\w.-]+){0,3}),?\s+not\s+(?:the\s+|a\s+|an\s+)?(?:[\w.-]*\d|[A-Z])|"
    r"\b(?:checked\s+again|double[- ]checked|i\s+mis(?:read|typed|spoke)|let\s+me\s+correct)\b"
)
_IDENTITY = re.compile(
    r"\b(?:(?:account|order|booking|confirmation|reference|ticket|case|member(?:ship)?|customer|tracking|phone|mobile)\s*(?:number|no\.?|id|#)|"
    r"(?:e-?mail|phone|name|username|user\s+name)(?:\s+address)?\s+is|my\s+name)\b",
    re.I,
)
_ABANDON = re.compile(r"\b(?:never\s*mind|forget\s+(?:it|that|about\s+(?:it|that))|scratch\s+that|doesn'?t\s+matter)\b", re.I)
_NARROW = re.compile(
    r"\b(?:to\s+be\s+(?:more\s+)?(?:precise|specific|exact|clear)|more\s+specifically|specifically,|in\s+particular|"
    r"to\s+clarify|just\s+to\s+clarify|i\s+should\s+(?:have\s+)?(?:mention(?:ed)?|add(?:ed)?|say|said|clarif(?:y|ied))|"
    r"forgot\s+to\s+(?:mention|say|add)|i\s+(?:meant|mean)\b|what\s+i\s+mean(?:t)?\s+(?:is|was)|"
    r"(?:it|this)\s+only\s+(?:happens|occurs|fails|breaks|crashes)|only\s+(?:happens|occurs)\s+(?:when|if|on|with|after)|"
    r"sorry,?\s+(?:it'?s|it\s+is|i\s+meant|that\s+should\s+be|not)|correction\b|let\s+me\s+rephrase|in\s+other\s+words)",
    re.I,
)
_CLARIFY = re.compile(
    r"\b(?:how\s+(?:do|can|would|should|will|could|exactly)\s+(?:i|we|you)\b|how\s+to\b|how\s+exactly|"
    r"where\s+(?:is|are|do|does|can|could|would|should|exactly|in|on|would\s+i)\b|where'?s\b|"
    r"what\s+do\s+you\s+mean|what\s+does\s+(?:that|this|it|\S+(?:\s+\S+)?)\s+mean|what\s+(?:is|are)\s+(?:that|this|those|these|it)\b|"
    r"what'?s\s+(?:that|this)\b|(?:can|could|would)\s+you\s+(?:please\s+)?(?:explain|elaborate|clarify|show|walk\s+me|guide\s+me|"
    r"tell\s+me\s+(?:how|where|what|more)|be\s+more\s+specific|send\s+(?:me\s+)?(?:the\s+)?(?:link|steps|instructions))|"
    r"which\s+(?:one|ones|option|setting|settings|button|menu|tab|file|folder|version|page|link|screen|app|cable|port)\b|"
    r"what\s+(?:next|now|then|else\s+should)\b|then\s+what|(?:and\s+)?(?:what|how)\s+(?:about|after)\s+that|^\W*and\s+then\b|"
    r"what\s+if\b|what\s+about\b|does\s+(?:that|this|it)\s+(?:mean|apply|work|include|cover|also|still)|"
    r"(?:is|are|would|will)\s+(?:that|this|it|those|these)\s+(?:the\s+same|also|still|apply|true|for|included|covered|enough)|"
    r"(?:does|do|will|would)\s+(?:the\s+)?same\s+\w+\s+appl|same\s+(?:policy|rule|thing|for)\b|"
    r"i\s+(?:don'?t|do\s+not|can'?t|cannot|couldn'?t)\s+(?:see|find|understand|locate|follow)\b|(?:not|n't)\s+sure\s+(?:how|where|what|which)\b|"
    r"step\s+by\s+step|(?:give|send|provide|tell)\s+me\s+more\s+details?|more\s+details?\s+(?:on|about)|in\s+more\s+detail|^\W*(?:how|where|why|meaning|huh|sorry)\W*\?\s*$)",
    re.I,
)
_FOLLOW_UP = re.compile(r"^\W*(?:and|so|but|also|what\s+about|how\s+about|and\s+what\s+about|what\s+if|same\s+for|and\s+for|or)\b", re.I)
_ANAPHOR = re.compile(r"\b(?:that|this|it|those|these|there|them|one|same|the\s+(?:step|steps|link|setting|option|menu|page|button|file|instructions?))\b", re.I)
_CONTINUE = re.compile(
    r"^\W*(?:next|after\s+that|afterwards|then|once\s+(?:that'?s|that\s+is|it'?s|you'?ve|you\s+have)\s+(?:done|finished|complete[d]?|\w+ed)|"
    r"now\s+(?:that|you|go|open|click|tap|select|try)|(?:the\s+)?next\s+step|step\s+\d+|also|additionally|in\s+addition|"
    r"another\s+thing(?:\s+to\s+try)?|(?:if|in\s+case)\s+(?:that|it|this)\s+(?:doesn'?t|does\s+not|didn'?t|did\s+not|still|won'?t)|"
    r"if\s+(?:the\s+)?(?:problem|issue|error)\s+(?:persists|continues|remains)|to\s+do\s+(?:that|this|so)|you\s+can\s+(?:find|do)\s+(?:that|this|it))\b",
    re.I,
)
_QUESTION_START = re.compile(
    r"^\W*(?:how|what|where|when|why|which|who|whom|whose|can|could|would|will|is|are|am|do|does|did|should|shall|may|might|"
    r"have|has|was|were|any\s+(?:idea|way|chance|update))\b(?!\s*,)",
    re.I,
)
_MID_QUESTION = re.compile(
    r"(?:^|[,;]\s*|\b(?:so|then|but|and)\s+)(?:does|do|is|are|can|will|would|should|could|did)\s+(?:it|this|that|they|i|you|these|those|the\s+\w+)\s+\w+",
    re.I,
)
_ATTEMPT = re.compile(
    r"\b(?:(?:i|we)(?:'ve|\s+have|\s+had)?\s+(?:already\s+|also\s+|even\s+)?(?:tried|restarted|rebooted|reinstalled|re-?installed|reset|cleared|"
    r"updated|checked|uninstalled|disabled|enabled|unplugged|replugged|replaced|changed|deleted|removed|power[- ]cycled|"
    r"turned\s+(?:it\s+)?(?:off|on)|re-?paired|un-?paired|logged\s+(?:out|in)|signed\s+(?:out|in)|followed|did\s+(?:that|this|all))|"
    r"(?:what|things?)\s+(?:i|we)(?:'ve|\s+have)?\s+(?:already\s+)?tried|already\s+(?:tried|did|done)|(?:tried|did|done)\s+(?:that|this|it)\s+already|"
    r"^\W*(?:already\s+)?tried\s+(?:restart|reboot|reinstall|re-install|reset|clear|updat|uninstall|disabl|enabl|unplug|replac|chang|delet|remov|turn|power|logg|sign|switch|using|another|a\s+different|everything|all))",
    re.I,
)
_AGENT_ASKS = re.compile(
    r"\b(?:(?:could|can|would|will)\s+you\s+(?:please\s+)?(?:tell|give|provide|share|confirm|send|let\s+(?:me|us)\s+know|verify|check|"
    r"describe|clarify|specify|explain)|may\s+i\s+(?:please\s+)?(?:have|know|ask|get|see|confirm)|"
    r"(?:please\s+)?(?:provide|share|send|confirm|tell\s+(?:me|us)|let\s+(?:me|us)\s+know)\b|what(?:'s|\s+is|\s+are|\s+was)\s+(?:your|the)|"
    r"do\s+you\s+(?:have|know|remember|see|get)|are\s+you\s+(?:using|on|seeing|getting|able)|is\s+(?:this|it|that)\s+(?:on|with|for|happening|the)|"
    r"which\s+\w+|when\s+did|how\s+long|since\s+when|did\s+(?:this|it|you)|have\s+you\s+(?:received|noticed|seen|checked))",
    re.I,
)
_SUGGEST_Q = re.compile(
    r"^\W*(?:(?:have|did)\s+you\s+(?:already\s+)?tried|(?:can|could|would)\s+you\s+(?:please\s+)?(?:try|attempt)|"
    r"(?:why\s+not|how\s+about|what\s+about)\s+(?:try(?:ing)?\s+)?|have\s+you\s+(?:considered|thought\s+about))\s+",
    re.I,
)
_TAG_QUESTION = re.compile(
    r",\s*(?:is\s+that\s+(?:ok(?:ay)?|alright|fine|correct|right|good)(?:\s+(?:for|with)\s+you)?|would\s+(?:that|you)\s+\w+(?:\s+\w+){0,4}|does\s+that\s+\w+(?:\s+\w+){0,3}|"
    r"right|ok(?:ay)?|correct|should\s+i\s+\w+(?:\s+\w+){0,6}|shall\s+i\s+\w+(?:\s+\w+){0,6}|can\s+i\s+\w+(?:\s+\w+){0,6})\s*\?\s*$",
    re.I,
)
_AGENT_OUTCOME = re.compile(
    r"\b(?:(?:has|have)\s+been\s+(?:successfully\s+)?\w+ed|(?:i|we)(?:'ve|\s+have)\s+(?:now\s+|just\s+|already\s+|successfully\s+)?\w+ed|"
    r"(?:i|we)\s+(?:can|will|'ll|could|am\s+going\s+to|are\s+going\s+to)\s+(?:\w+\s+)?(?:escalate|refund|replace|send|ship|issue|credit|"
    r"cancel|reset|waive|rebook|extend|transfer|forward|report|raise|open)|"
    r"let\s+me\s+(?:pass|escalate|forward|transfer|refer|raise|report)|(?:pass|passing|escalat\w*|forward\w*|transfer\w*|refer\w*)\s+(?:this|it|you|your\s+\w+)\s+(?:on\s+)?to|"
    r"(?:unfortunately|i'?m\s+afraid)|(?:we|i)\s+(?:can'?t|cannot|are\s+unable|won'?t\s+be\s+able|are\s+not\s+able)|not\s+eligible|"
    r"(?:is|are)\s+(?:not\s+)?(?:eligible|covered|included|available|valid))\b",
    re.I,
)



def _is_filler(text: str) -> bool:
    """Nothing but greetings, thanks, sign-offs, acknowledgements and hold messages (a leftover word,
    such as a name after "Sorry to hear that", does not count)."""
    plain = _PLACEHOLDER.sub(" ", text)
    if _HOLD.search(plain) and not _DIGIT.search(plain) and len(plain.split()) <= 18 and instruction_score(plain) < 0.5:
        return True
    pieces, matched, pos = [], 0, 0
    for m in _FILLER_PARTS.finditer(plain):
        pieces.append(plain[pos : m.start()])
        matched += len(m.group().split())
        pos = m.end()
    if not matched:
        return not _content(plain)
    pieces.append(plain[pos:])
    rest = " ".join(pieces)
    rest = re.sub(r"\b(?:you|me|us|for|with|that|this|it|so|very|much|a|the|and|to|today|now|again|there|here|too|as|well|i|we|in|on|here|sir|madam|mr|mrs|ms)\b", " ", rest, flags=re.I)
    left = len(_content(rest))
    return left == 0 or (left == 1 and matched >= 3 and not _DIGIT.search(rest))



def _details(text: str) -> set[str]:
    """Tokens that carry a specific detail: with a digit, or capitalized not at the start."""
    out = set()
    for i, w in enumerate(_WORD.findall(_PLACEHOLDER.sub(" ", text))):
        if _DIGIT.search(w) or (i > 0 and w[0].isupper() and w.lower() not in _STOP and len(w) > 1):
            out.add(w.lower())
    return out
