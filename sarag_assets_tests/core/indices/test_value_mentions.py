import duckdb

from sarag_assets.core import warehouse
from sarag_assets.core.indices.value_mentions import count_mentions, table_cells
from sarag_assets.query.understanding import ValueLexicon

CELLS = [("a", "product", "Docker 24.0"), ("c", "product", "Docker 24.0"), ("b", "username", "works"),
         ("d", "username", "nobody says this")]
TEXTS = [("a", "Docker 24.0 fails to start"), ("b", "it works now"), ("c", "still on docker 24.0, sorry"),
         ("d", "it works"), ("e", "Works fine here, works."), ("f", "nothing to see")]


def test_every_lexicon_value_is_counted_once_per_conversation_mentioning_it():
    mentions = count_mentions(CELLS, 10, TEXTS)
    # and each word of a value of several words, on its own (whether it comes without the rest)
    assert dict(mentions.iter_rows()) == {"docker 24.0": 2, "works": 3, "nobody says this": 0,
                                          "docker": 2, "nobody": 0, "says": 0, "this": 0}


def test_trust_is_rows_holding_a_value_over_conversations_mentioning_it():
    mentions = dict(count_mentions(CELLS, 10, TEXTS).iter_rows())
    lexicon = ValueLexicon(CELLS, 10)
    assert lexicon.trust("product", "docker 24.0", mentions) == 1.0
    assert lexicon.trust("username", "works", mentions) == 1 / 3
    assert lexicon.trust("username", "nobody says this", mentions) == 1.0  # mentioned nowhere: nothing to weigh
    assert lexicon.trust("username", "docker 24.0", mentions) == 0.0  # no row holds it in that column


def test_cells_are_read_from_the_wide_table_as_text(tmp_path):
    path = tmp_path / "w.duckdb"
    with warehouse.connect(path) as con:
        con.execute("CREATE VIEW conversation_table AS SELECT * FROM (VALUES ('a', 'X1', 3), ('b', NULL, 4)) "
                    "t(dialogue_id, product, count)")
        assert table_cells(con, ["product", "count", "gone"]) == (
            [("a", "product", "X1"), ("a", "count", "3"), ("b", "count", "4")], 2)
    with duckdb.connect(str(tmp_path / "empty.duckdb")) as con:
        assert table_cells(con, ["product"]) == ([], 0)


def test_a_short_cell_of_a_free_text_column_is_no_value():
    """Most problems are sentences: the one written in four words is a short sentence, not a name to
    filter rows by. The same four words in a column of names are a value."""
    problems = [(f"p{i}", "problem", f"the router {i} drops the connection every evening since the update")
                for i in range(3)]
    cells = problems + [("s", "problem", "check my seat assignment"), ("s", "product", "Seat Planner Pro"),
                        ("t", "product", "check my seat assignment")]
    lexicon = ValueLexicon(cells, 20)
    assert lexicon.rows("problem", "check my seat assignment") == frozenset()
    assert lexicon.rows("product", "check my seat assignment") == {"t"}
    assert lexicon.rows("product", "seat planner pro") == {"s"}
    # half short or more: the column holds values
    halves = [("a", "problem", "check my seat assignment"), ("b", "problem", problems[0][2])]
    assert ValueLexicon(halves, 20).rows("problem", "check my seat assignment") == {"a"}
