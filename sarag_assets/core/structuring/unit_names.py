"""The names a corpus uses as units: what a conversation is about, found by corpus statistics. No Dagster.

A conversation about a thing names it, usually more than once and from both sides, and writes it the same
way each time. Words of the language and of the domain ("the", "shop", "card") are in many conversations;
one thing's name is in few; an attribute (a city, a payment method) is named in many conversations about
different things. The candidate spans of a conversation are its word n-grams, scored by counts over the
batch of conversations it came with (`UnitStatistics`):

- **commonness** of a word: the share of the batch's conversations using it. A span neither starts nor
  ends with a common word (`UnitNameRules.common_share`); inside a span common words stay ("Ada and the
  Engine", "Prints by Lindqvist", "House of the Seven Looms");
- **a unit**: a span said twice or more in the conversation that is not always inside one longer span
  said as often (maximality: "Benissimo" said three times, once as "Benissimo Restaurant & Bar"); or, said
  once, a collocation the batch repeats whole (its **cohesion**: the conversations holding the whole span
  over those holding its rarest word, at least `min_cohesion`);
- **specificity** 1 - log(df)/log(N), squared: a span one conversation uses counts fully, one that every
  conversation uses not at all (an attribute named in many conversations about different things);
- **evidence** in the conversation: repetition (log2), both sides naming it, capitals (a little: the
  method reads lower-case chat and scripts without capitals the same way), a backend proposing it.

The value is written as the conversation writes it, the asker's wording first, and its exact span is kept
(turn, start, end). Nothing here knows a domain or a language beyond what a word is (`_WORD`), and which
scripts are written without spaces between words (`_UNSPACED`: Chinese, Japanese, Thai ...): there each
character is a unit, and the same statistics read character n-grams.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable, Sequence

from sarag_assets.core.writing import GLUED_BRACKET

# a word: letters or digits, with inner apostrophes, dots, hyphens and ampersands ("Chang's", "D.C", "A&W")
_WORD = re.compile(r"[^\W_]+(?:['’.&\-][^\W_]+)*|&", re.UNICODE)
# what ends a phrase between two words: a name is not read across a comma, a full stop, a bracket (the
# CJK and full-width ones too: "，", "。", "、", "《")
_BREAK = re.compile(r"[,;:!?()\[\]{}\"“”|/\u3001-\u3004\u3008-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40"
                    r"\uff5b-\uff65]|\.\s|\s-\s|\n")
# scripts written without spaces between words, by Unicode block: Thai, Lao, Myanmar, Khmer (and its
# symbols), the CJK iteration and number marks, Hiragana, Katakana, CJK ideographs (with extensions and
# compatibility forms), Yi, half-width Katakana. A run of them is no word: each character is a unit
_UNSPACED = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff\u3005-\u3007\u3040-\u30ff\u31f0-\u31ff"
             "\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f")
_UNSPACED_CHAR = re.compile(f"[{_UNSPACED}]")
_PIECE = re.compile(f"([{_UNSPACED}])|[^{_UNSPACED}]+")


@dataclass(frozen=True)
class UnitNameRules:
    """The parameters of unit-name scoring, set before any measurement (reasons beside each)."""

    # a span of more than six words is a clause, not a name (the query lexicon's MAX_VALUE_TOKENS too)
    max_words: int = 6
    # in a script written without spaces a unit is a character: a word of Chinese is one to four
    # characters, under two on average in segmented text, so six words are about twelve characters
    max_unspaced: int = 12
    # a word one conversation in ten uses is a word of the language or the domain ("the", "shop"), not one
    # thing's name (on the SGD slice 0.25 / 0.1 / 0.05 gave 84 / 85 / 83 exact cells of 300: insensitive)
    common_share: float = 0.1
    # specificity counts squared, as idf-weighting does twice in tf-idf cosine: a span twice as widespread
    # is much less likely the one thing a conversation is about
    specificity_power: float = 2.0
    # below this many conversations the batch cannot tell a word of the language from a name: at the common
    # share, a common word must be in 20 of 200; in the out-of-domain sets' batches of 66-72 conversations
    # "its", "he" or "Wednesday" were rarer than that and came out as names. No verdict: the backend's value
    min_conversations: int = 200
    # a span said once is a unit when the batch repeats it whole: its rarest word comes with it at least
    # half the time (more often with it than without)
    min_cohesion: float = 0.5
    # evidence weights, a priori: repetition is counted in log2 (a second mention adds as much as the
    # first, the fourth half as much); both sides naming it adds half a mention; capitals a quarter (they
    # add, never decide); a backend proposing the span one mention
    both_sides: float = 0.5
    capitals: float = 0.25
    proposed: float = 1.0


RULES = UnitNameRules()


@dataclass(frozen=True)
class Word:
    text: str  # lower-cased, NFKC
    start: int
    end: int
    unspaced: bool = False  # one character of a script written without spaces
    group: int = 0  # inside the phrase's n-th bracketed part glued to the word before it (0: outside)


def words_of(text: str) -> list[list[Word]]:
    """The text's words in phrases: a phrase ends where a comma, a full stop, a bracket ... stands between
    two words. In a script written without spaces each character, with its combining marks, is a word.
    A short bracketed part glued to the word before it ("7天酒店(王府井店)", "Iris(R)") qualifies that
    word: it stays in the phrase, its words marked with their group (`Word.group`)."""
    groups = _glued_groups(text)
    glued = {i for pair in groups for i in pair}
    phrases: list[list[Word]] = []
    current: list[Word] = []
    last_end = 0
    for m in _WORD.finditer(text):
        gap = text[last_end:m.start()]
        if glued:  # a glued bracket is no break
            gap = "".join(" " if i in glued else text[i] for i in range(last_end, m.start()))
        if current and _BREAK.search(gap + (" " if gap.endswith(".") else "")):
            phrases.append(current)
            current = []
        group = next((g for g, (o, c) in enumerate(groups, 1) if o < m.start() < c), 0) if groups else 0
        if _UNSPACED_CHAR.search(m.group()):
            current.extend(replace(w, group=group) for w in _unspaced_words(text, m.start(), m.end()))
        else:
            current.append(Word(unicodedata.normalize("NFKC", m.group()).lower(), m.start(), m.end(), group=group))
        last_end = current[-1].end if current else m.end()
    if current:
        phrases.append(current)
    return phrases


def _glued_groups(text: str) -> list[tuple[int, int]]:
    """(opening, closing) offsets of every bracketed part glued to the word before it, holding a letter
    and no more than a name's worth of words (`UnitNameRules`: a longer aside is a clause)."""
    out = []
    for m in GLUED_BRACKET.finditer(text):
        inner = m.group(1)
        units = [w for p in words_of(inner) for w in p] if _BREAK.search(inner) is None else None
        if not units or not any(ch.isalpha() for ch in inner):
            continue
        if sum(not w.unspaced for w in units) > RULES.max_words or len(units) > RULES.max_unspaced:
            continue
        out.append((m.start(), m.end() - 1))
    return out


