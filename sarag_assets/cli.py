"""The `sarag` command. Subcommands import what they need lazily so `sarag --help` starts fast."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from importlib import resources
from pathlib import Path

FIXTURE_FILES = ("abcd/abcd_sample.json", "tweetsumm/tweetsumm_examples.json", "multidogo/multidogo_examples.json")


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _home(args):
    from sarag_assets.settings import Home

    return Home.from_env(getattr(args, "home", None)).ensure()


def _dagster_instance(home):
    """The persistent local instance under <home>/dagster_home (or $DAGSTER_HOME when set)."""
    import dagster as dg

    dagster_home = Path(os.environ.get("DAGSTER_HOME") or home.dagster_home).resolve()
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    project_config = Path("dagster.yaml")
    if not config.exists() and project_config.exists():
        shutil.copyfile(project_config, config)
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    return dg.DagsterInstance.get()


def cmd_generate(args) -> int:
    from sarag_assets.core.synthetic import write_corpus

    summary = write_corpus(Path(args.out), n=args.n, seed=args.seed)
    print(json.dumps(summary, indent=1, sort_keys=True))
    return 0


def cmd_land(args) -> int:
    from sarag_assets.core.landing import copy_into_inbox
    from sarag_assets.core.parsers import FORMATS

    home = _home(args)
    if args.format and args.format not in FORMATS:
        raise CliError(f"unknown format {args.format!r}; known: {', '.join(FORMATS)}")
    for name in args.files:
        source = Path(name)
        if not source.is_file():
            raise CliError(f"{name}: no such file")
        print(copy_into_inbox(home, source, args.format))
    return 0


def _print_summary(home, run) -> None:
    from sarag_assets.core import warehouse

    print(f"home: {home.root}")
    print(
        f"batches landed: {len(run.batches)}  already done: {len(run.skipped)}  "
        f"rows refreshed: {len(run.refreshed)}  failed: {len(run.failed)}"
    )
    for key in run.failed:
        print(f"  FAILED {key}")
    with warehouse.connect(home.warehouse, read_only=True) as con:
        print("current conversations by source format:")
        for fmt, convs, turns in con.execute(
            """SELECT source_format, count(DISTINCT dialogue_id), count(*) FROM current_dialogues GROUP BY 1 ORDER BY 1"""
        ).fetchall():
            print(f"  {fmt:<12} {convs:>7} conversations {turns:>9} turns")
        total_q = con.execute("SELECT count(*) FROM quarantine").fetchone()[0]
        print(f"quarantined records: {total_q}")
        for reason, count in con.execute(
            "SELECT reason, count(*) FROM quarantine GROUP BY 1 ORDER BY 2 DESC LIMIT 5"
        ).fetchall():
            print(f"  {count:>5} x {reason[:100]}")
        state = con.execute(
            "SELECT version, state_json FROM governance_state ORDER BY saved_at DESC LIMIT 1"
        ).fetchone()
        if state:
            import json

            columns = json.loads(state[1])["columns"]
            filled = dict(con.execute(
                """SELECT v.column_name, avg(CASE WHEN v.value IS NULL THEN 0 ELSE 1 END)
                   FROM validated_rows v JOIN current_dialogue_versions c USING (dialogue_id, batch_key)
                   GROUP BY 1"""
            ).fetchall())
            print(f"governed metadata M* v{state[0]}: {len(columns)} columns (filled share over current rows)")
            for c in columns:
                print(f"  {c['name']:<24} {c['type']:<8} {filled.get(c['name'], 0):>6.0%}")
        failures = con.execute("SELECT count(DISTINCT dialogue_id) FROM structuring_failures").fetchone()[0]
        print(f"conversations that failed structuring: {failures}")
        sources = {
            "table_rows": "SELECT count(*) FROM current_dialogue_versions",
            "issue_documents": "SELECT count(*) FROM pseudo_documents JOIN current_dialogue_versions USING (dialogue_id, batch_key)",
            "solution_documents": "SELECT count(*) FROM pseudo_documents JOIN current_dialogue_versions USING (dialogue_id, batch_key)",
            "graph_nodes": "SELECT count(*) FROM graph_nodes JOIN current_dialogue_versions USING (dialogue_id, batch_key)",
        }
        expected = {name: con.execute(sql).fetchone()[0] for name, sql in sources.items()}
    if home.lancedb.exists():
        from sarag_assets.core.indices import IndexStore

        store = IndexStore.open_for_read(str(home.lancedb))
        print("LanceDB tables (rows / DuckDB source rows):")
        for name, source_rows in expected.items():
            rows = store.counts(name) if name in store.tables() else 0
            print(f"  {name:<20} {rows:>7} / {source_rows}")
    print(f"warehouse: {home.warehouse} (wide view: conversation_table; open it read-only while no run writes)")


def cmd_demo(args) -> int:
    from sarag_assets.core.landing import copy_into_inbox
    from sarag_assets.core.synthetic import write_corpus

    home = _home(args)
    generated = home.root / "generated" / f"n{args.n}-seed{args.seed}"
    write_corpus(generated, n=args.n, seed=args.seed)
    staged = generated / f"synthetic-n{args.n}-seed{args.seed}.jsonl"
    shutil.copyfile(generated / "corpus.jsonl", staged)
    copy_into_inbox(home, staged)
    if not args.no_fixtures:
        package = resources.files("sarag_assets") / "sample_data"
        for rel in FIXTURE_FILES:
            with resources.as_file(package / rel) as path:
                copy_into_inbox(home, path)
    return _process(home)


def cmd_materialize(args) -> int:
    return _process(_home(args))


def _process(home) -> int:
    from sarag_assets.defs.runner import land_and_process

    os.environ["SARAG_HOME"] = str(home.root)
    instance = _dagster_instance(home)
    from sarag_assets.definitions import defs

    run = land_and_process(defs, instance)
    _print_summary(home, run)
    return 1 if run.failed else 0


def cmd_quality(args) -> int:
    from sarag_assets.bench.structuring_quality import measure

    run = measure(args.n, args.seed)
    print(f"M*: {len(run.metadata.columns)} columns: {', '.join(c.name for c in run.metadata.columns)}")
    print(run.report.as_markdown())
    covered = run.report.covered_fields
    print(f"latent fields covered: {len(covered)} of {len(run.report.alignments)}")
    print(f"cell accuracy (non-null values in aligned columns): {run.report.cell_accuracy:.3f}")
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in run.seconds.items()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sarag", description="Structure-aware RAG over support conversations.")
    sub = parser.add_subparsers(dest="command", required=True)

    def with_home(p):
        p.add_argument("--home", help="state directory (default: $SARAG_HOME, else data/)")
        return p

    p = sub.add_parser("generate", help="write a deterministic synthetic benchmark corpus")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_generate)

    p = with_home(sub.add_parser("land", help="copy conversation files into the inbox"))
    p.add_argument("files", nargs="+")
    p.add_argument("--format", help="parse as this format instead of auto-detecting")
    p.set_defaults(func=cmd_land)

    p = with_home(sub.add_parser("materialize", help="land what is in the inbox and materialize every asset"))
    p.set_defaults(func=cmd_materialize)

    p = sub.add_parser("quality", help="measure the structuring stage against a generated corpus's ground truth")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_quality)

    p = with_home(sub.add_parser("demo", help="generate a sample, land it with the real fixtures, materialize"))
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--no-fixtures", action="store_true", help="land only the generated corpus")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CliError as exc:
        print(f"sarag: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
