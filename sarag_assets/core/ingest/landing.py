"""Landing inbox files as conversation batches. No Dagster imports.

A file dropped in the inbox is copied once into a content-addressed snapshot (`landed/<hash><ext>`),
so a batch can be re-materialized later even after the inbox file changed or was removed, and the
earlier raw version of a conversation is never lost. A file with more conversations than the batch
size becomes several batches, each a range of record ordinals. Every batch has a JSON manifest under
`batches/`, named by its partition key.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from sarag_assets.settings import Home

# Files still being written or hidden by tools are not landed.
_IGNORED_SUFFIXES = (".part", ".tmp", ".crdownload", ".swp", "~")
# A file of such a name that has not changed for this long is no longer being written (a stalled download,
# a backup, a hidden file): it is quarantined with the reason, so that no inbox file goes unaccounted for.
SETTLED_AFTER_S = 300.0

_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class UnlandableName(ValueError):
    """`sarag land` was given a file whose name the inbox scanner skips (the message says why)."""


def skipped_name(name: str) -> str | None:
    """Why the inbox scanner skips a file or folder of this name (hidden, or still being written by a
    tool), or None when it lands it."""
    if name.startswith("."):
        return "names starting with '.' are hidden files, which the inbox scanner skips"
    if name.endswith(_IGNORED_SUFFIXES):
        return (f"names ending in {', '.join(repr(s) for s in _IGNORED_SUFFIXES)} are files still being "
                "written (or editor backups), which the inbox scanner skips")
    return None


def landing_refusal(name: str) -> str | None:
    """What `sarag land` says when refusing a file of this name, or None when it lands it."""
    reason = skipped_name(name)
    return f"{name}: not landed: {reason}; rename the file" if reason else None


class FileVanished(OSError):
    """The inbox file disappeared (or became unreadable) while it was being landed."""


@dataclass(frozen=True)
class BatchManifest:
    batch_key: str
    source_file: str  # path relative to the inbox, as the user dropped it
    snapshot: str  # path of the immutable copy, relative to the home
    file_hash: str
    source_format: str | None  # explicit override (inbox/<format>/...), else auto-detected
    record_start: int
    record_end: int
    chunk: int
    n_chunks: int
    landed_at: str  # ISO-8601 UTC; a later landing of the same dialogue id supersedes an earlier one
    refusal: str | None = None  # a file under a name the scanner skips: quarantined whole with this reason

    @property
    def run_key(self) -> str:
        return f"{self.file_hash}:{self.chunk}" + (":refused" if self.refusal else "")

    def save(self, home: Home) -> Path:
        home.batches.mkdir(parents=True, exist_ok=True)
        path = home.batches / f"{self.batch_key}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")
        tmp.replace(path)
        return path

    @staticmethod
    def load(home: Home, batch_key: str) -> "BatchManifest":
        path = home.batches / f"{batch_key}.json"
        if not path.exists():
            raise FileNotFoundError(
                f"no manifest for batch {batch_key!r} under {home.batches}: was it landed by the inbox sensor "
                "or `sarag land` in this home?"
            )
        return BatchManifest(**json.loads(path.read_text(encoding="utf-8")))


def sanitize_key(text: str, max_len: int = 60) -> str:
    """Partition keys may not contain `| , [ ]` (and stay readable): keep [A-Za-z0-9._-]."""
    cleaned = _KEY_UNSAFE.sub("_", text).strip("._-")
    return (cleaned or "file")[:max_len]


def batch_key_for(relative_name: str, file_hash: str, chunk: int, n_chunks: int) -> str:
    stem = sanitize_key(Path(relative_name).with_suffix("").as_posix())
    key = f"{stem}-{file_hash[:10]}"
    if n_chunks > 1:
        key += f"-part{chunk + 1:03d}of{n_chunks:03d}"
    return key


def list_inbox(home: Home) -> list[Path]:
    """Candidate files in the inbox, sorted for a deterministic landing order."""
    if not home.inbox.exists():
        return []
    files = []
    for path in home.inbox.rglob("*"):
        if path.is_symlink() or not path.is_file():  # links and pipes: `skipped_files` accounts for them
            continue
        rel = path.relative_to(home.inbox)
        if any(skipped_name(part) for part in rel.parts):
            continue
        files.append(path)
    return sorted(files)


def skipped_files(home: Home) -> list[tuple[Path, str]]:
    """(path, why) of every inbox file whose name, or a folder's on its path, the scanner does not land."""
    if not home.inbox.exists():
        return []
    out = []
    for path in sorted(home.inbox.rglob("*")):
        rel = path.relative_to(home.inbox)
        try:
            kind = not_readable(path)
        except FileNotFoundError:
            continue
        reasons = [r for part in rel.parts if (r := skipped_name(part))]
        if kind or (reasons and path.is_file()):
            out.append((path, kind or reasons[0]))
    return out