def _unspaced_words(text: str, start: int, end: int) -> list[Word]:
    """The words of a run holding characters of a script written without spaces: each such character one
    (with the combining marks after the run: Thai vowels and tones), the other letters and digits as
    `_WORD` reads them ("3号线": "3", "号", "线")."""
    out: list[Word] = []
    for piece in _PIECE.finditer(text, start, end):
        if piece.group(1) is None:
            out.extend(Word(unicodedata.normalize("NFKC", w.group()).lower(), w.start(), w.end())
                       for w in _WORD.finditer(text, piece.start(), piece.end()))
            continue
        j = piece.end()
        if j == end:  # a combining mark is no word character: it ends the run
            while j < len(text) and unicodedata.category(text[j]).startswith("M"):
                j += 1
        out.append(Word(_character(text[piece.start():j]), piece.start(), j, True))
    return out


@lru_cache(maxsize=65536)
def _character(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _grams(phrase: Sequence[Word], rules: UnitNameRules) -> Iterable[tuple[int, int, tuple[str, ...]]]:
    """(start, end, words) of every span of at most `max_words` words, counting a character of a script
    written without spaces as a word up to `max_unspaced` units in all. A glued bracketed part is its word's
    qualifier: no span starts or ends inside it, and its words count for nothing."""
    for i in range(len(phrase)):
        if phrase[i].group:
            continue
        spaced = units = 0
        for j in range(i, len(phrase)):
            if not phrase[j].group:
                spaced += not phrase[j].unspaced
                units += 1
                if spaced > rules.max_words or units > rules.max_unspaced:
                    break
            elif j + 1 < len(phrase) and phrase[j + 1].group == phrase[j].group:
                continue
            yield i, j + 1, tuple(w.text for w in phrase[i:j + 1])


class UnitStatistics:
    """Word and span document frequencies over a batch of conversations (each a sequence of turn texts)."""

    def __init__(self, conversations: Iterable[Sequence[str]], rules: UnitNameRules = RULES,
                 proposals: Iterable[str | None] = ()):
        """``proposals``: per conversation, in the same order, the value a backend took for what it is
        about (None where it took none)."""
        self.rules = rules
        texts = [list(turns) for turns in conversations]
        # how many conversations a backend took to be about each value
        self.proposed: Counter[tuple[str, ...]] = Counter(k for k in map(_key, proposals) if k)
        docs = [[words_of(t) for t in turns] for turns in texts]
        self.n = len(docs)
        self.word_df: Counter[str] = Counter()
        self._inner: Counter[str] = Counter()  # a word's occurrences past a phrase's first word
        self._inner_capital: Counter[str] = Counter()  # ... of them written with a capital
        unspaced: set[str] = set()
        for doc, turns in zip(docs, texts):
            self.word_df.update({w.text for turn in doc for phrase in turn for w in phrase})
            unspaced.update(w.text for turn in doc for phrase in turn for w in phrase if w.unspaced)
            for turn, text in zip(doc, turns):
                for phrase in turn:
                    for w in phrase[1:]:
                        self._inner[w.text] += 1
                        self._inner_capital[w.text] += text[w.start].isupper()
        # a character of a script written without spaces is a piece of a word, not a word of the language:
        # a common one ("店", "京") is inside names as often as outside, so none is common; the batch tells
        # its words from its names by the spans' counts (`cohesion`)
        self._common = {w for w, df in self.word_df.items()
                        if df >= max(2.0, rules.common_share * self.n) and w not in unspaced} if self.usable else set()
        self.gram_df: Counter[tuple[str, ...]] = Counter()
        for doc in docs:
            seen = set()
            for turn in doc:
                for phrase in turn:
                    for i, j, gram in _grams(phrase, rules):
                        if _edges_ok(gram, self):
                            seen.add(gram)
            self.gram_df.update(seen)

    @property
    def usable(self) -> bool:
        return self.n >= self.rules.min_conversations

    def common(self, word: str) -> bool:
        """In at least `common_share` of the batch's conversations, and in more than one (never a character
        of a script written without spaces)."""
        return word in self._common

    def capital_marks(self, word: str) -> bool:
        """Whether a capital on this word inside a phrase marks something: the batch writes it in lower case
        there too ("good", "the", "rooms"; not "I")."""
        return self._inner_capital[word] < self._inner[word]

    def df(self, gram: tuple[str, ...]) -> int:
        return self.gram_df[gram]

    def specificity(self, gram: tuple[str, ...]) -> float:
        """1 - log(df)/log(N): 1 for a span one conversation uses, 0 for one every conversation uses."""
        if self.n <= 1:
            return 1.0
        return max(0.0, 1.0 - math.log(max(self.df(gram), 1)) / math.log(self.n))

    def cohesion(self, gram: tuple[str, ...]) -> float:
        """How tightly the span's words stick: the conversations holding the whole span over those holding
        its rarest uncommon word (1 for one word, or when that word never comes without the rest). A span
        holding characters of a script written without spaces is weighed against its two parts one unit
        shorter instead, the more widespread of them: a character alone says little about the span."""
        if len(gram) == 1:
            return 1.0
        if any(_UNSPACED_CHAR.match(w) for w in gram):
            part = max(self.df(gram[1:]), self.df(gram[:-1]))
            return min(1.0, self.df(gram) / part) if part else 0.0
        rare = min((self.word_df[w] for w in gram if not self.common(w)), default=0)
        return min(1.0, self.df(gram) / rare) if rare else 0.0


@dataclass(frozen=True)
class UnitName:
    value: str  # as the conversation writes it at ``turn[start:end]``
    turn: int
    start: int
    end: int
    score: float
    key: tuple[str, ...]


def unit_names(turns: Sequence[tuple[str, str]], stats: UnitStatistics,
               proposed: Iterable[str] = ()) -> list[UnitName]:
    """The conversation's unit names, best first. ``turns``: (role, text), roles "user" / "agent";
    ``proposed``: values another reader (a backend's detector) took for the thing, which count as evidence."""
    rules = stats.rules
    if not stats.usable:
        return []
    proposed_keys = {_key(v) for v in proposed if v}
    occurrences: dict[tuple[str, ...], list[tuple[int, int, int, str]]] = defaultdict(list)
    # per span, the longer spans around each of its occurrences, intersected over its occurrences
    around: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    capped: dict[tuple[str, ...], list] = defaultdict(list)
    for ti, (role, text) in enumerate(turns):
        for phrase in words_of(text):
            ok = {(i, j): gram for i, j, gram in _grams(phrase, rules) if _edges_ok(gram, stats)}
            ends: dict[int, list[int]] = defaultdict(list)
            for a, b in ok:
                ends[a].append(b)
            widest = max((b - a for a, b in ok), default=0)
            for (i, j), gram in ok.items():
                occurrences[gram].append((ti, phrase[i].start, _end(text, phrase[j - 1]), role))
                # the spans around this one (only those starting within the widest span's reach can)
                longer = {ok[a, b] for a in range(max(0, j - widest), i + 1) for b in ends.get(a, ()) if j <= b
                          and (a, b) != (i, j)}
                around[gram] = around[gram] & longer if gram in around else longer
                # a common word right before or after every mention of the span, written with a capital inside
                # a phrase at least once ("watch Good Boys", "at The Quillon Works"): the name's own word
                left = phrase[i - 1] if i > 0 and stats.common(phrase[i - 1].text) else None
                right = phrase[j] if j < len(phrase) and not phrase[j].group and stats.common(phrase[j].text) else None
                capped[gram].append((left, right, i > 1 and left is not None and _capital_common(text, left, stats),
                                     right is not None and _capital_common(text, right, stats)))
    for gram, sides in capped.items():
        lefts = {left.text if left else None for left, _, _, _ in sides}
        rights = {right.text if right else None for _, right, _, _ in sides}
        take_left = lefts != {None} and len(lefts) == 1 and any(mark for _, _, mark, _ in sides)
        take_right = rights != {None} and len(rights) == 1 and any(mark for _, _, _, mark in sides)
        if not (take_left or take_right):
            continue
        full = ((next(iter(lefts)),) if take_left else ()) + gram + ((next(iter(rights)),) if take_right else ())
        occurrences[full] = [(t, left.start if take_left else s, right.end if take_right else e, r)
                             for (t, s, e, r), (left, right, _, _) in zip(occurrences[gram], sides)]
        around[full] = set()
        around[gram] = {full}
    out = []
    for key, occ in occurrences.items():
        tf = len({(t, s) for t, s, _, _ in occ})
        if key in proposed_keys:
            pass  # what the backend read is always weighed
        elif tf >= 2:
            # said twice or more: a unit unless every mention is inside one longer span said as often, or
            # its words come apart in the batch (a sentence said twice, "I've found 10 hotels", is no name)
            if any(len({(t, s) for t, s, _, _ in occurrences[g]}) >= tf for g in around[key]):
                continue
            if len(key) > 1 and stats.cohesion(_core(key, stats)) < rules.min_cohesion:
                continue
        elif not (len(key) > 1 and stats.df(key) >= 2 and stats.cohesion(key) >= rules.min_cohesion
                  and not any(stats.df(g) >= 2 and stats.cohesion(g) >= rules.min_cohesion for g in around[key])):
            continue  # said once: a unit only as a collocation the batch repeats whole, not inside a longer one
        roles = {r for _, _, _, r in occ}
        evidence = math.log2(1 + tf)
        evidence += rules.both_sides * (len(roles) > 1)
        evidence += rules.capitals * _capitalized(turns, occ)
        evidence += rules.proposed * (key in proposed_keys)
        score = evidence * stats.specificity(_core(key, stats)) ** rules.specificity_power
        first = min(occ, key=lambda o: (o[3] != "user", o[0], o[1]))  # the asker's wording first
        t, s, e, _ = first
        out.append(UnitName(turns[t][1][s:e], t, s, e, round(score, 4), key))
    out.sort(key=lambda u: (-u.score, u.turn, u.start))
    return out


_CLOSING = re.compile(r"\s*[)）]")


def _end(text: str, word: Word) -> int:
    """Where a span ending with ``word`` ends: after the closing bracket when the word ends a glued part."""
    if not word.group:
        return word.end
    m = _CLOSING.match(text, word.end)
    return m.end() if m else word.end


def _core(key: tuple[str, ...], stats: UnitStatistics) -> tuple[str, ...]:
    """The span without the common words a capital joined to its edges ("the quillon rooms": "quillon"):
    what the batch's counts are about."""
    while len(key) > 1 and stats.common(key[0]):
        key = key[1:]
    while len(key) > 1 and stats.common(key[-1]):
        key = key[:-1]
    return key


def _capital_common(text: str, word: Word, stats: UnitStatistics) -> bool:
    return stats.common(word.text) and text[word.start].isupper() and stats.capital_marks(word.text)


def _edges_ok(gram: tuple[str, ...], stats: UnitStatistics) -> bool:
    """A span starts and ends with an uncommon word and holds a letter."""
    return not stats.common(gram[0]) and not stats.common(gram[-1]) and any(ch.isalpha() for w in gram for ch in w)


def _capitalized(turns: Sequence[tuple[str, str]], occ) -> float:
    """The share of occurrences written with a capital past a phrase's first letter (a capital that
    only opens a sentence says nothing)."""
    hits = 0
    for t, s, e, _ in occ:
        text = turns[t][1]
        before = text[:s].rstrip()
        at_start = not before or before[-1] in ".!?:\n\"“"
        span = text[s:e]
        hits += any(ch.isupper() for ch in (span[1:] if at_start else span))
    return hits / len(occ) if occ else 0.0


def entity_cell(turns: Sequence[tuple[str, str]], stats: UnitStatistics, proposed: str | None) -> UnitName | None:
    """What the conversation is about, as one span of it, read from the batch's unit names with the value
    ``proposed`` by a backend as evidence. The batch corrects the backend, it does not guess where the
    backend found nothing that the batch cannot vouch for:

    - a proposal cut short of a longer unit name around every mention of it is that name ("Lindqvist" of
      "Prints by Lindqvist"), when the longer name's own edge words are no more frequent than the
      proposal's and the batch uses the longer name whole in at least half as many conversations as the
      proposal (not "Merge items in Wikidata" for "Wikidata");
    - a proposal the batch names in more conversations that the backend took to be about something
      else than in conversations it took to be about the proposal (an attribute named in many
      conversations about different things: a city, a payment method) is the best name-like unit of this
      conversation that the batch names in fewer conversations. A value the backend reads as the thing
      wherever it is named (a product a help desk hears about every day) stays;
    - with no proposal, the best name-like unit the batch uses in two conversations or more.

    Name-like: several words that stick together (cohesion), or written with a capital inside a phrase in
    most of its mentions. None: no verdict (the backend's value stands)."""
    names = unit_names(turns, stats, [proposed] if proposed else [])
    if not names:
        return None
    named = [u for u in names if _name_like(u, turns, stats)]
    key = _key(proposed)
    if not key:
        return next((u for u in named if stats.df(_core(u.key, stats)) >= 2), None)
    # a proposed value cut short, every mention of it inside the longer name: "Prints" is no more frequent
    # than "Lindqvist"; a "table" glued on by a
    # phrase ("a table at Left Bank") is (a common edge word is there only as a capital joined it: "The")
    limit = max(stats.word_df[w] for w in key)
    mentions = _spans_of(key, turns)
    longer = [u for u in names if len(u.key) > len(key) and _inside(key, u.key)
              and stats.df(_core(u.key, stats)) >= stats.rules.min_cohesion * stats.df(_core(key, stats))
              and all(stats.word_df[w] <= limit or stats.common(w) for w in (u.key[0], u.key[-1]) if w not in key)
              and _around_every(mentions, _spans_of(u.key, turns))]
    if longer:
        return max(longer, key=lambda u: (u.score, len(u.key)))
    spread = stats.df(_core(key, stats)) or min(stats.word_df[w] for w in key)
    if 2 * stats.proposed[key] >= spread:
        return next((u for u in names if u.key == key), None)
    rivals = [u for u in named if u.key != key and not _inside(u.key, key)
              and stats.df(_core(u.key, stats)) < spread]
    if spread >= 2 and rivals:
        return rivals[0]
    return next((u for u in names if u.key == key), None)


def _around_every(mentions, spans) -> bool:
    """Whether each (turn, start, end) of ``mentions`` lies inside one of ``spans``."""
    return all(any(t == ut and us <= s and e <= ue for ut, us, ue in spans) for t, s, e in mentions)


def _key(value: str | None) -> tuple[str, ...]:
    return tuple(w.text for p in words_of(value or "") for w in p)


def _name_like(unit: UnitName, turns: Sequence[tuple[str, str]], stats: UnitStatistics) -> bool:
    core = _core(unit.key, stats)
    if len(core) > 1 and stats.cohesion(core) >= stats.rules.min_cohesion:
        return True
    return _capital_share(unit, turns) >= 0.5


def _spans_of(key: tuple[str, ...], turns: Sequence[tuple[str, str]]) -> list[tuple[int, int, int]]:
    """(turn, start, end) of every mention of the span's words in the conversation."""
    out = []
    for ti, (_, text) in enumerate(turns):
        for words, phrase in _phrase_words(text):
            for i in range(len(words) - len(key) + 1):
                if tuple(words[i:i + len(key)]) == key:
                    out.append((ti, phrase[i].start, _end(text, phrase[i + len(key) - 1])))
    return out


@lru_cache(maxsize=4096)
def _phrase_words(text: str) -> tuple[tuple[list[str], list[Word]], ...]:
    """The text's phrases with their words' texts, read once (`_spans_of` is asked for many spans of one
    conversation)."""
    return tuple(([w.text for w in phrase], phrase) for phrase in words_of(text))


def _capital_share(unit: UnitName, turns: Sequence[tuple[str, str]]) -> float:
    """The share of the conversation's mentions of the unit written with a capital past a phrase's first
    letter."""
    occ = [(t, s, e, "") for t, s, e in _spans_of(unit.key, turns)]
    return _capitalized(turns, occ) if occ else 0.0


def _inside(shorter: tuple[str, ...], longer: tuple[str, ...]) -> bool:
    n = len(shorter)
    return n > 0 and any(longer[i:i + n] == shorter for i in range(len(longer) - n + 1))
