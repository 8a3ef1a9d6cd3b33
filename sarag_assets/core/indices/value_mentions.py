"""How many current conversations mention each short value of the governed table. No Dagster imports.

The query module turns values named in a question into filters and boosts on the table (`query.engine`,
``table_match``). That is only as good as the table is complete for the value: when a value is written
in thirty conversations but held by one row (an extraction that caught a common word, or one that
missed most of the conversations naming a product), rows holding it say little about which
conversations are meant. This counts, for every value of the table (`TableValues`, which the query module's lexicon extends), the
conversations whose stored (redacted) text contains it, so the query module can weigh a value by
``rows holding it / conversations mentioning it``.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

import polars as pl

from sarag_assets.core import warehouse
from sarag_assets.core.indices.table_values import TableValues, tokens

SCHEMA = {"value": pl.String, "conversations": pl.Int64}


def table_cells(con, columns: list[str]) -> tuple[list[tuple[str, str, str]], int]:
    """(dialogue_id, column, value as text) of every non-null cell of `conversation_table` in ``columns``
    (read as the query module reads them, `warehouse.wide_rows`), and the number of rows."""
    names, table = warehouse.wide_rows(con, columns)
    cells = [(r[0], n, v) for r in table for n, v in zip(names, r[1:]) if v is not None]
    return cells, len(table)


def count_mentions(cells: Iterable[tuple[str, str, object]], n_rows: int,
                   texts: Iterable[tuple[str, str]]) -> pl.DataFrame:
    """``cells``: (dialogue_id, column, value) of the current rows; ``texts``: (dialogue_id, text) of
    the current conversations -> (value, conversations) for every lexicon value, and for every word of a
    value of several words (how often the word comes without the rest: whether it can stand for the
    name alone, `query.value_match`), in value order."""
    lexicon = TableValues(cells, n_rows)
    values = lexicon.values()
    words = {w for v in values if " " in v for w in v.split() if any(ch.isalpha() for ch in w)} - values
    counts: Counter[str] = Counter({value: 0 for value in values | words})
    for _, text in texts:
        toks = tokens(text or "")  # once per text: this step reads every conversation under the write lock
        counts.update(lexicon.mentioned_in(toks))
        counts.update(words.intersection(toks))
    ordered = sorted(counts.items())
    return pl.DataFrame({"value": [v for v, _ in ordered], "conversations": [n for _, n in ordered]},
                        schema=SCHEMA)
