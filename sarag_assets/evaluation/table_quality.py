"""Table quality against a generated benchmark's ground truth: the four measures of SA-RAG. No Dagster.

A generated benchmark (`sarag generate`, `sarag demo`) is a folder with corpus.jsonl, truth.jsonl and
queries.jsonl. Its conversations are found in a home by the corpus file's bytes (the batches landed from
a file with the same sha256), so a home holding only user data has no benchmark and nothing is measured.

For one table (a metadata M* and one row per conversation) the measures are:

1. Structural compliance of the metadata: per column four rules (name snake_case and not reserved,
   name unique, canonical type, a definition present: a meaning that says more than the name's own
   words), plus one rule for M* (within capacity). Compliance = rules passed / rules checked.
2. Metadata effectiveness: the share of M* columns that help answer the generated queries. A truth
   field is *used* by a query when the value of that field for one of the query's gold conversations
   occurs in the query's text (identifying facts: product, version, error code, OS or plan, ...) or in
   one of its nuggets (the facts of the answer: root cause, resolution steps, fix version, ...);
   free-text fields (symptom, root cause, resolution steps) are also used when the query's text
   identifies the gold value by embedding, by the same rule as the truth alignment (cosine >= 0.4 and at
   most 2 other distinct values of the field closer). A column *helps* a query when it is aligned to a
   field the query uses (core/truth_alignment.py) and holds a correct value for that field in at least
   one of the query's gold conversations. Effectiveness = columns that help at least one query / columns.
   A column aligned to no truth field never helps: nothing the queries ask can be checked against it.
3. Value constraint satisfaction: the share of non-null values that satisfy their column's type and
   constraints (the structural gate, core/validation.py).
4. Semantic correctness: the share of non-null values in aligned columns, in conversations whose truth
   has the field, that match the truth (the cell rule of core/truth_alignment.py); values in unaligned
   columns or where the field does not apply are counted as unverifiable.

The same measures are computed for several variants of the table: the pipeline's materialized table
and the ablations (the fixed schema instead of governed metadata; no gates), which `ablation_tables`
builds by running the structuring core functions with the switches on the same conversations.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from sarag_assets.core.checks import RESERVED_COLUMNS, SNAKE_CASE
from sarag_assets.core.ingest.landing import file_sha256
from sarag_assets.core.structuring.gates import structural_gate
from sarag_assets.core.structuring.interface import (
    CANONICAL_TYPES,
    ConversationInput,
    GovernedMetadata,
    MetadataColumn,
)
from sarag_assets.core.structuring.tables import (
    install_fixed_metadata,
    validated_row_records,
)
from sarag_assets.core.warehouse import empty_frame
from sarag_assets.evaluation.truth_alignment import (
    FREE_TEXT_FIELDS,
    SCALAR_FIELDS,
    TruthReport,
    align_table_to_truth,
    scalar_match,
)

CORPUS_FILE, QUERIES_FILE, TRUTH_FILE = "corpus.jsonl", "queries.jsonl", "truth.jsonl"
FREE_TEXT_MIN_COSINE = 0.4  # the truth alignment's free-text rule (core/truth_alignment.py)
FREE_TEXT_MAX_CLOSER = 2

Table = dict[str, dict[str, str | None]]  # dialogue id -> {column: value or None}


# --- benchmarks ----------------------------------------------------------------------------------------


@dataclass
class Benchmark:
    name: str
    directory: Path
    corpus_sha256: str
    truth: list[dict]
    queries: list[dict]


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def find_benchmarks(root: Path) -> list[Benchmark]:
    """Every folder under `root` (itself or one level down) holding a generated corpus with its truth."""
    if not root.is_dir():
        return []
    folders = [root, *sorted(p for p in root.iterdir() if p.is_dir())]
    found = []
    for folder in folders:
        corpus, truth = folder / CORPUS_FILE, folder / TRUTH_FILE
        if corpus.is_file() and truth.is_file():
            found.append(Benchmark(folder.name, folder, file_sha256(corpus), _read_jsonl(truth),
                                   _read_jsonl(folder / QUERIES_FILE)))
    return found


def query_text(query: dict) -> str:
    if query.get("turns"):
        return "\n".join(str(t.get("text", "")) for t in query["turns"])
    return str(query.get("text", ""))


# --- matching values to the truth ----------------------------------------------------------------------


def _truth_text(value) -> str | None:
    if value is None or value == []:
        return None
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return str(value)


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def occurs_in(truth, text: str) -> bool:
    """Does the truth value occur in `text`? Strings as a token sequence (truth_alignment.scalar_match),
    numbers as a number written in the text; booleans never occur as such."""
    if truth is None or isinstance(truth, bool) or not text:
        return False
    if isinstance(truth, (int, float)):
        return any(abs(float(m.replace(",", "")) - float(truth)) < 1e-6 for m in _NUMBER.findall(text))
    items = truth if isinstance(truth, list) else [truth]
    return any(len(str(item).strip()) >= 3 and scalar_match(text, str(item)) for item in items)


class TruthMatcher:
    """Cell matching against one benchmark's truth, with the rules of core/truth_alignment.py: scalar
    fields by normalized equality or containment, free-text fields by embedding rank."""

    def __init__(self, truth_by_id: dict[str, dict], embed):
        self.truth_by_id = truth_by_id
        self.embed = embed
        self._distinct: dict[str, tuple[dict[str, int], np.ndarray]] = {}
        self._vectors: dict[str, np.ndarray] = {}

    def _field(self, f: str) -> tuple[dict[str, int], np.ndarray]:
        if f not in self._distinct:
            texts = sorted({t for t in (_truth_text(r.get(f)) for r in self.truth_by_id.values()) if t})
            vectors = self.embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
            self._distinct[f] = ({t: i for i, t in enumerate(texts)}, np.asarray(vectors))
        return self._distinct[f]

    def prepare(self, texts) -> None:
        """Embed texts to be matched against free-text fields in one batch."""
        missing = sorted({str(t) for t in texts if t not in (None, "")} - set(self._vectors))
        if missing:
            self._vectors.update(zip(missing, np.asarray(self.embed(missing))))

    def identifies(self, f: str, dialogue_id: str, text: str) -> bool:
        """The free-text rule: `text` is closer to this conversation's truth than to all but
        FREE_TEXT_MAX_CLOSER other distinct values of the field, with cosine >= FREE_TEXT_MIN_COSINE."""
        own = _truth_text(self.truth_by_id.get(dialogue_id, {}).get(f))
        index, vectors = self._field(f)
        if own is None or own not in index:
            return False
        self.prepare([text])
        sims = vectors @ self._vectors[str(text)]
        own_sim = sims[index[own]]
        return bool(own_sim >= FREE_TEXT_MIN_COSINE and int(np.sum(sims > own_sim)) <= FREE_TEXT_MAX_CLOSER)

    def matches(self, f: str, dialogue_id: str, value) -> bool:
        truth = self.truth_by_id.get(dialogue_id, {}).get(f)
        if value in (None, "") or truth in (None, []):
            return False
        if f in FREE_TEXT_FIELDS:
            return self.identifies(f, dialogue_id, str(value))
        return scalar_match(str(value), truth)


def fields_used_by_queries(queries: list[dict], matcher: TruthMatcher) -> dict[str, dict[str, set[str]]]:
    """field -> {"identifies": query ids whose text states it, "answers": query ids whose nuggets state it}."""
    used: dict[str, dict[str, set[str]]] = {}
    matcher.prepare(query_text(q) for q in queries)
    for q in queries:
        text, nuggets = query_text(q), [str(n) for n in q.get("nuggets") or []]
        gold = [g for g in q.get("gold") or [] if g in matcher.truth_by_id]
        for f in SCALAR_FIELDS + FREE_TEXT_FIELDS:
            identifies = answers = False
            for g in gold:
                truth = matcher.truth_by_id[g].get(f)
                if truth in (None, []):
                    continue
                identifies = identifies or occurs_in(truth, text) or (
                    f in FREE_TEXT_FIELDS and matcher.identifies(f, g, text))
                answers = answers or any(occurs_in(truth, n) for n in nuggets)
            for role, hit in (("identifies", identifies), ("answers", answers)):
                if hit:
                    used.setdefault(f, {"identifies": set(), "answers": set()})[role].add(q["query_id"])
    return used


# --- the four measures -----------------------------------------------------------------------------------


def _name_words(name: str) -> set[str]:
    return {w for w in re.split(r"[_\W]+", name.lower()) if w}


def column_compliance(columns: list[MetadataColumn]) -> list[dict]:
    names = [c.name for c in columns]
    out = []
    for c in columns:
        meaning_words = set(re.findall(r"[a-z0-9]+", (c.meaning or "").lower()))
        rules = {
            "snake_case": bool(re.match(SNAKE_CASE, c.name)) and c.name not in RESERVED_COLUMNS,
            "unique": names.count(c.name) == 1,
            "canonical_type": c.type in CANONICAL_TYPES,
            "definition": bool(meaning_words - _name_words(c.name)),
        }
        out.append({"column": c.name, **rules, "passed": sum(rules.values()), "checked": len(rules)})
    return out


def structural_compliance(metadata: GovernedMetadata) -> dict:
    per_column = column_compliance(metadata.columns)
    within = len(metadata.columns) <= metadata.capacity
    passed = sum(c["passed"] for c in per_column) + int(within)
    checked = sum(c["checked"] for c in per_column) + 1
    return {"score": passed / checked, "passed": passed, "checked": checked, "within_capacity": within,
            "columns": len(metadata.columns), "capacity": metadata.capacity, "per_column": per_column}


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


@dataclass
class VariantQuality:
    name: str
    description: str
    metadata: GovernedMetadata
    compliance: dict
    per_column: list[dict]
    alignment: TruthReport
    effectiveness: float | None
    query_coverage: float | None
    constraint_satisfaction: float | None
    semantic_correctness: float | None
    non_null_values: int
    unverifiable_values: int
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "variant": self.name, "description": self.description, "columns": len(self.metadata.columns),
            "structural_compliance": self.compliance["score"], "metadata_effectiveness": self.effectiveness,
            "query_coverage": self.query_coverage, "value_constraint_satisfaction": self.constraint_satisfaction,
            "semantic_correctness": self.semantic_correctness, "non_null_values": self.non_null_values,
            "unverifiable_values": self.unverifiable_values, "truth_fields_covered": self.fields_covered,
            "truth_fields": len(self.alignment.alignments),
        }

    @property
    def fields_covered(self) -> int:
        """Truth fields some column aligns to (how many of the corpus's facts the table holds at all)."""
        return len(self.alignment.covered_fields)

    def as_json(self) -> dict:
        return {**self.summary(), "notes": self.notes,
                "metadata": [{"name": c.name, "type": c.type, "meaning": c.meaning} for c in self.metadata.columns],
                "structural": {k: v for k, v in self.compliance.items() if k != "per_column"},
                "per_column": self.per_column}


def measure_table(
    name: str, description: str, metadata: GovernedMetadata, table: Table, truth_by_id: dict[str, dict],
    queries: list[dict], used_by: dict[str, dict[str, set[str]]], matcher: TruthMatcher, embed,
) -> VariantQuality:
    """The four measures of one table (rows restricted to the benchmark's conversations)."""
    table = {d: {c.name: row.get(c.name) for c in metadata.columns} for d, row in table.items() if d in truth_by_id}
    truth = [truth_by_id[d] for d in sorted(table)]
    report = align_table_to_truth(table, truth, embed=embed) if table and metadata.columns else TruthReport([])
    aligned = {a.column: a.field for a in report.alignments if a.column is not None}
    compliance = structural_compliance(metadata)
    gold = {q["query_id"]: [g for g in q.get("gold") or [] if g in table] for q in queries}
    matcher.prepare(v for row in table.values() for c, v in row.items() if aligned.get(c) in FREE_TEXT_FIELDS)
    per_column, helped_queries = [], set()
    for c, rules in zip(metadata.columns, compliance["per_column"]):
        values = [(d, row[c.name]) for d, row in table.items() if row.get(c.name) not in (None, "")]
        satisfied = sum(structural_gate(str(v), c)[0] for _, v in values)
        f = aligned.get(c.name)
        using = used_by.get(f, {"identifies": set(), "answers": set()}) if f else {"identifies": set(), "answers": set()}
        using_ids = using["identifies"] | using["answers"]
        helped = {q for q in using_ids if any(matcher.matches(f, g, table[g].get(c.name)) for g in gold.get(q, []))}
        helped_queries |= helped
        correct, verifiable = report.per_column.get(c.name, (0, 0))
        per_column.append({
            "column": c.name, "type": c.type,
            "compliance": f"{rules['passed']}/{rules['checked']}",
            "failed_rules": [k for k in ("snake_case", "unique", "canonical_type", "definition") if not rules[k]],
            "truth_field": f, "queries_using_field": len(using_ids),
            "queries_identified_by_field": len(using["identifies"]), "queries_answered_by_field": len(using["answers"]),
            "queries_helped": len(helped), "helps": bool(helped),
            "non_null": len(values), "constraint_satisfied": satisfied,
            "constraint_satisfaction": _ratio(satisfied, len(values)),
            "correct": correct, "verifiable": verifiable, "semantic_correctness": _ratio(correct, verifiable),
        })
    non_null = sum(c["non_null"] for c in per_column)
    verifiable = sum(c["verifiable"] for c in per_column)
    return VariantQuality(
        name=name, description=description, metadata=metadata, compliance=compliance, per_column=per_column,
        alignment=report,
        effectiveness=_ratio(sum(c["helps"] for c in per_column), len(per_column)),
        query_coverage=_ratio(len(helped_queries), len(queries)),
        constraint_satisfaction=_ratio(sum(c["constraint_satisfied"] for c in per_column), non_null),
        semantic_correctness=_ratio(sum(c["correct"] for c in per_column), verifiable),
        non_null_values=non_null, unverifiable_values=non_null - verifiable,
    )


# --- variants ----------------------------------------------------------------------------------------------


def table_from_rows(rows: pl.DataFrame) -> Table:
    """Long validated rows -> dialogue id -> {column: value}."""
    table: Table = {}
    for r in rows.select("dialogue_id", "column_name", "value").iter_rows():
        table.setdefault(r[0], {})[r[1]] = r[2]
    return table


@dataclass
class AblationTable:
    metadata: GovernedMetadata
    rows: pl.DataFrame
    failures: int


def ablation_tables(
    conversations: list[tuple[ConversationInput, str]], metadata: GovernedMetadata, backend
) -> dict[str, AblationTable]:
    """The two structuring ablations run with the core functions on the same conversations:
    `no_governance` (rows against the fixed schema, gates on) and `no_gates` (rows against `metadata`,
    every extracted value kept)."""
    fixed = install_fixed_metadata(GovernedMetadata(capacity=metadata.capacity), latest_version=0).metadata
    out = {}
    for name, m, gates in (("no_governance", fixed, True), ("no_gates", metadata, False)):
        result = validated_row_records("table_quality", conversations, m, empty_frame("validated_rows"), backend,
                                       gates=gates)
        out[name] = AblationTable(m, result.frame, len(result.failures))
    return out


@dataclass
class BenchmarkQuality:
    benchmark: str
    conversations: int
    queries: int
    fields_used: dict[str, dict[str, int]]
    variants: list[VariantQuality]
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"benchmark": self.benchmark, "conversations": self.conversations, "queries": self.queries,
                "fields_used_by_queries": self.fields_used, "notes": self.notes,
                "variants": {v.name: v.as_json() for v in self.variants}}


