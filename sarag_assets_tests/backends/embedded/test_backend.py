"""The embedded structuring backend on real fixture conversations and hand-written ones with known answers."""

from __future__ import annotations

import re

import pytest

from sarag_assets.backends.embedded import EmbeddedBackend
from sarag_assets.core.ingest.parsers import parse_file
from sarag_assets.core.ingest.raw_dialogues import conversation_rows
from sarag_assets.core.structuring.gates import EXCERPT_GAP
from sarag_assets.core.structuring.interface import (
    CANONICAL_TYPES,
    CandidateColumn,
    ColumnConstraints,
    ConversationInput,
    ConversationTurn,
    GovernedMetadata,
    MetadataColumn,
)
from sarag_assets_tests.paths import SAMPLES as PACKAGE_SAMPLES

SAMPLES = PACKAGE_SAMPLES
FIXTURES = [
    SAMPLES / "abcd" / "abcd_sample.json",
    SAMPLES / "tweetsumm" / "tweetsumm_examples.json",
    SAMPLES / "multidogo" / "multidogo_examples.json",
]
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")


@pytest.fixture(scope="module")
def backend() -> EmbeddedBackend:
    return EmbeddedBackend()


@pytest.fixture(scope="module")
def real_conversations() -> list[ConversationInput]:
    out = []
    for path in FIXTURES:
        for conv in parse_file(path).conversations:
            rows = conversation_rows(conv, redact=True)
            out.append(
                ConversationInput(
                    dialogue_id=conv.dialogue_id,
                    turns=[ConversationTurn(speaker=r["speaker"], role=r["role"], text=r["text"]) for r in rows],
                )
            )
    assert len(out) >= 10
    return out


def conversation(dialogue_id: str, *turns: tuple[str, str]) -> ConversationInput:
    return ConversationInput(
        dialogue_id=dialogue_id,
        turns=[ConversationTurn(speaker=f"{role}1", role=role, text=text) for role, text in turns],
    )


# --- propose / normalize / score on real conversations -----------------------------------------------


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
def test_propose_normalize_score_on_real_fixtures(backend, real_conversations):
    for conv in real_conversations:
        proposed = backend.propose_columns(conv)
        assert 5 <= len(proposed) <= 15
        names = [c.name for c in proposed]
        assert len(set(names)) == len(names)
        assert {"problem", "resolution", "resolved", "root_cause", "product"} <= set(names)
        text = "\n".join(t.text for t in conv.turns)
        for c in proposed:
            assert c.meaning and c.note
            if c.example_value is not None and c.type == "string":
                assert all(piece in text for piece in c.example_value.split(EXCERPT_GAP))  # verbatim quotes
        normalized = backend.normalize_columns(proposed)
        assert normalized and len({c.name for c in normalized}) == len(normalized)
        for c in normalized:
            assert SNAKE.match(c.name) and len(c.name) <= 40
            assert c.type in CANONICAL_TYPES
        scores = backend.score_columns(conv, normalized)
        assert len(scores) == len(normalized)
        for s in scores:
            for x in (s.relevance, s.answerability, s.overall):
                assert 0.0 <= x <= 1.0
            assert s.justification


def test_candidate_schema_on_real_fixtures(backend, real_conversations):
    by_id = {c.dialogue_id: backend.candidate_schema(c) for c in real_conversations}
    for cs in by_id.values():
        assert cs.backend == "embedded/1"
        assert cs.problem
        assert all(c.signal for c in cs.columns)
        assert len(cs.columns) >= 5
    abcd = {c.name: c for c in by_id["3592"].columns}
    assert abcd["order_id"].example_value == "3348917502"
    assert abcd["order_id"].score.answerability >= 0.85
    assert abcd["resolved"].example_value == "false"  # "unfortunately ... we cannot accept the return"
    assert abcd["product"].score.answerability <= 0.1  # nothing names a product
    apple = {c.name: c for c in by_id["b065262210783596c1fe79466b8f8985"].columns}
    assert apple["iphone_version"].example_value == "11.1.2"
    assert apple["iphone_version"].constraints.pattern
    flight = {c.name: c for c in by_id["MulDoGO--train--1"].columns}
    assert flight["booking_confirmation_number"].example_value == "n76f34"  # answer to the agent's question
    assert flight["seat_number"].example_value == "5D"


