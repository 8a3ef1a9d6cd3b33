"""The entity cell as the names a batch uses as units (`core.structuring.unit_names`), through the
validated rows of the real embedded backend: whole names with "and" / "by" / "of" / "the" inside, an
attribute named everywhere not taken for the thing, lower-case chat and German. The statistics need a
batch of `UnitNameRules.min_conversations`: each corpus is completed with conversations about other
things in the same language and writing. Every name is invented."""

from __future__ import annotations

from itertools import product as _combinations

import polars as pl

from sarag_assets.core.structuring.interface import (
    ConversationInput,
    GovernedMetadata,
    MetadataColumn,
)
from sarag_assets.core.structuring.governance import MIN_OVERALL
from sarag_assets.core.structuring.tables import candidate_schema_rows, evolve_metadata, validated_row_records
from sarag_assets.core.structuring.unit_names import UnitStatistics, entity_cell, unit_names, words_of
from sarag_assets.core.warehouse import empty_frame
from sarag_assets_tests.core.structuring.chats import chat

PRODUCT = MetadataColumn(name="product", type="string", signal="product",
                         meaning="The product, device or service the conversation is about.")


def invented_words(n: int, capital: bool = True) -> list[str]:
    syllables = ["ka", "lo", "vi", "ren", "tor", "mi", "sa", "del", "quo", "bri", "zan", "fel", "mor", "pex"]
    words = ["".join(c) for c in _combinations(syllables, repeat=3)][:n]
    return [w.capitalize() if capital else w for w in words]


def other_chats(n: int, language: str = "en", capital: bool = True) -> list[ConversationInput]:
    """Conversations about other things (a gadget each), so that the batch's words have their spread."""
    if language == "de":
        lines = ["hallo, meine {w} app stürzt ab, wenn ich die einstellungen öffne.",
                 "bitte leeren sie den cache von {w} und versuchen sie es noch einmal.",
                 "danke, jetzt geht es wieder.", "das freut mich, einen schönen tag noch."]
    else:
        lines = ["Hi, my {w} app crashes when I open the settings page.",
                 "Please clear the cache of {w} and try it again.", "Thanks, that worked.", "Glad to hear it!"]
        if not capital:
            lines = [line.lower() for line in lines]
    return [chat(f"o{i}", *(line.format(w=w) for line in lines)) for i, w in enumerate(invented_words(n, capital))]


def product_cells(conversations, backend) -> dict[str, str | None]:
    metadata = GovernedMetadata(version=1, columns=[PRODUCT])
    frame = validated_row_records("b", [(c, f"h-{c.dialogue_id}") for c in conversations], metadata,
                                  empty_frame("validated_rows"), backend).frame
    return {r["dialogue_id"]: r["value"] for r in frame.iter_rows(named=True) if r["column_name"] == "product"}


BATCH = 200  # `UnitNameRules.min_conversations`


# Shops the asker ordered from; each conversation has its own, the helper answers about it by name.
SHOPS = ["Moss and Heron Outfitters", "Prints by Lindqvist", "House of the Seven Looms", "The Quillon Works",
            "Brackenfold Bikes", "Saltmarrow Ceramics", "Ostvik Harbour Supply", "Greywillow Leatherworks",
            "Tamberlane Tools", "Pellucid Bay Optics", "Corrow Mill Yarns", "Vintry Yard Furniture"]
ASKS = ["Do they ship abroad?", "Is gift wrapping included?", "Is there parking at the shop?",
        "Can I change the delivery date?", "Does the order come with a receipt?", "Is the warranty free?"]


def shop_chats(payment: str | None = None) -> list[ConversationInput]:
    chats = []
    for i, name in enumerate(SHOPS):
        paid = f" I paid the deposit with my {payment} card." if payment else ""
        chats.append(chat(f"l{i}", f"Hello, I ordered a chair at {name} last week.{paid} {ASKS[i % len(ASKS)]}",
                          f"Thanks for waiting. Yes, {name} offers that to every customer.",
                          f"Great, and is {name} far from the station?",
                          f"{name} is a ten minute walk from the station."))
    return chats


