"""A tiny template language for generated text, and the noise applied to it.

- ``[a|b|c]`` picks one alternative uniformly; an empty alternative (``[a|]``) makes the group optional.
  Groups nest.
- ``{name}`` is replaced by a value from the slots. A value is either a string (kept verbatim) or a list
  of pieces produced by another expansion (spliced in).

Expansion returns *pieces*: plain ``str`` for template text and :class:`Slot` for substituted values.
Noise (typos, lower-casing) only touches template text, so product names, versions, error codes,
order numbers and the like are never garbled and a "mentioned" check on the final text stays exact.
Templates are compiled once and cached.
"""

from __future__ import annotations

import re
from random import Random
from typing import Any, Mapping

from .rates import TypoRates


class Slot(str):
    """A substituted value; exempt from typos and case changes."""

    __slots__ = ()


class _Ref:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


Pieces = list  # list[str | Slot]

_CACHE: dict[str, tuple] = {}


def _parse(src: str, i: int, depth: int) -> tuple[tuple, int, str | None]:
    items: list[Any] = []
    buf: list[str] = []

    def flush() -> None:
        if buf:
            items.append("".join(buf))
            buf.clear()

    n = len(src)
    while i < n:
        c = src[i]
        if c == "[":
            flush()
            alts: list[tuple] = []
            i += 1
            while True:
                seq, i, term = _parse(src, i, depth + 1)
                alts.append(seq)
                if term == "]":
                    break
                if term is None:
                    raise ValueError(f"unclosed '[' in template: {src!r}")
            items.append(alts)
        elif depth > 0 and (c == "|" or c == "]"):
            flush()
            return tuple(items), i + 1, c
        elif c == "{":
            j = src.index("}", i)
            flush()
            items.append(_Ref(src[i + 1 : j]))
            i = j + 1
        else:
            buf.append(c)
            i += 1
    if depth > 0:
        raise ValueError(f"unclosed '[' in template: {src!r}")
    flush()
    return tuple(items), i, None


def compile_template(src: str) -> tuple:
    node = _CACHE.get(src)
    if node is None:
        node, _, _ = _parse(src, 0, 0)
        _CACHE[src] = node
    return node


def _emit(seq: tuple, rng: Random, slots: Mapping[str, Any], out: list) -> None:
    for it in seq:
        t = type(it)
        if t is str:
            out.append(it)
        elif t is list:
            _emit(it[int(rng.random() * len(it))], rng, slots, out)
        else:
            v = slots[it.name]
            if type(v) is list:
                out.extend(v)
            elif type(v) is Slot:
                out.append(v)
            else:
                out.append(Slot(v))


def expand(template: str, rng: Random, slots: Mapping[str, Any] | None = None) -> Pieces:
    """Expand one template into pieces."""
    out: list = []
    _emit(compile_template(template), rng, slots or {}, out)
    return out


def pick(templates: tuple | list, rng: Random, slots: Mapping[str, Any] | None = None) -> Pieces:
    """Expand one of several templates, chosen uniformly."""
    return expand(templates[int(rng.random() * len(templates))], rng, slots)


def plain(template: str, rng: Random, slots: Mapping[str, Any] | None = None) -> str:
    """Expand to a finished string (no noise), with whitespace tidied."""
    return tidy("".join(expand(template, rng, slots)))


_SPACES = re.compile(r"[ \t]{2,}")
_SPACE_PUNCT = re.compile(r" +([,.;:!?)])")
_PUNCT_RUN = re.compile(r"([!?])\.|(?<!\.)(\.)\.(?!\.)")
_LEAD = re.compile(r"(^|\n)[ \t]+")


