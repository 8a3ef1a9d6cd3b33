"""A turn's text as its reader saw it: HTML rendered to lines, character references decoded. No Dagster.

Forum exports (Discourse's posts, Stack Exchange dumps) and help-desk e-mail bodies carry turns as HTML,
and tweets and many APIs escape characters as references (``&amp;``). Left in, markup joins sentences
("...</p><p>..."), enters the cells and the search texts as words (``p``, ``li``, ``amp``) and moves the
vectors. A turn is read as HTML only when it holds one element both opened and closed, or a line-break
element: a chat message that mentions ``<div>`` in passing stays as written. Elsewhere only the
character references that end in ``;`` are decoded ("AT&T" stays).
"""

from __future__ import annotations

import html
import re
import unicodedata
from html.entities import html5
from html.parser import HTMLParser

# the elements of written posts; a tag outside this list is text ("<none>", "<user id>")
_ELEMENTS = ("a abbr b bdi blockquote br caption cite code dd del details div dl dt em figcaption figure "
             "font h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q s samp small span strike strong "
             "sub summary sup table tbody td tfoot th thead tr tt u ul").split()
_TAG = re.compile(r"<(/?)(" + "|".join(_ELEMENTS) + r")\b[^<>]*>", re.IGNORECASE)
_LINE_BREAK = re.compile(r"<(br|hr)\s*/?>|<p\b[^<>]*>", re.IGNORECASE)
_REFERENCE = re.compile(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_BLOCKS = frozenset("blockquote caption dd details div dl dt figcaption figure h1 h2 h3 h4 h5 h6 ol p pre "
                    "summary table tbody tfoot thead tr ul".split())
_HIDDEN = frozenset(("script", "style", "head", "title"))


def is_html(text: str) -> bool:
    """Whether ``text`` is HTML markup: an element of written posts opened and closed, or a line break."""
    if "<" not in text:
        return False
    if _LINE_BREAK.search(text):
        return True
    opened, closed = set(), set()
    for match in _TAG.finditer(text):
        (closed if match.group(1) else opened).add(match.group(2).lower())
    return bool(opened & closed)


def decode_references(text: str) -> str:
    """``&amp;``, ``&#39;``, ``&#x2014;`` and the like decoded; a bare ``&`` left alone."""
    if "&" not in text:
        return text
    return _REFERENCE.sub(_decoded, text)


def _decoded(match: re.Match) -> str:
    name = match.group(1)
    if name.startswith("#") or f"{name};" in html5:  # "&notareference;" is no "&not;" followed by text
        return html.unescape(match.group(0))
    return match.group(0)


class _Renderer(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0
        self.pre = 0
        self.quoted = 0  # blockquotes open: their lines are marked "> ", as a mail client quotes

    def _break(self, text: str = "\n") -> None:
        self.parts.append(text.replace("\n", "\n" + "> " * self.quoted))

    def handle_starttag(self, tag, attrs):
        if tag in _HIDDEN:
            self.hidden += 1
        elif tag in ("br", "hr"):
            self._break()
        elif tag == "li":
            self._break("\n- ")
        elif tag in ("td", "th"):
            self.parts.append(" | ")
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt:
                self.parts.append(f" {alt} ")
        elif tag == "blockquote":
            self.quoted += 1
            self._break()
        elif tag in _BLOCKS:
            self._break()
        if tag == "pre":
            self.pre += 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in _HIDDEN:
            self.hidden -= 1

    def handle_endtag(self, tag):
        if tag in _HIDDEN:
            self.hidden = max(self.hidden - 1, 0)
        elif tag == "blockquote":
            self.quoted = max(self.quoted - 1, 0)
            self._break()
        elif tag in _BLOCKS or tag == "li":
            self._break()
        if tag == "pre":
            self.pre = max(self.pre - 1, 0)

    def handle_data(self, data):
        if self.hidden:
            return
        if self.pre:
            self.parts.append(data.replace("\n", "\n" + "> " * self.quoted))
        else:  # outside <pre>, white space in HTML is one space wherever it falls
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(text: str) -> str:
    """HTML rendered as lines of text: blocks and ``<br>`` end lines (empty lines dropped), list items
    start with "- ", a blockquote's lines with "> " (as a mail client quotes), table cells are separated
    by " | ", links keep their text, images their alt text, scripts and styles go."""
    renderer = _Renderer()
    renderer.feed(text)
    renderer.close()
    lines = (re.sub(r"[ \t]{2,}", " ", line).strip().removeprefix("| ")
             for line in "".join(renderer.parts).split("\n"))
    return "\n".join(line for line in lines if line.strip("> "))


def plain_text(text: str) -> str:
    """The turn as its reader saw it (see the module docstring). Markup that shows no text (an image
    without alt text) stays as written: no turn becomes empty."""
    shown = (html_to_text(text) or text) if is_html(text) else decode_references(text)
    # composed as landed text is: a reference may write a combining mark ("e&#769;")
    return unicodedata.normalize("NFC", shown)