def test_a_name_with_and_by_of_or_the_inside_is_kept_whole_when_the_corpus_uses_it_whole(backend):
    cells = product_cells(shop_chats() + other_chats(BATCH), backend)
    assert cells["l0"] == "Moss and Heron Outfitters"
    assert cells["l1"] == "Prints by Lindqvist"
    assert cells["l2"] == "House of the Seven Looms"
    assert cells["l3"] == "The Quillon Works"
    assert cells["l4"] == "Brackenfold Bikes"


def test_an_attribute_named_in_many_conversations_about_different_things_is_not_the_thing(backend):
    chats = shop_chats()
    # the payment method is named in every conversation, each about another shop, with words of
    # ownership and more often than the shop, so that the backend reads these as about it
    chats = [chat(c.dialogue_id, f"My Truvel Pay card was declined when I ordered at {name}. Why was my Truvel Pay "
                  f"card refused?", f"Truvel Pay declines cards abroad until you confirm the payment for {name}.",
                  "Truvel Pay shows no message, what should I do?", "Open Truvel Pay and approve the pending payment.")
             for c, name in zip(chats, SHOPS)]
    # ... and in more conversations about other things, which the backend reads as about those
    others = other_chats(BATCH)
    for i, c in enumerate(others[:40]):
        gadget = c.turns[1].text.split(" of ")[1].split(" and ")[0]
        others[i] = chat(c.dialogue_id, f"Hi, my {gadget} app crashes when I open the settings page. I paid for "
                         f"{gadget} with Truvel Pay last week.", *(t.text for t in c.turns[1:]))
    cells = product_cells(chats + others, backend)
    assert not any(v and "truvel" in v.lower() for k, v in cells.items() if k.startswith("l")), cells
    assert cells["l7"] == "Greywillow Leatherworks"


def test_a_product_named_in_many_conversations_stays_the_thing_each_is_about(backend):
    # a help desk hears about its product every day, each time with another detail (the asker's office):
    # the backend reads every one as about the product, which the rarer detail does not replace
    offices = invented_words(40)
    chats = [chat(f"p{i}", f"Hi, my Orbit Mail stopped syncing since this morning. Our office is in {office}.",
                  f"Sorry about that. Is Orbit Mail up to date in the {office} office?",
                  "Yes, I updated Orbit Mail yesterday.", "Then sign out of Orbit Mail and sign in again.")
             for i, office in enumerate(offices)]
    cells = product_cells(chats + other_chats(BATCH), backend)
    assert all(cells[f"p{i}"] == "Orbit Mail" for i in range(len(offices))), cells


def test_a_lower_case_chat_corpus_gets_its_names(backend):
    devices = ["lumaflex hub", "quorra cam two", "brightnest plug", "tovi doorbell", "ardent mesh node",
               "kelso thermo", "pinewick lamp", "solano sensor", "harrowgate lock", "mirabel speaker"]
    # each device comes up in two conversations: the corpus uses its name as a unit
    chats = [chat(f"c{i}", f"hey my {d} keeps going offline every night", f"ok, is your {d} on the 2.4 ghz band?",
                  f"yes the {d} is on 2.4", f"then restart the {d} and pair it again from the app")
             for i, d in enumerate(devices)]
    chats += [chat(f"c{i}b", f"hi, the {d} stopped updating after the last firmware", f"sorry! unplug the {d} for ten seconds",
                   f"done, the {d} works again", "great, anything else?") for i, d in enumerate(devices)]
    cells = product_cells(chats + other_chats(BATCH, capital=False), backend)
    assert cells["c0"] == "lumaflex hub"
    assert cells["c1"] == "quorra cam two"
    assert cells["c4"] == "ardent mesh node"


def test_a_german_chat_corpus_gets_its_names(backend):
    # a messenger chat in German, written in lower case by both sides as chats are: no capital marks a
    # name, and no English word helps
    geraete = ["brühmeister duo", "kaltwerk vier", "lichtfang pro", "saugrobin mini", "wärmling plus",
               "funkenhof basis", "tonsäule zwei", "nebelmax compact", "schaltwerk eins", "mahlwerk nova"]
    chats = [chat(f"g{i}", f"hallo, mein {g} zeigt seit dem update fehler e3. was kann ich tun?",
                  f"das tut uns leid. bitte trennen sie den {g} kurz vom strom.",
                  f"hab ich gemacht, der {g} zeigt immer noch e3",
                  f"dann setzen sie den {g} bitte auf die werkseinstellungen zurück.")
             for i, g in enumerate(geraete)]
    chats += [chat(f"g{i}b", f"guten tag, mein {g} verbindet sich nicht mehr mit dem wlan.",
                   f"starten sie den {g} bitte einmal neu.", f"der {g} ist jetzt wieder online, danke!",
                   "gern geschehen.") for i, g in enumerate(geraete)]
    cells = product_cells(chats + other_chats(BATCH, language="de"), backend)
    assert cells["g0"] == "brühmeister duo"
    assert cells["g2"] == "lichtfang pro"
    assert cells["g7"] == "nebelmax compact"


