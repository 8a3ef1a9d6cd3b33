import math
import os
import random

import numpy as np
import polars as pl
import pytest
from scipy import sparse

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from sarag_assets.core.indices.cluster_route import (
    ClusterIndex,
    personalized_pagerank,
    similarity_graph,
    visit_baseline,
)
from sarag_assets.core.indices.clusters import (
    _SHAPES,
    _TFIDF_ARGS,
    CLUSTER_ASSIGNMENTS_SCHEMA,
    CLUSTERS_SCHEMA,
    STRUCTURAL_FEATURES,
    VIEWS,
    ClusterConfig,
    ClusterModel,
    assign,
    choose_k,
    clusters_frame,
    compute_features,
    drift_report,
    fit_clusters,
    linearize,
    needs_refit,
    oversized_clusters,
    query_vectors,
    structural_raw,
)

TOPICS = {
    "router": (["Netwave AX3000 router", "Netwave AX1800 router", "Omni mesh router"],
               ["router keeps rebooting after firmware update", "wifi signal drops every few minutes",
                "cannot connect to the 5GHz wireless band", "router lights blinking orange, no internet",
                "mesh node loses connection to the main router", "slow wifi speed in the bedroom"]),
    "billing": (["Premium subscription", "Family plan", "Annual subscription"],
                ["charged twice for the monthly subscription", "refund for the cancelled order never arrived",
                 "invoice shows the wrong amount", "want to cancel the plan and get my money back",
                 "credit card payment declined at renewal", "unexpected fee on my bill"]),
    "login": (["Account portal", "Mobile app login", "Web dashboard"],
              ["password reset email never arrives", "account locked after failed sign in attempts",
               "two factor authentication code rejected", "cannot sign in with my username",
               "session expires right after logging in", "security question answer not accepted"]),
    "garden": (["Garden sprinkler", "Lawn mower robot"],
               ["timer resets every night", "valve leaks water onto the patio", "nozzle clogged with dirt",
                "mower gets stuck at the flower bed", "blade stops spinning on wet grass"]),
}


def make_rows(topic: str, n: int, seed: int = 0, prefix: str | None = None) -> list[tuple[str, str]]:
    rnd = random.Random(f"{topic}-{seed}")
    products, problems = TOPICS[topic]
    rows = []
    for i in range(n):
        version = f"{rnd.randint(1, 3)}.{rnd.randint(0, 9)}.{rnd.randint(0, 9)}"
        rows.append((f"{prefix or topic}-{i}",
                     f"product: {rnd.choice(products)} | version: {version} | problem: {rnd.choice(problems)}"
                     f" | status: {rnd.choice(['open', 'resolved'])}"))
    return rows


def topic_of(dialogue_id: str) -> str:
    return dialogue_id.split("-")[0]


@pytest.fixture(scope="module")
def rows():
    return make_rows("router", 30) + make_rows("billing", 30) + make_rows("login", 30)


@pytest.fixture(scope="module")
def model(rows):
    return fit_clusters(rows, k=3, seed=0, config=ClusterConfig(n_representatives=10))


@pytest.fixture(scope="module")
def index(model):
    return ClusterIndex.from_fit(model)


def fresh(model: ClusterModel) -> ClusterModel:
    """A copy (through serialization) whose drift counters can be changed without touching the fixture."""
    return ClusterModel.from_bytes(model.to_bytes())


def semantic_cluster_of(model: ClusterModel, topic: str) -> int:
    frame = model.fit_assignments.filter(pl.col("view") == "semantic")
    ids = [c for d, c in zip(frame["dialogue_id"], frame["cluster_id"]) if topic_of(d) == topic]
    assert len(set(ids)) == 1
    return ids[0]


# --- features --------------------------------------------------------------------------------------------


def test_linearize_skips_nulls_and_ids():
    record = {"dialogue_id": "d1", "product": "Netwave AX3000", "version": "1.2.2", "os": None, "error": "null",
              "problem": "  wifi   drops "}
    assert linearize(record) == "product: Netwave AX3000 | version: 1.2.2 | problem: wifi drops"
    assert linearize(record, columns=["version", "product"]) == "version: 1.2.2 | product: Netwave AX3000"