def test_normalize_columns_resolves_synonyms_and_spelling(backend):
    def col(name, type_, meaning, example=None):
        return CandidateColumn(name=name, type=type_, meaning=meaning, example_value=example)

    cols = [
        col("Operating System", "text", "The operating system the user runs.", "Windows 11"),
        col("platform", "varchar", "Which OS the customer is on."),
        col("err_code", "integer", "The error code shown."),
        col("error_code", "number", "The numeric error code the user gets.", "1603"),
        col("firmware_verison", "str", "The firmware version of the device.", "1.2.4"),
        col("firmware_version", "string", "Firmware version reported by the user."),
        col("app_version", "string", "The app version the user reports.", "6.1.7"),
        col("Order ID", "string", "The order ID.", "3348917502"),
        col("order_number", "string", "The order number of the purchase."),
        col("Resolved?", "bool", "Whether the issue got resolved."),
        col("refund total", "money", "Amount refunded."),
        col("opened", "timestamp", "When the ticket was opened."),
    ]
    out = backend.normalize_columns(cols)
    names = [c.name for c in out]
    assert len(set(names)) == len(names)
    assert names == ["os", "error_code", "firmware_verison", "app_version", "order_id", "resolved", "refund_total", "opened"]
    by = {c.name: c for c in out}
    assert by["error_code"].type == "int" and by["error_code"].example_value == "1603"  # merged, value kept
    assert by["firmware_verison"].example_value == "1.2.4"  # the misspelling absorbed the correct spelling
    assert by["refund_total"].type == "float" and by["opened"].type == "datetime" and by["resolved"].type == "boolean"


def test_normalize_keeps_distinct_values_apart(backend):
    cols = [
        CandidateColumn(name="version", type="string", meaning="The version number of the software the user reports.", example_value="5.4.5"),
        CandidateColumn(name="firmware_version", type="string", meaning="The firmware version the user reports.", example_value="1.2.2"),
    ]
    assert [c.name for c in backend.normalize_columns(cols)] == ["version", "firmware_version"]


# --- extract -----------------------------------------------------------------------------------------

ROUTER = conversation(
    "router-1",
    ("user", "Hi! My Acme Hub keeps dropping wifi every evening. It's on firmware 2.1.0. I get \"WAN link down (AC-E12)\" in the log."),
    ("agent", "Sorry to hear that. Could you confirm the account number?"),
    ("user", "It's 552-193847."),
    ("agent", "Thanks. Which plan are you on?"),
    ("user", "I'm on the Fiber 300 plan. Actually the firmware is 2.3.0, not 2.1.0."),
    ("agent", "The drops are caused by a memory leak in that firmware. Please update the hub to 2.4.1 from the admin page."),
    ("user", "That fixed it, thanks!"),
)

REFUND = conversation(
    "refund-1",
    ("user", "Hello, I was charged $49.99 twice on 2023-11-02 for my Premium subscription."),
    ("agent", "Sorry about that! Can I have your order number?"),
    ("user", "Order #A55-10923"),
    ("agent", "Thanks. I've issued a refund of $49.99 to your card; it should arrive within 5-7 business days."),
    ("user", "Great, thank you so much for the help!"),
)


def md(*columns: MetadataColumn) -> GovernedMetadata:
    return GovernedMetadata(version=1, columns=list(columns))


def col(name: str, type_: str, meaning: str, signal: str | None = None, **constraints) -> MetadataColumn:
    return MetadataColumn(name=name, type=type_, meaning=meaning, signal=signal, constraints=ColumnConstraints(**constraints))


def row_values(backend, conv, metadata):
    row = backend.extract_row(conv, metadata)
    assert row.backend == "embedded/1" and row.dialogue_id == conv.dialogue_id
    assert [v.column for v in row.values] == [c.name for c in metadata.columns]
    text = "\n".join(t.text for t in conv.turns)
    for v in row.values:
        if v.value is not None:
            assert v.evidence and v.evidence in text  # evidence is an exact span of the conversation
    return {v.column: v.value for v in row.values}


