"""The evaluation report: one structure, its JSON contract, and three renderings. No Dagster.

JSON contract (the keys other tools read; exactly these, plus the optional ``by_kind``)::

    {"n_dialogues": int, "n_queries": int,
     "systems": {NAME: {"R@1", "R@3", "R@10", "MRR@3", "nDCG@10", "nugget_coverage@3"?}},
     "timings": {"ingest_s", "query_ms_p50", "query_ms_p95"},
     "by_kind": {KIND: {"n_queries": int, "systems": {NAME: {same metrics}}}}}      # only when kinds exist

``nugget_coverage@3`` appears for a system only when nuggets were given and the system's nugget
coverage was scored. Metric values are rounded to 4 decimals in the JSON; timings are seconds (ingest)
and milliseconds per query (p50/p95 by linear interpolation between order statistics, numpy's default);
a timing that was not measured is null.

Renderings: ``render_table`` (aligned plain text for stdout), ``render_markdown`` and
``render_bar_chart`` (a PNG: R@3, or another metric, per system, grouped per query kind; matplotlib's
Agg canvas, no display needed).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from sarag_assets.evaluation.metrics import (
    NUGGET_METRIC,
    RETRIEVAL_METRICS,
    QueryScore,
    aggregate,
)

__all__ = [
    "REPORT_KEYS",
    "TIMING_KEYS",
    "SYSTEM_METRICS",
    "EvalReport",
    "validate_report_dict",
    "timing_summary",
    "build_report",
    "render_table",
    "render_markdown",
    "render_bar_chart",
]

REPORT_KEYS: tuple[str, ...] = ("n_dialogues", "n_queries", "systems", "timings")
OPTIONAL_KEYS: tuple[str, ...] = ("by_kind",)
TIMING_KEYS: tuple[str, ...] = ("ingest_s", "query_ms_p50", "query_ms_p95")
SYSTEM_METRICS: tuple[str, ...] = (*RETRIEVAL_METRICS, NUGGET_METRIC)
_DIGITS = 4


def _round(value: float | None, digits: int = _DIGITS) -> float | None:
    return None if value is None else round(float(value), digits)


@dataclass
class EvalReport:
    n_dialogues: int
    n_queries: int
    systems: dict[str, dict[str, float]]  # system -> metric -> mean over queries
    timings: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(TIMING_KEYS))
    by_kind: dict[str, dict[str, Any]] | None = None  # kind -> {"n_queries", "systems": {system: metrics}}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n_dialogues": int(self.n_dialogues),
            "n_queries": int(self.n_queries),
            "systems": {name: _metrics_dict(m) for name, m in self.systems.items()},
            "timings": {k: _round(self.timings.get(k), 3) for k in TIMING_KEYS},
        }
        if self.by_kind:
            out["by_kind"] = {
                kind: {
                    "n_queries": int(v["n_queries"]),
                    "systems": {name: _metrics_dict(m) for name, m in v["systems"].items()},
                }
                for kind, v in self.by_kind.items()
            }
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def write_json(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EvalReport":
        validate_report_dict(data)
        return cls(
            int(data["n_dialogues"]),
            int(data["n_queries"]),
            {name: dict(m) for name, m in data["systems"].items()},
            dict(data["timings"]),
            {k: {"n_queries": v["n_queries"], "systems": dict(v["systems"])} for k, v in data["by_kind"].items()}
            if data.get("by_kind")
            else None,
        )

    @property
    def kinds(self) -> list[str]:
        return list(self.by_kind or {})

    def has_nuggets(self) -> bool:
        return any(NUGGET_METRIC in m for m in self.systems.values())


def _metrics_dict(metrics: Mapping[str, float]) -> dict[str, float]:
    return {m: _round(metrics[m]) for m in SYSTEM_METRICS if m in metrics}


def _check_metrics(where: str, metrics: Any) -> None:
    if not isinstance(metrics, Mapping):
        raise ValueError(f"{where} must be an object of metrics")
    missing = [m for m in RETRIEVAL_METRICS if m not in metrics]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}")
    unknown = [m for m in metrics if m not in SYSTEM_METRICS]
    if unknown:
        raise ValueError(f"{where} has unknown metrics {', '.join(map(repr, unknown))}")
    for m, v in metrics.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 <= v <= 1.0:
            raise ValueError(f"{where}[{m!r}] must be a number in [0, 1], got {v!r}")


def validate_report_dict(data: Mapping[str, Any]) -> None:
    """Raise ValueError unless ``data`` follows the report's JSON contract exactly."""
    if not isinstance(data, Mapping):
        raise ValueError("a report must be a JSON object")
    missing = [k for k in REPORT_KEYS if k not in data]
    if missing:
        raise ValueError(f"report lacks {', '.join(missing)}")
    unknown = [k for k in data if k not in REPORT_KEYS + OPTIONAL_KEYS]
    if unknown:
        raise ValueError(f"report has unknown keys {', '.join(map(repr, unknown))}")
    for k in ("n_dialogues", "n_queries"):
        if not isinstance(data[k], int) or isinstance(data[k], bool) or data[k] < 0:
            raise ValueError(f"report[{k!r}] must be a non-negative integer")
    if not isinstance(data["systems"], Mapping):
        raise ValueError("report['systems'] must be an object")
    for name, metrics in data["systems"].items():
        _check_metrics(f"systems[{name!r}]", metrics)
    timings = data["timings"]
    if not isinstance(timings, Mapping) or set(timings) != set(TIMING_KEYS):
        raise ValueError(f"report['timings'] must have exactly {', '.join(TIMING_KEYS)}")
    for k, v in timings.items():
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0):
            raise ValueError(f"timings[{k!r}] must be a non-negative number or null")
    for kind, v in (data.get("by_kind") or {}).items():
        if not isinstance(v, Mapping) or "systems" not in v or "n_queries" not in v:
            raise ValueError(f"by_kind[{kind!r}] must have n_queries and systems")
        for name, metrics in v["systems"].items():
            _check_metrics(f"by_kind[{kind!r}].systems[{name!r}]", metrics)