def test_structural_features_count_fields_and_token_shapes():
    raw = dict(zip(STRUCTURAL_FEATURES,
                   structural_raw("product: Netwave AX3000 | version: 1.2.2 | error: E-1234 | os: null")))
    assert raw["filled_fields"] == 3
    assert raw["filled_field_share"] == pytest.approx(0.75)
    for shape in ("alnum", "number", "code", "title", "lower", "punct"):
        assert raw[f"shape_{shape}"] > 0, shape
    assert sum(raw[f"shape_{s}"] for s in _SHAPES) == pytest.approx(1.0)
    assert raw["log_chars"] == pytest.approx(math.log1p(len("product: Netwave AX3000 | version: 1.2.2 | error: E-1234 | os: null")))
    assert structural_raw("").tolist() == [0.0] * len(STRUCTURAL_FEATURES)


def test_feature_views_shapes_norms_and_tfidf_matches_sklearn(model, rows):
    from sklearn.feature_extraction.text import TfidfVectorizer

    f = model.fit_features
    assert f.semantic.shape == (90, 384) and f.structural.shape == (90, len(STRUCTURAL_FEATURES))
    assert np.allclose(np.linalg.norm(f.semantic, axis=1), 1.0, atol=1e-5)
    assert np.allclose(np.linalg.norm(f.heuristic, axis=1), 1.0, atol=1e-5)
    assert np.allclose(f.structural.mean(axis=0), 0.0, atol=1e-4)
    texts = [t for _, t in rows]
    ours = model.heuristic.tfidf(texts).toarray()
    reference = TfidfVectorizer(sublinear_tf=True, **_TFIDF_ARGS).fit(texts)
    theirs = reference.transform(texts).toarray()[:, [reference.vocabulary_[t] for t in model.heuristic.vocabulary]]
    assert np.allclose(ours, theirs, atol=1e-5)
    # a new row is transformed with the fitted vocabulary (unknown words are ignored, not added)
    again = compute_features(model, [("n1", texts[0] + " zanzibar")])
    assert np.allclose(again.heuristic[0], f.heuristic[0], atol=1e-5)


# --- fit --------------------------------------------------------------------------------------------------


def test_k_rule():
    assert [choose_k(n) for n in (1, 2, 8, 50, 90, 2000, 10_000, 100_000)] == [1, 2, 2, 5, 7, 32, 64, 64]
    assert choose_k(90, k_min=10) == 10 and choose_k(10_000, k_max=20) == 20 and choose_k(3, k_min=5) == 3
    with pytest.raises(ValueError):
        choose_k(0)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((90, 384)).astype(np.float32)
    rows = [(f"r{i}", f"text {i} alpha beta gamma {i % 7}") for i in range(90)]
    fitted = fit_clusters(rows, embeddings=vectors)
    assert {v.k for v in fitted.views.values()} == {7}
    assert {v.k for v in fit_clusters(rows, embeddings=vectors, config=ClusterConfig(k=4)).views.values()} == {4}


def test_fit_is_deterministic_for_a_seed(rows, model):
    again = fit_clusters(rows, k=3, seed=0, config=ClusterConfig(n_representatives=10))
    assert again.model_version == model.model_version
    assert again.to_bytes() == model.to_bytes()
    assert again.fit_assignments.equals(model.fit_assignments)


def test_semantic_clusters_recover_the_topics(model):
    frame = model.fit_assignments.filter(pl.col("view") == "semantic")
    by_cluster: dict[int, set[str]] = {}
    for d, c in zip(frame["dialogue_id"], frame["cluster_id"]):
        by_cluster.setdefault(c, set()).add(topic_of(d))
    assert sorted(len(t) for t in by_cluster.values()) == [1, 1, 1]


def test_representatives_are_the_members_closest_to_the_centroid(model):
    frame = model.fit_assignments
    checked = 0
    for view in VIEWS:
        vm = model.views[view]
        for c in range(vm.k):
            members = frame.filter((pl.col("view") == view) & (pl.col("cluster_id") == c)).sort(["distance", "dialogue_id"])
            rep_distances = members.filter(pl.col("dialogue_id").is_in(vm.representatives[c]))["distance"]
            # the m smallest distances (ties between equal rows may pick either)
            assert rep_distances.sort().to_list() == members["distance"].to_list()[: model.config.n_representatives]
            assert members.filter(pl.col("is_representative"))["dialogue_id"].sort().to_list() == sorted(vm.representatives[c])
            reps = members.filter(pl.col("is_representative"))
            assert reps["distance"].max() <= members.filter(~pl.col("is_representative"))["distance"].min()
            assert vm.rep_counts[c] == len(vm.representatives[c]) == min(10, len(members))
            # representative vectors are stored closest first and really are at those distances
            vecs = vm.rep_vectors[c, : vm.rep_counts[c]]
            dists = np.linalg.norm(vecs - vm.centroids[c], axis=1)
            assert np.all(np.diff(dists) >= -1e-5)
            checked += 1
    assert checked >= len(VIEWS)