def test_extract_with_known_signals(backend):
    metadata = md(
        col("problem", "string", "The problem the user reports.", "problem"),
        col("resolution", "string", "What resolved it.", "resolution"),
        col("resolved", "boolean", "Whether it was resolved.", "resolved", allowed_values=["true", "false"]),
        col("root_cause", "string", "The cause.", "root_cause"),
        col("product", "string", "The product.", "product"),
        col("firmware_version", "string", "The firmware version the user reports.", "version", pattern=r"[vV]?\d+(?:[.\-_+][0-9A-Za-z]+)*"),
        col("error_code", "string", "The error code.", "error_code"),
        col("error_message", "string", "The error message.", "error_message"),
        col("account_number", "string", "The account number.", "identifier"),
        col("plan", "string", "The plan the user is on.", "plan"),
        col("order_number", "string", "The order number.", "identifier"),
        col("os", "string", "The operating system.", "os"),
    )
    v = row_values(backend, ROUTER, metadata)
    assert v["firmware_version"] == "2.3.0"  # corrected; 2.1.0 is denied, 2.4.1 is the version to install
    assert v["account_number"] == "552-193847"  # answer two turns after the question
    assert v["plan"] == "Fiber 300"
    assert v["error_code"] == "AC-E12"
    assert v["error_message"] == "WAN link down (AC-E12)"
    assert v["resolution"].endswith("Please update the hub to 2.4.1 from the admin page.")  # the helper's answer
    assert v["resolved"] == "true"
    assert v["root_cause"] == "a memory leak in that firmware"
    assert v["product"] == "Acme Hub"
    assert "dropping wifi" in v["problem"]
    assert v["order_number"] is None and v["os"] is None  # not said: null, never a guess


def test_extract_columns_without_signal(backend):
    """Columns an LLM might have proposed: matched by name, synonyms and embedding similarity."""
    metadata = md(
        col("customer_issue", "string", "Short description of the customer's issue."),
        col("fix_steps", "string", "The steps the support agent gave that fixed the issue."),
        col("fw_ver", "string", "Version of the firmware on the device."),
        col("is_fixed", "boolean", "Whether the issue was fixed."),
        col("internet_plan", "string", "The internet plan the customer subscribes to."),
        col("refund_total", "float", "Total amount refunded to the customer."),
        col("charge_day", "date", "The day the customer was charged."),
        col("order_ref", "string", "The reference of the customer's order."),
        col("favourite_colour", "string", "The customer's favourite colour."),
    )
    r = row_values(backend, ROUTER, metadata)
    assert "dropping wifi" in r["customer_issue"]
    assert r["fix_steps"].endswith("Please update the hub to 2.4.1 from the admin page.")
    assert r["fw_ver"] == "2.3.0"
    assert r["is_fixed"] == "true"
    assert r["internet_plan"] == "Fiber 300"
    assert r["refund_total"] is None and r["charge_day"] is None and r["order_ref"] is None
    assert r["favourite_colour"] is None
    f = row_values(backend, REFUND, metadata)
    assert f["refund_total"] == "49.99"
    assert f["charge_day"] == "2023-11-02"
    assert f["order_ref"] == "A55-10923"
    assert f["fw_ver"] is None and f["internet_plan"] is None


def test_extract_respects_types_and_constraints(backend):
    metadata = md(
        col("account_number", "int", "The account number.", "identifier"),  # "552-193847" is not an int
        col("firmware_version", "string", "The firmware version.", "version", pattern=r"\d+"),  # no dotted version fits
        col("resolved", "boolean", "Whether it was resolved.", "resolved", allowed_values=["yes", "no"]),
    )
    v = row_values(backend, ROUTER, metadata)
    assert v == {"account_number": None, "firmware_version": None, "resolved": None}


