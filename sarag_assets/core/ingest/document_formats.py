"""Single-document JSON formats (msdialog, abcd, tweetsumm, multidogo): one JSON document holding many
conversations, streamed entry by entry."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from json.decoder import scanstring
from typing import Any

from sarag_assets.core.conversation import QUARANTINE_RAW_CHARS, Role
from sarag_assets.core.ingest.drafts import (
    _UTF8_BOM,
    _Bad,
    _check_speaker,
    _check_text,
    _Draft,
    _FileLevel,
    _kind,
    _norm_id,
    _norm_ts,
    _short,
)
from sarag_assets.core.ingest.json_numbers import NumberReader
from sarag_assets.core.ingest.roles import _RawTurn, _Reject, role_of_label
from sarag_assets.core.ingest.sniffing import _read_error

# --------------------------------------------------------------------------------------------------
# Single-document JSON (msdialog, abcd, tweetsumm, multidogo)
# --------------------------------------------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_BAD_BYTE = re.compile("[\udc80-\udcff]")


@dataclass
class _Entry:
    index: int
    key: str | None
    value: Any
    start: int  # char span of the entry in the document text
    end: int
    problem: str | None = None  # a number the entry holds that no record can (NumberReader)


def _load_document(fh, fmt: str) -> tuple[str, list[_Entry], bool]:
    """Parse a whole JSON document into its top-level entries; raises _FileLevel if it does not parse."""
    try:
        data = fh.read()
    except OSError as exc:
        raise _read_error(None, exc) from exc
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    try:
        text = data.decode("utf-8")
        bad_bytes = False
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="surrogateescape")
        bad_bytes = True
    del data
    opener, closer = ("[", "]") if fmt in ("abcd", "tweetsumm") else ("{", "}")
    kind = "list" if opener == "[" else "object"
    numbers = NumberReader()
    entries: list[_Entry] = []

    def fail(msg: str, pos: int) -> _FileLevel:
        line = text.count("\n", 0, pos) + 1
        col = pos - text.rfind("\n", 0, pos)
        ends_early = pos >= len(text.rstrip()) or msg.startswith("Unterminated string")
        truncated = " (the document ends early: the file is probably truncated)" if ends_early else ""
        return _FileLevel(
            f"not a valid {fmt} JSON document{truncated}: {msg} (line {line}, column {col}, char {pos})",
            text[:QUARANTINE_RAW_CHARS],
        )

    i = _WS.match(text, 0).end()
    if i >= len(text) or text[i] != opener:
        found = repr(text[i]) if i < len(text) else "end of file"
        raise fail(f"expected a JSON {kind} ({opener!r}), found {found}", i)
    i = _WS.match(text, i + 1).end()
    if i < len(text) and text[i] == closer:
        i += 1
    else:
        index = 0
        while True:
            start = i
            key = None
            try:
                if opener == "{":
                    if i >= len(text) or text[i] != '"':
                        raise fail("expecting a property name in double quotes", i)
                    key, i = scanstring(text, i + 1)
                    i = _WS.match(text, i).end()
                    if i >= len(text) or text[i] != ":":
                        raise fail("expecting ':' delimiter", i)
                    i = _WS.match(text, i + 1).end()
                numbers.problems.clear()
                value, i = numbers.decoder.raw_decode(text, i)
            except json.JSONDecodeError as exc:
                raise fail(exc.msg, exc.pos) from None
            except RecursionError:
                raise fail("nested too deeply", i) from None
            entries.append(_Entry(index, key, value, start, i, numbers.reason()))
            index += 1
            i = _WS.match(text, i).end()
            if i < len(text) and text[i] == ",":
                i = _WS.match(text, i + 1).end()
                continue
            if i < len(text) and text[i] == closer:
                i += 1
                break
            raise fail(f"expecting ',' or {closer!r}", i)
    rest = _WS.match(text, i).end()
    if rest < len(text):
        raise fail("extra data after the document", rest)
    return text, entries, bad_bytes


def _entry_problem(text: str, entry: _Entry, bad_bytes: bool, max_bytes: int) -> str | None:
    if entry.problem:
        return entry.problem
    chars = entry.end - entry.start
    if chars * 4 > max_bytes:
        size = len(text[entry.start : entry.end].encode("utf-8", errors="surrogateescape"))
        if size > max_bytes:
            return f"record is {size:,} bytes, over the {max_bytes:,}-byte record limit"
    if bad_bytes:
        m = _BAD_BYTE.search(text, entry.start, entry.end)
        if m:
            offset = len(text[: m.start()].encode("utf-8", errors="surrogateescape"))
            return f"invalid UTF-8 at byte offset {offset} of the file (inside record {entry.index})"
    return None


def _document_records(fh, fmt: str, max_bytes: int) -> Iterator[_Draft | _Bad]:
    text, entries, bad_bytes = _load_document(fh, fmt)
    build = _DOC_BUILDERS[fmt]
    for entry in entries:
        raw_text = text[entry.start : min(entry.end, entry.start + QUARANTINE_RAW_CHARS)]
        problem = _entry_problem(text, entry, bad_bytes, max_bytes)
        if problem:
            yield _Bad(entry.index, problem, raw_text)
            continue
        try:
            draft = build(entry)
        except _Reject as exc:
            yield _Bad(entry.index, str(exc), raw_text)
            continue
        draft.raw = raw_text
        yield draft


def _require_dict(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise _Reject(f"{what} is {_kind(value, json_prefix=True)}, expected an object")
    return value


def _require_list(value: Any, what: str, dialogue_id: str) -> list:
    if value is None:
        raise _Reject(f"dialogue {dialogue_id!r} has no {what}")
    if not isinstance(value, list):
        raise _Reject(f"dialogue {dialogue_id!r}: {what} is {_kind(value)}, expected a list")
    if not value:
        raise _Reject(f"dialogue {dialogue_id!r} has no turns ({what} is empty)")
    return value


def _msdialog(entry: _Entry) -> _Draft:
    dialogue_id = _norm_id(entry.key, "dialog id")
    rec = _require_dict(entry.value, f"dialog {dialogue_id!r}")
    utterances = _require_list(rec.get("utterances"), "'utterances'", dialogue_id)
    items: list[tuple[Any, _RawTurn]] = []
    names: list[str] = []
    answers: list[Any] = []
    bad_ts = 0
    for i, u in enumerate(utterances):
        where = f"dialogue {dialogue_id!r} utterances[{i}]"
        if not isinstance(u, dict):
            raise _Reject(f"{where} is {_kind(u)}, expected an object")
        actor = u.get("actor_type")
        role = actor.strip().lower() if isinstance(actor, str) else None
        if role not in ("user", "agent"):
            raise _Reject(f"{where}: actor_type {_short(actor)} is neither 'user' nor 'agent'")
        text = _check_text(where, u.get("utterance"), "utterance")
        user_id = u.get("user_id")
        if isinstance(user_id, str) and user_id.strip():
            speaker = user_id.strip()
            names.append(speaker)
        elif isinstance(user_id, int) and not isinstance(user_id, bool):
            speaker = str(user_id)
        else:
            speaker = role
        ts, invalid = _norm_ts(u.get("utterance_time"))
        bad_ts += invalid
        pos = u.get("utterance_pos")
        accepted = u.get("is_answer") in (1, True, "1")
        if accepted:
            answers.append(pos if pos is not None else i + 1)
        items.append((pos, _RawTurn(speaker, text, ts, role, accepted)))  # type: ignore[arg-type]
    if all(isinstance(p, int) and not isinstance(p, bool) for p, _ in items):
        items.sort(key=lambda pt: pt[0])
    metadata: dict[str, Any] = {}
    for key in ("title", "category", "dialog_time", "frequency"):
        if rec.get(key) is not None:
            metadata[key] = rec[key]
    metadata["answer_utterance_pos"] = answers
    return _Draft(
        entry.index, entry.value, dialogue_id, [t for _, t in items], metadata, names, "source", bad_ts,
        fields={"category": rec.get("category")},
    )


_ABCD_ROLES: dict[str, Role] = {"customer": "user", "agent": "agent"}


def _abcd(entry: _Entry) -> _Draft:
    rec = _require_dict(entry.value, f"record {entry.index}")
    dialogue_id = _norm_id(rec.get("convo_id"), "convo_id")
    original = _require_list(rec.get("original"), "'original'", dialogue_id)
    turns: list[_RawTurn] = []
    actions = 0
    for i, pair in enumerate(original):
        where = f"dialogue {dialogue_id!r} original[{i}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise _Reject(f"{where} is not a [speaker, text] pair: {_short(pair)}")
        speaker = _check_speaker(where, pair[0])
        text = _check_text(where, pair[1])
        key = speaker.lower()
        if key == "action":
            actions += 1
            continue
        role = _ABCD_ROLES.get(key) or role_of_label(speaker)
        if role is None:
            raise _Reject(f"{where}: unknown speaker {speaker!r} (expected customer, agent or action)")
        turns.append(_RawTurn(speaker, text, None, role))
    scenario = rec.get("scenario") if isinstance(rec.get("scenario"), dict) else {}
    metadata: dict[str, Any] = {"system_actions": actions}
    for key in ("flow", "subflow"):
        if isinstance(scenario.get(key), str):
            metadata[key] = scenario[key]
    personal = scenario.get("personal") if isinstance(scenario.get("personal"), dict) else {}
    names = [personal[k] for k in ("customer_name", "username") if isinstance(personal.get(k), str)]
    fields = {k: metadata[k] for k in ("flow", "subflow") if k in metadata}
    return _Draft(entry.index, entry.value, dialogue_id, turns, metadata, names, "source", fields=fields)


def _tweetsumm(entry: _Entry) -> _Draft:
    rec = _require_dict(entry.value, f"record {entry.index}")
    dialog = _require_dict(rec.get("dialog"), f"record {entry.index} 'dialog'")
    dialogue_id = _norm_id(dialog.get("dialog_id"), "dialog_id")
    raw_turns = _require_list(dialog.get("turns"), "'turns'", dialogue_id)
    turns: list[_RawTurn] = []
    for i, t in enumerate(raw_turns):
        where = f"dialogue {dialogue_id!r} turns[{i}]"
        if not isinstance(t, dict):
            raise _Reject(f"{where} is {_kind(t)}, expected an object")
        is_agent = t.get("is_agent")
        if not isinstance(is_agent, bool):
            raise _Reject(f"{where}: is_agent is {_short(is_agent)}, expected true or false")
        sentences = t.get("sentences")
        if isinstance(sentences, str):
            sentences = [sentences]
        if not isinstance(sentences, list):
            raise _Reject(f"{where}: sentences is {_kind(sentences)}, expected a list of strings")
        for j, s in enumerate(sentences):
            _check_text(f"{where} sentences[{j}]", s, "sentence")
        text = " ".join(s.strip() for s in sentences if s.strip())
        turns.append(_RawTurn("agent" if is_agent else "customer", text, None, "agent" if is_agent else "user"))
    metadata: dict[str, Any] = {}
    summaries = rec.get("summaries")
    if isinstance(summaries, dict) and isinstance(summaries.get("abstractive_summaries"), list):
        metadata["abstractive_summaries"] = summaries["abstractive_summaries"]
    return _Draft(entry.index, entry.value, dialogue_id, turns, metadata, [], "source")


_NAME_SLOT = re.compile(r"^(?:(?:first|last|full|customer|person|user|given|family)_?)?name$", re.IGNORECASE)
_SLOT_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


def _slot_names(utterance: str, side_info: Any) -> list[str]:
    """Tokens tagged as a person's name by MultiDoGO's slot labels (when they align with the text)."""
    if not isinstance(side_info, dict) or not isinstance(side_info.get("slot-labels"), list):
        return []
    labels = " ".join(x for x in side_info["slot-labels"] if isinstance(x, str)).split()
    tokens = _SLOT_TOKEN.findall(utterance)
    if len(labels) != len(tokens):
        return []
    return [tok for tok, lab in zip(tokens, labels) if _NAME_SLOT.match(lab) and tok.isalpha() and len(tok) > 1]


def _multidogo(entry: _Entry) -> _Draft:
    dialogue_id = _norm_id(entry.key, "dialog id")
    rec = _require_dict(entry.value, f"dialog {dialogue_id!r}")
    log = _require_list(rec.get("log"), "'log'", dialogue_id)
    turns: list[_RawTurn] = []
    names: list[str] = []
    for i, e in enumerate(log):
        where = f"dialogue {dialogue_id!r} log[{i}]"
        if not isinstance(e, dict):
            raise _Reject(f"{where} is {_kind(e)}, expected an object")
        for key, speaker, role in (("user utterance", "user", "user"), ("system response", "system", "agent")):
            value = e.get(key)
            if value is None:
                continue
            text = _check_text(where, value, repr(key))
            if text.strip():
                turns.append(_RawTurn(speaker, text, None, role))  # type: ignore[arg-type]
        if isinstance(e.get("user utterance"), str):
            names += _slot_names(e["user utterance"], e.get("original user side information"))
    metadata: dict[str, Any] = {}
    info = rec.get("original dialog info")
    if isinstance(info, dict) and info.get("domain") is not None:
        metadata["domain"] = info["domain"]
    if rec.get("original dialog id") is not None:
        metadata["original_dialog_id"] = rec["original dialog id"]
    fields = {"domain": metadata["domain"]} if "domain" in metadata else {}
    return _Draft(entry.index, entry.value, dialogue_id, turns, metadata, names, "source", fields=fields)


_DOC_BUILDERS = {"msdialog": _msdialog, "abcd": _abcd, "tweetsumm": _tweetsumm, "multidogo": _multidogo}