# What the scanner never reads, whatever the name: a link's target may be any file of the server (its
# bytes would reach the quarantine's excerpt), and a pipe would block the read.
SYMLINK = "a symbolic link, which the inbox scanner does not follow; copy the file itself into the inbox"
NOT_A_FILE = "not a regular file (a pipe, socket or device), which the inbox scanner does not read"


def not_readable(path: Path) -> str | None:
    """Why the scanner does not read this inbox entry (a symbolic link, a pipe), or None."""
    import stat

    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return SYMLINK
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return NOT_A_FILE
    return None


def skipped_in_inbox(home: Home, *, now: float | None = None) -> list[str]:
    """One line per inbox file of a skipped name that may still be written (changed within
    SETTLED_AFTER_S): not landed yet, and not quarantined yet either, but never silent."""
    import time

    now = time.time() if now is None else now
    out = []
    for path, why in skipped_files(home):
        try:
            if now - path.lstat().st_mtime >= SETTLED_AFTER_S:
                continue  # settled: quarantined by the scan
        except FileNotFoundError:
            continue
        advice = "" if why in (SYMLINK, NOT_A_FILE) else "; rename it to land it"
        out.append(f"inbox/{path.relative_to(home.inbox).as_posix()}: not landed: {why}{advice} (it is "
                   f"quarantined once unchanged for {SETTLED_AFTER_S:.0f} s)")
    return out


def refuse_file(home: Home, path: Path, why: str) -> BatchManifest:
    """A batch that quarantines a settled file of a skipped name whole, with the reason (never parsed)."""
    relative = path.relative_to(home.inbox).as_posix()
    if why in (SYMLINK, NOT_A_FILE):  # never read: what it points to stays out of the home
        file_hash, snapshot = snapshot_bytes(home, f"{why}: {relative}".encode(), path)
        refusal = f"not landed: {why}"
    else:
        file_hash, snapshot = snapshot_file(home, path)
        refusal = f"not landed: {why}; rename the file to land it"
    manifest = BatchManifest(
        batch_key="refused-" + batch_key_for(relative, file_hash, 0, 1), source_file=relative,
        snapshot=snapshot.relative_to(home.root).as_posix(), file_hash=file_hash, source_format=None,
        record_start=0, record_end=1, chunk=0, n_chunks=1,
        landed_at=datetime.now(timezone.utc).isoformat(timespec="microseconds"),
        refusal=refusal)
    manifest.save(home)
    return manifest


def format_override(home: Home, path: Path, known_formats: tuple[str, ...]) -> str | None:
    """A file under `inbox/<format>/` is parsed as that format instead of being auto-detected."""
    rel = path.relative_to(home.inbox)
    if len(rel.parts) > 1 and rel.parts[0] in known_formats:
        return rel.parts[0]
    return None


