"""A query's mention of a table value, however the asker writes it. No Dagster.

The exact and respaced readings (`core.indices.table_values.TableValues.matches`: case-free, with other
spacing or punctuation, "sun flower cafe" for "Sunflower Cafe") come first. Words of the query
left unmatched by them are then read two more ways, each with a confidence below 1 that the ranking
carries (`table_match.entity_shares` weighs a value's idf by it):

- **a near-miss spelling**: a run of query words whose letters and digits are within an edit distance of
  a value's, one edit per `NearMiss.chars_per_edit` characters ("homelnk pro" for "Homelink Pro",
  "tandori tiles" for "Tandoori Tiles", "grey willow farmshp" for "Greywillow Farmshop"); confidence 1 -
  distance / length. The runs compared are those around a query word within one edit of a word of the
  value (a symmetric-delete index), so the cost does not grow with the lexicon;
- **the distinctive part of a name**: one query word that is a word of exactly one value of the lexicon
  and of no other ("benissimo" for "Benissimo Restaurant & Bar"), holding at least
  `NearMiss.min_part_share` of its letters, and which the corpus writes with the rest of the name at
  least `NearMiss.min_part_cohesion` of the time (the value_mentions counts); confidence that share. A
  word several values share ("harbour", "park") picks none, nor does a word of the language the corpus
  uses mostly without the name ("plan" of "Family plan").

Nothing here knows a language: words are the lexicon's tokens, lengths are in characters.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

from sarag_assets.core.indices.table_values import compact


@dataclass(frozen=True)
class NearMiss:
    """A priori limits of the loose readings (reasons beside each)."""

    # one edit per five characters: a typo, a dropped or doubled letter in a word of five; two in a name of
    # ten. Fewer characters than `min_chars` are too short to tell a typo from another word ("cat", "car")
    chars_per_edit: int = 5
    min_chars: int = 5
    # a lone word stands for a longer name only when it is long enough to be a name's own word, not a
    # particle ("de", "the", "inn")
    min_part_chars: int = 4
    # a part stands for the name when it holds at least 40% of the name's letters: the name's main word
    # ("Benissimo" of "Benissimo Restaurant & Bar"), not one word of a phrase stored as a value
    min_part_share: float = 0.4
    # a part stands for the name when the corpus's conversations using the word use the whole name at
    # least half the time (more often with it than without; `unit_names`' cohesion is the same measure)
    min_part_cohesion: float = 0.5
    # a query word seeds a spelling through a lexicon word within one edit of it that at most this many values
    # hold: a word of more values ("shop", "the") says little about which one, and costs a comparison each
    max_seeded: int = 20
    # query words read together for a spelling: as many as a value has, one more or fewer (a split or a
    # run-together word)
    extra_words: int = 1


LIMITS = NearMiss()


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance of ``a`` and ``b``, or ``limit + 1`` once it is certainly above ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
        if min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


@dataclass(frozen=True)
class LooseMatch:
    start: int
    size: int
    surface: str
    keys: list[tuple[str, str]]  # (column, normalized value)
    confidence: float


class LooseIndex:
    """The lexicon's values by their letters (for spellings) and by their words (for distinctive parts).
    ``values``: (column, normalized value) keys, the value's tokens joined by spaces."""

    def __init__(self, values: Iterable[tuple[str, str]], limits: NearMiss = LIMITS,
                 mentions: Mapping[str, int] | None = None):
        """``mentions``: value or word -> conversations mentioning it (`core.indices.value_mentions`);
        none: a part is not checked against the corpus."""
        self.limits = limits
        self.mentions = mentions or {}
        self._words: dict[str, set[str]] = defaultdict(set)  # word -> normalized values holding it
        self._keys: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self._packed: dict[str, str] = {}  # value -> its letters and digits run together
        for key in values:
            self._keys[key[1]].append(key)
            self._packed[key[1]] = compact(key[1].split())
            for word in set(key[1].split()):
                self._words[word].add(key[1])
        # every word of `min_part_chars` or more, and each form of it with one letter left out: two words
        # within one edit share one of these forms (the symmetric-delete index), so a query word finds the
        # lexicon's words one letter off in a few lookups, however large the lexicon
        self._near: dict[str, set[str]] = defaultdict(set)
        for word in self._words:
            if len(word) >= limits.min_part_chars:
                for form in _one_out(word):
                    self._near[form].add(word)
        self.max_words = max((len(v.split()) for v in self._keys), default=0)

    def matches(self, toks: Sequence[str], taken: Sequence[bool]) -> list[LooseMatch]:
        """Loose readings of the query words not ``taken`` by an exact one: spellings first (longest
        window first), then distinctive parts of what is still free."""
        taken = list(taken)
        found: list[LooseMatch] = []
        # the values holding a word within one edit of a query word seed the comparison: only the windows
        # around that word are spelled out against only those values
        seeds: dict[int, set[str]] = {}
        for i, tok in enumerate(toks):
            if taken[i] or len(tok) < self.limits.min_part_chars:
                continue
            values = set()
            for word in {w for form in _one_out(tok) for w in self._near.get(form, ())}:
                if len(self._words[word]) <= self.limits.max_seeded:
                    values |= self._words[word]
            if values:
                seeds[i] = values
        windows = []  # (size, start, distance, value)
        for i, values in seeds.items():
            for size in range(min(self.max_words + self.limits.extra_words, len(toks)), 0, -1):
                for start in range(max(0, i - size + 1), min(i, len(toks) - size) + 1):
                    if any(taken[start:start + size]):
                        continue
                    hit = self._spelled(toks[start:start + size], values)
                    if hit is not None:
                        windows.append((size, start) + hit)
        for size, start, d, value in sorted(windows, key=lambda w: (-w[0], w[2], w[1], w[3])):
            if any(taken[start:start + size]):
                continue
            for i in range(start, start + size):
                taken[i] = True
            found.append(LooseMatch(start, size, " ".join(toks[start:start + size]), list(self._keys[value]),
                                    round(1.0 - d / max(len(self._packed[value]), 1), 3)))
        for i, tok in enumerate(toks):
            if taken[i] or len(tok) < self.limits.min_part_chars or not any(ch.isalpha() for ch in tok):
                continue
            holders = self._words.get(tok, set())
            if len(holders) != 1:
                continue
            value = next(iter(holders))
            if value == tok:
                continue  # the whole value: the exact reading's, not a part
            share = len(tok) / max(len(compact(value.split())), 1)
            if share < self.limits.min_part_share:
                continue
            alone = self.mentions.get(tok, 0)
            if alone and self.mentions.get(value, 0) < self.limits.min_part_cohesion * alone:
                continue
            taken[i] = True
            found.append(LooseMatch(i, 1, tok, list(self._keys[value]), round(min(0.9, share), 3)))
        return found

    def _spelled(self, words: Sequence[str], values: Iterable[str]) -> tuple[int, str] | None:
        """(edit distance, value) of the closest of ``values`` whose letters and digits are within the
        limit of the words', one end of them as written; None when none is, or one is equal (the exact
        reading's, respaced)."""
        packed = compact(words)
        limit = len(packed) // self.limits.chars_per_edit
        if len(packed) < self.limits.min_chars or limit < 1 or not any(ch.isalpha() for ch in packed):
            return None
        best: tuple[int, str] | None = None
        for value in values:
            candidate = self._packed[value]
            if abs(len(candidate) - len(packed)) > limit:
                continue
            if candidate[0] != packed[0] and candidate[-1] != packed[-1]:
                continue  # a misspelling keeps one end of the word as written
            d = edit_distance(packed, candidate, limit)
            if d <= limit and (best is None or (d, value) < best):
                best = (d, value)
        if best is None or best[0] == 0:
            return None
        return best


@lru_cache(maxsize=65536)
def _one_out(word: str) -> frozenset[str]:
    """The word and every form of it with one letter left out."""
    return frozenset({word} | {word[:i] + word[i + 1:] for i in range(len(word))})
