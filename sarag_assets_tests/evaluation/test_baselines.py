"""The three text baselines over small hand-written corpora (the dense one with the real MiniLM model)."""

from __future__ import annotations

import math
import random

import pytest

from sarag_assets.evaluation.baselines import (
    BASELINE_NAMES,
    BM25Retriever,
    DenseRetriever,
    TextFrequencyRetriever,
    analyze,
    fit_baselines,
    make_baseline,
    run_queries,
    stem,
)
from sarag_assets.evaluation.queries import EvalQuery

DOCS = [
    ("printer", "My laser printer shows offline after the driver update.\nReinstall the printer driver and restart the spooler."),
    ("wifi", "The router drops the wifi connection every evening.\nMove the router away from the microwave and change the channel."),
    ("refund", "I returned the blender two weeks ago and the refund has not arrived.\nRefunds take up to ten business days."),
    ("password", "I cannot sign in because the password reset email never comes.\nCheck the spam folder and whitelist our domain."),
    ("battery", "The phone battery drains overnight since the last update.\nTurn off background app refresh."),
]


@pytest.fixture(scope="module")
def fitted():
    return fit_baselines(DOCS)


@pytest.mark.parametrize("name", BASELINE_NAMES)
@pytest.mark.parametrize(
    "query, expected",
    [
        ("laser printer says offline after installing a new driver", "printer"),
        ("wifi keeps disconnecting at night, router problem", "wifi"),
        ("where is my money back for the blender I sent back", "refund"),
        ("password reset mail does not arrive", "password"),
    ],
)
def test_a_distinctive_query_ranks_its_conversation_first(fitted, name, query, expected):
    hits = fitted[name].search(query, k=3)
    assert hits[0][0] == expected
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_text_freq_is_raw_term_counts_without_idf_or_length_normalization():
    docs = [("d1", "apple banana apple"), ("d2", "banana cherry"), ("d3", "cherry cherry cherry date date date date")]
    r = TextFrequencyRetriever().fit(docs)
    # "cherry banana": d3 = 3 + 0, d2 = 1 + 1, d1 = 0 + 1
    assert r.search("cherry banana", 10) == [("d3", 3.0), ("d2", 2.0), ("d1", 1.0)]
    # the query's distinct terms count once each
    assert r.search("cherry cherry", 10) == [("d3", 3.0), ("d2", 1.0)]


def test_bm25_scores_match_the_okapi_formula():
    docs = [("d1", "apple banana apple"), ("d2", "banana cherry"), ("d3", "cherry cherry cherry date")]
    r = BM25Retriever().fit(docs)
    n, avgdl, k1, b = 3, (3 + 2 + 4) / 3, 1.2, 0.75

    def term(tf, df, dl):
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

    hits = dict(r.search("apple cherry", 10))
    assert hits["d1"] == pytest.approx(term(2, 1, 3))
    assert hits["d2"] == pytest.approx(term(1, 2, 2))
    assert hits["d3"] == pytest.approx(term(3, 2, 4))
    # idf favours the rarer term where raw counts do not
    tf = TextFrequencyRetriever().fit(docs)
    assert tf.search("apple cherry", 1)[0][0] == "d3"
    assert r.search("apple cherry", 1)[0][0] == "d1"


@pytest.mark.parametrize("name", BASELINE_NAMES)
def test_equal_scores_are_ordered_by_dialogue_id_whatever_the_corpus_order(name):
    text = "The scanner jams on every second page."
    docs = [("z-9", text), ("a-1", text), ("m-5", text), ("other", "Billing address change on the invoice.")]
    results = []
    for seed in range(3):
        shuffled = docs[:]
        random.Random(seed).shuffle(shuffled)
        r = make_baseline(name).fit(shuffled)
        results.append(r.search("scanner jams", 3))
    assert [d for d, _ in results[0]] == ["a-1", "m-5", "z-9"]
    assert results[0] == results[1] == results[2]


def test_ties_at_the_cut_off_are_broken_by_id():
    docs = [(f"d{i:02d}", "modem lights blink") for i in range(20)]
    r = BM25Retriever().fit(list(reversed(docs)))
    assert [d for d, _ in r.search("modem", 5)] == ["d00", "d01", "d02", "d03", "d04"]


@pytest.mark.parametrize("name", BASELINE_NAMES)
def test_empty_query_is_a_clear_error(fitted, name):
    for query in ("", "   \n"):
        with pytest.raises(ValueError, match="query text is empty"):
            fitted[name].search(query, 5)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        fitted[name].search("printer", 0)