def snapshot_file(home: Home, path: Path) -> tuple[str, Path]:
    """Copy `path` into the content-addressed store; return (sha256, snapshot path).

    The bytes are read once and hashed from the same buffer that is written, so the snapshot is
    exactly what was hashed even if the inbox file changes meanwhile.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise FileVanished(f"{path.name}: file disappeared before it could be read") from exc
    except OSError as exc:
        raise FileVanished(f"{path.name}: could not be read ({exc.strerror or exc})") from exc
    return snapshot_bytes(home, data, path)


def snapshot_bytes(home: Home, data: bytes, path: Path) -> tuple[str, Path]:
    """Store `data` (read from, or standing for, `path`) in the content-addressed store."""
    digest = hashlib.sha256(data).hexdigest()
    home.landed.mkdir(parents=True, exist_ok=True)
    target = home.landed / f"{digest}{''.join(path.suffixes[-2:]).lower()[:16]}"
    if not target.exists():
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    return digest, target


def plan_batches(
    *,
    relative_name: str,
    file_hash: str,
    snapshot: str,
    n_records: int,
    max_per_batch: int,
    source_format: str | None,
    landed_at: datetime | None = None,
) -> list[BatchManifest]:
    """Split a landed file into batches of at most `max_per_batch` records (at least one batch)."""
    if max_per_batch <= 0:
        raise ValueError("max_per_batch must be positive")
    stamp = (landed_at or datetime.now(timezone.utc)).isoformat(timespec="microseconds")
    n_chunks = max(1, -(-n_records // max_per_batch))
    manifests = []
    for chunk in range(n_chunks):
        start = chunk * max_per_batch
        end = n_records if chunk == n_chunks - 1 else start + max_per_batch
        manifests.append(
            BatchManifest(
                batch_key=batch_key_for(relative_name, file_hash, chunk, n_chunks),
                source_file=relative_name,
                snapshot=snapshot,
                file_hash=file_hash,
                source_format=source_format,
                record_start=start,
                record_end=max(end, start),
                chunk=chunk,
                n_chunks=n_chunks,
                landed_at=stamp,
            )
        )
    return manifests


def copy_into_inbox(home: Home, source: Path, source_format: str | None = None) -> Path:
    """What `sarag land` does: put a file where the sensor will find it (atomically), under its own name
    unless an inbox file of that name holds other bytes that no batch has landed yet (then under a free
    name beside it, so nothing accepted is overwritten before it lands). Raises UnlandableName for a
    name the scanner would skip."""
    refusal = landing_refusal(source.name)
    if refusal:
        raise UnlandableName(refusal)
    folder = home.inbox / source_format if source_format else home.inbox
    folder.mkdir(parents=True, exist_ok=True)
    digest = file_sha256(source)
    target = folder / source.name
    n = 1
    while target.exists() and _unlanded_other_bytes(home, target, digest):
        n += 1
        target = folder / f"{_stem(source.name)}-{n}{_suffixes(source.name)}"
    tmp = folder / f".sarag-{digest[:16]}.part"  # hidden from the scanner, and short whatever the name's length
    shutil.copyfile(source, tmp)
    tmp.replace(target)
    return target


def file_sha256(path: Path) -> str:
    """The file's SHA-256, read in blocks (a landed file can be gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _unlanded_other_bytes(home: Home, path: Path, digest: str) -> bool:
    try:
        held = file_sha256(path)
    except OSError:
        return False  # gone meanwhile: nothing to keep
    return held != digest and not landed_manifests(home, held)


def _suffixes(name: str) -> str:
    """The extensions the format sniffer reads (at most the last two, e.g. `.jsonl.gz`)."""
    return "".join(Path(name).suffixes[-2:])


def _stem(name: str) -> str:
    suffixes = _suffixes(name)
    return name[: len(name) - len(suffixes)] if suffixes else name


