"""Nugget matching with the real embedding model: paraphrases are covered, near misses are not.

The sentences are written for these tests (general support topics), not taken from any evaluation set.
"""

from __future__ import annotations

import pytest

from sarag_assets.evaluation.metrics import (
    COSINE_THRESHOLD,
    TOKEN_OVERLAP_THRESHOLD,
    NuggetMatcher,
    evidence_windows,
    nugget_coverage_at_k,
    nugget_terms,
    score_queries,
    split_sentences,
)
from sarag_assets.evaluation.queries import EvalQuery


@pytest.fixture(scope="module")
def matcher():
    return NuggetMatcher()


def test_documented_thresholds():
    assert TOKEN_OVERLAP_THRESHOLD == 0.8
    assert COSINE_THRESHOLD == 0.70


def test_sentences_and_windows():
    text = "Hi there! Did you restart it?\nYes. It still fails"
    assert split_sentences(text) == ["Hi there!", "Did you restart it?", "Yes.", "It still fails"]
    windows = evidence_windows([text, "Second text."])
    assert "Did you restart it? Yes." in windows  # two adjacent sentences
    assert "It still fails Second text." not in windows  # never across two evidence texts
    assert "Second text." in windows


@pytest.mark.parametrize(
    "nugget, evidence",
    [
        # same content words, other order and inflection: the token rule
        ("reinstall the printer driver", "Please reinstall the driver for your printer and try again."),
        ("the refund is sent to the original payment card", "We sent the refund to your original card, payment should show soon."),
        ("the invoice shows a double charge", "Hello. Looking at it now, the invoice shows you were charged double."),
    ],
)
def test_token_overlap_covers_restated_facts(matcher, nugget, evidence):
    (m,) = matcher.match([nugget], evidence)
    assert m.covered and m.rule == "tokens"
    assert m.token_overlap >= TOKEN_OVERLAP_THRESHOLD


@pytest.mark.parametrize(
    "nugget, evidence",
    [
        ("the invoice shows a double charge", "Thanks for waiting. I was billed twice on this month's invoice."),
        ("the app crashes on startup", "Sorry to hear that. So the application crashes as soon as I launch it."),
        ("the delivery was left with a neighbour", "Your parcel was handed to your neighbour."),
    ],
)
def test_embedding_similarity_covers_paraphrases(matcher, nugget, evidence):
    (m,) = matcher.match([nugget], evidence)
    assert m.covered, (m.token_overlap, m.cosine)
    assert m.rule == "embedding" and m.cosine >= COSINE_THRESHOLD


@pytest.mark.parametrize(
    "nugget, evidence",
    [
        # same topic, a different fact
        ("restart the router", "The router firmware was updated last week. Thanks for the details."),
        ("the refund takes five business days", "We cannot refund digital purchases, sorry."),
        ("reset the password from the sign-in page", "Your account was locked after too many attempts."),
        ("update the printer driver to version 5", "The printer is out of paper."),
        # the named things are there, the action is not
        ("restart the router and the modem", "My router and my modem are both from the same provider."),
        # unrelated chatter
        ("flush the DNS cache", "Thanks for reaching out, have a great day! Can I have your order number please?"),
    ],
)
def test_near_misses_and_unrelated_text_are_not_covered(matcher, nugget, evidence):
    (m,) = matcher.match([nugget], evidence)
    assert not m.covered, (m.rule, m.token_overlap, m.cosine, m.window)


@pytest.mark.parametrize(
    "nugget, evidence",
    [
        ("refunds are not possible for digital purchases", "Refunds are possible for digital purchases within 14 days."),
        ("the warranty does not cover water damage", "Good news: the warranty covers water damage."),
        ("the order was shipped", "The order wasn't shipped yet."),
    ],
)
def test_negation_must_agree(matcher, nugget, evidence):
    (m,) = matcher.match([nugget], evidence)
    assert not m.covered
    # the same nugget is covered by a statement with the same polarity
    agreeing = evidence.replace("wasn't", "was").replace(" are possible", " are not possible").replace(
        "covers", "does not cover"
    )
    assert matcher.match([nugget], agreeing)[0].covered


def test_a_phrase_with_without_is_not_a_negated_statement(matcher):
    (m,) = matcher.match(["the voucher is valid for 30 days"], "Every voucher stays valid for 30 days without exception.")
    assert m.covered


def test_terms_are_local_to_a_window(matcher):
    nugget = "clear the browser cache"  # clear, browser, cache
    spread = "Clear skies today. Which browser? Chrome. Also, the cache folder is on drive D."
    (m,) = matcher.match([nugget], spread)
    assert m.token_overlap < 1.0 and not m.covered
    assert matcher.match([nugget], "Chrome. Clear the cache of the browser, then reload.")[0].covered


def test_coverage_share_and_top_k(matcher):
    nuggets = ["reinstall the printer driver", "restart the print spooler", "the toner is empty"]
    first = "The printer was offline. Reinstall the printer driver first."
    second = "Then restart the print spooler service."
    assert matcher.coverage(nuggets, [first]) == pytest.approx(1 / 3)
    assert matcher.coverage(nuggets, [first, second]) == pytest.approx(2 / 3)
    # only the top k evidence texts count
    assert nugget_coverage_at_k(nuggets, ["unrelated.", "unrelated too.", "nothing.", second], 3, matcher) == 0.0
    assert nugget_coverage_at_k(nuggets, [second, first], 3, matcher) == pytest.approx(2 / 3)
    assert matcher.coverage(nuggets, []) == 0.0
    with pytest.raises(ValueError):
        matcher.coverage([], [first])


def test_nugget_terms_keep_negations():
    assert nugget_terms("Returns aren't accepted, returns!") == ["return", "not", "accept"]


def test_score_queries_uses_the_top_three_conversations_as_evidence(matcher):
    q = EvalQuery("q", [{"speaker": "user", "text": "printer offline"}], ["p"], ["reinstall the printer driver"])
    texts = {"p": "Reinstall the printer driver.", "x": "Unrelated.", "y": "Nothing here.", "z": "Still nothing."}
    found = score_queries([q], {"q": ["x", "p"]}, texts=texts, matcher=matcher)[0]
    assert found.scores["nugget_coverage@3"] == 1.0
    missed = score_queries([q], {"q": ["x", "y", "z", "p"]}, texts=texts, matcher=matcher)[0]
    assert missed.scores["nugget_coverage@3"] == 0.0
    # an answering system's own evidence (an answer text) takes precedence
    answered = score_queries([q], {"q": ["x"]}, evidence={"q": ["You should reinstall the driver of the printer."]},
                             matcher=matcher)[0]
    assert answered.scores["nugget_coverage@3"] == 1.0
    no_evidence = score_queries([q], {"q": ["p"]})[0]
    assert "nugget_coverage@3" not in no_evidence.scores
