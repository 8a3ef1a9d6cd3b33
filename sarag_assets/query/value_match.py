"""A query's mention of a table value, however the asker writes it. No Dagster.

The exact and respaced readings (`core.indices.table_values.TableValues.matches`: case-free, with other
spacing or punctuation, "a corn guest house" for "Acorn Guest House") come first. Words of the query
left unmatched by them are then read two more ways, each with a confidence below 1 that the ranking
carries (`table_match.entity_shares` weighs a value's idf by it):

- **a near-miss spelling**: a run of query words whose letters and digits are within an edit distance of
  a value's, one edit per `NearMiss.chars_per_edit` characters ("homelnk pro" for "Homelink Pro",
  "tandori mahal" for "Tandoori Mahal"); confidence 1 - distance / length;
- **the distinctive part of a name**: one query word that is a word of exactly one value of the lexicon
  and of no other ("benissimo" for "Benissimo Restaurant & Bar"), holding at least
  `NearMiss.min_part_share` of its letters; confidence that share. A word several values share ("hotel",
  "park") picks none.

Nothing here knows a language: words are the lexicon's tokens, lengths are in characters.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

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

    def __init__(self, values: Iterable[tuple[str, str]], limits: NearMiss = LIMITS):
        self.limits = limits
        self._by_packed: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self._by_trigram: dict[str, set[str]] = defaultdict(set)
        self._words: dict[str, set[str]] = defaultdict(set)  # word -> normalized values holding it
        self._keys: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for key in values:
            value = key[1]
            self._keys[value].append(key)
            packed = compact(value.split())
            if len(packed) >= limits.min_chars and any(ch.isalpha() for ch in packed):
                if packed not in self._by_packed:
                    for gram in _trigrams(packed):
                        self._by_trigram[gram].add(packed)
                self._by_packed[packed].append(key)
            for word in set(value.split()):
                self._words[word].add(value)
        self.max_words = max((len(v.split()) for v in self._keys), default=0)

    def matches(self, toks: Sequence[str], taken: Sequence[bool]) -> list[LooseMatch]:
        """Loose readings of the query words not ``taken`` by an exact one: spellings first (longest
        window first), then distinctive parts of what is still free."""
        taken = list(taken)
        found: list[LooseMatch] = []
        for size in range(min(self.max_words + self.limits.extra_words, len(toks)), 0, -1):
            for start in range(0, len(toks) - size + 1):
                if any(taken[start:start + size]):
                    continue
                hit = self._spelled(toks[start:start + size])
                if hit is None:
                    continue
                keys, confidence = hit
                for i in range(start, start + size):
                    taken[i] = True
                found.append(LooseMatch(start, size, " ".join(toks[start:start + size]), keys, confidence))
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
            taken[i] = True
            found.append(LooseMatch(i, 1, tok, list(self._keys[value]), round(min(0.9, share), 3)))
        return found

    def _spelled(self, words: Sequence[str]) -> tuple[list[tuple[str, str]], float] | None:
        packed = compact(words)
        if len(packed) < self.limits.min_chars or not any(ch.isalpha() for ch in packed):
            return None
        limit = len(packed) // self.limits.chars_per_edit
        if limit < 1:
            return None
        # an edit changes at most three of a word's character trigrams: a value within `limit` edits shares
        # all but 3 x limit of them (the q-gram lemma), so only those are compared letter by letter
        grams = _trigrams(packed)
        shared: dict[str, int] = defaultdict(int)
        for gram in grams:
            for candidate in self._by_trigram.get(gram, ()):
                shared[candidate] += 1
        best: tuple[int, str] | None = None
        for candidate, n in shared.items():
            if n < len(grams) - 3 * limit or abs(len(candidate) - len(packed)) > limit:
                continue
            if candidate[0] != packed[0] and candidate[-1] != packed[-1]:
                continue  # a misspelling keeps one end of the word as written
            d = edit_distance(packed, candidate, limit)
            if d <= limit and (best is None or (d, candidate) < best):
                best = (d, candidate)
        if best is None or best[0] == 0:
            return None  # equal letters: the exact reading's (respaced), not a near miss
        d, candidate = best
        return list(self._by_packed[candidate]), round(1.0 - d / max(len(candidate), 1), 3)


def _trigrams(packed: str) -> set[str]:
    padded = f"^{packed}$"
    return {padded[i:i + 3] for i in range(len(padded) - 2)}
