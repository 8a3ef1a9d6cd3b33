"""The `sarag` command. Subcommands import what they need lazily so `sarag --help` starts fast."""

from __future__ import annotations

import argparse
import contextlib
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
    """The home of --home (else SARAG_HOME, else data/), after its settings are read and valid."""
    from sarag_assets.settings import Settings

    return Settings.load(getattr(args, "home", None)).paths.ensure()


def cmd_init(args) -> int:
    from sarag_assets.settings import CONFIG_FILE, Home, default_config

    home = Home.from_env(args.home).ensure()
    config = home.root / CONFIG_FILE
    if config.exists():
        raise CliError(f"{config} already exists (edit it, or remove it to write the defaults again)")
    config.write_text(default_config(), encoding="utf-8")
    print(f"wrote {config}: every setting at its default, commented out; the SARAG_* variables override it")
    return 0


def _dagster_instance(home):
    """The persistent local instance under <home>/dagster_home (or $DAGSTER_HOME when set)."""
    import dagster as dg

    from sarag_assets.settings import ensure_instance_config

    dagster_home = Path(os.environ.get("DAGSTER_HOME") or home.dagster_home).resolve()
    ensure_instance_config(dagster_home)
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    return dg.DagsterInstance.get()


def cmd_generate(args) -> int:
    from sarag_assets.evaluation.synthetic import write_corpus

    summary = write_corpus(Path(args.out), n=args.n, seed=args.seed)
    print(json.dumps(summary, indent=1, sort_keys=True))
    return 0


def cmd_land(args) -> int:
    from sarag_assets.core.ingest.drafts import FORMATS
    from sarag_assets.core.ingest.landing import copy_into_inbox, landing_refusal

    home = _home(args)
    if args.format and args.format not in FORMATS:
        raise CliError(f"unknown format {args.format!r}; known: {', '.join(FORMATS)}")
    for name in args.files:  # every file is checked before any is copied: all land or none
        if not Path(name).is_file():
            raise CliError(f"{_visible_name(name)}: no such file")
        refusal = landing_refusal(Path(name).name)
        if refusal:
            raise CliError(_visible_name(refusal))
    for name in args.files:
        try:
            print(_visible_name(copy_into_inbox(home, Path(name), args.format)))
        except OSError as exc:  # the files printed above are in the inbox; this one and the rest are not
            raise CliError(f"{_visible_name(name)}: cannot be copied into the inbox ({exc.strerror or exc})") from None
    return 0


def _print_summary(home, run) -> None:
    from sarag_assets.core import warehouse

    print(f"home: {home.root}")
    print(
        f"batches landed now: {len(run.batches)}  (in the home: {run.partitions})  "
        f"rows refreshed: {len(run.refreshed)}  failed: {len(run.failed)}"
    )
    for key in run.failed:
        print(f"  FAILED {key}")
    print("done by this run, and why:" if run.redone else "nothing redone: every asset was up to date")
    for line in run.redone:
        print(f"  {line}")
    for problem in run.problems:
        print(f"  note: {problem}")
    for retry in run.retried:
        print(f"  note: a run failed on the workers and was re-executed from its failure: {retry}")
    with warehouse.connect(home.warehouse, read_only=True) as con:
        summary = warehouse.home_summary(con)
    print("current conversations by source format:")
    for fmt, convs, turns in summary["by_format"]:
        print(f"  {fmt:<12} {convs:>7} conversations {turns:>9} turns")
    print(f"quarantined records: {summary['quarantined']}")
    for reason, count in summary["quarantine_reasons"]:
        print(f"  {count:>5} x {reason[:100]}")
    if summary["metadata_version"] is not None:
        columns = summary["columns"]
        print(f"governed metadata M* v{summary['metadata_version']}: {len(columns)} columns (filled share over current rows)")
        for c in columns:
            print(f"  {c['name']:<24} {c['type']:<8} {summary['filled'].get(c['name'], 0):>6.0%}")
    print(f"conversations that failed structuring: {summary['failed_conversations']}")
    expected = summary["index_sources"]
    if home.lancedb.exists():
        from sarag_assets.core.indices.store import IndexStore

        store = IndexStore.open_for_read(str(home.lancedb))
        print("LanceDB tables (rows / DuckDB source rows):")
        for name, source_rows in expected.items():
            rows = store.counts(name) if name in store.tables() else 0
            print(f"  {name:<20} {rows:>7} / {source_rows}")
        passages = store.counts("conversation_passages")
        print(f"  {'conversation_passages':<20} {passages:>7} passages of the conversations' own text")
    from sarag_assets.core import publication

    state = publication.current(home)
    if state is None:
        print("published state: none yet (search, ask and sql answer once a state passes its checks)")
    else:
        print(f"published state: {state.id} ({state.counts.get('conversations', 0)} conversations, "
              f"published {state.published_at}){'' if run.published else ' (unchanged by this run)'}")
    print(f"warehouse: {home.warehouse} (wide view: conversation_table; `sarag sql` reads the published copy)")
    reports = home.root / "reports"
    if reports.is_dir():
        print(f"reports: {reports}/ ({', '.join(sorted(p.name for p in reports.iterdir() if p.suffix == '.md'))})")
    print('next: sarag search "a question", sarag ask "a question", sarag serve (the web page), make ui (Dagster); '
          'the README\'s "After the demo"')


