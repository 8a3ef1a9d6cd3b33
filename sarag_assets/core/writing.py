"""Writing systems: what a word and a sentence are where words are not separated by spaces.

Chinese and Japanese (Han and kana) are written without spaces between words and end sentences with
their own full stops (。！？). Rules that count words by runs of word characters, or find values by word
boundaries, read a whole Chinese sentence as one word and a code written against it ("华为P40手机") as
part of that word. A question ends in its script's question mark: ? in most, ？ in Chinese and
Japanese, ؟ in Arabic and Persian, ፧ in Ethiopic (Greek's ; is left out: it is also a semicolon). A word
keeps its combining marks. No Dagster imports.
"""

from __future__ import annotations

import re

import regex

CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{CJK_RANGES}]")
# a word: a letter or digit and what follows it, its combining marks included (the vowel signs and
# viramas of Devanagari, Tamil or Thai, a decomposed accent). The standard library's \w leaves marks out,
# so "हिन्दी" was three words and "तमिल" two; a mark with no letter before it (an emoji's variation
# selector) is no word
_WORD = regex.compile(r"[^\W\p{M}]\w*")
_CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
CJK_SENTENCE_END = "。！？"
QUESTION_MARKS = ("?", "？", "؟", "፧")
# ends a sentence where a space follows: Latin's, the Arabic question mark, the Devanagari and Bengali
# danda and double danda, the Urdu full stop, the Ethiopic full stop and question mark, the Armenian full
# stop, the Khmer khan and bariyoosan, the Burmese section mark and the Tibetan shad
SPACED_SENTENCE_END = ".!?؟।॥۔።፧։។៕။།"


# a short bracketed part right after a word, no space between: the word's qualifier, as a chain's branch
# ("7天连锁酒店(北京天坛东门地铁站店)", "砂锅居（西四店）")
GLUED_BRACKET = re.compile(r"(?<=[^\W_])[(（]([^()（）\n]{1,64})[)）]")


def without_qualifiers(text: str) -> str:
    """The text without the bracketed parts glued to a word (`GLUED_BRACKET`) that hold a letter."""
    return GLUED_BRACKET.sub(lambda m: m.group() if not any(ch.isalpha() for ch in m.group(1)) else "", text)


def is_cjk(token: str) -> bool:
    """Whether ``token`` is one Han or kana character."""
    return bool(_CJK.fullmatch(token))


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


# Han and kana words are mostly two characters long.
CJK_WORD_LENGTH = 2


def run_words(characters: int, word_length: int = CJK_WORD_LENGTH) -> int:
    """Words in a run of a script written without spaces: one per ``word_length`` characters, begun
    words counting (Han and kana by default)."""
    return -(-characters // word_length)


# Thai is written without spaces between words too. Its words average about four code points, marks
# included: 4.12 over the 33 million tokens of the Thai National Corpus' word frequencies and 3.91 over the
# Thai Textbook Corpus' (the lists pythainlp 5 ships, counted 2026-11-29). Lao, Khmer and Burmese have no
# measured length here, so a run of them is still one word.
THAI_WORD_LENGTH = 4
_UNSPACED_RUN = regex.compile(f"(?P<cjk>[{CJK_RANGES}]+)|(?P<thai>[\u0e00-\u0e7f]+)")


def words(text: str) -> int:
    """Words in ``text``: runs of word characters with their combining marks, a run of Han or kana
    counting one word per `CJK_WORD_LENGTH` characters, a run of Thai one per
    `THAI_WORD_LENGTH` code points, and a code written against either as a word of its own."""
    count = 0
    for run in _WORD.findall(text):
        if not _UNSPACED_RUN.search(run):
            count += 1
            continue
        at = 0
        for m in _UNSPACED_RUN.finditer(run):
            count += 1 if m.start() > at else 0  # a code written against it ("P40" of "华为P40手机")
            count += run_words(len(m.group()), CJK_WORD_LENGTH if m.group("cjk") else THAI_WORD_LENGTH)
            at = m.end()
        count += 1 if at < len(run) else 0
    return count


def without_cjk(text: str) -> str:
    """``text`` with every Han and kana character replaced by a space: the same length, so a span found
    in it is the same span of ``text``, and a code written against Chinese ("华为P40手机") stands apart for
    detectors that find values between word boundaries."""
    return _CJK.sub(" ", text) if _CJK.search(text) else text


def cjk_bigrams(text: str) -> list[str]:
    """The overlapping character pairs of each run of Han or kana (a run of one: the character), as search
    engines index these scripts: the words a rule compares between turns, where no spaces mark them."""
    out = []
    for run in _CJK_RUN.findall(text):
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return out