def test_every_unit_name_keeps_its_exact_span():
    chats = shop_chats() + other_chats(BATCH)
    stats = UnitStatistics([t.text for t in c.turns] for c in chats)
    turns = [(t.role, t.text) for t in chats[1].turns]
    # a backend's value cut short at "by" is the whole name, with the span it is written at
    unit = entity_cell(turns, stats, "Lindqvist")
    assert unit is not None and turns[unit.turn][1][unit.start:unit.end] == unit.value == "Prints by Lindqvist"


def test_a_batch_too_small_to_count_gives_no_verdict():
    chats = shop_chats() + other_chats(BATCH)[:50]
    stats = UnitStatistics([t.text for t in c.turns] for c in chats)
    assert not stats.usable
    assert unit_names([(t.role, t.text) for t in chats[0].turns], stats) == []


def test_the_entity_cell_stores_its_span_and_a_value_no_turn_holds_as_written_is_null(backend):
    chats = shop_chats() + other_chats(BATCH)
    metadata = GovernedMetadata(version=1, columns=[PRODUCT])
    frame = validated_row_records("b", [(c, f"h-{c.dialogue_id}") for c in chats], metadata,
                                  empty_frame("validated_rows"), backend).frame
    row = next(r for r in frame.iter_rows(named=True) if r["dialogue_id"] == "l1")
    turn = chats[1].turns[row["span_turn"]].text
    assert turn[row["span_start"]:row["span_end"]] == row["value"] == "Prints by Lindqvist"
    # a value stored earlier that the text holds only re-spaced passes the text match, not the span check
    stored = frame.with_columns(raw_value=pl.when(pl.col("dialogue_id") == "l1").then(pl.lit("Prints  by Lindqvist"))
                                .otherwise(pl.col("raw_value")))
    again = validated_row_records("b", [(c, f"h-{c.dialogue_id}") for c in chats], metadata, stored, backend).frame
    row = next(r for r in again.iter_rows(named=True) if r["dialogue_id"] == "l1")
    assert row["value"] is None and row["span_turn"] is None
    assert row["semantic_reason"].startswith("no span")


def test_a_script_written_without_spaces_is_read_a_character_a_word():
    phrases = [[w.text for w in p] for p in words_of("你好，我的澜栖扫地机器人连不上3号线的Wi-Fi。")]
    assert phrases == [["你", "好"], ["我", "的", "澜", "栖", "扫", "地", "机", "器", "人", "连", "不", "上", "3",
                                      "号", "线", "的", "wi-fi"]]
    # a Thai character keeps its vowel and tone marks; Japanese kana are characters too
    assert [w.text for p in words_of("ที่นี่") for w in p] == ["ที่", "นี่"]
    assert [w.text for p in words_of("ミナトの時計") for w in p] == ["ミ", "ナ", "ト", "の", "時", "計"]
    # words between spaces are read as before
    assert [[w.text for w in p] for p in words_of("Hi, Prints by Lindqvist's A&W.")] == [
        ["hi"], ["prints", "by", "lindqvist's", "a&w"]]


# Household devices in Chinese: written without spaces or capitals, each name of an invented brand (two
# characters) and a device (two to five), longer than `max_words` characters
DEVICES = ["澜栖扫地机器人", "珀霁空气净化器", "沅笙智能门锁", "翎墨家用投影仪", "岚澈音箱", "栖珀电热水壶",
           "霁沅加湿器", "笙翎摄像头", "墨岚台灯", "澈澜路由器"]


