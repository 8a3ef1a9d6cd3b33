"""Sentence-level cue scores: is this an instruction, a confirmation, a problem statement, a cause."""

from __future__ import annotations

import re

from sarag_assets.backends.embedded.text import (
    _content_words,
    _strip_lead,
    is_placeholder_only,
)

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