DEMO_N, DEMO_SEED = 300, 7


def land_demo(home, n: int = DEMO_N, seed: int = DEMO_SEED, fixtures: bool = True) -> Path:
    """What `sarag demo` lands in the home's inbox: a generated corpus (written, with its queries and truth,
    to the folder returned) and the bundled real samples."""
    from sarag_assets.core.ingest.landing import copy_into_inbox
    from sarag_assets.evaluation.synthetic import write_corpus

    generated = Path(home.root) / "generated" / f"n{n}-seed{seed}"
    write_corpus(generated, n=n, seed=seed)
    staged = generated / f"synthetic-n{n}-seed{seed}.jsonl"
    shutil.copyfile(generated / "corpus.jsonl", staged)
    copy_into_inbox(home, staged)
    if fixtures:
        package = resources.files("sarag_assets") / "sample_data"
        for rel in FIXTURE_FILES:
            with resources.as_file(package / rel) as path:
                copy_into_inbox(home, path)
    return generated


def cmd_demo(args) -> int:
    home = _home(args)
    land_demo(home, args.n, args.seed, fixtures=not args.no_fixtures)
    return _process(home)


def cmd_materialize(args) -> int:
    return _process(_home(args))


def _process(home) -> int:
    from sarag_assets.orchestration.runner import land_and_process

    os.environ["SARAG_HOME"] = str(home.root)
    _check_stores(home)
    instance = _dagster_instance(home)
    from sarag_assets.definitions import defs
    from sarag_assets.orchestration.executors import NoWorkers

    try:
        with _progress() as progress:
            run = land_and_process(defs, instance, progress=progress)
    except NoWorkers as exc:
        raise CliError(str(exc)) from None
    _print_summary(home, run)
    return 1 if run.failed else 0


def _check_stores(home) -> None:
    """A damaged warehouse or LanceDB folder is one line before any step runs, not a step's traceback."""
    import duckdb

    from sarag_assets.query.damage import damaged_store

    aside = "move it aside and rebuild with `sarag materialize`"
    if home.lancedb.exists() and not home.lancedb.is_dir():
        raise CliError(f"the LanceDB folder {home.lancedb} is a file; {aside}")
    if not home.warehouse.exists():
        return
    if home.warehouse.is_dir():
        raise CliError(f"the warehouse {home.warehouse} is a folder, not a DuckDB file; {aside}")
    try:
        duckdb.connect(str(home.warehouse), read_only=True).close()
    except duckdb.IOException as exc:
        from sarag_assets.core.warehouse import is_lock_conflict

        if not is_lock_conflict(exc):  # another process writing: the steps wait for it
            raise CliError(damaged_store(exc)) from None
    except duckdb.Error as exc:
        raise CliError(damaged_store(exc)) from None