def timing_summary(ingest_s: float | None, query_ms: Sequence[float] | None) -> dict[str, float | None]:
    """The report's timings: ingest seconds and the p50/p95 of per-query latencies (ms)."""
    lat = np.asarray(list(query_ms or []), dtype=np.float64)
    return {
        "ingest_s": None if ingest_s is None else float(ingest_s),
        "query_ms_p50": float(np.percentile(lat, 50)) if lat.size else None,
        "query_ms_p95": float(np.percentile(lat, 95)) if lat.size else None,
    }


def build_report(
    n_dialogues: int,
    system_scores: Mapping[str, Sequence[QueryScore]],
    *,
    ingest_s: float | None = None,
    query_ms: Sequence[float] | None = None,
) -> EvalReport:
    """A report from each system's per-query scores (``metrics.score_queries``), all over the same queries.

    ``query_ms`` are the latencies the report's timings describe (the caller decides whose: for
    ``sarag eval``, the full system's).
    """
    if not system_scores:
        raise ValueError("no systems to report")
    counts = {name: len(s) for name, s in system_scores.items()}
    if len(set(counts.values())) != 1:
        raise ValueError(f"systems were scored on different numbers of queries: {counts}")
    ids = {name: [q.query_id for q in s] for name, s in system_scores.items()}
    first = next(iter(ids.values()))
    if any(set(v) != set(first) for v in ids.values()):
        raise ValueError("systems were scored on different queries")
    systems: dict[str, dict[str, float]] = {}
    by_kind: dict[str, dict[str, Any]] = {}
    for name, scores in system_scores.items():
        agg = aggregate(scores)
        systems[name] = agg["all"]
        for kind, values in agg["by_kind"].items():
            entry = by_kind.setdefault(kind, {"n_queries": values["n"], "systems": {}})
            entry["systems"][name] = {m: v for m, v in values.items() if m != "n"}
    return EvalReport(
        n_dialogues=n_dialogues,
        n_queries=len(first),
        systems=systems,
        timings=timing_summary(ingest_s, query_ms),
        by_kind=by_kind or None,
    )


# --------------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------------


def _columns(report: EvalReport) -> list[str]:
    return [m for m in SYSTEM_METRICS if any(m in v for v in report.systems.values())]


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _timings_line(report: EvalReport) -> str:
    t = report.timings
    parts = [
        f"ingest {_fmt(t.get('ingest_s'), 1)} s",
        f"query p50 {_fmt(t.get('query_ms_p50'), 1)} ms",
        f"p95 {_fmt(t.get('query_ms_p95'), 1)} ms",
    ]
    return ", ".join(parts)