def tidy(text: str) -> str:
    """Collapse the double spaces and stray spaces before punctuation left by optional groups."""
    if "  " in text or "\t" in text:
        text = _SPACES.sub(" ", text)
    if " " in text:
        text = _SPACE_PUNCT.sub(r"\1", text)
    if ".." in text or "!." in text or "?." in text:
        text = _PUNCT_RUN.sub(lambda m: m.group(1) or m.group(2), text)
    if "\n " in text:
        text = _LEAD.sub(r"\1", text)
    return text.strip()


def capitalize(pieces: Pieces) -> Pieces:
    """Upper-case the first letter of a sentence when it is template text."""
    for k, p in enumerate(pieces):
        if not p.strip():
            continue
        if type(p) is Slot:
            return pieces
        stripped = p.lstrip()
        lead = len(p) - len(stripped)
        pieces[k] = p[:lead] + stripped[:1].upper() + stripped[1:]
        return pieces
    return pieces


def decapitalize(pieces: Pieces) -> Pieces:
    """Lower-case the first letter when a sentence continues after an intro ("So, it's ..."); names,
    acronyms and "I" are left alone."""
    for k, p in enumerate(pieces):
        if not p.strip():
            continue
        if type(p) is Slot:
            return pieces
        stripped = p.lstrip()
        word = stripped.split(" ", 1)[0]
        if word in ("I", "I'm", "I've", "I'll", "I'd") or (len(word) > 1 and word[1].isupper()):
            return pieces
        lead = len(p) - len(stripped)
        pieces[k] = p[:lead] + stripped[:1].lower() + stripped[1:]
        return pieces
    return pieces


def join_pieces(pieces: Pieces) -> str:
    return tidy("".join(pieces))


# ---------------------------------------------------------------- noise

# Misspellings people actually make; used before falling back to random edits.
COMMON_MISSPELLINGS = {
    "the": "teh",
    "because": "becuase",
    "receive": "recieve",
    "received": "recieved",
    "definitely": "definately",
    "connection": "conection",
    "separate": "seperate",
    "until": "untill",
    "which": "wich",
    "really": "realy",
    "already": "allready",
    "tried": "tryed",
    "again": "agian",
    "working": "wroking",
    "should": "shoudl",
    "thanks": "thnaks",
    "please": "pls",
    "message": "mesage",
    "problem": "porblem",
    "address": "adress",
    "account": "acount",
    "internet": "intenret",
    "password": "pasword",
    "restart": "restrat",
    "update": "udpate",
    "error": "eror",
    "install": "instal",
}

_WORD = re.compile(r"[A-Za-z]+")


def _garble(word: str, rng: Random, typos: TypoRates) -> str:
    low = word.lower()
    if low in COMMON_MISSPELLINGS and rng.random() < typos.common_misspelling:
        w = COMMON_MISSPELLINGS[low]
        return w.capitalize() if word[0].isupper() else w
    k = 1 + int(rng.random() * (len(word) - 2))  # never the first letter
    r = rng.random()
    if r < typos.swap and k < len(word) - 1:  # swap two neighbours
        return word[:k] + word[k + 1] + word[k] + word[k + 2 :]
    if r < typos.swap_or_drop:  # drop one
        return word[:k] + word[k + 1 :]
    return word[:k] + word[k] + word[k:]  # double one


def add_typos(pieces: Pieces, rng: Random, rate: float, typos: TypoRates) -> int:
    """Garble words (4+ letters) of the template text in place, each with probability ``rate`` and in the
    ways ``typos`` weighs; returns how many were changed."""
    changed = 0
    for k, p in enumerate(pieces):
        if type(p) is Slot or len(p) < 4:
            continue

        def sub(m: re.Match) -> str:
            nonlocal changed
            w = m.group(0)
            if len(w) >= 4 and rng.random() < rate:
                changed += 1
                return _garble(w, rng, typos)
            return w

        pieces[k] = _WORD.sub(sub, p)
    return changed


def lowercase(pieces: Pieces) -> Pieces:
    """Chat style: everything typed in lower case (substituted values are left alone)."""
    return [p if type(p) is Slot else p.lower() for p in pieces]