@contextlib.contextmanager
def _progress():
    """Each step as it starts, with what it does, numbered (a count where a spinner alone says nothing), and
    on a terminal the time so far."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    started = iter(range(1, 1_000_000))

    def numbered(label: str) -> str:
        return f"{label} · step {next(started)}"

    if not console.is_terminal:
        yield lambda label: print(f"sarag: {numbered(label)}", file=sys.stderr, flush=True)
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as bar:
        task = bar.add_task("starting", total=None)
        yield lambda label: bar.update(task, description=numbered(label))


def cmd_quality(args) -> int:
    from sarag_assets.evaluation.bench.structuring_quality import measure

    run = measure(args.n, args.seed)
    print(f"M*: {len(run.metadata.columns)} columns: {', '.join(c.name for c in run.metadata.columns)}")
    print(run.report.as_markdown())
    covered = run.report.covered_fields
    print(f"latent fields covered: {len(covered)} of {len(run.report.alignments)}")
    print(f"cell accuracy (non-null values in aligned columns): {run.report.cell_accuracy:.3f}")
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in run.seconds.items()))
    return 0


def _query_input(args):
    """The query: the last argument, or a conversation file (--conversation: JSON list of turns, a JSON
    object with "turns", or JSONL with one turn per line)."""
    if args.conversation:
        path = Path(args.conversation)
        if not path.is_file():
            raise CliError(f"{args.conversation}: no such file")
        raw = path.read_text(encoding="utf-8", errors="replace").strip()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            try:
                data = [json.loads(line) for line in raw.splitlines() if line.strip()]
            except json.JSONDecodeError as exc:
                raise CliError(f"{args.conversation}: not JSON or JSONL ({exc.msg}, line {exc.lineno})") from None
        return data
    if args.query is None:
        raise CliError("give a query as the last argument or a conversation with --conversation FILE")
    return args.query


def _open_engine(args):
    from sarag_assets.query.engine import HomeNotReady, Sarag

    try:
        engine = Sarag(args.home)
    except HomeNotReady as exc:
        raise CliError(str(exc)) from None
    return engine


def _query_errors():
    from sarag_assets.query.engine import query_errors

    return query_errors()


def _print_json(data) -> None:
    print(json.dumps(data, indent=1, ensure_ascii=False, default=str))


def cmd_search(args) -> int:
    query = _query_input(args)
    if not (args.json or args.explain):
        served = _from_service(args, "/api/search", query, k=args.k)
        if served is not None:
            return _print_search(served)
    engine = _open_engine(args)
    try:
        return _search(engine, query, args)
    finally:
        engine.close()


def _from_service(args, path: str, query, **body):
    """The answer of a `sarag serve` running on this home, from the state the home has published now; None
    when there is none (then the command answers in this process)."""
    from sarag_assets.core import publication
    from sarag_assets.service import discovery
    from sarag_assets.settings import Settings

    if not isinstance(query, (str, list)):
        return None
    home = Settings.load(args.home).paths  # read only: a missing home is the in-process path's error to say
    url = discovery.running_service(home.root)
    if url is None:
        return None
    answer = discovery.post(url, path, {"query": query, **body}, api_key=os.environ.get("SARAG_API_KEY"))
    state = publication.current(home) if answer is not None else None
    if state is None or answer.get("published_state") != state.id:
        return None
    return {**answer, "served_by": url}


def _search(engine, query, args) -> int:
    from sarag_assets.query.strength import is_weak

    try:
        result = engine.retrieve(query, args.k)
    except _query_errors() as exc:
        raise CliError(str(exc)) from None
    if args.json:
        _print_json({"published_state": result.published_state, "notes": result.query.notes,
                     "entities": [e.as_dict() for e in result.query.entities], "hits": [h.as_dict() for h in result.hits]})
        return 0
    strength = engine.match_strength(result.query_vector, result.ids())
    origins = engine.origins(result.ids())
    hits = []
    for hit in result.hits:
        row, origin = hit.row, origins.get(hit.dialogue_id, {})
        resolved = str(row["resolved"]).lower() == "true" if row.get("resolved") is not None else None
        explained = None
        if args.explain:
            channels = ", ".join(f"{name} #{info['rank']}" for name, info in hit.channels.items())
            stands = strength[hit.dialogue_id]
            stands = "corpus too small to tell" if stands is None else f"stands out by {stands:.1f} sd"
            explained = f"fused score {hit.score:.4f}, {stands}; {channels}"
        hits.append({**origin, "dialogue_id": hit.dialogue_id, "rank": hit.rank, "resolved": resolved,
                     "weak": is_weak(strength[hit.dialogue_id], hit.matched_columns), "matched": hit.matched_columns,
                     "problem": row.get("problem") or next(iter(row.values()), ""), "resolution": row.get("resolution"),
                     "explained": explained})
    return _print_search({"published_state": result.published_state, "notes": result.query.notes, "hits": hits,
                          "mentioned": [{"column": e.column, "value": e.value} for e in result.query.entities]})


def _print_search(answer: dict) -> int:
    """Search hits as the API gives them (or the same shape from this process) for a reader."""
    for note in answer["notes"]:
        print(f"note: {note}")
    if answer.get("mentioned"):
        print("mentioned: " + _visible(", ".join(f"{m['column']}={m['value']}" for m in answer["mentioned"])))
    hits = answer["hits"]
    if not hits:
        print("no results")
    elif all(hit["weak"] for hit in hits):
        print("nothing matches well: every result is a weak match")
    for hit in hits:
        outcome = {True: "resolved", False: "not resolved", None: "outcome unknown"}[hit["resolved"]]
        weak = "  (weak match)" if hit["weak"] else ""
        when = hit.get("started_at") or hit.get("landed_at")
        where = " · ".join(str(x) for x in (hit.get("source_file"), when and str(when)[:10]) if x)
        print(f"{hit['rank']:>2}. {_visible(hit['dialogue_id'])}  [{outcome}]{weak}  {_visible(where)}")
        print(f"    {_one_line(hit['problem'] or '', 110)}")
        if hit["resolution"]:
            label = "fix that worked" if outcome == "resolved" else "suggested"
            print(f"    {label}: {_one_line(hit['resolution'], 100)}")
        if hit["matched"]:
            print("    matched: " + _visible(", ".join(f"{m['column']}={m['value']}" for m in hit["matched"])))
        if hit.get("explained"):
            print(f"    {hit['explained']}")
    print(f"(published state {answer['published_state']}{_served_by(answer)})")
    return 0


def _served_by(answer: dict) -> str:
    return f"; answered by the sarag serve at {answer['served_by']}" if answer.get("served_by") else ""


def cmd_show(args) -> int:
    with _open_engine(args) as engine:
        found = engine.conversation(args.dialogue_id)
        state = engine.publication.id
    if found is None:
        raise CliError(f"no conversation {args.dialogue_id!r} in the published state {state}")
    if args.json:
        _print_json({**found, "published_state": state})
        return 0
    when = found.get("started_at") or found.get("landed_at")
    print(_visible(f"{args.dialogue_id}  {found.get('source_file')} ({found.get('source_format')})  {when}"))
    for column, value in found["row"].items():
        print(f"  {column}: {_one_line(value, 110)}")
    for name, value in (found.get("fields") or {}).items():
        print(_visible(f"  {name}: {_one_line(value, 110)} (the record's field)"))
    print()
    for turn in found["turns"]:
        mark = ", the accepted answer" if turn.get("accepted") else ""
        print(f"[{turn['turn_index']}] {_visible(turn['speaker'])} ({turn['role']}{mark}):")
        for line in _visible(turn["text"]).splitlines() or [""]:
            print(f"    {line}")
    print(f"(published state {state})")
    return 0


def cmd_ask(args) -> int:
    query = _query_input(args)
    served = None if args.json else _from_service(args, "/api/ask", query, k=args.k)
    if served is not None:
        answer = {**served, "citations": [c["id"] for c in served["citations"]]}
    else:
        with _open_engine(args) as engine:
            try:
                found = engine.answer(query, k=args.k)
            except _query_errors() as exc:
                raise CliError(str(exc)) from None
            state = engine.publication.id
        if args.json:
            _print_json({**found.as_dict(), "published_state": state})
            return 0
        answer = {"published_state": state, "answer": found.text, "supported": found.supported,
                  "generated_by": found.generated_by, "citations": found.citations, "notes": found.notes}
    for note in answer["notes"]:
        print(f"note: {note}")
    print(_visible(answer["answer"]))
    print(f"\n({answer['generated_by']}; {'supported by' if answer['supported'] else 'NOT answered by'} the evidence)")
    print("citations: " + (", ".join(answer["citations"]) or "none"))
    print(f"(published state {answer['published_state']}{_served_by(answer)})")
    return 0


def cmd_sql(args) -> int:
    statement = args.statement
    if args.ask:
        with _open_engine(args) as engine:
            try:
                reply = engine.ask_sql(statement)
            except _query_errors() as exc:
                raise CliError(str(exc)) from None
            state = engine.publication.id
        if args.json:
            _print_json({**reply.as_dict(), "published_state": state})
        else:
            print(f"SQL: {_visible(reply.sql)}")
            print(_visible(reply.answer))
            print(f"(published state {state})")
        return 0
    from sarag_assets.query.engine import HomeNotReady, published_state
    from sarag_assets.query.sql import SqlError, SqlLimits, run_select
    from sarag_assets.settings import Settings

    settings = Settings.load(args.home)
    limits = SqlLimits.from_settings(settings)
    hard_stop = _hard_stop_after(limits.timeout_s)
    try:
        state = published_state(settings.paths)
        result = run_select(state.warehouse, statement, limits=limits)
    except (SqlError, FileNotFoundError, HomeNotReady) as exc:
        raise CliError(str(exc)) from None
    finally:
        hard_stop.cancel()  # main() may be called in a longer-lived process
    if args.json:
        _print_json({"published_state": state.id, "columns": result.columns, "rows": [list(r) for r in result.rows],
                     "truncated": result.truncated})
        return 0
    print(" | ".join(result.columns))
    for row in result.rows:
        print(" | ".join(_one_line("" if v is None else str(v), None if args.full else 60) for v in row))
    print(f"({len(result.rows)} rows{', truncated' if result.truncated else ''}; published state {state.id})")
    return 0


def _hard_stop_after(timeout_s: float):
    """End this process with the time limit's one line if DuckDB has not stopped the statement shortly
    after the limit (a per-row function it cannot interrupt in time)."""
    import threading

    from sarag_assets.query.sql import HARD_STOP_GRACE_S

    def stop():
        print(f"sarag: error: stopped after {timeout_s:g} s, the time limit for a statement (setting "
              "sql_timeout_s)", file=sys.stderr, flush=True)
        os._exit(2)

    timer = threading.Timer(timeout_s + HARD_STOP_GRACE_S, stop)
    timer.daemon = True
    timer.start()
    return timer


def cmd_serve(args) -> int:
    import logging

    from sarag_assets.service.app import serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    home = _home(args)
    _can_listen(args.host, args.port)  # before the model loads: a busy port is one line, not a late traceback
    print(f"sarag serve: http://{args.host}:{args.port}/ (API: /docs){' with an API key' if args.api_key else ''}",
          file=sys.stderr)
    if not args.api_key and args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"sarag serve: warning: listening on {args.host} without an API key: anyone who reaches this port "
              "can read the conversations (set --api-key or SARAG_API_KEY)", file=sys.stderr)
    serve(home, host=args.host, port=args.port, api_key=args.api_key)
    return 0


def _can_listen(host: str, port: int) -> None:
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind(address)
        except OSError as exc:
            raise CliError(f"cannot listen on {host}:{port}: {exc.strerror} (another `sarag serve`? "
                           "choose another --port)") from None


def cmd_worker(args) -> int:
    """Become a Celery worker for the runs of this home (executor = celery): each worker process executes
    one step at a time. It needs the same home (a shared folder) and, for the instance, the same
    DAGSTER_PG_URL as the process that starts the runs."""
    from sarag_assets.settings import Settings

    settings = Settings.load(args.home)  # the runs create the home; a worker only executes their steps
    os.environ["SARAG_HOME"] = str(settings.home)
    print(f"sarag worker: {args.concurrency} process(es) on {settings.celery_broker}, home {settings.home}",
          file=sys.stderr)
    command = [sys.executable, "-m", "celery", "-A", "sarag_assets.orchestration.celery_worker", "worker",
               "-Q", settings.celery_queue,
               "--concurrency", str(args.concurrency), "--loglevel", args.loglevel, "-n", args.name]
    os.execv(sys.executable, command)
    return 0  # not reached


def cmd_eval(args) -> int:
    from sarag_assets.evaluation.queries import EvalFileError
    from sarag_assets.evaluation.report import (
        ranking_views,
        render_bar_chart,
        render_markdown,
        render_table,
    )
    from sarag_assets.evaluation.run import evaluate
    from sarag_assets.evaluation.scoring import EvalError

    for name in (args.corpus, args.queries):
        if not Path(name).is_file():
            raise CliError(f"{name}: no such file")
    if args.home:
        root = Path(args.home)
    else:
        import tempfile

        root = Path(tempfile.mkdtemp(prefix="sarag-eval-"))
    try:
        with _progress() as progress:
            run = evaluate(args.corpus, args.queries, root, k=args.k, systems=args.systems, truth=args.truth,
                           log=progress)
    except (EvalError, EvalFileError) as exc:
        raise CliError(str(exc)) from None
    print(render_table(run.report))
    print("\n" + ranking_views(root / "warehouse.duckdb"))
    reports = root / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    markdown = render_markdown(run.report, title=f"sarag eval: {Path(args.corpus).name}")
    if run.fidelity is not None:
        print("\n" + run.fidelity.render())
        (reports / "fidelity.json").write_text(json.dumps(run.fidelity.as_dict(), indent=1) + "\n")
        markdown += "\n```\n" + run.fidelity.render() + "\n```\n"
    if run.answers is not None:
        print("\n" + run.answers.render())
        (reports / "answers.json").write_text(json.dumps(run.answers.as_dict(), indent=1) + "\n")
        markdown += "\n```\n" + run.answers.render() + "\n```\n"
    (reports / "eval.md").write_text(markdown)
    render_bar_chart(run.report, reports / "eval_r3.png")
    if args.json:
        run.report.write_json(args.json)
    print(f"home: {root} (reports: {reports})", file=sys.stderr)
    return 0


def cmd_eval_entities(args) -> int:
    from sarag_assets.evaluation.entities import evaluate_entities

    for folder in args.corpora:  # every folder checked before the first one's long run
        if not (Path(folder) / "corpus.jsonl").is_file() or not (Path(folder) / "labels.jsonl").is_file():
            raise CliError(f"{folder}: needs corpus.jsonl and labels.jsonl")
    reports = []
    for folder in args.corpora:
        with _progress():
            report = evaluate_entities(folder)
        print(report.render())
        reports.append(report)
    if args.json:
        Path(args.json).write_text(json.dumps({"corpora": [r.as_dict() for r in reports],
                                               "misses": {r.corpus: r.misses for r in reports}}, indent=1) + "\n")
    return 0


def _visible(text) -> str:
    """A stored value as a terminal may show it: control characters (an ESC from a quarantined record,
    a home built before ingestion removed them) are printed as escapes, not obeyed."""
    from sarag_assets.core.conversation import CONTROL_CHARACTERS

    return CONTROL_CHARACTERS.sub(lambda m: ascii(m.group())[1:-1], str(text))


def _visible_name(name) -> str:
    """A file name on one line: its tabs and line breaks escaped too (`_visible` keeps them, for texts)."""
    import re

    return re.sub(r"[\t\n\v\f\r\x85\u2028\u2029]", lambda m: ascii(m.group())[1:-1], _visible(name))


def _one_line(text: str, limit: int | None = 100) -> str:
    text = " ".join(_visible(text).split())
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def cmd_bench_pipeline(args) -> int:
    from sarag_assets.evaluation.bench.pipeline_throughput import run

    return run(args)


EXAMPLES = """examples:
  sarag demo                                   generate a sample, land it with the bundled real ones, materialize
  sarag land ~/exports/tickets.jsonl           copy your conversations into the inbox
  sarag materialize                            land what the inbox holds and bring every asset up to date
  sarag search "my VPN drops every hour"       past conversations like this one (--explain: how they ranked)
  sarag ask "printer jams on every page"       the fix that worked in similar conversations, with citations
  sarag show conv-000218                       one conversation, as stored (redacted)
  sarag sql "SELECT product, count(*) FROM conversation_table GROUP BY 1"
  sarag serve                                  the web page and HTTP API on http://127.0.0.1:8765/
  SARAG_EXECUTOR=celery sarag worker           execute steps for runs on Celery workers (docs/deployment.md)