def test_extract_slot_answers_on_real_chat(backend, real_conversations):
    conv = next(c for c in real_conversations if c.dialogue_id == "9489")
    metadata = md(
        col("order_id", "string", "The order ID identifying the user's order.", "identifier"),
        col("problem", "string", "The problem the user reports.", "problem"),
    )
    v = row_values(backend, conv, metadata)
    assert v["order_id"] == "7916676427"  # asked for "the order ID and email", answered on the next turns
    assert v["problem"] == "just wanted to check on the status of a refund"


# --- judge, governance, determinism ------------------------------------------------------------------


def test_judge_row_uses_the_semantic_gate(backend):
    metadata = md(
        col("plan", "string", "The plan the user is on.", "plan"),
        col("firmware_version", "string", "The firmware version.", "version"),
    )
    row = backend.extract_row(ROUTER, metadata)
    judged = backend.judge_row(ROUTER, metadata, row)
    assert judged.backend == "embedded/1"
    assert {j.column: j.supported for j in judged.judgements} == {"plan": True, "firmware_version": True}
    fake = row.model_copy(deep=True)
    fake.values[0].value, fake.values[0].evidence = "Gigabit Ultra", None
    judged = backend.judge_row(ROUTER, metadata, fake)
    by = {j.column: j for j in judged.judgements}
    assert not by["plan"].supported and by["plan"].reason


def test_decide_governance_carries_the_backend(backend, real_conversations):
    cs = backend.candidate_schema(real_conversations[0])
    decision = backend.decide_governance(GovernedMetadata(), cs)
    assert decision.backend == "embedded/1"


def test_deterministic(backend, real_conversations):
    from sarag_assets.backends.embedded import analysis as analysis_module
    from sarag_assets.backends.embedded import backend as backend_module

    metadata = md(
        col("problem", "string", "The problem the user reports.", "problem"),
        col("customer_issue", "string", "Short description of the customer's issue."),
        col("order_id", "string", "The order ID.", "identifier"),
    )
    conversations = real_conversations[:6] + [ROUTER, REFUND]
    first = [(backend.candidate_schema(c).model_dump(), backend.extract_row(c, metadata).model_dump())
             for c in conversations]
    backend_module._ANALYSES.clear()  # the fresh backend analyses everything again
    analysis_module._DETECTED.clear()
    fresh = EmbeddedBackend()
    assert [(fresh.candidate_schema(c).model_dump(), fresh.extract_row(c, metadata).model_dump())
            for c in conversations] == first


def test_the_steps_backends_share_one_analysis_per_conversation_and_model(monkeypatch):
    """Each step opens its own backend; in one process the detectors run once per conversation. The
    gist depends on the model's vectors, so another model has its own gist over the same detectors'
    output, and that output is never changed by a gist."""
    from sarag_assets.backends.embedded import analysis as analysis_module
    from sarag_assets.backends.embedded import backend as backend_module
    from sarag_assets.core.encoding.embedder import Embedder

    analysed = []
    real = analysis_module.analyze
    monkeypatch.setattr(analysis_module, "analyze", lambda turns: analysed.append(1) or real(turns))
    monkeypatch.setattr(analysis_module, "_DETECTED", analysis_module.TextBoundedMemo())
    monkeypatch.setattr(backend_module, "_ANALYSES", backend_module.TextBoundedMemo())
    schemas_step, rows_step = EmbeddedBackend(), EmbeddedBackend()
    first = schemas_step.analysis(ROUTER)
    assert first.gist_applied and rows_step.analysis(ROUTER) is first and analysed == [1]
    other_model = EmbeddedBackend(Embedder("another-model")).analysis(ROUTER, gist=False)  # no model call
    assert other_model is not first and not other_model.gist_applied and analysed == [1]
    detected = analysis_module.analyzed([(t.role, t.text) for t in ROUTER.turns])
    assert not detected.gist_applied and detected.findings is not first.findings
    assert [f.signal for f in detected.findings] == [f.signal for f in other_model.findings]
    edited = ROUTER.model_copy(update={"turns": ROUTER.turns[:-1]})
    assert rows_step.analysis(edited, gist=False) is not first and analysed == [1, 1]


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
def test_generated_conversations_pass_the_gates(backend):
    synthetic = pytest.importorskip("sarag_assets.evaluation.synthetic")
    from sarag_assets.core.structuring.gates import semantic_gate, structural_gate

    corpus = synthetic.generate(40, 3)
    convs = []
    for c in corpus.conversations:
        roles = {}
        turns = []
        for t in c["turns"]:
            role = "user" if t["speaker"] in ("user", "customer", "client", "caller") else "agent"
            roles.setdefault(t["speaker"], role)
            turns.append(ConversationTurn(speaker=f"{role}1", role=role, text=t["text"]))
        convs.append(ConversationInput(dialogue_id=c["dialogue_id"], turns=turns))
    schemas = [backend.candidate_schema(c) for c in convs]
    columns: dict[str, MetadataColumn] = {}
    for cs in schemas:
        for c in cs.columns:
            if c.example_value is not None and c.name not in columns:
                columns[c.name] = MetadataColumn(
                    name=c.name, type=c.type, meaning=c.meaning, constraints=c.constraints, signal=c.signal
                )
    metadata = GovernedMetadata(columns=list(columns.values())[:20])
    filled = 0
    for conv in convs:
        row = backend.extract_row(conv, metadata)
        for v in row.values:
            if v.value is None:
                continue
            filled += 1
            column = metadata.column(v.column)
            assert structural_gate(v.value, column)[0], (v, column)
            assert semantic_gate(v.value, column, conv, v.evidence)[0], (v, column)
    assert filled >= 3 * len(convs)


