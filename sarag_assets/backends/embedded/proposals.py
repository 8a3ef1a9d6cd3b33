"""A conversation's candidate columns: the core concepts, the optional ones it states, one per entity the
detectors found (at most MAX_PROPOSALS); then their normalization, twins merged by name and by meaning."""

from __future__ import annotations

from sarag_assets.backends.embedded.columns import (
    _CORE_MEANINGS,
    _OPTIONAL_CONCEPTS,
    _STRONG,
    CORE_CONCEPTS,
    MAX_PROPOSALS,
    _constraints,
    _differs_in_digit,
    _edit_distance_le1,
    _head_and_qualifier,
    _how,
    _id_variant,
    _meaning,
    _note,
)
from sarag_assets.backends.embedded.findings import Analysis, Finding
from sarag_assets.backends.embedded.matching import Encode, describe
from sarag_assets.backends.normalize import canonical_name, canonical_type
from sarag_assets.core.structuring.interface import CandidateColumn


def proposals(an: Analysis) -> list[tuple[CandidateColumn, Finding | None, str]]:
    """(column, finding, signal) for the core concepts and the detected entities."""
    out: list[tuple[CandidateColumn, Finding | None, str]] = []
    used_values: set[str] = set()
    for concept in CORE_CONCEPTS:
        f = an.best(an.by_signal(concept))
        col_type, meaning = _CORE_MEANINGS[concept]
        if f is not None:
            used_values.add(f.value.lower())
            col = CandidateColumn(
                name=concept, type=col_type, meaning=meaning, constraints=_constraints(f, col_type), note=_note(f), example_value=f.value
            )
        else:
            dummy = Finding(concept, concept, "", col_type, 0.0, 0, "user", "")
            col = CandidateColumn(
                name=concept,
                type=col_type,
                meaning=meaning,
                constraints=_constraints(dummy, col_type),
                note=f"not stated in this conversation, detector {concept} ({_how(dummy)})",
                example_value=None,
            )
        out.append((col, f, concept))
    for concept, (col_type, meaning) in _OPTIONAL_CONCEPTS.items():
        f = an.best(an.by_signal(concept))
        if f is not None:
            if f.type == "string":
                used_values.add(f.value.lower())
            out.append(
                (CandidateColumn(name=concept, type=col_type, meaning=meaning, constraints=_constraints(f, col_type), note=_note(f), example_value=f.value), f, concept)
            )
    by_name: dict[str, list[Finding]] = {}
    for f in an.findings:
        if f.usable and f.signal not in CORE_CONCEPTS and f.signal not in _OPTIONAL_CONCEPTS and f.strength >= _STRONG:
            by_name.setdefault(canonical_name(f.name), []).append(f)
    entities = []
    for name, fs in by_name.items():
        if name in CORE_CONCEPTS:
            continue
        f = an.best(fs)
        entities.append((name, f))
    entities.sort(key=lambda x: (-round(x[1].strength, 1), x[1].turn, x[0]))
    for name, f in entities:
        if len(out) >= MAX_PROPOSALS:
            break
        typed = f.type in ("int", "float", "date", "datetime")
        if not typed and f.value.lower() in used_values:
            continue  # the same text already fills another column ("my router is X" and product X)
        used_values.add(f.value.lower())
        col_type = f.type if f.type in ("int", "float", "date", "boolean", "datetime") else "string"
        col = CandidateColumn(
            name=name, type=col_type, meaning=_meaning(f), constraints=_constraints(f, col_type), note=_note(f), example_value=f.value
        )
        out.append((col, f, f.signal))
    return out


def merge_lexical(columns: list[CandidateColumn]) -> list[CandidateColumn]:
    """Canonical names and types, then same-name / one-edit / id-variant twins merged (no model call)."""
    cols: list[CandidateColumn] = []
    for c in columns:
        cols.append(
            c.model_copy(update={"name": canonical_name(c.name), "type": canonical_type(c.type) or "string"})
        )
    kept: list[CandidateColumn] = []
    for c in cols:
        twin = next((k for k in kept if k.name == c.name), None)
        if twin is None:
            twin = next(
                (
                    k
                    for k in kept
                    if min(len(k.name), len(c.name)) >= 5
                    and (_edit_distance_le1(k.name, c.name) or _id_variant(k.name, c.name))
                    and not _differs_in_digit(k.name, c.name)
                    and k.type == c.type
                ),
                None,
            )
        if twin is not None:
            _merge_into(kept, twin, c)
        else:
            kept.append(c)
    return kept


def merge_similar(kept: list[CandidateColumn], encode: Encode) -> list[CandidateColumn]:
    """Columns whose "name: meaning" embeddings are near-duplicates merged (one model call)."""
    if len(kept) > 1:
        texts = [describe(c) for c in kept]
        vecs = encode(texts)
        sims = vecs @ vecs.T
        drop: set[int] = set()
        for i in range(len(kept)):
            if i in drop:
                continue
            for j in range(i + 1, len(kept)):
                if j in drop or kept[i].type != kept[j].type:
                    continue
                if round(float(sims[i, j]), 4) < 0.9:
                    continue
                hi, qi = _head_and_qualifier(kept[i].name)
                hj, qj = _head_and_qualifier(kept[j].name)
                if hi == hj and qi and qj and qi != qj:
                    continue  # app_version vs firmware_version: two things
                if kept[i].name in CORE_CONCEPTS and kept[j].name in CORE_CONCEPTS:
                    continue
                ei, ej = kept[i].example_value, kept[j].example_value
                if ei is not None and ej is not None and ei.strip().lower() != ej.strip().lower():
                    continue  # two different values in one conversation: two columns
                _merge_into(kept, kept[i], kept[j])
                drop.add(j)
        kept = [c for k, c in enumerate(kept) if k not in drop]
    return kept


def _merge_into(kept: list[CandidateColumn], target: CandidateColumn, other: CandidateColumn) -> None:
    idx = kept.index(target)
    update = {}
    if target.example_value is None and other.example_value is not None:
        update["example_value"] = other.example_value
        update["note"] = other.note
    if other.name != target.name and other.name not in target.note:
        update["note"] = (update.get("note", target.note) + f"; merged {other.name}").strip("; ")
    if update:
        kept[idx] = target.model_copy(update=update)
