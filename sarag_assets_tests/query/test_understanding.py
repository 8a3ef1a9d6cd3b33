"""Query reading without a home: turn weights, the lexicon, 'the other one' with aliases."""

from __future__ import annotations

from sarag_assets.query.understanding import ValueLexicon, read_query, resolve_contrast

CELLS = [("d1", "product", "Linkstar DSL500"), ("d1", "model", "LS-DSL500"),
         ("d2", "product", "Linkstar DSL500"), ("d2", "model", "LS-DSL500"),
         ("d3", "product", "Velox Hotspot"), ("d4", "product", "Velox Hotspot"),
         ("d5", "product", "Other Thing"), ("d6", "product", "Fourth Thing"), ("d7", "product", "Fifth Thing"),
         ("d8", "product", "Sixth Thing"), ("d9", "product", "Seventh Thing"), ("d10", "product", "Eighth Thing")]


def test_latest_turn_weighs_most_and_helper_turns_least():
    q = read_query([{"speaker": "user", "text": "a"}, {"speaker": "agent", "text": "b"},
                    {"speaker": "user", "text": "c"}, {"speaker": "user", "text": "d"}])
    weights = [t.weight for t in q.turns]
    assert weights[-1] == max(weights) and weights[1] == min(weights)
    assert weights[0] < weights[2]  # further back, less


def test_names_the_table_ties_together_count_as_one_thing():
    lexicon = ValueLexicon(CELLS, 10)
    q = read_query([
        {"speaker": "user", "text": "We use the Linkstar DSL500 and the Velox Hotspot. The LS-DSL500 is slow on firmware 5.3.2."},
        {"speaker": "agent", "text": "I see."},
        {"speaker": "user", "text": "What about the other one?"},
    ])
    q.entities = lexicon.find(q)
    resolved = resolve_contrast(q, lambda e: lexicon.rows(e.column, " ".join(e.value.lower().split())))
    assert {e.value for e in resolved.entities} == {"Velox Hotspot"}
    assert "Velox Hotspot" in resolved.turns[0].text and "LS-DSL500" not in resolved.turns[0].text
    # without the table's help the two names of the first product tie with the second: nothing is resolved
    q2 = read_query([
        {"speaker": "user", "text": "We use the Linkstar DSL500 and the Velox Hotspot. The LS-DSL500 is slow."},
        {"speaker": "user", "text": "What about the other one?"}])
    q2.entities = lexicon.find(q2)
    assert resolve_contrast(q2).notes == []


def test_no_contrast_cue_changes_nothing():
    lexicon = ValueLexicon(CELLS, 10)
    q = read_query([{"speaker": "user", "text": "Linkstar DSL500 and Velox Hotspot here, the Linkstar DSL500 is slow"},
                    {"speaker": "user", "text": "how was it fixed?"}])
    q.entities = lexicon.find(q)
    before = [(e.value, e.weight) for e in q.entities]
    assert [(e.value, e.weight) for e in resolve_contrast(q).entities] == before
