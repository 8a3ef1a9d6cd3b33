"""The short values of the governed table, and which of them a text mentions. No Dagster imports.

Shared by the value_mentions asset (how many conversations mention each value) and the query module
(values named in a question become filters and boosts on the table).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import defaultdict
from typing import Any, Iterable, Mapping

from sarag_assets.core.writing import CJK_RANGES, has_cjk, is_cjk, run_words, without_qualifiers

MAX_VALUE_TOKENS = 6  # longer values are free text (problem descriptions), not entities
MAX_VALUE_CHARS = 60
MAX_VALUE_SHARE = 0.2  # a value held by more rows than this says little about which row is meant

# an apostrophe splits, as the typographic one always did: "Northbay's" and "l'ordinateur" hold the words
# "northbay" and "ordinateur"
_TOKEN = re.compile(r"[^\W_]+(?:[.\-/:][^\W_]+)*", re.UNICODE)
_DOTTED_NUMBER = re.compile(r"\d\.\d")
MIN_COMPACT_CHARS = 3


def tokens(text: str) -> list[str]:
    """Lowercased word pieces, punctuation inside them kept (1.2.3, E-1234), any script. Chinese and
    Japanese are written without spaces between words, so each Han or kana character is a token of its own
    (as search engines index them), and so is a code written against them ("我的P40坏了")."""
    out = []
    for tok in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
        if not has_cjk(tok):
            out.append(tok)
            continue
        for piece in re.split(f"([{CJK_RANGES}])", tok):
            out.extend([piece] if is_cjk(piece) else _TOKEN.findall(piece))
    return out


def word_count(toks: list[str]) -> int:
    """Words in tokens, a run of Han or kana characters counting one word per two characters (the
    usual length of a word there): how long a value is, whatever its script."""
    words, run = 0, 0
    for tok in toks + [""]:
        if is_cjk(tok):
            run += 1
            continue
        words += run_words(run) + (1 if tok else 0)
        run = 0
    return words


def compact(toks: Iterable[str]) -> str:
    """The tokens' letters and digits run together: "HC-31", "hc 31" and "HC31" are all "hc31"; "Redwing
    Boat House" and "red wing boathouse" are both "redwingboathouse"."""
    return "".join(ch for tok in toks for ch in tok if ch.isalnum())