def landed_manifests(home: Home, file_hash: str) -> list[BatchManifest]:
    """Manifests of batches already cut from a file with these bytes, in chunk order."""
    found = []
    for path in sorted(home.batches.glob(f"*-{file_hash[:10]}*.json")):
        manifest = BatchManifest(**json.loads(path.read_text(encoding="utf-8")))
        if manifest.file_hash == file_hash:
            found.append(manifest)
    return sorted(found, key=lambda m: m.chunk)


def land_file(home: Home, path: Path, *, max_per_batch: int) -> list[BatchManifest]:
    """Snapshot one inbox file and plan its batches; re-landing the same bytes returns the same manifests.

    Raises FileVanished when the file cannot be read; any content problem is left to the batch's
    parse, which quarantines it with a reason.
    """
    from sarag_assets.core.conversation import NotAConversationFile
    from sarag_assets.core.ingest.drafts import FORMATS
    from sarag_assets.core.ingest.parsers import count_records

    relative = path.relative_to(home.inbox).as_posix()
    file_hash, snapshot = snapshot_file(home, path)
    same_bytes = [m for m in landed_manifests(home, file_hash) if m.refusal is None]
    if same_bytes:  # the same content under another name is the same batch, not a second one
        return same_bytes
    override = format_override(home, path, FORMATS)
    try:
        n_records = count_records(snapshot, override)
    except (NotAConversationFile, OSError):  # not a conversation file: one batch quarantines it
        n_records = 1
    planned = plan_batches(
        relative_name=relative,
        file_hash=file_hash,
        snapshot=snapshot.relative_to(home.root).as_posix(),
        n_records=n_records,
        max_per_batch=max_per_batch,
        source_format=override,
    )
    for manifest in planned:
        manifest.save(home)
    return planned


@dataclass
class InboxScan:
    manifests: list[BatchManifest]  # batches of files that are new or changed since the last scan
    seen: dict[str, list]  # relative path -> [size, mtime_ns, sha256]: the next scan's memory
    problems: list[str]  # files not landed this time: skipped names, or failed (retried on the next scan)


def scan_inbox(home: Home, seen: dict[str, list], *, max_per_batch: int, now: float | None = None) -> InboxScan:
    """Land every inbox file that is new or whose content changed since `seen` was recorded; quarantine
    every settled file of a name the scanner skips (`refuse_file`)."""
    import time

    now = time.time() if now is None else now
    manifests: list[BatchManifest] = []
    problems: list[str] = skipped_in_inbox(home, now=now)
    now_seen: dict[str, list] = {}
    for path, why in skipped_files(home):
        relative = path.relative_to(home.inbox).as_posix()
        try:
            stat = path.lstat()  # a link's own times: its target is never read
        except FileNotFoundError:
            continue
        previous = seen.get(relative)
        if previous and previous[0] == stat.st_size and previous[1] == stat.st_mtime_ns:
            now_seen[relative] = previous
        elif now - stat.st_mtime >= SETTLED_AFTER_S:
            try:
                refused = refuse_file(home, path, why)
            except FileVanished as exc:
                problems.append(str(exc))
                continue
            now_seen[relative] = [stat.st_size, stat.st_mtime_ns, refused.file_hash]
            manifests.append(refused)
    for path in list_inbox(home):
        relative = path.relative_to(home.inbox).as_posix()
        try:
            stat = path.stat()
        except FileNotFoundError:
            problems.append(f"{relative}: disappeared before it could be landed")
            continue
        previous = seen.get(relative)
        if previous and previous[0] == stat.st_size and previous[1] == stat.st_mtime_ns:
            now_seen[relative] = previous
            continue
        try:
            batch = land_file(home, path, max_per_batch=max_per_batch)
        except FileVanished as exc:
            problems.append(str(exc))
            continue
        now_seen[relative] = [stat.st_size, stat.st_mtime_ns, batch[0].file_hash]
        if previous and previous[2] == batch[0].file_hash:
            continue  # touched, same bytes
        manifests.extend(batch)
    return InboxScan(manifests=manifests, seen=now_seen, problems=problems)