AIRLINE = conversation(
    "airline-1",
    ("agent", "Thanks for contacting SkyWays! You're chatting with Omar. How can I help?"),
    ("user", "Hi, this is Lena Ortiz. I've flown with you for years with no problems."),
    ("user", "So basically the SkyWays Wallet app won't show my boarding pass, and it's driving me crazy."),
    ("user", "I already reinstalled the app, it didn't help. Error code is BP-301."),
    ("agent", "Sorry about that, Lena. Could you sign out of the SkyWays Wallet app?"),
    ("user", "Done, but it still shows nothing."),
    ("agent", "Thanks. First, go to Settings > Storage and clear the app data."),
    ("user", "ok"),
    ("agent", "Now sign in again with your booking reference."),
    ("user", "Perfect, the pass is there now. Thanks!"),
)


def test_extract_problem_resolution_product_in_another_domain(backend):
    metadata = md(
        col("problem", "string", "The problem the user reports.", "problem"),
        col("resolution", "string", "What resolved it.", "resolution"),
        col("product", "string", "The product.", "product"),
        col("resolved", "boolean", "Whether it was resolved.", "resolved", allowed_values=["true", "false"]),
    )
    v = row_values(backend, AIRLINE, metadata)
    # the asker's sentences in order: the malfunction, what they tried and the error; not the welcome's reply
    assert "So basically the SkyWays Wallet app won't show my boarding pass" in v["problem"]
    assert "reinstalled the app" in v["problem"] and "BP-301" in v["problem"]
    # the helper's answer the user confirmed, not the failed sign-out
    assert "clear the app data" in v["resolution"] and "sign out" not in v["resolution"].lower()
    # not the person, not the menu path, not the company alone
    assert v["product"] == "SkyWays Wallet"
    assert v["resolved"] == "true"


def test_extracted_values_are_never_empty_strings(backend, real_conversations):
    metadata = md(
        col("problem", "string", "The problem the user reports.", "problem"),
        col("resolution", "string", "What resolved it.", "resolution"),
        col("product", "string", "The product.", "product"),
        col("root_cause", "string", "The cause.", "root_cause"),
        col("customer_issue", "string", "Short description of the customer's issue."),
    )
    checked = 0
    for conv in real_conversations + [ROUTER, REFUND, AIRLINE]:
        for v in backend.extract_row(conv, metadata).values:
            assert v.value is None or v.value.strip(), (conv.dialogue_id, v)
            checked += 1
    assert checked > 0
