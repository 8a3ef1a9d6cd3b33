"""The one normalizer both backends use: names, types, the whole pass over a list of columns."""

import pytest

from sarag_assets.backends.normalize import (
    MAX_NAME,
    canonical_name,
    canonical_type,
    dedupe_scored,
    normalize_candidates,
    snake_case,
)
from sarag_assets.core.checks import metadata_rules
from sarag_assets.core.structuring.interface import (
    CandidateColumn,
    ColumnScore,
    ScoredColumn,
)


def test_snake_case():
    assert snake_case("ErrorCode") == snake_case("error-code") == snake_case(" Error  code ") == "error_code"
    assert snake_case("HTTPStatusCode") == "http_status_code"
    assert snake_case("iPhone model") == "iphone_model"
    assert snake_case("Größe (cm)") == "grosse_cm"
    assert snake_case("order #") == "order_number" and snake_case("battery %") == "battery_percent"
    assert snake_case("3d model") == "n_3d_model"
    assert snake_case("!!") == "" and snake_case("") == ""
    long = snake_case("the serial number printed on the bottom of the device")
    assert len(long) <= MAX_NAME and not long.endswith("_") and long == "the_serial_number_printed_on_the_bottom"


def test_canonical_name_unifies_suffixes_and_synonyms():
    assert canonical_name("Operating System") == canonical_name("platform") == canonical_name("OS") == "os"
    assert canonical_name("ErrCode") == canonical_name("error number") == "error_code"
    assert canonical_name("FW version") == "firmware_version"
    assert canonical_name("order no") == canonical_name("order_num") == "order_number"
    assert canonical_name("printer_model") == "printer_model"
    for name in ("Operating System", "ErrCode", "order no", "printer_model", "3d model"):
        assert canonical_name(canonical_name(name)) == canonical_name(name)  # idempotent


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("int", "int"),
        ("Integer", "int"),
        ("Optional[int]", "int"),
        ("int64", "int"),
        ("string | null", "string"),
        ("varchar(255)", "string"),
        ("list of strings", "string"),
        ("enum", "string"),
        ("decimal(10,2)", "float"),
        ("money", "float"),
        ("yes/no", "boolean"),
        ("Date", "date"),
        ("ISO 8601 timestamp", "datetime"),
        ("date-time", "datetime"),
        ("object", None),
        ("weird", None),
        ("", None),
    ],
)
def test_canonical_type(raw, expected):
    assert canonical_type(raw) == expected


def test_normalize_candidates_and_dedupe_scored():
    out = normalize_candidates(
        [
            CandidateColumn(name="Error Code", type="text", meaning=" the code "),
            CandidateColumn(name="error_code", type="int", meaning="dup", example_value="E42"),
            CandidateColumn(name="blob", type="object", meaning="?"),
            CandidateColumn(name="--", type="int", meaning="nameless"),
        ]
    )
    assert [(c.name, c.type, c.meaning, c.example_value) for c in out] == [
        ("error_code", "string", "the code", "E42"),
        ("blob", "string", "?", None),
    ]
    assert normalize_candidates(out) == out  # idempotent

    low = ScoredColumn(name="OS", type="string", meaning="a", score=ColumnScore(relevance=0, answerability=0, overall=0.2, justification=""))
    high = low.model_copy(update={"name": "operating_system", "meaning": "b", "score": low.score.model_copy(update={"overall": 0.5})})
    assert [(c.name, c.meaning) for c in dedupe_scored([low, high])] == [("os", "b")]


def test_a_table_key_is_never_a_column_name():
    # conversation_table already has dialogue_id and batch_key; a proposed column of that name would
    # fail the governed-metadata check and stop the pipeline
    assert canonical_name("dialogue_id") == canonical_name("Dialogue ID") == "mentioned_dialogue_id"
    assert canonical_name("batchKey") == "mentioned_batch_key"
    assert canonical_name("source fields") == "mentioned_source_fields"
    assert canonical_name("mentioned_dialogue_id") == "mentioned_dialogue_id"  # idempotent
    assert canonical_name("dialogue_id_format") == "dialogue_id_format"
    out = normalize_candidates([CandidateColumn(name="Dialogue ID", type="string", meaning="the ticket it refers to")])
    rules = {r.name: r.passed for r in metadata_rules([{"name": c.name, "type": c.type} for c in out], capacity=20)}
    assert rules["names_snake_case_unique"], rules