"""


# What `sarag COMMAND --help` ends with.
COMMAND_EXAMPLES = {
    "init": ["sarag init", "sarag init --home /srv/sarag"],
    "generate": ["sarag generate --n 300 --seed 7 --out gen   # gen/corpus.jsonl, queries.jsonl, truth.jsonl"],
    "land": ["sarag land ~/exports/tickets.jsonl", "sarag land threads.csv --format turn_csv",
             "sarag land *.json --home /srv/sarag   # then: sarag materialize"],
    "materialize": ["sarag materialize", "SARAG_EXECUTOR=celery sarag materialize   # steps on `sarag worker` processes"],
    "quality": ["sarag quality --n 1000 --seed 1"],
    "bench-pipeline": ["sarag bench-pipeline --n 10000 --seed 11 --increment 100"],
    "demo": ["sarag demo", "sarag demo --n 1000 --no-fixtures --home /tmp/demo"],
    "search": ['sarag search "my VPN drops every hour"', 'sarag search "printer jams" --k 5 --explain',
               "sarag search --conversation chat.json --json   # a whole conversation: its last turn is asked"],
    "ask": ['sarag ask "Vantage Backup says license already in use, fix?"', "sarag ask --conversation chat.json"],
    "show": ["sarag show conv-000218", "sarag show conv-000218 --json"],
    "sql": ['sarag sql "SELECT product, count(*) FROM conversation_table GROUP BY 1 ORDER BY 2 DESC"',
            'sarag sql --full "SELECT dialogue_id, resolution FROM conversation_table LIMIT 5"   # cells whole',
            'sarag sql --ask "which products had the most unresolved conversations?"   # needs an LLM'],
    "serve": ["sarag serve                                   # http://127.0.0.1:8765/",
              'sarag serve --host 0.0.0.0 --api-key "$KEY"   # reachable from others: set a key'],
    "worker": ["SARAG_EXECUTOR=celery SARAG_CELERY_BROKER=redis://broker:6379/0 sarag worker --concurrency 2"],
    "eval": ["sarag eval --corpus corpus.jsonl --queries queries.jsonl --json report.json",
             "sarag eval --corpus c.jsonl --queries q.jsonl --home /tmp/h --systems sarag,hybrid,dense"],
    "eval-entities": ["sarag eval-entities sarag_assets_tests/data/entities/sgd --json entities.json"],
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sarag")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sarag", description="Structure-aware RAG over support conversations.",
                                     epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"sarag {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    class Sub:  # each command's --help ends with its examples
        @staticmethod
        def add_parser(name, **kwargs):
            examples = "".join(f"\n  {e}" for e in COMMAND_EXAMPLES.get(name, []))
            return commands.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter,
                                       epilog="examples:" + examples if examples else None, **kwargs)

    sub = Sub()

    def with_home(p):
        p.add_argument("--home", help="state directory (default: $SARAG_HOME, else data/)")
        return p

    p = with_home(sub.add_parser("init", help="write <home>/sarag.toml with every setting at its default"))
    p.set_defaults(func=cmd_init)

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

    p = sub.add_parser("bench-pipeline", help="conversations per second of every asset on a generated corpus")
    p.add_argument("--n", type=int, default=10_000, help="conversations to generate")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--home", help="a fresh (missing or empty) directory for the run; default: a new temp dir")
    p.add_argument("--batch-size", type=int, default=2500, help="SARAG_BATCH_SIZE: conversations per partition")
    p.add_argument("--increment", type=int, default=0,
                   help="then land this many more conversations into the built home and time that")
    p.add_argument("--encoder-sample", type=int, default=0,
                   help="time the model alone on this many of the index's texts, spread over them (default: all)")
    p.set_defaults(func=cmd_bench_pipeline)

    p = with_home(sub.add_parser("demo", help="generate a sample, land it with the real fixtures, materialize"))
    p.add_argument("--n", type=int, default=DEMO_N)
    p.add_argument("--seed", type=int, default=DEMO_SEED)
    p.add_argument("--no-fixtures", action="store_true", help="land only the generated corpus")
    p.set_defaults(func=cmd_demo)

    def query_command(name, help_text, func):
        p = with_home(sub.add_parser(name, help=help_text))
        p.add_argument("query", nargs="?", help="the question (or use --conversation)")
        p.add_argument("--conversation", metavar="FILE", help="a conversation as JSON/JSONL turns {speaker, text}")
        p.add_argument("--k", type=int, default=10 if name == "search" else 5)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "search":
            p.add_argument("--explain", action="store_true", help="show how each hit ranked: fused score, channels")
        p.set_defaults(func=func)

    query_command("search", "find past conversations like this question or conversation", cmd_search)
    query_command("ask", "answer from past conversations, with citations", cmd_ask)
    p = with_home(sub.add_parser("show", help="one conversation of the published state, as stored (redacted)"))
    p.add_argument("dialogue_id")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_show)

    p = with_home(sub.add_parser("sql", help="run a read-only SELECT over the warehouse (or --ask a question)"))
    p.add_argument("statement", help="a SELECT statement, or a question with --ask")
    p.add_argument("--ask", action="store_true", help="the argument is a question: an LLM writes the SQL")
    p.add_argument("--full", action="store_true", help="print every cell whole (else cut at 60 characters)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_sql)

    p = with_home(sub.add_parser("serve", help="the HTTP service and web page over the home's published state"))
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--api-key", default=os.environ.get("SARAG_API_KEY") or None,
                   help="require this key on every /api route but health (default: $SARAG_API_KEY, else none)")
    p.set_defaults(func=cmd_serve)

    p = with_home(sub.add_parser("worker", help="execute pipeline steps for runs on the celery executor"))
    p.add_argument("--concurrency", type=int, default=1, help="worker processes, each one step at a time")
    p.add_argument("--name", default="sarag@%h", help="the worker's node name (Celery's -n; %%h is the host)")
    p.add_argument("--loglevel", default="INFO")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("eval", help="ingest a corpus through the asset graph and score every system on queries")
    p.add_argument("--corpus", required=True, help="generic JSONL conversations")
    p.add_argument("--queries", required=True, help="JSONL queries with gold dialogue ids (and nuggets)")
    p.add_argument("--home", help="the home to ingest into (default: a fresh temporary directory)")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--systems", help="comma-separated systems (default: all but the only_<channel> ones, e.g. only_issue)")
    p.add_argument("--json", metavar="OUT.json", help="also write the report as JSON")
    p.add_argument("--truth", help="a truth file of issues for the fidelity of the problem and resolution cells "
                   "(default: truth.jsonl beside the corpus, when it holds issues)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("eval-entities", help="entity-cell exactness and query value recall on labelled real corpora")
    p.add_argument("corpora", nargs="+", help="folders holding corpus.jsonl and labels.jsonl "
                   "(e.g. sarag_assets_tests/data/entities/sgd)")
    p.add_argument("--json", metavar="OUT.json", help="also write the figures and every miss as JSON")
    p.set_defaults(func=cmd_eval_entities)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from sarag_assets.settings import SettingsError

    try:
        return args.func(args)
    except (CliError, SettingsError) as exc:
        print(f"sarag: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (`sarag show ID | head`): no traceback, and none again at exit (Python's recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        from sarag_assets.query.damage import damaged_store

        damage = damaged_store(exc)
        if damage is None:
            raise
        print(f"sarag: error: {damage}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