def test_frames_have_fixed_columns_and_sizes(model):
    assert list(model.fit_assignments.schema.items()) == list(CLUSTER_ASSIGNMENTS_SCHEMA.items())
    assert model.fit_assignments.height == 3 * 90
    clusters = clusters_frame(model, model.fit_assignments)
    assert list(clusters.schema.items()) == list(CLUSTERS_SCHEMA.items())
    assert clusters.group_by("view").agg(pl.col("size").sum())["size"].to_list() == [90, 90, 90]
    assert clusters.equals(clusters_frame(model))  # fit sizes, same thing straight after the fit
    assert oversized_clusters(clusters).is_empty()


def test_oversized_cluster_flag():
    clusters = pl.DataFrame(
        [("semantic", 0, 60, 50, "v"), ("semantic", 1, 40, 40, "v"), ("heuristic", 0, 50, 50, "v"),
         ("heuristic", 1, 50, 50, "v")],
        schema=CLUSTERS_SCHEMA, orient="row",
    )
    flagged = oversized_clusters(clusters)
    assert flagged.select("view", "cluster_id").rows() == [("semantic", 0)]  # exactly half is not "more than"
    assert flagged["share"].to_list() == [pytest.approx(0.6)]


# --- assign and drift -------------------------------------------------------------------------------------


def test_assign_puts_a_new_row_in_its_topics_cluster(model):
    m = fresh(model)
    new = [("router-new", "product: Netwave AX3000 router | version: 2.0.1 | problem: the wifi keeps disconnecting "
                          "and the router restarts | status: open")]
    frame = assign(m, new)
    assert list(frame.schema.items()) == list(CLUSTER_ASSIGNMENTS_SCHEMA.items())
    semantic = frame.filter(pl.col("view") == "semantic")
    assert semantic["cluster_id"].to_list() == [semantic_cluster_of(model, "router")]
    assert not frame["is_representative"].any() and set(frame["model_version"]) == {model.model_version}
    # representatives do not move; sizes count the new row
    assert m.views["semantic"].representatives == model.views["semantic"].representatives
    sizes = clusters_frame(m, pl.concat([model.fit_assignments, frame]))
    assert sizes.group_by("view").agg(pl.col("size").sum())["size"].to_list() == [91, 91, 91]


def test_drift_rises_for_a_new_topic_and_needs_refit_fires(model, rows):
    same = fresh(model)
    assign(same, make_rows("router", 10, seed=7, prefix="r2") + make_rows("billing", 10, seed=7, prefix="b2")
             + make_rows("login", 10, seed=7, prefix="l2"))
    same_report = drift_report(same)
    assert not same_report["needs_refit"], same_report
    assert same_report["views"]["semantic"]["ratio"] < 1.15

    drifted = fresh(model)
    assign(drifted, make_rows("garden", 30, seed=1))
    report = drift_report(drifted)
    assert report["views"]["semantic"]["ratio"] > same_report["views"]["semantic"]["ratio"] + 0.3
    assert report["needs_refit"] and needs_refit(drifted)
    assert any(r.startswith("semantic drift") for r in report["reasons"])
    assert not needs_refit(drifted, threshold=10.0)  # only the drift rule could fire here (33% new rows)

    few = fresh(model)
    assign(few, make_rows("garden", 5, seed=1))  # too few rows to judge drift
    assert not needs_refit(few)

    grown = fresh(model)  # the share rule: half as many rows again as the fit saw (re-landed texts here)
    assign(grown, [(f"again-{i}", text) for i, (_, text) in enumerate(rows[:45])])
    assert drift_report(grown)["new_share"] == pytest.approx(0.5)
    assert needs_refit(grown, threshold=10.0) and not needs_refit(grown, threshold=10.0, max_new_share=0.6)


# --- serialization ----------------------------------------------------------------------------------------