class TableValues:
    """Short cell values of the governed table, looked up by the word n-grams of a text.

    Built from (dialogue_id, column, value) cells of the current rows. A value is kept when it is short
    (at most `MAX_VALUE_TOKENS` words and `MAX_VALUE_CHARS` characters) in a column whose cells are
    mostly that short (not a column of free text, such as the problem), is not a bare common word of
    the queries' language (at least one token with a digit, or at least 3 characters), and is held by at
    most `MAX_VALUE_SHARE` of the rows (values like "yes" or a product everyone has do not pick rows).
    """

    def __init__(self, cells: Iterable[tuple[str, str, Any]], n_rows: int, *,
                 columns: Iterable[str] | None = None):
        wanted = set(columns) if columns is not None else None
        rows_by_value: dict[tuple[str, str], set[str]] = defaultdict(set)
        stored: dict[tuple[str, str], str] = {}
        short: dict[str, list[bool]] = defaultdict(list)
        fitting = []
        for dialogue_id, column, value in cells:
            if value is None or (wanted is not None and column not in wanted) or isinstance(value, bool):
                continue
            text = str(value).strip()
            if not text:
                continue
            toks = tokens(text)
            # a name's branch in brackets qualifies it: it does not make the name a sentence
            fits = len(text) <= MAX_VALUE_CHARS and 0 < word_count(tokens(without_qualifiers(text))) <= MAX_VALUE_TOKENS
            short[column].append(fits)
            if fits:
                fitting.append((dialogue_id, column, text, toks))
        # a column whose cells are mostly longer holds text: its short cells are short sentences
        # ("check my seat assignment" as a problem), which the text channels read already
        text_columns = {c for c, fits in short.items() if 2 * sum(fits) < len(fits)}
        for dialogue_id, column, text, toks in fitting:
            if column in text_columns:
                continue
            if len(toks) == 1 and not any(ch.isdigit() for ch in toks[0]) and len(toks[0]) < 3:
                continue
            if all(ch.isdigit() for ch in "".join(toks)) and len("".join(toks)) < 3:
                continue  # "2", "15": numbers that short match anything
            key = (column, " ".join(toks))
            rows_by_value[key].add(dialogue_id)
            stored.setdefault(key, text)
        self.n_rows = max(n_rows, 1)
        limit = max(2, int(MAX_VALUE_SHARE * self.n_rows))
        self._rows: dict[tuple[str, str], frozenset[str]] = {
            key: frozenset(ids) for key, ids in rows_by_value.items() if len(ids) <= limit
        }
        self._stored = {key: stored[key] for key in self._rows}
        self._by_ngram: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for key in sorted(self._rows):
            self._by_ngram[key[1]].append(key)
        self.max_tokens = max((len(k.split()) for k in self._by_ngram), default=0)
        # The same values written with other spacing or punctuation: a model code with or without its
        # hyphen or space, a name joined or split ("boathouse", "red wing"; speech recognisers and people
        # do both). Only values with a letter and at least MIN_COMPACT_CHARS of them: digits run together
        # are ambiguous ("5 0", "50"), and dotted numbers are releases, matched as written.
        self._by_compact: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for key in sorted(self._rows):
            packed = compact(key[1].split())
            if (len(packed) >= MIN_COMPACT_CHARS and any(ch.isalpha() for ch in packed)
                    and not _DOTTED_NUMBER.search(key[1])):
                self._by_compact[packed].append(key)
        self._compact_prefixes = {packed[:n] for packed in self._by_compact for n in range(1, len(packed) + 1)}

    def __len__(self) -> int:
        return len(self._rows)

    def rows(self, column: str, normalized_value: str) -> frozenset[str]:
        return self._rows.get((column, normalized_value), frozenset())

    def idf(self, df: int) -> float:
        return math.log(1.0 + self.n_rows / max(df, 1))

    def values(self) -> set[str]:
        """Every normalized value the lexicon holds (whatever its column)."""
        return set(self._by_ngram)

    def matches(self, toks: list[str], *, longest: bool) -> list[tuple[int, int, str, list[tuple[str, str]]]]:
        """(start, size, surface, keys) of the values found in the tokens: their words in order, or else
        their letters and digits with other spacing (`compact`). With ``longest``, values of more words
        first and a value inside a longer found one is not found again; otherwise every n-gram."""
        candidates = []  # (words of the value, start, spelled only, size, keys)
        for size in range(min(self.max_tokens, len(toks)), 0, -1):
            for start in range(0, len(toks) - size + 1):
                keys = self._by_ngram.get(" ".join(toks[start:start + size]))
                if keys:
                    candidates.append((size, start, False, size, keys))
        if self._by_compact:
            # windows whose letters and digits spell a value, grown token by token while they spell the
            # start of one
            for start in range(len(toks)):
                packed = ""
                for end in range(start, len(toks)):
                    packed += compact([toks[end]])
                    if packed not in self._compact_prefixes:
                        break
                    keys = self._by_compact.get(packed)
                    size = end - start + 1
                    if keys and not any(c[1] == start and c[3] == size for c in candidates):
                        candidates.append((max(len(k[1].split()) for k in keys), start, True, size, keys))
        taken = [False] * len(toks)
        found = []
        for _, start, _, size, keys in sorted(candidates, key=lambda c: (-c[0], c[1], c[2])):
            if longest and any(taken[start:start + size]):
                continue
            for i in range(start, start + size):
                taken[i] = True
            found.append((start, size, " ".join(toks[start:start + size]), keys))
        return found

    def mentioned(self, text: str) -> set[str]:
        """The normalized values whose words occur in ``text`` (any n-gram, no longest-match rule)."""
        return self.mentioned_in(tokens(text))

    def mentioned_in(self, toks: list[str]) -> set[str]:
        """`mentioned`, for a text already split into ``tokens``."""
        return {key[1] for _, _, _, keys in self.matches(toks, longest=False) for key in keys}

    def trust(self, column: str, normalized_value: str, mentions: Mapping[str, int]) -> float:
        """How far the table can stand for a value: the rows holding it in ``column`` over the
        conversations whose text mentions it (at most 1; 1 when the count is unknown). "Docker 24.0"
        held by every conversation that names it: 1; the word "works", extracted once but written in
        thirty conversations: 1/30."""
        mentioning = mentions.get(normalized_value, 0)
        held = len(self.rows(column, normalized_value))
        return min(1.0, held / mentioning) if mentioning > 0 else 1.0
