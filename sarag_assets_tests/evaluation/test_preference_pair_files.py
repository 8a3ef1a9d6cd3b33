"""The preference pairs of a home, a file per batch: the same records as one pass, written again only where
the batch, M* or the pair code changed."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

from sarag_assets.backends.llm import preference_pairs
from sarag_assets.core import warehouse
from sarag_assets.core.structuring.interface import GovernedMetadata, MetadataColumn
from sarag_assets.core.structuring.tables import conversations_from_raw
from sarag_assets.evaluation import preference_pairs as pair_files
from sarag_assets.evaluation.preference_pairs import MANIFEST, update_pair_files
from sarag_assets.evaluation.table_quality import table_from_rows

T0 = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
METADATA = GovernedMetadata(version=3, columns=[
    MetadataColumn(name="product", type="string", meaning="the product the user has"),
    MetadataColumn(name="resolution", type="string", meaning="what fixed the problem"),
])


def frame(table: str, rows: list[dict]) -> pl.DataFrame:
    columns = [c for c, _ in warehouse.TABLES[table]]
    return pl.DataFrame([{c: r.get(c) for c in columns} for r in rows], schema=warehouse.polars_schema(table))


def land(con, batch_key: str, hours: int, conversations: dict[str, tuple[str, str, dict]], version: int = 3) -> None:
    """A batch of two-turn conversations, dialogue id -> (problem, fix, row), with its validated rows."""
    raw, cells = [], []
    for dialogue_id, (problem, fix, row) in conversations.items():
        content_hash = f"{dialogue_id}:{problem}:{fix}"
        for i, (role, text) in enumerate((("user", problem), ("agent", fix))):
            raw.append({"batch_key": batch_key, "dialogue_id": dialogue_id, "turn_index": i, "role": role,
                        "speaker": f"{role}1", "text": text, "source_file": f"{batch_key}.jsonl",
                        "source_format": "jsonl", "content_hash": content_hash,
                        "landed_at": T0 + timedelta(hours=hours)})
        cells += [{"batch_key": batch_key, "dialogue_id": dialogue_id, "content_hash": content_hash,
                   "column_name": column, "value": value, "metadata_version": version}
                  for column, value in row.items()]
    warehouse.replace_batch(con, "raw_dialogues", batch_key, frame("raw_dialogues", raw))
    warehouse.replace_batch(con, "validated_rows", batch_key, frame("validated_rows", cells))


def conversation(n: int, product: str = "Netwave AX3000") -> tuple[str, str, dict]:
    problem = f"My {product} router drops the connection every {n} hours since the update."
    fix = f"Disable band steering on channel {n} and reboot the router."
    return problem, fix, {"product": product, "resolution": fix}


def one_pass(con, metadata: GovernedMetadata) -> list[dict]:
    """The records of the whole home at once, as the asset wrote them before there was a file per batch."""
    rows = warehouse.current_rows(con, "validated_rows").filter(pl.col("metadata_version") == metadata.version)
    raw = warehouse.current_rows(con, "raw_dialogues")
    return list(preference_pairs(table_from_rows(rows), (c for c, _ in conversations_from_raw(raw)), metadata))


def records(directory) -> dict[str, list[dict]]:
    return {p.stem: [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]
            for p in sorted(directory.glob("*.jsonl"))}


def snapshot(directory) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.jsonl"))}


@pytest.fixture
def con(tmp_path):
    with warehouse.connect(tmp_path / "warehouse.duckdb") as connection:
        warehouse.ensure_schema(connection)
        land(connection, "b1", 0, {"d1": conversation(1), "d2": conversation(2, "Homelink HC31")})
        land(connection, "b2", 1, {"d3": conversation(3), "d1": conversation(4)})  # d1 again: b2's is current
        land(connection, "b0", 0, {"d4": conversation(5)}, version=2)  # rows of an older M*: no pairs
        yield connection


def test_the_files_hold_the_records_of_one_pass_each_in_the_batch_of_its_current_version(con, tmp_path):
    out = tmp_path / "pairs"
    result = update_pair_files(con, METADATA, out)
    files = records(out)
    assert set(files) == {"b0", "b1", "b2"} and files["b0"] == []
    assert {r["dialogue_id"] for r in files["b1"]} == {"d2"}  # d1's old version is in b1, its current in b2
    assert {r["dialogue_id"] for r in files["b2"]} == {"d1", "d3"}
    assert "every 4 hours" in next(r["prompt"] for r in files["b2"] if r["dialogue_id"] == "d1")
    merged = sorted((r for batch in files.values() for r in batch), key=lambda r: r["dialogue_id"])
    assert merged == one_pass(con, METADATA) and merged
    assert result.pairs == len(merged) and result.rows == 3 and result.rows_on_older_metadata == 1
    assert result.batches == 3 and result.written == ["b0", "b1", "b2"] and result.removed == []
    assert sum(result.per_kind.values()) == result.pairs


def test_only_the_batches_that_changed_are_written_again(con, tmp_path):
    out = tmp_path / "pairs"
    update_pair_files(con, METADATA, out)
    before = snapshot(out)
    again = update_pair_files(con, METADATA, out)
    assert again.written == [] and snapshot(out) == before and again.pairs == sum(len(r) for r in records(out).values())

    land(con, "b3", 2, {"d5": conversation(6)})  # a new batch
    assert update_pair_files(con, METADATA, out).written == ["b3"]
    assert {k: v for k, v in snapshot(out).items() if k != "b3.jsonl"} == before

    land(con, "b4", 3, {"d2": conversation(7, "Homelink HC31")})  # d2 landed again: b1 holds no current one
    moved = update_pair_files(con, METADATA, out)
    assert moved.written == ["b4"] and moved.removed == ["b1"] and "b1" not in records(out)

    land(con, "b5", 4, {"d3": conversation(8)})  # d3 landed again: b2 keeps d1 only
    assert update_pair_files(con, METADATA, out).written == ["b2", "b5"]
    assert {r["dialogue_id"] for r in records(out)["b2"]} == {"d1"}

    con.execute("UPDATE validated_rows SET value = 'Netwave AX5400' "
                "WHERE dialogue_id = 'd1' AND column_name = 'product'")
    assert update_pair_files(con, METADATA, out).written == ["b2"]  # b1's old d1 row changed too, but is not current
    assert any('"Netwave AX5400"' in r["chosen"] for r in records(out)["b2"])

    (out / "b3.jsonl").unlink()  # a file removed by hand is written again
    assert update_pair_files(con, METADATA, out).written == ["b3"]
    assert sorted((r for batch in records(out).values() for r in batch), key=lambda r: r["dialogue_id"]) \
        == one_pass(con, METADATA)


def test_a_change_of_metadata_or_of_the_pair_code_writes_every_batch(con, tmp_path, monkeypatch):
    out = tmp_path / "pairs"
    update_pair_files(con, METADATA, out)
    reworded = METADATA.model_copy(update={"columns": [
        METADATA.columns[0], MetadataColumn(name="resolution", type="string", meaning="the fix that worked")]})
    assert update_pair_files(con, reworded, out).written == ["b0", "b1", "b2"]
    assert all("the fix that worked" in r["prompt"] for batch in records(out).values() for r in batch)
    assert update_pair_files(con, reworded, out).written == []

    monkeypatch.setattr(pair_files, "code_digest", lambda: "the digest of other pair code")
    assert update_pair_files(con, reworded, out).written == ["b0", "b1", "b2"]


def test_files_no_current_batch_accounts_for_are_removed(con, tmp_path):
    out = tmp_path / "pairs"
    update_pair_files(con, METADATA, out)
    (out / "stray.jsonl").write_text('{"prompt": "not this home"}\n')
    con.execute("DELETE FROM raw_dialogues WHERE batch_key = 'b0'")  # b0 holds no current conversation now
    result = update_pair_files(con, METADATA, out)
    assert result.removed == ["b0"] and result.written == []
    assert sorted(p.name for p in out.glob("*.jsonl")) == ["b1.jsonl", "b2.jsonl"]
    assert set(json.loads((out / MANIFEST).read_text())) == {"b1", "b2"}


# torn, or valid JSON of another shape (a list, an entry that is no object, a string, null)
@pytest.mark.parametrize("text", ['{"b1": {"fingerprint"', '["b1", "b2"]', '{"b1": 3}', '"b1"', 'null'])
def test_a_torn_manifest_writes_every_batch_again_with_the_same_records(con, tmp_path, text):
    out = tmp_path / "pairs"
    update_pair_files(con, METADATA, out)
    before = snapshot(out)
    (out / MANIFEST).write_text(text)
    assert update_pair_files(con, METADATA, out).written == ["b0", "b1", "b2"]
    assert snapshot(out) == before
