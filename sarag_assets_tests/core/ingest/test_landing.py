"""Landing inbox files as batches, on real files in a temporary home: copying into the inbox, scanning it
(new, unchanged, touched, changed, hidden and unsupported files), the batch manifests and their lookup."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from datetime import datetime, timezone

import pytest

from sarag_assets.core.ingest import landing
from sarag_assets.core.ingest.drafts import FORMATS
from sarag_assets.core.ingest.landing import (
    SETTLED_AFTER_S,
    BatchManifest,
    copy_into_inbox,
    landed_manifests,
    scan_inbox,
)
from sarag_assets.settings import Home
from sarag_assets_tests.conftest import conversation, write_jsonl
from sarag_assets_tests.paths import TEST_DATA


def conversations(n: int, text: str = "my printer jams") -> list[dict]:
    return [conversation(f"c{i}", ("user", f"{text} ({i})"), ("agent", "clean the roller")) for i in range(n)]


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def every_file(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


# --- copy_into_inbox -------------------------------------------------------------------------------------


def test_copy_into_inbox_copies_the_file_where_the_sensor_finds_it(home, tmp_path):
    source = write_jsonl(tmp_path / "outside" / "tickets.jsonl", conversations(2))
    target = copy_into_inbox(home, source)
    assert target == home.inbox / "tickets.jsonl"
    assert target.read_bytes() == source.read_bytes() and source.exists()
    assert every_file(home.inbox) == ["tickets.jsonl"]  # no temporary file left behind

    scan_inbox(home, {}, max_per_batch=10)  # the first version lands
    write_jsonl(source, conversations(3))  # then copying a newer version replaces the inbox copy
    assert copy_into_inbox(home, source).read_bytes() == source.read_bytes()
    assert every_file(home.inbox) == ["tickets.jsonl"]


def test_copy_into_inbox_never_overwrites_a_file_that_has_not_landed_yet(home, tmp_path):
    first = write_jsonl(tmp_path / "a" / "export.jsonl", conversations(2, "my router reboots"))
    second = write_jsonl(tmp_path / "b" / "export.jsonl", conversations(2, "my refund is late"))
    assert copy_into_inbox(home, first) == home.inbox / "export.jsonl"
    assert copy_into_inbox(home, second) == home.inbox / "export-2.jsonl"  # beside it, not over it
    assert copy_into_inbox(home, first) == home.inbox / "export.jsonl"  # the same bytes again: one copy
    scan = scan_inbox(home, {}, max_per_batch=10)
    assert sorted(m.source_file for m in scan.manifests) == ["export-2.jsonl", "export.jsonl"]


@pytest.mark.parametrize("name", ["notes~", "export.tmp", "download.jsonl.part", ".hidden.jsonl",
                                  "..%2f..%2fevil.jsonl"])
def test_copy_into_inbox_refuses_a_name_the_scanner_skips(home, tmp_path, name):
    source = write_jsonl(tmp_path / name, conversations(1))
    with pytest.raises(landing.UnlandableName, match="not landed"):
        copy_into_inbox(home, source)
    assert every_file(home.inbox) == []
    assert landing.list_inbox(home) == [] and landing.skipped_name(name)


def test_copy_into_inbox_with_a_format_puts_the_file_under_that_formats_folder(home):
    source = TEST_DATA / "parsers" / "turns_sample.csv"
    target = copy_into_inbox(home, source, "turn_csv")
    assert target == home.inbox / "turn_csv" / "turns_sample.csv"
    assert target.read_bytes() == source.read_bytes()
    assert landing.format_override(home, target, FORMATS) == "turn_csv"
    assert every_file(home.inbox) == ["turn_csv/turns_sample.csv"]


def test_copy_into_inbox_refuses_a_missing_file_or_a_folder(home, tmp_path):
    with pytest.raises(FileNotFoundError):
        copy_into_inbox(home, tmp_path / "nowhere.jsonl")
    folder = tmp_path / "a-folder.jsonl"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        copy_into_inbox(home, folder)
    assert every_file(home.inbox) == []  # nothing half-copied, not even a hidden .part file


# --- scan_inbox ------------------------------------------------------------------------------------------


def test_a_new_file_becomes_one_manifest_per_chunk_of_max_per_batch(home):
    path = write_jsonl(home.inbox / "big.jsonl", conversations(7))
    digest = sha256(path)

    scan = scan_inbox(home, {}, max_per_batch=3)

    assert scan.problems == []
    assert [(m.record_start, m.record_end, m.chunk, m.n_chunks) for m in scan.manifests] == [
        (0, 3, 0, 3), (3, 6, 1, 3), (6, 7, 2, 3)]
    assert [m.batch_key for m in scan.manifests] == [f"big-{digest[:10]}-part{k:03d}of003" for k in (1, 2, 3)]
    assert [m.run_key for m in scan.manifests] == [f"{digest}:{k}" for k in range(3)]
    for manifest in scan.manifests:
        assert (manifest.source_file, manifest.file_hash, manifest.source_format) == ("big.jsonl", digest, None)
        assert manifest.snapshot == f"landed/{digest}.jsonl"
        assert BatchManifest.load(home, manifest.batch_key) == manifest
    assert len({m.landed_at for m in scan.manifests}) == 1
    assert datetime.fromisoformat(scan.manifests[0].landed_at).utcoffset() == timezone.utc.utcoffset(None)
    assert (home.root / scan.manifests[0].snapshot).read_bytes() == path.read_bytes()
    stat = path.stat()
    assert scan.seen == {"big.jsonl": [stat.st_size, stat.st_mtime_ns, digest]}


@pytest.mark.parametrize(("n", "ranges"), [
    (6, [(0, 3), (3, 6)]), (3, [(0, 3)]), (1, [(0, 1)]),
    (0, [(0, 1)]),  # an empty file is not a conversation file: one record, which its parse quarantines
])
def test_chunks_cover_every_record_once(home, n, ranges):
    path = home.inbox / "f.jsonl"
    write_jsonl(path, conversations(n))
    manifests = scan_inbox(home, {}, max_per_batch=3).manifests
    assert [(m.record_start, m.record_end) for m in manifests] == ranges
    if len(ranges) == 1:  # a file that fits one batch has no part suffix
        assert manifests[0].batch_key == f"f-{sha256(path)[:10]}"


def test_max_per_batch_must_be_positive(home):
    write_jsonl(home.inbox / "f.jsonl", conversations(2))
    with pytest.raises(ValueError, match="max_per_batch must be positive"):
        scan_inbox(home, {}, max_per_batch=0)


def test_an_unchanged_file_is_not_landed_again(home):
    path = write_jsonl(home.inbox / "a.jsonl", conversations(4))
    first = scan_inbox(home, {}, max_per_batch=2)
    assert len(first.manifests) == 2
    manifests_on_disk = every_file(home.batches)

    again = scan_inbox(home, first.seen, max_per_batch=2)
    assert again.manifests == [] and again.seen == first.seen and again.problems == []

    # touched (new mtime) but the same bytes: remembered with the new mtime, still nothing to land
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    touched = scan_inbox(home, again.seen, max_per_batch=2)
    assert touched.manifests == []
    assert touched.seen == {"a.jsonl": [stat.st_size, stat.st_mtime_ns + 5_000_000_000, first.seen["a.jsonl"][2]]}
    assert every_file(home.batches) == manifests_on_disk


def test_a_changed_file_is_landed_again_and_the_earlier_version_is_kept(home):
    path = write_jsonl(home.inbox / "a.jsonl", conversations(2))
    first = scan_inbox(home, {}, max_per_batch=10)
    old_snapshot = home.root / first.manifests[0].snapshot

    write_jsonl(path, conversations(3, text="my printer jams often"))
    changed = scan_inbox(home, first.seen, max_per_batch=10)

    [manifest] = changed.manifests
    assert manifest.file_hash == sha256(path) != first.manifests[0].file_hash
    assert manifest.batch_key != first.manifests[0].batch_key and manifest.record_end == 3
    assert manifest.landed_at >= first.manifests[0].landed_at
    assert changed.seen["a.jsonl"][2] == manifest.file_hash
    # the earlier raw version stays re-materializable
    assert old_snapshot.exists() and BatchManifest.load(home, first.manifests[0].batch_key) == first.manifests[0]
    assert (home.root / manifest.snapshot).read_bytes() == path.read_bytes()


def test_the_same_bytes_are_the_same_batches_whatever_the_memory_or_the_name(home):
    path = write_jsonl(home.inbox / "a.jsonl", conversations(5))
    first = scan_inbox(home, {}, max_per_batch=2)
    assert scan_inbox(home, {}, max_per_batch=2).manifests == first.manifests  # same keys and landing time

    shutil.copyfile(path, home.inbox / "copy of a.jsonl")
    second = scan_inbox(home, first.seen, max_per_batch=2)
    assert second.manifests == first.manifests  # the copy is the same batches, not a second set
    assert {m.source_file for m in second.manifests} == {"a.jsonl"}
    assert set(second.seen) == {"a.jsonl", "copy of a.jsonl"}
    assert len(every_file(home.landed)) == 1


def test_a_removed_file_is_forgotten(home):
    path = write_jsonl(home.inbox / "a.jsonl", conversations(1))
    first = scan_inbox(home, {}, max_per_batch=10)
    path.unlink()
    gone = scan_inbox(home, first.seen, max_per_batch=10)
    assert gone.manifests == [] and gone.seen == {} and gone.problems == []
    assert (home.root / first.manifests[0].snapshot).exists()  # its snapshot is not


def test_hidden_and_unfinished_files_are_not_landed_and_each_is_reported(home):
    skipped = (".hidden.jsonl", ".git/objects.jsonl", "sub/.cache/x.jsonl", "a.jsonl.part", "a.tmp",
               "a.jsonl.crdownload", ".a.jsonl.swp", "a.jsonl~")
    for name in skipped:
        write_jsonl(home.inbox / name, conversations(1))
    write_jsonl(home.inbox / "sub" / "visible.jsonl", conversations(1))

    scan = scan_inbox(home, {}, max_per_batch=10)

    # none is silent: each is named, with why and what to do (they may still be being written)
    assert sorted(p.split(":")[0] for p in scan.problems) == sorted(f"inbox/{n}" for n in skipped)
    assert all("not landed" in p and "rename it to land it" in p for p in scan.problems)
    assert [m.source_file for m in scan.manifests] == ["sub/visible.jsonl"]
    assert list(scan.seen) == ["sub/visible.jsonl"]
    assert len(every_file(home.landed)) == 1
    assert scan.manifests[0].batch_key.startswith("sub_visible-")

    # once unchanged for SETTLED_AFTER_S, each is quarantined whole with its reason, once
    later = scan_inbox(home, scan.seen, max_per_batch=10, now=time.time() + SETTLED_AFTER_S + 1)
    assert later.problems == []
    assert sorted(m.source_file for m in later.manifests) == sorted(skipped)
    assert all(m.refusal.startswith("not landed: ") and m.refusal.endswith("rename the file to land it")
               and m.batch_key.startswith("refused-") for m in later.manifests)
    assert sorted(later.seen) == sorted([*skipped, "sub/visible.jsonl"])
    again = scan_inbox(home, later.seen, max_per_batch=10, now=time.time() + SETTLED_AFTER_S + 2)
    assert again.manifests == [] and again.problems == []


def test_a_file_quarantined_under_a_skipped_name_lands_once_renamed(home):
    partial = write_jsonl(home.inbox / "export.jsonl.part", conversations(2))
    refused = scan_inbox(home, {}, max_per_batch=10, now=time.time() + SETTLED_AFTER_S + 1)
    assert [m.refusal is not None for m in refused.manifests] == [True]
    partial.rename(home.inbox / "export.jsonl")  # the download finished: the same bytes, now landed
    landed = scan_inbox(home, refused.seen, max_per_batch=10)
    assert [(m.source_file, m.refusal) for m in landed.manifests] == [("export.jsonl", None)]
    assert landed.manifests[0].run_key != refused.manifests[0].run_key


def test_files_in_no_supported_format_still_land_as_one_batch_each(home):
    (home.inbox / "notes.txt").write_text("hello\nthis is not a conversation\nat all\n", encoding="utf-8")
    (home.inbox / "photo.png").write_bytes(bytes(range(256)) * 8)

    scan = scan_inbox(home, {}, max_per_batch=1)

    # one single-record batch each: their parse quarantines them with a reason
    assert sorted((m.source_file, m.record_start, m.record_end, m.n_chunks) for m in scan.manifests) == [
        ("notes.txt", 0, 1, 1), ("photo.png", 0, 1, 1)]
    assert sorted(every_file(home.landed)) == sorted(f"{sha256(home.inbox / n)}{ext}"
                                                      for n, ext in (("notes.txt", ".txt"), ("photo.png", ".png")))


def test_a_formats_folder_overrides_detection_and_other_folders_do_not(home):
    (home.inbox / "turn_csv").mkdir()
    shutil.copyfile(TEST_DATA / "parsers" / "turns_sample.csv", home.inbox / "turn_csv" / "turns.csv")
    write_jsonl(home.inbox / "misc" / "more.jsonl", conversations(1))

    scan = scan_inbox(home, {}, max_per_batch=1)

    by_file = {}
    for manifest in scan.manifests:
        by_file.setdefault(manifest.source_file, []).append(manifest)
    assert set(by_file) == {"turn_csv/turns.csv", "misc/more.jsonl"}
    assert [m.source_format for m in by_file["turn_csv/turns.csv"]] == ["turn_csv", "turn_csv"]  # 2 conversations
    assert by_file["turn_csv/turns.csv"][0].batch_key.startswith("turn_csv_turns-")
    assert [m.source_format for m in by_file["misc/more.jsonl"]] == [None]


def test_a_home_without_an_inbox_has_nothing_to_land(tmp_path):
    scan = scan_inbox(Home(tmp_path / "never-created"), {"old.jsonl": [1, 2, "x"]}, max_per_batch=10)
    assert (scan.manifests, scan.seen, scan.problems) == ([], {}, [])


def test_a_file_vanishing_before_landing_is_reported_and_retried(home, monkeypatch):
    path = write_jsonl(home.inbox / "flaky.jsonl", [conversation("f", ("user", "q"), ("agent", "a"))])
    original = landing.snapshot_file

    def vanish_then_read(h, p):
        p.unlink()
        return original(h, p)

    monkeypatch.setattr(landing, "snapshot_file", vanish_then_read)
    scan = landing.scan_inbox(home, {}, max_per_batch=10)
    assert scan.manifests == []
    assert scan.problems and "disappeared" in scan.problems[0]
    assert "flaky.jsonl" not in scan.seen  # not remembered, so a reappearing file is landed later
    assert not path.exists()


# --- manifests -------------------------------------------------------------------------------------------


MANIFEST = BatchManifest(
    batch_key="tickets-0123456789-part002of003", source_file="sub/tickets.jsonl",
    snapshot="landed/0123456789abcdef.jsonl", file_hash="0123456789abcdef", source_format="turn_csv",
    record_start=100, record_end=200, chunk=1, n_chunks=3, landed_at="2024-05-01T10:00:00.000001+00:00")


def test_a_manifest_saves_and_loads_unchanged(tmp_path):
    home = Home(tmp_path / "fresh")  # no batches folder yet
    path = MANIFEST.save(home)
    assert path == home.batches / "tickets-0123456789-part002of003.json"
    assert json.loads(path.read_text(encoding="utf-8")) == dataclasses.asdict(MANIFEST)
    assert every_file(home.batches) == [path.name]  # the temporary file was renamed into place
    assert BatchManifest.load(home, MANIFEST.batch_key) == MANIFEST
    assert MANIFEST.run_key == "0123456789abcdef:1"

    moved = dataclasses.replace(MANIFEST, record_end=150)
    moved.save(home)
    assert BatchManifest.load(home, MANIFEST.batch_key) == moved


def test_loading_an_unknown_batch_says_which(home):
    with pytest.raises(FileNotFoundError, match="no manifest for batch 'nope'"):
        BatchManifest.load(home, "nope")


def test_landed_manifests_finds_a_files_batches_in_chunk_order(home):
    path = write_jsonl(home.inbox / "big.jsonl", conversations(12))
    landed = scan_inbox(home, {}, max_per_batch=1).manifests
    digest = sha256(path)
    assert len(landed) == 12

    # a manifest whose key carries the same hash prefix but of other bytes does not belong
    impostor = dataclasses.replace(landed[0], batch_key=f"other-{digest[:10]}", file_hash=digest[:10] + "f" * 54)
    impostor.save(home)

    found = landed_manifests(home, digest)
    assert found == landed
    assert [m.chunk for m in found] == list(range(12))
    assert landed_manifests(home, impostor.file_hash) == [impostor]
    assert landed_manifests(home, "0" * 64) == []
    assert landed_manifests(Home(home.root / "elsewhere"), digest) == []
