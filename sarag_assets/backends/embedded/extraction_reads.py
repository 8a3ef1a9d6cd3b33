"""What extracting a row's columns reads of a conversation's analysis, so that a refresh after a metadata
change does only that work: the gist (problem, resolution, resolved) and the sentences' vectors serve
only the columns that read them. No Dagster."""

from __future__ import annotations

from typing import Callable, Iterable

from sarag_assets.backends.embedded.findings import Analysis
from sarag_assets.backends.embedded.gist import GIST_SIGNALS, gist_texts
from sarag_assets.backends.embedded.text import _strip_lead
from sarag_assets.backends.normalize import canonical_name, canonical_type

# a column -> the detector signal it reads (None: none, it is matched by free text)
SignalOf = Callable[[object], "str | None"]


def reads_gist(cols, signal_of: SignalOf, finding_names: Iterable[str] = ()) -> bool:
    """Whether extracting `cols` may read a finding the gist replaces: a column whose signal is one of
    the gist's, or whose name or an alias names such a finding (the gist's are named as their signals;
    `finding_names`: those the detectors gave them before the gist)."""
    names = set(GIST_SIGNALS) | {canonical_name(n) for n in finding_names}
    for col in cols:
        aliases = {canonical_name(a) for a in (getattr(col, "aliases", None) or [])}
        if ({canonical_name(col.name)} | aliases) & names or signal_of(col) in GIST_SIGNALS:
            return True
    return False


def reads_free_text(cols, described: set[str], signal_of: SignalOf) -> bool:
    """Whether extracting `cols` may compare sentences with a column's meaning: a string column that no
    detector signal names (`described`: the columns compared by their meaning) and none matches."""
    return any((canonical_type(col.type) or "string") == "string" and col.name in described
               and signal_of(col) is None for col in cols)


def extraction_texts(an: Analysis, *, gist: bool = True, sentences: bool = True) -> list[str]:
    """What extracting a row may encode: the gist's texts and each sentence as free text reads it."""
    return ((gist_texts(an) if gist else [])
            + ([_strip_lead(s.text).strip() for s in an.sentences] if sentences else []))
