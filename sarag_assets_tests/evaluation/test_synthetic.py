"""The synthetic benchmark generator: determinism, shape, truth, queries, noise rates."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from random import Random

import pytest

import sarag_assets.evaluation.synthetic as synthetic
from sarag_assets.evaluation.synthetic import generate, query_count, write_corpus
from sarag_assets.evaluation.synthetic.grammar import Slot, add_typos
from sarag_assets.evaluation.synthetic.rates import RATES, PerChannel, TypoRates
from sarag_assets.evaluation.synthetic.rendering import render

USER_WORDS = {"user", "customer", "client"}
AGENT_WORDS = {"agent", "support", "assistant"}
N = 2000


@pytest.fixture(scope="module")
def corpus():
    t0 = time.perf_counter()
    c = generate(N, 11)
    elapsed = time.perf_counter() - t0
    assert elapsed < 15, f"generating {N} conversations took {elapsed:.1f}s"
    return c


@pytest.fixture(scope="module")
def truth_by_id(corpus):
    return {t["dialogue_id"]: t for t in corpus.truth}


@pytest.fixture(scope="module")
def text_by_id(corpus):
    return {c["dialogue_id"]: "\n".join(t["text"] for t in c["turns"]) for c in corpus.conversations}


def _dump(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)


def _contains(text: str, value: str | None, version_like: bool = False) -> bool:
    """Independent of the generator's own check: a whole-token, case-insensitive regex."""
    if not value:
        return False
    tail = r"(?![\w-])(?!\.\d)" if version_like else r"(?![\w-])"
    head = r"(?<![\w.])" if version_like else r"(?<!\w)"
    return re.search(head + re.escape(value.lower()) + tail, text.lower()) is not None


# ---------------------------------------------------------------- determinism and scale


def test_same_seed_gives_byte_identical_files(tmp_path):
    s1 = write_corpus(tmp_path / "a", 300, 7)
    s2 = write_corpus(tmp_path / "b", 300, 7)
    assert s1["n_queries"] == s2["n_queries"]
    for name in ("corpus.jsonl", "queries.jsonl", "truth.jsonl"):
        a, b = (tmp_path / "a" / name).read_bytes(), (tmp_path / "b" / name).read_bytes()
        assert a == b, name
        assert a.endswith(b"\n")
    # the in-memory API produces exactly what the writer streams
    mem = generate(300, 7)
    assert _dump(mem.conversations) == (tmp_path / "a" / "corpus.jsonl").read_text(encoding="utf-8")
    assert _dump(mem.truth) == (tmp_path / "a" / "truth.jsonl").read_text(encoding="utf-8")
    assert _dump(mem.queries) == (tmp_path / "a" / "queries.jsonl").read_text(encoding="utf-8")