def test_serialization_round_trip(model, index):
    m = fresh(model)
    assign(m, make_rows("garden", 3, seed=2))
    back = ClusterModel.from_bytes(m.to_bytes())
    assert back.to_bytes() == m.to_bytes()
    assert back.config == m.config and back.model_version == m.model_version and back.n_assigned == 3
    for view in VIEWS:
        assert np.array_equal(back.views[view].centroids, m.views[view].centroids)
        assert back.views[view].representatives == m.views[view].representatives
    new = make_rows("billing", 4, seed=3, prefix="b9")
    assert assign(back, new).equals(assign(m, new))
    rebuilt = ClusterIndex.build(back, model.fit_assignments, model.fit_features.dialogue_ids,
                                   model.fit_features.semantic)
    q = query_vectors(back, "I was charged twice this month")
    assert rebuilt.route(q) == index.route(q)
    with pytest.raises(ValueError):
        ClusterModel.from_bytes(_npz(meta=np.frombuffer(b'{"format": "other"}', dtype=np.uint8)))


def _npz(**arrays) -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


# --- route ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("topic, query", [
    ("router", "my wifi router restarts all the time"),
    ("billing", "I was billed two times for my plan"),
    ("login", "I forgot my password and cannot log in"),
])
def test_route_returns_the_topic_first(model, index, topic, query):
    q = query_vectors(model, query)
    assert index.route_clusters(q)["semantic"][0] == semantic_cluster_of(model, topic)
    hits = index.route(q, top_k=10)
    assert [topic_of(h.dialogue_id) for h in hits] == [topic] * 10
    assert all("semantic" in h.route_info["views"] for h in hits)
    assert all(h.route_info["clusters"]["semantic"] == semantic_cluster_of(model, topic) for h in hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    everything = index.route(q, top_k=None)
    assert all(np.isfinite(h.score) and h.score > 0 for h in everything)  # visits relative to any walk's
    assert len({h.dialogue_id for h in everything}) == len(everything)
    assert index.route(q, top_k=10) == hits  # deterministic


def test_route_caps_candidates_by_similarity(model, index):
    q = query_vectors(model, "router firmware problem")
    capped = index.route(q, top_k=None, max_candidates=15)
    assert len(capped) == 15
    full = index.route(q, top_k=None)
    top15 = sorted(full, key=lambda h: -h.route_info["similarity"])[:15]
    assert {h.dialogue_id for h in capped} == {h.dialogue_id for h in top15}


def test_index_uses_current_assignments_of_the_models_version(model):
    m = fresh(model)
    new = make_rows("router", 2, seed=11, prefix="rnew")
    assigned = assign(m, new)
    stale = assigned.with_columns(pl.lit("old-version").alias("model_version"), pl.lit(0).cast(pl.Int64).alias("cluster_id"))
    features = compute_features(m, new)
    ids = model.fit_features.dialogue_ids + features.dialogue_ids
    vectors = np.vstack([model.fit_features.semantic, features.semantic])
    idx = ClusterIndex.build(m, pl.concat([model.fit_assignments, assigned, stale]), ids, vectors)
    router = semantic_cluster_of(model, "router")
    assert idx.row_clusters["semantic"][-2:].tolist() == [router, router]
    hits = idx.route(query_vectors(m, "router keeps rebooting"), top_k=None)
    assert {"rnew-0", "rnew-1"} <= {h.dialogue_id for h in hits}
    # rows that have vectors but no assignment are never candidates
    idx2 = ClusterIndex.build(m, model.fit_assignments, ids, vectors)
    assert not {"rnew-0", "rnew-1"} & {h.dialogue_id for h in idx2.route(query_vectors(m, "router keeps rebooting"), top_k=None)}


# --- graph and PageRank -----------------------------------------------------------------------------------


def test_similarity_graph_is_sparse_symmetric_and_thresholded():
    rng = np.random.default_rng(1)
    centers = rng.standard_normal((3, 32))
    x = np.vstack([c + 0.3 * rng.standard_normal((40, 32)) for c in centers]).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    g = similarity_graph(x, tau=0.3, top_n=5)
    assert (g != g.T).nnz == 0 and g.diagonal().sum() == 0
    assert g.data.min() >= 0.3
    assert g.nnz <= 2 * 5 * 120
    rows, cols = g.nonzero()
    assert np.all(rows // 40 == cols // 40)  # neighbours come from the same group
    dense = x @ x.T
    np.fill_diagonal(dense, -1)
    for i in range(0, 120, 17):  # every node links to its 5 most similar others
        assert set(np.argsort(-dense[i])[:5]) <= set(g[i].indices)
    assert similarity_graph(x, tau=0.99, top_n=5).nnz == 0
    duplicates = np.repeat(x[:1], 30, axis=0)  # ties: still exactly top_n per node before symmetrizing
    assert similarity_graph(duplicates, tau=0.3, top_n=4).nnz <= 2 * 4 * 30


def test_personalized_pagerank_sums_to_one_and_respects_damping():
    rng = np.random.default_rng(2)
    n = 25
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.2)
    np.fill_diagonal(dense, 0)
    dense[3] = 0  # a dangling node
    a = sparse.csr_matrix(dense)
    p = rng.random(n)
    r = personalized_pagerank(a, p, 0.85)
    assert r.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(r >= 0.15 * p / p.sum() - 1e-12)  # at least the teleport share of the seed
    assert np.allclose(personalized_pagerank(a, p, 0.0), p / p.sum())  # no walking: the seed itself
    assert np.allclose(personalized_pagerank(sparse.csr_matrix((n, n)), p, 0.85), p / p.sum())  # no edges
    assert np.allclose(personalized_pagerank(a, np.zeros(n), 0.85).sum(), 1.0)
    # more damping moves mass away from the seed
    seed = np.zeros(n)
    seed[0] = 1.0
    assert personalized_pagerank(a, seed, 0.5)[0] > personalized_pagerank(a, seed, 0.85)[0]

    nx = pytest.importorskip("networkx")
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    for i, j in zip(*dense.nonzero()):
        graph.add_edge(int(i), int(j), weight=float(dense[i, j]))
    expected = nx.pagerank(graph, alpha=0.85, personalization={i: float(p[i]) for i in range(n)}, tol=1e-12,
                           max_iter=500, weight="weight")
    assert np.allclose(r, [expected[i] for i in range(n)], atol=1e-6)


def test_the_route_score_is_the_query_walk_relative_to_any_walk():
    # a hub joined to every leaf; the query is about leaf 1 (and a little leaf 2, its neighbour)
    n = 8
    a = sparse.lil_matrix((n, n))
    for i, j in [(0, i) for i in range(1, n)] + [(1, 2)]:
        a[i, j] = a[j, i] = 0.5
    a = a.tocsr()
    seed = np.array([0.05, 1.0, 0.6] + [0.05] * (n - 3))
    plain = personalized_pagerank(a, seed, 0.85)
    relative = plain / visit_baseline(a, 0.85)
    assert int(np.argmax(plain)) == 0  # every walk passes through the hub
    assert list(np.argsort(-relative)[:3]) == [1, 2, 0]
    degree = np.asarray(a.sum(axis=1)).ravel()
    assert np.allclose(visit_baseline(a, 1.0), degree / degree.sum())
    assert np.allclose(visit_baseline(sparse.csr_matrix((3, 3)), 0.85), 1 / 3)


def test_route_on_random_vectors_without_the_embedder():
    rng = np.random.default_rng(3)
    n = 600
    centers = rng.standard_normal((4, 384))
    labels = np.repeat(np.arange(4), n // 4)
    vectors = (centers[labels] + 0.8 * rng.standard_normal((n, 384))).astype(np.float32)
    rows = [(f"g{labels[i]}-{i}", f"item {i} group g{labels[i]} word{labels[i]}") for i in range(n)]
    fitted = fit_clusters(rows, k=4, embeddings=vectors, config=ClusterConfig(max_candidates=200))
    idx = ClusterIndex.from_fit(fitted)
    query = query_vectors(fitted, "group g2 word2", embedding=centers[2])
    hits = idx.route(query, top_k=None)
    assert len(hits) == 200
    assert all(h.dialogue_id.startswith("g2-") for h in hits[:20])
    assert all(np.isfinite(h.score) and h.score > 0 for h in hits)


def test_a_view_without_signal_is_left_out_of_the_route():
    rng = np.random.default_rng(4)
    rows = [(f"r{i}", f"alpha beta {i % 5} gamma delta") for i in range(40)]
    fitted = fit_clusters(rows, k=2, embeddings=rng.standard_normal((40, 384)))
    idx = ClusterIndex.from_fit(fitted)
    query = query_vectors(fitted, "zzz qqq", embedding=rng.standard_normal(384))  # no known word
    assert not np.any(query["heuristic"])
    assert set(idx.route_clusters(query)) == {"semantic", "structural"}
    assert all("heuristic" not in h.route_info["views"] for h in idx.route(query, top_k=None))
    assert assign(fitted, [], embeddings=np.zeros((0, 384))).height == 0