def measure_benchmark(
    benchmark: Benchmark, variants: list[tuple[str, str, GovernedMetadata, Table]], embed,
    notes: list[str] | None = None,
) -> BenchmarkQuality:
    """Every variant's four measures on the benchmark's conversations that are in the tables."""
    present = set().union(*(set(t) for _, _, _, t in variants)) if variants else set()
    truth_by_id = {t["dialogue_id"]: t for t in benchmark.truth if t["dialogue_id"] in present}
    queries = [q for q in benchmark.queries if any(g in truth_by_id for g in q.get("gold") or [])]
    matcher = TruthMatcher(truth_by_id, embed)
    used_by = fields_used_by_queries(queries, matcher)
    measured = [measure_table(n, d, m, t, truth_by_id, queries, used_by, matcher, embed) for n, d, m, t in variants]
    fields_used = {f: {"identifies": len(u["identifies"]), "answers": len(u["answers"]),
                       "any": len(u["identifies"] | u["answers"])} for f, u in sorted(used_by.items())}
    return BenchmarkQuality(benchmark.name, len(truth_by_id), len(queries), fields_used, measured, list(notes or []))


# --- reports -------------------------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def summary_markdown(results: list[BenchmarkQuality]) -> str:
    lines = ["| benchmark | variant | columns | structural compliance | metadata effectiveness | "
             "value constraint satisfaction | semantic correctness | non-null values | truth fields covered |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for v in r.variants:
            lines.append(f"| {r.benchmark} | {v.name} | {len(v.metadata.columns)} | {_pct(v.compliance['score'])} | "
                         f"{_pct(v.effectiveness)} | {_pct(v.constraint_satisfaction)} | "
                         f"{_pct(v.semantic_correctness)} | {v.non_null_values} | "
                         f"{v.fields_covered} / {len(v.alignment.alignments)} |")
    return "\n".join(lines)


def report_markdown(results: list[BenchmarkQuality]) -> str:
    out = ["# Table quality against the generated ground truth", "",
           "Measures as defined in `sarag_assets/evaluation/table_quality.py`: structural compliance = metadata rules "
           "passed / checked; metadata effectiveness = columns that help at least one generated query / columns; "
           "value constraint satisfaction = non-null values fitting type and constraints / non-null values; "
           "semantic correctness = non-null values matching the aligned truth / verifiable values; truth fields "
           "covered = fields of the ground truth that some column aligns to.", "",
           summary_markdown(results)]
    for r in results:
        out += ["", f"## {r.benchmark}: {r.conversations} conversations, {r.queries} queries", ""]
        out += [f"- {n}" for n in r.notes]
        out += ["", "Truth fields the queries use (queries whose text states the gold value / whose nuggets do):", "",
                "| field | identifies | answers | any |", "|---|---|---|---|"]
        out += [f"| {f} | {u['identifies']} | {u['answers']} | {u['any']} |" for f, u in r.fields_used.items()]
        for v in r.variants:
            out += ["", f"### {v.name}: {v.description}", ""]
            out += [f"- {n}" for n in v.notes]
            out += ["| column | type | compliance | truth field | queries helped / using field | "
                    "constraints ok / non-null | correct / verifiable |", "|---|---|---|---|---|---|---|"]
            for c in v.per_column:
                failed = f" ({', '.join(c['failed_rules'])})" if c["failed_rules"] else ""
                out.append(f"| {c['column']} | {c['type']} | {c['compliance']}{failed} | {c['truth_field'] or '—'} | "
                           f"{c['queries_helped']} / {c['queries_using_field']} | "
                           f"{c['constraint_satisfied']} / {c['non_null']} | {c['correct']} / {c['verifiable']} |")
            out.append(f"\nQueries helped by at least one column: {_pct(v.query_coverage)}; "
                       f"unverifiable non-null values: {v.unverifiable_values}.")
    return "\n".join(out) + "\n"


def write_reports(results: list[BenchmarkQuality], directory: Path, stem: str = "table_quality") -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md, js = directory / f"{stem}.md", directory / f"{stem}.json"
    md.write_text(report_markdown(results), encoding="utf-8")
    js.write_text(json.dumps({"benchmarks": [r.as_json() for r in results]}, indent=1, default=str) + "\n",
                  encoding="utf-8")
    return md, js