def test_same_seed_is_identical_in_another_process_with_another_hash_seed():
    def digest(c) -> str:
        return hashlib.sha256((_dump(c.conversations) + _dump(c.truth) + _dump(c.queries)).encode()).hexdigest()

    here = digest(generate(150, 3))
    root = Path(synthetic.__file__).resolve().parents[3]
    code = (
        "import hashlib, json; from sarag_assets.evaluation.synthetic import generate\n"
        "d = lambda rs: ''.join(json.dumps(r, ensure_ascii=False, separators=(',', ':')) + '\\n' for r in rs)\n"
        "c = generate(150, 3)\n"
        "print(hashlib.sha256((d(c.conversations) + d(c.truth) + d(c.queries)).encode()).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == here


def test_the_corpus_of_a_seed_is_pinned(tmp_path):
    """The files of (200, 7) as they were before the generator's rates became one object (issue 63): a
    change of what any seed gives shows here, and is then deliberate."""
    write_corpus(tmp_path, n=200, seed=7)
    digests = {name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()[:16]
               for name in ("corpus.jsonl", "queries.jsonl", "truth.jsonl")}
    assert digests == {"corpus.jsonl": "42e3e5a440b3b39a", "queries.jsonl": "97307a9f626a1160", "truth.jsonl": "09169fe352832571"}


def test_the_rates_drive_the_conversations():
    world, plan = synthetic._world_and_plan(300, 5)
    single = [item for item in plan if item.secondary < 0]

    def truths(**rates):
        chosen = replace(RATES, dialogue=replace(RATES.dialogue, **rates))
        return [render(item, world, 5, chosen)[1] for item in single]

    assert all(t["noise"]["offtopic"] == 1 for t in truths(chatter=1.0))
    assert all(t["noise"]["offtopic"] == 0 for t in truths(chatter=0.0))
    assert all(t["resolved"] for t in truths(resolved=1.0))
    ends = Counter(t["noise"]["outcome"] for t in truths(resolved=0.0, no_reply=0.0, no_reply_or_escalated=1.0))
    assert set(ends) == {"escalated"}
    assert all(not t["noise"]["pii"]["named_speakers"]
               for t in truths(named_speakers=PerChannel(forum=0.0, ticket=0.0, chat=0.0)))


def test_the_rates_drive_the_world_the_queries_and_the_typos():
    none_second = replace(RATES, world=replace(RATES.world, secondary_issue=0.0))
    assert all(item.secondary < 0 for item in synthetic._world_and_plan(300, 5, none_second)[1])
    all_second = replace(RATES, world=replace(RATES.world, secondary_issue=1.0))
    assert sum(item.secondary >= 0 for item in synthetic._world_and_plan(300, 5, all_second)[1]) > 250
    only_version = replace(RATES, queries=replace(RATES.queries, followup_version=1.0))
    patterns = Counter(q["pattern"] for q in generate(300, 5, only_version).queries if q["kind"] == "followup")
    assert set(patterns) <= {"older_version", "newer_version", "same_issue"}
    assert patterns["older_version"] + patterns["newer_version"] > 0
    words = ["connection trouble again", Slot("Xfinity"), " since Monday"]
    for typos, grown in ((TypoRates(common_misspelling=0.0, swap=0.0, swap_or_drop=0.0), 1),  # doubled
                         (TypoRates(common_misspelling=0.0, swap=0.0, swap_or_drop=1.0), -1)):  # dropped
        pieces = list(words)
        assert add_typos(pieces, Random(3), 1.0, typos) == 5  # every word of 4+ letters, never the slot
        lengths = [len(w) for w in " ".join(pieces[::2]).split()]
        assert lengths == [len(w) + grown for w in " ".join(words[::2]).split()]
        assert pieces[1] == words[1]


def test_different_seed_gives_different_corpus():
    a, b = generate(200, 1), generate(200, 2)
    assert _dump(a.conversations) != _dump(b.conversations)
    assert _dump(a.queries) != _dump(b.queries)


def test_scale_and_counts(corpus):
    assert len(corpus.conversations) == N
    assert len(corpus.truth) == N
    assert len({c["dialogue_id"] for c in corpus.conversations}) == N
    assert len(corpus.queries) == query_count(N) == N // 5
    kinds = Counter(q["kind"] for q in corpus.queries)
    assert kinds["single"] == kinds["followup"] == N // 10


def test_query_count_bounds():
    assert query_count(10) == 50
    assert query_count(1000) == 200
    assert query_count(1_000_000) == 2000
    small = generate(60, 5)
    assert len(small.queries) == 50
    assert all(q["gold"] for q in small.queries)


def test_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        generate(0, 1)
    with pytest.raises(ValueError):
        write_corpus(tmp_path, -5, 1)


def test_write_corpus_summary(tmp_path):
    summary = write_corpus(tmp_path / "out", 400, 9)
    assert summary["n_conversations"] == 400
    assert sum(summary["conversations_by_domain"].values()) == 400
    assert sum(summary["conversations_by_channel"].values()) == 400
    assert summary["n_queries"] == sum(summary["queries_by_kind"].values()) == 80
    lines = (tmp_path / "out" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 400
    assert len((tmp_path / "out" / "truth.jsonl").read_text(encoding="utf-8").splitlines()) == 400
    assert len((tmp_path / "out" / "queries.jsonl").read_text(encoding="utf-8").splitlines()) == 80


# ---------------------------------------------------------------- conversations


def test_conversation_shape(corpus, truth_by_id):
    lengths = []
    for conv in corpus.conversations:
        assert set(conv) == {"dialogue_id", "turns", "metadata"}
        assert set(conv["metadata"]) == {"domain", "channel"}  # no ground truth in metadata
        assert conv["metadata"]["channel"] in ("forum", "chat", "ticket")
        turns = conv["turns"]
        lengths.append(len(turns))
        assert 3 <= len(turns) <= 25
        roles = truth_by_id[conv["dialogue_id"]]["speakers"]
        labels = {t["speaker"] for t in turns}
        assert labels <= set(roles)
        assert {roles[lab] for lab in labels} == {"user", "agent"}  # both sides speak
        role_words = labels & (USER_WORDS | AGENT_WORDS)
        assert not role_words or role_words == labels  # never role words mixed with names
        if role_words:
            assert all((lab in USER_WORDS) == (roles[lab] == "user") for lab in labels)
        stamps = []
        for t in turns:
            assert set(t) == {"speaker", "text", "ts"}
            assert t["text"].strip() and t["text"] == t["text"].strip()
            assert "{" not in t["text"] and not re.search(r"\[[^\]]*\|", t["text"])  # no template syntax
            stamps.append(datetime.fromisoformat(t["ts"].replace("Z", "+00:00")))
        assert stamps == sorted(stamps)
        assert (stamps[-1] - stamps[0]).days < 60
    assert max(lengths) >= 15 and min(lengths) == 3


def test_channels_have_different_styles(corpus):
    per_channel = defaultdict(list)
    for conv in corpus.conversations:
        avg = sum(len(t["text"]) for t in conv["turns"]) / len(conv["turns"])
        per_channel[conv["metadata"]["channel"]].append((avg, len(conv["turns"])))
    mean = {ch: sum(a for a, _ in v) / len(v) for ch, v in per_channel.items()}
    turns = {ch: sum(n for _, n in v) / len(v) for ch, v in per_channel.items()}
    assert mean["chat"] < mean["forum"] and mean["chat"] < mean["ticket"]  # chat = short lines
    assert turns["chat"] > turns["forum"]  # ... and more of them


def test_domains_present(corpus):
    share = Counter(c["metadata"]["domain"] for c in corpus.conversations)
    assert {"software", "telecom", "orders"} <= set(share)
    assert all(share[d] / N > 0.1 for d in ("software", "telecom", "orders"))
    assert set(share) == set(synthetic.DOMAIN_NAMES)


def test_no_issue_ids_in_text(corpus, text_by_id):
    ids = {t["issue_id"] for t in corpus.truth}
    assert ids and text_by_id
    for text in text_by_id.values():
        assert not any(i in text for i in ids)


# ---------------------------------------------------------------- truth


def test_truth_covers_every_dialogue(corpus):
    assert [t["dialogue_id"] for t in corpus.truth] == [c["dialogue_id"] for c in corpus.conversations]
    for conv, t in zip(corpus.conversations, corpus.truth):
        for key in (
            "domain", "issue_id", "secondary_issue_id", "product", "version", "os_or_plan", "error_code",
            "error_message", "symptom", "root_cause", "resolution_steps", "resolved", "opened_date", "mentioned",
        ):
            assert key in t, key
        assert t["domain"] == conv["metadata"]["domain"]
        assert t["opened_date"] == conv["turns"][0]["ts"][:10]
        assert t["symptom"] and t["root_cause"] and t["resolution_steps"]
        assert t["secondary_issue_id"] != t["issue_id"]
        if t["domain"] == "orders":
            assert t["version"] is None and t["os_or_plan"] is None and t["order_number"]
        if t["domain"] == "software":
            assert t["version"] and t["os_or_plan"] and t["order_number"] is None
        if t["domain"] == "telecom":
            assert t["model"] and t["os_or_plan"] and t["account_number"]


def test_mentioned_flags_match_the_text(corpus, text_by_id):
    for t in corpus.truth:
        text = text_by_id[t["dialogue_id"]]
        m = t["mentioned"]
        assert m["product"] == (_contains(text, t["product"]) or _contains(text, t["model"])), t["dialogue_id"]
        assert m["version"] == _contains(text, t["version"], version_like=True), t["dialogue_id"]
        assert m["error_code"] == _contains(text, t["error_code"]), t["dialogue_id"]
        assert m["os_or_plan"] == _contains(text, t["os_or_plan"]), t["dialogue_id"]
        assert m["error_message"] == bool(t["error_message"] and t["error_message"].lower() in text.lower())
        for field in ("order_number", "account_number", "account_email"):
            assert m[field] == _contains(text, t[field]), (t["dialogue_id"], field)
    # facts are often, but not always, stated
    rate = lambda f: sum(t["mentioned"][f] for t in corpus.truth if t[f]) / sum(1 for t in corpus.truth if t[f])  # noqa: E731
    assert 0.85 < rate("product") < 1.0
    assert 0.5 < rate("version") < 0.95
    assert 0.5 < rate("error_code") < 0.95


def test_corrections_keep_the_final_value(corpus, text_by_id):
    seen = 0
    for t in corpus.truth:
        for c in t["corrections"]:
            seen += 1
            text = text_by_id[t["dialogue_id"]]
            assert c["said"] != c["final"]
            assert c["said"].lower() in text.lower() and c["final"].lower() in text.lower()
            assert text.lower().rindex(c["final"].lower()) > text.lower().index(c["said"].lower())
            if c["field"] == "version":
                assert c["final"] == t["version"]
            if c["field"] == "os_or_plan":
                assert c["final"] == t["os_or_plan"]
    assert seen > 50


def test_issue_popularity_is_skewed_and_shared(corpus):
    counts = Counter(t["issue_id"] for t in corpus.truth)
    ordered = sorted(counts.values(), reverse=True)
    assert ordered[0] >= 5 * ordered[len(ordered) // 2]
    assert sum(1 for c in ordered if c >= 3) >= 40  # many issues have several conversations


def test_hard_negatives_exist(corpus):
    issues = {}
    for t in corpus.truth:
        issues[t["issue_id"]] = (t["product"], t["symptom"], t["root_cause"], t["fix_version"])
    by_product = defaultdict(set)
    by_symptom = defaultdict(set)
    by_pair = defaultdict(set)
    for iid, (product, symptom, cause, _) in issues.items():
        by_product[product].add(symptom)
        by_symptom[symptom].add(product)
        by_pair[(product, symptom)].add(cause)
    assert sum(1 for s in by_product.values() if len(s) >= 2) >= 10  # different issues, same product
    assert sum(1 for p in by_symptom.values() if len(p) >= 2) >= 10  # same symptom, different products
    assert sum(1 for c in by_pair.values() if len(c) >= 2) >= 3  # same product + symptom, other version/cause


def test_noise_rates_in_bands(corpus, text_by_id):
    def rate(pred) -> float:
        return sum(1 for t in corpus.truth if pred(t)) / N

    emails = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
    phones = re.compile(r"\+\d[\d ()-]{8,}\d")
    email_rate = sum(1 for x in text_by_id.values() if emails.search(x)) / N
    phone_rate = sum(1 for x in text_by_id.values() if phones.search(x)) / N
    rates = {
        "corrections": rate(lambda t: t["corrections"]),
        "typos": rate(lambda t: t["noise"]["typos"] > 0),
        "two_issues": rate(lambda t: t["secondary_issue_id"] is not None),
        "unresolved": rate(lambda t: not t["resolved"]),
        "offtopic": rate(lambda t: t["noise"]["offtopic"] > 0),
        "failed_fixes": rate(lambda t: t["noise"]["failed_fixes"] > 0),
        "clarifying": rate(lambda t: t["noise"]["clarifying_questions"] > 0),
        "named_speakers": rate(lambda t: t["noise"]["pii"]["named_speakers"]),
        "email": email_rate,
        "phone": phone_rate,
    }
    bands = {
        "corrections": (0.05, 0.2),
        "typos": (0.2, 0.6),
        "two_issues": (0.04, 0.12),
        "unresolved": (0.1, 0.35),
        "offtopic": (0.1, 0.4),
        "failed_fixes": (0.3, 0.85),
        "clarifying": (0.35, 0.85),
        "named_speakers": (0.05, 0.3),
        "email": (0.08, 0.4),
        "phone": (0.04, 0.25),
    }
    for key, (lo, hi) in bands.items():
        assert lo <= rates[key] <= hi, (key, rates[key])
    # the generator's own PII record agrees with the text
    assert abs(rate(lambda t: t["noise"]["pii"]["user_email"]) - email_rate) < 0.02


def test_user_statements_vary_within_an_issue(corpus, truth_by_id):
    """Conversations about one issue rarely share a long user sentence."""
    per_issue = defaultdict(Counter)
    for conv in corpus.conversations:
        t = truth_by_id[conv["dialogue_id"]]
        sentences = set()
        for turn in conv["turns"]:
            if t["speakers"][turn["speaker"]] == "user":
                sentences |= {s for s in re.split(r"(?<=[.!?])\s+|\n+", turn["text"]) if len(s) >= 50}
        per_issue[t["issue_id"]].update(sentences)
    total = sum(sum(c.values()) for c in per_issue.values())
    repeated = sum(k for c in per_issue.values() for k in c.values() if k > 1)
    assert repeated / total < 0.25


# ---------------------------------------------------------------- queries


def test_query_shape_and_gold(corpus, truth_by_id):
    by_issue = defaultdict(set)
    for t in corpus.truth:
        by_issue[t["issue_id"]].add(t["dialogue_id"])
        if t["secondary_issue_id"]:
            by_issue[t["secondary_issue_id"]].add(t["dialogue_id"])
    ids = set()
    assert corpus.queries
    for q in corpus.queries:
        assert {"query_id", "kind", "turns", "gold", "nuggets"} <= set(q)
        assert q["query_id"] not in ids
        ids.add(q["query_id"])
        assert q["turns"] and all(t["speaker"] in ("user", "agent") and t["text"].strip() for t in q["turns"])
        assert q["turns"][-1]["speaker"] == "user"
        assert q["gold"] and all(g in truth_by_id for g in q["gold"])
        assert set(q["gold"]) == by_issue[q["issue_id"]]  # all and only the issue's conversations
        for g in q["gold"]:
            t = truth_by_id[g]
            assert q["issue_id"] in (t["issue_id"], t["secondary_issue_id"])
            if t["issue_id"] == q["issue_id"]:
                assert q["nuggets"] == [t["root_cause"], *t["resolution_steps"]]
        assert len(q["nuggets"]) >= 2 and all(isinstance(n, str) and n for n in q["nuggets"])
        if q["kind"] == "single":
            assert len(q["turns"]) == 1
        else:
            assert 2 <= len(q["turns"]) <= 4


def test_followups_resolve_entities_from_history(corpus, truth_by_id):
    follow = [q for q in corpus.queries if q["kind"] == "followup"]
    patterns = Counter(q["pattern"] for q in follow)
    assert {"same_issue", "other_product", "symptom_last"} <= set(patterns)
    assert patterns["older_version"] + patterns["newer_version"] > 0
    for q in follow:
        primary = [truth_by_id[g] for g in q["gold"] if truth_by_id[g]["issue_id"] == q["issue_id"]]
        if not primary:  # only ever a second issue: no truth row describes it
            continue
        t = primary[0]
        versions = {truth_by_id[g]["version"] for g in q["gold"] if truth_by_id[g]["issue_id"] == q["issue_id"]}
        last = q["turns"][-1]["text"]
        earlier = " ".join(x["text"] for x in q["turns"][:-1])
        for value in (t["product"], t["model"], t["error_code"], t["fix_version"], *versions):
            assert not _contains(last, value, version_like=True), (q["query_id"], value)
        assert _contains(earlier, t["product"]) or _contains(earlier, t["model"]), q["query_id"]


def test_queries_do_not_copy_conversation_sentences(corpus, text_by_id):
    checked = 0
    for q in corpus.queries:
        gold_text = "\n".join(text_by_id[g] for g in q["gold"][:50]).lower()
        for turn in q["turns"]:
            if turn["speaker"] != "user":
                continue
            for sentence in re.split(r"(?<=[.!?])\s+", turn["text"]):
                if len(sentence) >= 30:
                    assert sentence.lower() not in gold_text, (q["query_id"], sentence)
                    checked += 1
    assert checked > 0


def test_single_queries_state_just_enough(corpus, truth_by_id):
    single = [q for q in corpus.queries if q["kind"] == "single"]
    with_code = with_product = 0
    for q in single:
        primary = [truth_by_id[g] for g in q["gold"] if truth_by_id[g]["issue_id"] == q["issue_id"]]
        if not primary:  # only ever a second issue: no truth row describes it
            continue
        t = primary[0]
        text = q["turns"][0]["text"]
        with_code += _contains(text, t["error_code"])
        with_product += _contains(text, t["product"]) or _contains(text, t["model"])
    assert 0.05 < with_code / len(single) < 0.6  # error codes sometimes, not always
    assert with_product / len(single) > 0.7