@pytest.mark.parametrize("name", ("text_freq", "bm25"))
def test_sparse_baselines_return_only_matching_conversations(fitted, name):
    assert fitted[name].search("the and of it", 5) == []  # only function words
    assert fitted[name].search("zyxwv qwrtp", 5) == []  # no known term
    assert [d for d, _ in fitted[name].search("microwave", 5)] == ["wifi"]


def test_dense_always_returns_k_ranked_conversations(fitted):
    hits = fitted["dense"].search("zyxwv qwrtp", 3)
    assert len(hits) == 3
    assert len(fitted["dense"].search("printer", 50)) == len(DOCS)


def test_fit_errors_and_search_before_fit():
    with pytest.raises(ValueError, match="empty corpus"):
        BM25Retriever().fit([])
    with pytest.raises(ValueError, match="duplicate dialogue id 'a'"):
        TextFrequencyRetriever().fit([("a", "x"), ("a", "y")])
    with pytest.raises(ValueError, match="text must be a string"):
        BM25Retriever().fit([("a", None)])
    with pytest.raises(RuntimeError, match="before fit"):
        BM25Retriever().search("printer", 3)
    with pytest.raises(ValueError, match="unknown baseline"):
        make_baseline("tfidf")


def test_fitting_twice_gives_identical_results():
    a = fit_baselines(DOCS, ("text_freq", "bm25"))
    b = fit_baselines(list(reversed(DOCS)), ("text_freq", "bm25"))
    assert sorted(a) == ["bm25", "text_freq"]
    for name in a:
        for q in ("driver update offline", "refund business days", "update"):
            assert a[name].search(q, 5) == b[name].search(q, 5)


def test_a_multi_turn_query_is_searched_with_all_its_turns(fitted):
    q = EvalQuery("q", [
        {"speaker": "user", "text": "My laser printer went offline after the driver update."},
        {"speaker": "agent", "text": "Thanks, let me check."},
        {"speaker": "user", "text": "So how do I fix it?"},
    ], ["printer"])
    ranked, latencies = run_queries(fitted["bm25"].search, [q.text], k=3)
    assert ranked[0][0] == "printer"
    assert len(latencies) == 1 and latencies[0] >= 0
    # the last turn alone names nothing the corpus knows
    assert fitted["bm25"].search(q.last_text, 3) == []


def test_dense_reads_only_what_the_model_accepts():
    """Text past the model's 256 word pieces has no influence: the documented truncation, no chunking."""
    opening = " ".join(["We talked about the weather and the weekend plans for a while."] * 40)
    docs = [
        ("long-a", opening + " The coffee grinder makes a grinding noise."),
        ("long-b", opening + " My tax form was rejected by the portal."),
        ("short", "The coffee grinder makes a grinding noise and stops."),
    ]
    r = DenseRetriever().fit(docs)
    assert r.truncated_share == pytest.approx(2 / 3)
    scores = dict(r.search("coffee grinder noise", 3))
    assert scores["long-a"] == pytest.approx(scores["long-b"], abs=1e-6)
    assert scores["short"] > scores["long-a"]
    # the sparse baselines read the whole conversation
    assert BM25Retriever().fit(docs).search("coffee grinder noise", 3)[0][0] in {"short", "long-a"}
    assert "long-b" not in dict(BM25Retriever().fit(docs).search("coffee grinder noise", 3))


def test_analyzer_and_stemmer():
    assert analyze("The printers weren't printing; I can't connect, it cannot start.") == [
        "printer", "print", "connect", "start",
    ]
    assert analyze("returns are not accepted", keep_negations=True) == ["return", "not", "accept"]
    assert analyze("iOS 11.1.2 on NW-AX5400") == ["ios", "11.1.2", "nw", "ax5400"]
    assert {stem(w) for w in ("charge", "charges", "charged", "charging")} == {"charg"}
    assert stem("stopped") == stem("stop") == "stop"
    assert stem("replies") == "reply"
    assert stem("bus") == "bus" and stem("access") == "access"


def test_chinese_is_searched_by_character_pairs():
    # a Chinese sentence was one token, so no query shorter than the whole sentence found it
    assert analyze("华为P40充不进电") == ["p40", "华为", "充不", "不进", "进电"]
    docs = [("router", "我的小米路由器每天晚上都会断网。请关闭省电模式。"), ("phone", "华为手机一晚上只充到一半。")]
    assert BM25Retriever().fit(docs).search("路由器晚上断网", 2)[0][0] == "router"
