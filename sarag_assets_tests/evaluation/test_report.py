"""The report: exact JSON keys, figures equal to the per-query means, renderings, the chart file."""

from __future__ import annotations

import json

import pytest

from sarag_assets.evaluation.metrics import score_queries
from sarag_assets.evaluation.queries import EvalQuery
from sarag_assets.evaluation.report import (
    EvalReport,
    build_report,
    render_bar_chart,
    render_markdown,
    render_table,
    timing_summary,
    validate_report_dict,
)

QUERIES = [
    EvalQuery("q1", [{"speaker": "user", "text": "a"}], ["c1"], None, "single"),
    EvalQuery("q2", [{"speaker": "user", "text": "b"}], ["c2", "c3"], None, "single"),
    EvalQuery("q3", [{"speaker": "user", "text": "c"}, {"speaker": "user", "text": "and it?"}], ["c4"], None, "followup"),
]
RANKINGS = {
    "good": {"q1": ["c1"], "q2": ["c2", "c3"], "q3": ["c4"]},
    "poor": {"q1": ["c9", "c8", "c1"], "q2": ["c3"], "q3": ["c9"]},
}


def _report(queries=QUERIES, **kw) -> EvalReport:
    scores = {name: score_queries(queries, r) for name, r in RANKINGS.items()}
    return build_report(12, scores, **kw)


def test_json_has_exactly_the_contract_keys():
    data = json.loads(_report(ingest_s=3.5, query_ms=[10, 20, 30]).to_json())
    assert set(data) == {"n_dialogues", "n_queries", "systems", "timings", "by_kind"}
    assert data["n_dialogues"] == 12 and data["n_queries"] == 3
    assert set(data["systems"]) == {"good", "poor"}
    for metrics in data["systems"].values():
        assert list(metrics) == ["R@1", "R@3", "R@10", "MRR@3", "nDCG@10"]  # no nuggets given: no nugget key
    assert set(data["timings"]) == {"ingest_s", "query_ms_p50", "query_ms_p95"}
    assert data["timings"]["ingest_s"] == 3.5 and data["timings"]["query_ms_p50"] == 20.0
    assert set(data["by_kind"]) == {"single", "followup"}
    assert data["by_kind"]["single"]["n_queries"] == 2
    validate_report_dict(data)


def test_figures_are_the_means_over_queries():
    data = _report().to_dict()
    assert data["systems"]["good"]["R@3"] == 1.0
    # poor: q1 gold at rank 3 -> R@1 0, R@3 1, MRR 1/3; q2 one of two gold at rank 1 -> R@1 .5, MRR 1; q3 nothing
    assert data["systems"]["poor"]["R@1"] == pytest.approx(round(0.5 / 3, 4))
    assert data["systems"]["poor"]["R@3"] == pytest.approx(round(1.5 / 3, 4))
    assert data["systems"]["poor"]["MRR@3"] == pytest.approx(round((1 / 3 + 1) / 3, 4))
    assert data["by_kind"]["followup"]["systems"]["poor"]["R@3"] == 0.0
    assert data["by_kind"]["single"]["systems"]["poor"]["R@3"] == pytest.approx(0.75)


def test_nugget_coverage_only_when_nuggets_are_given():
    queries = [EvalQuery("q1", [{"speaker": "user", "text": "a"}], ["c1"], ["reinstall the printer driver"])]
    texts = {"c1": "Reinstall the printer driver.", "c9": "Nothing."}
    scores = {"s": score_queries(queries, {"q1": ["c1"]}, texts=texts), "t": score_queries(queries, {"q1": ["c9"]}, texts=texts)}
    data = build_report(2, scores).to_dict()
    assert data["systems"]["s"]["nugget_coverage@3"] == 1.0
    assert data["systems"]["t"]["nugget_coverage@3"] == 0.0
    assert "by_kind" not in data  # no kinds
    assert data["timings"] == {"ingest_s": None, "query_ms_p50": None, "query_ms_p95": None}


def test_round_trip_and_validation(tmp_path):
    report = _report(ingest_s=1.0, query_ms=[5.0])
    path = report.write_json(tmp_path / "out" / "report.json")
    data = json.loads(path.read_text())
    again = EvalReport.from_dict(data)
    assert again.to_dict() == data
    for broken, problem in [
        ({k: v for k, v in data.items() if k != "timings"}, "lacks timings"),
        ({**data, "extra": 1}, "unknown keys"),
        ({**data, "timings": {"ingest_s": 1}}, "exactly ingest_s"),
        ({**data, "systems": {"x": {"R@1": 0.5}}}, "lacks R@3"),
        ({**data, "systems": {"x": {**data["systems"]["good"], "R@1": 1.5}}}, r"in \[0, 1\]"),
    ]:
        with pytest.raises(ValueError, match=problem):
            validate_report_dict(broken)


def test_timing_percentiles():
    t = timing_summary(2.0, list(range(1, 101)))
    assert t["query_ms_p50"] == pytest.approx(50.5)
    assert t["query_ms_p95"] == pytest.approx(95.05)  # linear: 95 + 0.05 * (96 - 95)


def test_systems_must_share_the_queries():
    a = score_queries(QUERIES, RANKINGS["good"])
    with pytest.raises(ValueError, match="different"):
        build_report(3, {"a": a, "b": a[:2]})
    with pytest.raises(ValueError, match="no systems"):
        build_report(3, {})


def test_table_is_aligned_and_complete():
    text = render_table(_report(ingest_s=12.25, query_ms=[3.0, 4.0]))
    lines = text.splitlines()
    assert lines[0].startswith("12 conversations, 3 queries; ingest 12.2 s")
    header = next(i for i, l in enumerate(lines) if l.startswith("system") and "R@1" in l)
    block = lines[header : header + 4]
    assert len({len(l) for l in block}) == 1  # header, rule and rows have the same width
    for col in ("R@1", "R@3", "R@10", "MRR@3", "nDCG@10"):
        end = block[0].index(col) + len(col)
        assert all(row[end - 1] != " " for row in block[2:])  # right-aligned under the header
    assert "R@3 by query kind:" in text and "followup (n=1)" in text and "single (n=2)" in text


def test_markdown_tables():
    md = render_markdown(_report(), title="Generated benchmark")
    assert md.startswith("### Generated benchmark")
    assert "| system | R@1 | R@3 | R@10 | MRR@3 | nDCG@10 |" in md
    assert "| `good` | 0.833 | 1.000 | 1.000 | 1.000 | 1.000 |" in md  # q2: one of two gold at rank 1
    assert "| system | single (n=2) | followup (n=1) |" in md or "| system | followup (n=1) | single (n=2) |" in md


def test_bar_chart_file_is_written(tmp_path):
    from PIL import Image

    out = render_bar_chart(_report(), tmp_path / "charts" / "r3.png")
    assert out.exists() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(out) as img:
        assert img.width > 300 and img.height > 200
    flat = render_bar_chart(_report(), tmp_path / "flat.png", by_kind=False, metric="MRR@3")
    assert flat.exists() and flat.read_bytes() != out.read_bytes()
    with pytest.raises(ValueError, match="unknown metric"):
        render_bar_chart(_report(), tmp_path / "x.png", metric="P@5")
