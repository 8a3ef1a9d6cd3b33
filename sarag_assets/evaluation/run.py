"""`sarag eval`: ingest a corpus through the real asset graph, then score every system on its queries
(`evaluation.scoring` lists the systems). ``ingest_s`` is the main home's ingestion (landing + every
asset); the ablation systems get their own homes, built by the same pipeline with other switches.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from sarag_assets.evaluation.scoring import (
    ABLATIONS,
    EvalError,
    parse_systems,
    score_systems,
)


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _instance(root: Path):
    import dagster as dg

    from sarag_assets.settings import ensure_instance_config

    dagster_home = root / "dagster_home"
    ensure_instance_config(dagster_home)
    return dg.DagsterInstance.from_config(str(dagster_home))


def ingest(root: Path, corpus: Path, env: dict[str, str] | None = None, progress=None) -> float:
    """Land the corpus in the home's inbox and materialize every asset through the real definitions;
    returns the seconds it took. A home that already holds the corpus does only what is outdated."""
    from sarag_assets.core.ingest.landing import copy_into_inbox
    from sarag_assets.settings import Home

    started = time.perf_counter()
    with _environment({"SARAG_HOME": str(root), **(env or {})}):
        home = Home(root).ensure()
        copy_into_inbox(home, corpus)
        from sarag_assets.evaluation.definitions import process_definitions
        from sarag_assets.orchestration.runner import land_and_process

        defs = process_definitions()

        with _instance(root) as instance:
            run = land_and_process(defs, instance, progress=progress)
    if run.failed:
        raise EvalError(f"the pipeline failed for {', '.join(run.failed)} in {root} (see the Dagster runs there)")
    return time.perf_counter() - started



@dataclass
class EvalRun:
    report: object  # report.EvalReport
    home: Path
    ablation_homes: dict[str, Path]
    fidelity: object | None = None  # fidelity.FidelityReport, when the set has a truth file of issues
    answers: object | None = None  # answer_quality.AnswerReport


def evaluate(corpus: str | os.PathLike, queries: str | os.PathLike, home: str | os.PathLike, *, k: int = 10,
             systems: Sequence[str] | None = None, truth: str | os.PathLike | None = None,
             log: Callable[[str], None] = lambda _: None) -> EvalRun:
    """`truth`: a truth file of issues (default: `truth.jsonl` beside the corpus, when it holds issues)
    for the fidelity of the problem and resolution cells (`evaluation.fidelity`)."""
    from sarag_assets.evaluation.fidelity import TruthFileError, home_fidelity, load_truth
    from sarag_assets.evaluation.queries import check_gold, load_corpus, load_queries

    corpus, queries_path, root = Path(corpus), Path(queries), Path(home).resolve()
    names = parse_systems(systems)
    if k < 10:
        raise EvalError("k must be at least 10 (the report includes R@10 and nDCG@10)")
    dialogues = load_corpus(corpus)
    eval_queries = load_queries(queries_path)
    problems = check_gold(eval_queries, [d.dialogue_id for d in dialogues])
    if problems:
        raise EvalError(f"{queries_path}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    truth_path = Path(truth) if truth is not None else corpus.parent / "truth.jsonl"
    issues = None
    if truth is not None or truth_path.is_file():
        try:  # read before the ingest, so that a wrong file costs no pipeline run
            issues = load_truth(truth_path)
        except (OSError, TruthFileError) as exc:
            raise EvalError(str(exc)) from None
        if issues is None and truth is not None:
            raise EvalError(f"{truth_path}: not a truth file of issues (problem, fix, dialogue_ids per line)")
    log(f"ingesting {len(dialogues)} conversations into {root}")
    ingest_s = ingest(root, corpus, progress=log)
    homes = {}
    for name in names:
        if name in ABLATIONS:
            homes[name] = root / "ablations" / name
            log(f"{name}: ingesting the same corpus with {ABLATIONS[name]}")
            ingest(homes[name], corpus, ABLATIONS[name], progress=lambda step, name=name: log(f"{name}: {step}"))
    report = score_systems(root, eval_queries, names, k=k, ablation_homes=homes, ingest_s=ingest_s, log=log)
    fidelity = None
    if issues:
        from sarag_assets.core.encoding.embedder import default_embedder

        log(f"fidelity of the problem and resolution cells against {truth_path}")
        fidelity = home_fidelity(root / "warehouse.duckdb", issues, default_embedder().encode)
    from sarag_assets.evaluation.answer_quality import score_answers

    answers = score_answers(root, eval_queries, truth_path if truth_path.is_file() else None, log=log)
    return EvalRun(report, root, homes, fidelity, answers)
