"""When a retrieved conversation is a weak match (`query.strength.is_weak`)."""

from sarag_assets.query.strength import WEAK_BELOW_SD, is_weak

LOW = WEAK_BELOW_SD - 0.5


def test_a_conversation_that_neither_stands_out_nor_holds_a_named_value_is_weak():
    assert is_weak(LOW, [])
    assert not is_weak(WEAK_BELOW_SD + 0.5, [])
    assert not is_weak(None, [])  # a corpus too small to tell


def test_a_value_the_question_names_makes_it_a_match():
    assert not is_weak(LOW, [{"column": "product", "value": "Drum Clean"}])


def test_only_the_weak_matches_ranked_below_the_first_close_one_are_set_aside():
    from sarag_assets.query.strength import weak_matches

    # smarthome q13's shape: the two gold conversations ranked first do not stand out, the third does
    assert weak_matches([("a", True), ("b", True), ("c", False), ("d", True), ("e", False)]) == {"d"}
    assert weak_matches([("a", False), ("b", True)]) == {"b"}
    assert weak_matches([("a", True), ("b", True)]) == {"a", "b"}  # nothing stands out: all weak
    assert weak_matches([]) == set()
