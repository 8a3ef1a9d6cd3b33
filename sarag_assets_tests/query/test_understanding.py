"""Query reading without a home: the turns read together and the value lexicon."""

from __future__ import annotations

from sarag_assets.query.understanding import (
    ValueLexicon,
    read_query,
    readable_text,
)


def test_a_decomposed_query_is_read_composed_as_the_corpus_was_landed():
    # "Việt" typed or pasted decomposed ("Vie" + two combining marks + "t"); BM25 over the landed (composed)
    # text would find no such word
    q = read_query("Vie\u0323\u0302t Nam router drops the wifi")
    assert q.turns[0].text == "Việt Nam router drops the wifi"


def test_the_embedded_text_is_the_turns_in_order_and_a_long_one_loses_its_earliest_turns():
    turns = [{"speaker": "user", "text": "my router drops wifi every hour"},
             {"speaker": "agent", "text": "   "},
             {"speaker": "agent", "text": "Which firmware is it on?"},
             {"speaker": "user", "text": "can I get it fixed?"}]
    assert read_query(turns).embedding_text() == \
        "my router drops wifi every hour\nWhich firmware is it on?\ncan I get it fixed?"
    # the budget keeps the latest turns whole and drops from the start
    assert read_query(turns).embedding_text(max_chars=50) == "Which firmware is it on?\ncan I get it fixed?"
    long_latest = read_query([{"speaker": "user", "text": "earlier"}, {"speaker": "user", "text": "x" * 80}])
    assert long_latest.embedding_text(max_chars=50) == "x" * 50


def test_a_value_written_with_other_spacing_or_punctuation_is_found():
    cells = [("d1", "model", "HC-31"), ("d2", "product", "Redwing Boat House"), ("d3", "product", "Redwing"),
             ("d4", "product", "WM8"), ("d5", "version", "4.7.6"), ("d6", "account", "50")] + [
        (f"x{i}", "product", f"Filler {i}") for i in range(20)]
    lexicon = ValueLexicon(cells, 26)
    q = read_query([{"speaker": "user", "text": "the hc31 at the red wing boathouse keeps dropping"},
                    {"speaker": "user", "text": "and my wm 8 too, on 476 or 47.6, account 5 0"}])
    found = {(e.column, e.value, e.surface) for e in lexicon.find(q)}
    # the longer name wins over the short one inside it, as when written as stored
    assert found == {("model", "HC-31", "hc31"), ("product", "Redwing Boat House", "red wing boathouse"),
                     ("product", "WM8", "wm 8")}
    # digits alone and dotted releases are not read through other spacing: "476" is no 4.7.6
    assert lexicon.mentioned("redwing boathouse, hc 31") == {"redwing boat house", "redwing", "hc-31"}
    assert lexicon.mentioned("a red wingspan at 4 7 6") == set()  # a value's letters must end with a word


def test_a_value_with_a_possessive_or_an_elision_is_found():
    cells = [("d1", "bank", "Northbay"), ("d2", "product", "ordinateur portable"), ("d3", "store", "Macy's")] + [
        (f"x{i}", "product", f"Filler {i}") for i in range(20)]
    lexicon = ValueLexicon(cells, 23)
    assert lexicon.mentioned("since then Northbay's login texts have stopped coming") == {"northbay"}
    assert lexicon.mentioned("l'ordinateur portable ne démarre plus") == {"ordinateur portable"}
    assert lexicon.mentioned("my Macy's card and Northbay’s app") == {"macy s", "northbay"}  # normalized: words


def test_values_are_found_in_chinese_and_japanese_written_without_spaces():
    cells = [("d1", "product", "华为手机"), ("d2", "model", "P40"), ("d3", "product", "ルーター"),
             ("d4", "problem", "手机充不进电，充电器换了也不行，怎么办"), ("d5", "product", "小米扫地机器人")] + [
        (f"x{i}", "product", f"Filler {i}") for i in range(20)]
    lexicon = ValueLexicon(cells, 25)
    q = read_query([{"speaker": "user", "text": "我的华为手机P40充不进电"},
                    {"speaker": "user", "text": "ルーターの電源が入らない, 小米扫地机器人也不回充"}])
    found = {(e.column, e.value) for e in lexicon.find(q)}
    # seven characters are about four words: a name, not a sentence
    assert found == {("product", "华为手机"), ("model", "P40"), ("product", "ルーター"), ("product", "小米扫地机器人")}
    # a sentence of Han characters is long text, not a value: the problem column holds no values
    assert not lexicon.mentioned("手机充不进电，充电器换了也不行，怎么办")


def test_a_name_with_a_long_branch_in_brackets_is_a_value_and_is_found():
    # sixteen characters with the branch, too long for a name without it: the branch qualifies the name
    cells = [("d1", "product", "7天连锁酒店(北京天坛东门地铁站店)"), ("d2", "product", "砂锅居（西四店）")] + [
        (f"x{i}", "product", f"Filler {i}") for i in range(20)]
    lexicon = ValueLexicon(cells, 22)
    q = read_query([{"speaker": "user", "text": "就选7天连锁酒店(北京天坛东门地铁站店)吧，它的电话是多少？"}])
    assert {e.value for e in lexicon.find(q)} == {"7天连锁酒店(北京天坛东门地铁站店)"}


def test_a_query_text_too_long_for_the_model_loses_its_earliest_lines_not_its_latest():
    def fits(text):  # as a model reading 20 characters would say
        return len(text) <= 20

    assert readable_text("first turn\nsecond\nthe latest", fits) == "second\nthe latest"
    assert readable_text("a single line longer than twenty", fits) == "a single line longer than twenty"  # cut by the model
    assert readable_text("first turn\nsecond\nthe latest", None) == "first turn\nsecond\nthe latest"