def _aligned(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def _kind_header(report: EvalReport) -> list[str]:
    return ["system", *[f"{k} (n={report.by_kind[k]['n_queries']})" for k in report.kinds]]


def _kind_rows(report: EvalReport, metric: str) -> list[list[str]]:
    return [
        [name, *[_fmt(report.by_kind[k]["systems"].get(name, {}).get(metric)) for k in report.kinds]]
        for name in report.systems
    ]


def render_table(report: EvalReport, *, kind_metric: str = "R@3") -> str:
    """An aligned plain-text table for stdout (and a per-kind table of ``kind_metric`` when kinds exist)."""
    cols = _columns(report)
    lines = [
        f"{report.n_dialogues} conversations, {report.n_queries} queries; {_timings_line(report)}",
        "",
        *_aligned(["system", *cols], [[n, *[_fmt(m.get(c)) for c in cols]] for n, m in report.systems.items()]),
    ]
    if report.by_kind:
        lines += ["", f"{kind_metric} by query kind:", *_aligned(_kind_header(report), _kind_rows(report, kind_metric))]
    return "\n".join(lines) + "\n"


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def render_markdown(report: EvalReport, *, kind_metric: str = "R@3", title: str | None = None) -> str:
    """The report as markdown: a metrics table per system, then ``kind_metric`` per query kind."""
    cols = _columns(report)
    lines = [f"### {title}", ""] if title else []
    lines += [
        f"{report.n_dialogues} conversations, {report.n_queries} queries; {_timings_line(report)}.",
        "",
        *_md_table(["system", *cols], [[f"`{n}`", *[_fmt(m.get(c)) for c in cols]] for n, m in report.systems.items()]),
    ]
    if report.by_kind:
        rows = [[f"`{r[0]}`", *r[1:]] for r in _kind_rows(report, kind_metric)]
        lines += ["", f"{kind_metric} by query kind:", "", *_md_table(_kind_header(report), rows)]
    return "\n".join(lines) + "\n"


def render_bar_chart(
    report: EvalReport, path: str | os.PathLike, *, metric: str = "R@3", by_kind: bool = True, title: str | None = None
) -> Path:
    """A PNG bar chart of ``metric`` per system (bars grouped: all queries, then each kind). Returns the path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if metric not in SYSTEM_METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(SYSTEM_METRICS)}")
    names = list(report.systems)
    series: list[tuple[str, list[float]]] = [
        (f"all (n={report.n_queries})", [report.systems[n].get(metric, np.nan) for n in names])
    ]
    if by_kind and report.by_kind:
        for kind in report.kinds:
            entry = report.by_kind[kind]
            series.append(
                (f"{kind} (n={entry['n_queries']})", [entry["systems"].get(n, {}).get(metric, np.nan) for n in names])
            )
    fig = Figure(figsize=(max(6.0, 1.1 * len(names) * max(1, len(series)) * 0.6 + 2), 4.2), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / len(series)
    x = np.arange(len(names))
    for i, (label, values) in enumerate(series):
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=label)
        ax.bar_label(bars, labels=["" if np.isnan(v) else f"{v:.2f}" for v in values], fontsize=7, padding=1)
    ax.set_xticks(x, names, rotation=20 if len(names) > 5 else 0, ha="right" if len(names) > 5 else "center")
    ax.set_ylim(0, 1.08)
    ax.set_ylabel(metric)
    ax.set_title(title or f"{metric} per system ({report.n_dialogues} conversations, {report.n_queries} queries)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    if len(series) > 1:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def ranking_views(warehouse_path: Path) -> str:
    """One line on which views vote in the home's ranking and what its calibration measured (`query.calibration`)."""
    from sarag_assets.core import warehouse

    with warehouse.connect(warehouse_path, read_only=True) as con:
        if "ranking_calibrations" not in warehouse.table_names(con):
            return "Ranking: no calibration recorded (the text views vote)."
        row = con.execute("SELECT queries, weights_json, report_json FROM ranking_calibrations "
                          "ORDER BY measured_at DESC LIMIT 1").fetchone()
    if row is None:
        return "Ranking: no calibration recorded (the text views vote)."
    queries, weights, report = row[0], json.loads(row[1]), json.loads(row[2])
    voting = ", ".join(sorted(v for v, w in weights.items() if w > 0))
    if not queries:
        return f"Ranking: {voting} vote ({report.get('note', 'not measured')})."
    alone = ", ".join(f"{v} {s:.3f}" for v, s in sorted(report["alone"].items(), key=lambda kv: -kv[1]))
    return (f"Ranking: {voting} vote, measured on {queries} pseudo-queries of this home (nDCG@10 alone: {alone}; "
            f"the voting views together: {report['chosen']:.3f}).")

