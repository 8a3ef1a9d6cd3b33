"""A value named in a later query turn however the asker writes it (`query.value_match`), against a lexicon
of the table's cells. Every name is invented."""

from __future__ import annotations

from sarag_assets.query.table_match import entity_shares
from sarag_assets.query.understanding import ValueLexicon, understand
from sarag_assets.query.value_match import edit_distance

NAMES = ["Moss and Heron Outfitters", "Prints by Lindqvist", "Tandoori Tiles", "Benissimo Records & Tapes",
         "Ostvik Harbour Supply", "Greywillow Farmshop", "Pellucid Bay Optics", "Saltmarrow Ceramics",
         "Harbour View Hardware", "Vintry Yard Furniture"]


def lexicon() -> ValueLexicon:
    # each name held by two of forty conversations; the rest hold no product
    cells = [(f"d{i}{k}", "product", name) for i, name in enumerate(NAMES) for k in "ab"]
    return ValueLexicon(cells, 40, columns=["product"])


def found(turns: list[str]) -> dict[str, float]:
    query = [{"speaker": "user" if i % 2 == 0 else "agent", "text": t} for i, t in enumerate(turns)]
    return {e.value: e.confidence for e in understand(query, lexicon()).entities}


EARLIER = ["hi, i'm furnishing a new flat this month", "Sure, which shop did you order from?"]


def test_a_lower_case_run_together_or_one_letter_off_mention_in_a_later_turn_is_matched():
    assert found(EARLIER + ["is moss and heron outfitters open on sunday?"]) == {"Moss and Heron Outfitters": 1.0}
    assert found(EARLIER + ["does mossandheron outfitters have parking"]) == {"Moss and Heron Outfitters": 1.0}
    # one letter off, a letter dropped, a word split: found, less sure than the exact spelling
    off = found(EARLIER + ["what time does tandori tiles open"])
    assert set(off) == {"Tandoori Tiles"} and 0.8 < off["Tandoori Tiles"] < 1.0
    off = found(EARLIER + ["can i get a refund at prints by lindqvst"])
    assert set(off) == {"Prints by Lindqvist"} and off["Prints by Lindqvist"] < 1.0
    off = found(EARLIER + ["grey willow farmshp, do they deliver"])
    assert set(off) == {"Greywillow Farmshop"}


def test_the_distinctive_part_of_a_name_alone_is_matched_when_one_value_has_it():
    part = found(EARLIER + ["i ordered two records at benissimo"])
    assert set(part) == {"Benissimo Records & Tapes"} and part["Benissimo Records & Tapes"] < 1.0
    # "harbour" is a word of two names: it picks neither
    assert found(EARLIER + ["something near the harbour please"]) == {}


def test_a_word_the_corpus_mostly_writes_without_the_name_does_not_stand_for_it():
    # "plan" is a word of one value only ("Family plan"), but most conversations using it do not name that
    # plan; "benissimo" comes with its name
    cells = [(f"d{i}{k}", "product", name) for i, name in enumerate(NAMES + ["Family plan"]) for k in "ab"]
    mentions = {"family plan": 2, "plan": 30, "benissimo records tapes": 2, "benissimo": 3}
    lex = ValueLexicon(cells, 44, columns=["product"], mentions=mentions)
    query = [{"speaker": "user", "text": t} for t in EARLIER + ["which plan gives me benissimo vouchers?"]]
    assert {e.value for e in understand(query, lex).entities} == {"Benissimo Records & Tapes"}
    without = ValueLexicon(cells, 44, columns=["product"])  # no counts (a home before value_mentions)
    assert {e.value for e in understand(query, without).entities} == {"Benissimo Records & Tapes", "Family plan"}

def test_short_or_common_words_are_not_read_loosely():
    assert found(EARLIER + ["is the bay view nice", "yes", "ok and the optic?"]) == {}
    assert edit_distance("tiles", "tiler", 1) == 1 and edit_distance("tiles", "times", 1) == 1
    assert edit_distance("tiles", "tapes", 1) == 2


def test_a_loose_reading_counts_in_the_ranking_as_far_as_it_is_sure():
    lex = lexicon()
    row_ids = sorted({f"d{i}{k}" for i in range(len(NAMES)) for k in "ab"})
    position = {d: i for i, d in enumerate(row_ids)}
    import numpy as np

    def positions_of(entity):
        return np.sort(np.array([position[d] for d in lex.rows(entity.column, " ".join(entity.value.lower().split()))]))

    exact = understand([{"speaker": "user", "text": "tandoori tiles and greywillow farmshop"}], lex).entities
    loose = understand([{"speaker": "user", "text": "tandoori tiles and greywilow farmshop"}], lex).entities
    shares_exact = entity_shares(exact, positions_of, lex.idf, row_ids).as_dict()
    shares_loose = entity_shares(loose, positions_of, lex.idf, row_ids).as_dict()
    assert shares_exact["d5a"] == shares_exact["d2a"]  # both named exactly: equal shares
    assert shares_loose["d5a"] < shares_loose["d2a"]  # the misspelled one counts less
