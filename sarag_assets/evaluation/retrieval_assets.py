"""retrieval_evaluation: the `sarag eval` report for the generated benchmark(s) the home holds."""

import base64

import dagster as dg

from sarag_assets.defs.resources import SaragHome


@dg.asset(
    deps=["published_state"],
    group_name="evaluation",
    kinds={"python"},
    description="The sarag eval report (baselines text_freq/bm25/dense and the query module's sdr/table/trag/"
    "sarag) for the generated benchmark(s) under <home>/generated whose conversations are in the home; "
    "markdown, JSON and a bar chart under <home>/reports/. The ablations need their own pipeline runs: "
    "`sarag eval` runs them.",
)
def retrieval_evaluation(context: dg.AssetExecutionContext, sarag_home: SaragHome) -> dg.MaterializeResult:
    from sarag_assets.core import publication, warehouse
    from sarag_assets.evaluation.queries import load_queries
    from sarag_assets.evaluation.report import render_bar_chart, render_markdown
    from sarag_assets.evaluation.scoring import (
        BASELINES,
        QUERY_SYSTEMS,
        TEXT_SYSTEMS,
        score_systems,
    )

    settings = sarag_home.settings()
    home = settings.paths.ensure()
    benchmarks = sorted(home.root.glob("generated/*/queries.jsonl"))
    published = publication.current(home)
    if published is None:
        raise dg.Failure("nothing is published yet")
    with warehouse.connect(published.warehouse, read_only=True) as con:
        current = warehouse.current_dialogue_ids(con)
    queries, skipped = [], []
    for path in benchmarks:
        loaded = load_queries(path)
        if all(g in current for q in loaded for g in q.gold):
            queries.extend(loaded)
        else:
            skipped.append(str(path.parent.name))
    if not queries:
        return dg.MaterializeResult(metadata={
            "evaluated": False,
            "reason": "no generated benchmark whose conversations are all in this home "
                      f"(found {len(benchmarks)}, skipped: {', '.join(skipped) or 'none'})",
        })
    report = score_systems(home.root, queries, BASELINES + TEXT_SYSTEMS + QUERY_SYSTEMS, log=context.log.info)
    home.reports.mkdir(parents=True, exist_ok=True)
    markdown = render_markdown(report, title="Retrieval evaluation (generated benchmark)")
    (home.reports / "retrieval_evaluation.md").write_text(markdown, encoding="utf-8")
    report.write_json(home.reports / "retrieval_evaluation.json")
    chart = render_bar_chart(report, home.reports / "retrieval_evaluation_r3.png")
    image = base64.b64encode(chart.read_bytes()).decode("ascii")
    sarag = report.systems["sarag"]
    best_text = max(report.systems[b]["R@3"] for b in BASELINES + TEXT_SYSTEMS)
    return dg.MaterializeResult(metadata={
        "evaluated": True,
        "benchmarks": ", ".join(p.parent.name for p in benchmarks if p.parent.name not in skipped),
        "queries": report.n_queries,
        "sarag_R@3": sarag["R@3"],
        "best_text_baseline_R@3": best_text,
        "report": dg.MetadataValue.md(markdown),
        "chart": dg.MetadataValue.md(f"![R@3 per system](data:image/png;base64,{image})"),
        "report_path": dg.MetadataValue.path(str(home.reports / "retrieval_evaluation.json")),
    })


retrieval_evaluation_job = dg.define_asset_job(
    "retrieval_evaluation_job",
    selection=dg.AssetSelection.assets("retrieval_evaluation"),
    description="Score the baselines and the query module on the generated benchmark(s) in the home.",
)