def chinese_chats() -> list[ConversationInput]:
    """Each device in two conversations (the corpus uses its name as a unit), then conversations about
    other apps, so that the batch's characters have their spread."""
    chats = [chat(f"z{i}", f"你好，我家的{d}每天晚上都会掉线。", f"好的，请问{d}连的是2.4G网络吗？",
                  f"是的，{d}用的是2.4G。", f"那请重启{d}，再在应用里重新配对。") for i, d in enumerate(DEVICES)]
    chats += [chat(f"z{i}b", f"您好，{d}升级固件以后就不能用了。", f"抱歉，请把{d}断电十秒钟。",
                   f"好了，{d}又能用了，谢谢！", "不客气，还有别的问题吗？") for i, d in enumerate(DEVICES)]
    brands = ["".join(c) for c in _combinations("云雾星河松竹梅兰菊桂枫柳溪岩峰", repeat=2)][:BATCH]
    chats += [chat(f"o{i}", f"你好，我的{b}应用打开设置页面就闪退。", f"请清除{b}的缓存后再试一次。",
                   "谢谢，现在好了。", "不客气，祝您愉快！") for i, b in enumerate(brands)]
    return chats


def test_a_chinese_chat_corpus_gets_its_names(backend):
    cells = product_cells(chinese_chats(), backend)
    assert cells["z0"] == "澜栖扫地机器人"
    assert cells["z3"] == "翎墨家用投影仪"
    assert cells["z7b"] == "笙翎摄像头"


def test_a_chinese_corpus_gets_an_entity_column_from_its_unit_names(backend):
    # no detector reads a name without capitals: the batch's unit names give the entity candidate its
    # value, governance admits the column, and the rows fill it
    chats = chinese_chats()
    conversations = [(c, f"h-{c.dialogue_id}") for c in chats]
    candidates = candidate_schema_rows("b", conversations, backend).frame
    entity = candidates.filter(pl.col("signal") == "product")
    named = {r["dialogue_id"]: r for r in entity.iter_rows(named=True)}
    assert named["z0"]["example_value"] == "澜栖扫地机器人"
    assert named["z0"]["overall"] >= MIN_OVERALL
    metadata = evolve_metadata(GovernedMetadata(), candidates, backend).metadata
    column = next(c for c in metadata.columns if c.signal == "product")
    rows = validated_row_records("b", conversations, metadata, empty_frame("validated_rows"), backend).frame
    cells = {r["dialogue_id"]: r["value"] for r in rows.iter_rows(named=True) if r["column_name"] == column.name}
    assert cells["z3"] == "翎墨家用投影仪"


def test_a_detector_value_of_the_entity_candidate_stays(backend):
    chats = shop_chats() + other_chats(BATCH)
    conversations = [(c, f"h-{c.dialogue_id}") for c in chats]
    before = {c.dialogue_id: backend.candidate_schema(c) for c in chats[:3]}
    candidates = candidate_schema_rows("b", conversations, backend).frame.filter(pl.col("signal") == "product")
    for r in candidates.iter_rows(named=True):
        if r["dialogue_id"] in before:
            column = next(c for c in before[r["dialogue_id"]].columns if c.signal == "product")
            assert column.example_value and r["example_value"] == column.example_value
            assert r["overall"] == column.score.overall


def test_a_name_with_its_branch_in_brackets_is_kept_whole():
    # a chain's branches: the bracketed part glued to the name tells them apart, and is part of the name
    branches = ["澜栖家电(朝阳店)", "澜栖家电(海淀店)", "珀霁书屋（西四店）", "珀霁书屋（南锣鼓巷店）"]
    chats = [chat(f"br{i}", f"你好，我想问一下{b}几点关门？", f"{b}晚上九点关门。", "好的，谢谢！")
             for i, b in enumerate(branches)]
    chats += [chat(f"bp{i}", f"请问{b}可以停车吗？", f"可以，{b}门口有停车场。") for i, b in enumerate(branches)]
    batch = chats + chinese_chats()
    stats = UnitStatistics([[t.text for t in c.turns] for c in batch])
    for c, name in zip(chats, branches):
        cell = entity_cell([(t.role, t.text) for t in c.turns], stats, None)
        assert cell is not None and cell.value == name
        assert c.turns[cell.turn].text[cell.start:cell.end] == name
    # an aside after a space, or one too long for a name, still ends the phrase
    assert [[w.text for w in p] for p in words_of("the Netgear (the old one) and f(x, y)")] == [
        ["the", "netgear"], ["the", "old", "one"], ["and", "f"], ["x"], ["y"]]
