import pytest

from sarag_assets.core.structuring.gates import dates_in, semantic_gate, structural_gate
from sarag_assets.core.structuring.interface import (
    ColumnConstraints,
    ConversationInput,
    ConversationTurn,
    MetadataColumn,
)


def conv(*texts):
    roles = ["user", "agent"]
    return ConversationInput(
        dialogue_id="d",
        turns=[ConversationTurn(speaker=f"{roles[i % 2]}1", role=roles[i % 2], text=t) for i, t in enumerate(texts)],
    )


def col(type_="string", **constraints):
    return MetadataColumn(name="c", type=type_, meaning="m", constraints=ColumnConstraints(**constraints))


CONVERSATION = conv(
    "Hi, my Archer AX55 router drops wifi every hour since firmware 1.2.4. Error code E-1042 shows up.",
    "Please roll back to version 1.1.9 and reset the DNS cache.",
    "Rolled back on March 5, 2024 and it works now, paid $49.99 for the call",
)


@pytest.mark.parametrize(
    "value,type_,passed",
    [
        ("Archer AX55", "string", True),
        ("archer  ax55", "string", True),  # normalized whitespace and case
        ("Archer AX56", "string", False),
        ("1.2.4", "string", True),
        ("roll back to version 1.1.9 and reset the DNS cache", "string", True),
        ("reset the router to factory settings and call back", "string", False),
        ("49.99", "float", True),
        ("59.99", "float", False),
        ("2024-03-05", "date", True),
        ("2024-03-06", "date", False),
        ("true", "boolean", False),  # a boolean needs evidence
    ],
)
def test_semantic_gate(value, type_, passed):
    ok, reason = semantic_gate(value, col(type_), CONVERSATION)
    assert ok is passed, reason
    assert reason


def test_boolean_with_evidence_from_the_conversation_passes_and_invented_evidence_fails():
    assert semantic_gate("true", col("boolean"), CONVERSATION, evidence="it works now")[0]
    assert not semantic_gate("true", col("boolean"), CONVERSATION, evidence="customer is happy")[0]


@pytest.mark.parametrize(
    "value,column,passed,fragment",
    [
        ("42", col("int"), True, ""),
        ("4.2", col("int"), False, "not an integer"),
        ("yes", col("boolean"), True, ""),
        ("maybe", col("boolean"), False, "not a boolean"),
        ("2024-02-30", col("date"), False, "ISO date"),
        ("2024-02-28", col("date"), True, ""),
        ("2024-02-28T10:00:00Z", col("datetime"), True, ""),
        ("1.2.4", col(pattern=r"\d+(\.\d+)+"), True, ""),
        ("v1", col(pattern=r"\d+(\.\d+)+"), False, "pattern"),
        ("gold", col(allowed_values=["bronze", "silver", "gold"]), True, ""),
        ("platinum", col(allowed_values=["bronze", "silver", "gold"]), False, "allowed"),
        ("120", col("float", maximum=100), False, "above"),
        ("x" * 30, col(max_length=20), False, "limit"),
        ("abc", col(pattern="([unclosed"), False, "not a valid regular expression"),
    ],
)
def test_structural_gate(value, column, passed, fragment):
    ok, reason = structural_gate(value, column)
    assert ok is passed
    assert fragment in reason


def test_dates_in_reads_common_spellings():
    found = dates_in("on 2024-03-05, or 03/06/2024, or 7 March 2024, or March 8th, 2024")
    assert {d.isoformat() for d in found} >= {"2024-03-05", "2024-03-06", "2024-03-07", "2024-03-08"}
