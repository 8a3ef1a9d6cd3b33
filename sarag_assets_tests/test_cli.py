"""The `sarag` command as a user runs it (a real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sarag_assets_tests.conftest import publish_as_is

ROOT = Path(__file__).parent.parent


def sarag(*args, env_home=None, cwd=ROOT):
    env = None
    if env_home is not None:
        import os

        env = {**os.environ, "SARAG_HOME": str(env_home)}
    return subprocess.run([sys.executable, "-m", "sarag_assets.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_generate_writes_a_deterministic_corpus(tmp_path):
    first = sarag("generate", "--n", "60", "--seed", "3", "--out", str(tmp_path / "a"))
    second = sarag("generate", "--n", "60", "--seed", "3", "--out", str(tmp_path / "b"))
    assert first.returncode == 0 and second.returncode == 0, first.stderr
    assert json.loads(first.stdout)["n_conversations"] == 60
    for name in ("corpus.jsonl", "queries.jsonl", "truth.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    lines = (tmp_path / "a" / "corpus.jsonl").read_text().splitlines()
    assert len(lines) == 60 and all(json.loads(line)["turns"] for line in lines)


def test_land_copies_into_the_inbox_and_refuses_bad_arguments(tmp_path):
    source = tmp_path / "chats.csv"
    source.write_text("conversation_id,turn,speaker,text\nc1,1,customer,help\nc1,2,agent,done\n")
    home = tmp_path / "home"
    ok = sarag("land", str(source), "--format", "turn_csv", env_home=home)
    assert ok.returncode == 0, ok.stderr
    assert (home / "inbox" / "turn_csv" / "chats.csv").read_text() == source.read_text()
    missing = sarag("land", str(tmp_path / "nope.jsonl"), env_home=home)
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr
    unknown = sarag("land", str(source), "--format", "xml", env_home=home)
    assert unknown.returncode == 2 and "unknown format" in unknown.stderr
    backup = tmp_path / "chats.csv~"
    backup.write_text(source.read_text())
    refused = sarag("land", str(source), str(backup), env_home=home)  # all or none
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines() == [
        "sarag: error: chats.csv~: not landed: names ending in '.part', '.tmp', '.crdownload', '.swp', '~' are "
        "files still being written (or editor backups), which the inbox scanner skips; rename the file"]
    for name in ("x.tmp", ".hidden", "..%2fx.jsonl", "..%2f..%2fevil.jsonl", "notes~"):
        odd = tmp_path / name
        odd.write_text(source.read_text())
        one = sarag("land", str(odd), env_home=home)
        assert one.returncode == 2 and len(one.stderr.strip().splitlines()) == 1, (name, one.stderr)
        assert one.stderr.startswith(f"sarag: error: {name}: not landed:") and "rename the file" in one.stderr
    # a path-like name that the scanner lands stays in the inbox, under its own name
    slashy = tmp_path / "a%2f..%2f..%2fx.csv"
    slashy.write_text(source.read_text().replace("c1", "c2"))
    landed = sarag("land", str(slashy), "--format", "turn_csv", env_home=home)
    assert landed.returncode == 0, landed.stderr[-2000:]
    from sarag_assets.core.ingest.landing import scan_inbox
    from sarag_assets.settings import Home

    scan = scan_inbox(Home(home), {}, max_per_batch=100)  # what the inbox sensor does next
    assert sorted(m.source_file for m in scan.manifests) == ["turn_csv/a%2f..%2f..%2fx.csv", "turn_csv/chats.csv"]
    assert scan.problems == []
    assert sorted(p.relative_to(home / "inbox").as_posix() for p in (home / "inbox").rglob("*") if p.is_file()) \
        == ["turn_csv/a%2f..%2f..%2fx.csv", "turn_csv/chats.csv"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith("x.csv")) == ["a%2f..%2f..%2fx.csv"]


def test_land_takes_a_name_as_long_as_the_file_system_allows_and_prints_control_characters_escaped(tmp_path):
    home = tmp_path / "home"
    text = json.dumps({"dialogue_id": "c1", "turns": [{"speaker": "user", "text": "help"}]}) + "\n"
    long_name = tmp_path / ("L" * 249 + ".jsonl")  # 255 bytes: the most a name may have here
    escaped = tmp_path / "esc\x1b[31m.jsonl"
    two_lines = tmp_path / "two\nlines\t.jsonl"  # one printed line per file landed, whatever its name
    for path in (long_name, escaped, two_lines):
        path.write_text(text)
    done = sarag("land", str(long_name), str(escaped), str(two_lines), env_home=home)
    assert done.returncode == 0, done.stderr
    assert (home / "inbox" / long_name.name).read_text() == text and (home / "inbox" / escaped.name).exists()
    assert "\x1b" not in done.stdout and "esc\\x1b[31m.jsonl" in done.stdout  # shown, not obeyed
    printed = done.stdout.splitlines()
    assert len(printed) == 3 and printed[2].endswith("two\\nlines\\t.jsonl")
    assert sorted(p.name for p in (home / "inbox").iterdir()) == sorted([long_name.name, escaped.name, two_lines.name])


def test_init_writes_the_defaults_once_and_a_bad_setting_stops_with_one_line(tmp_path):
    home = tmp_path / "home"
    first = sarag("init", "--home", str(home))
    assert first.returncode == 0, first.stderr
    assert "# batch_size = 5000" in (home / "sarag.toml").read_text()
    again = sarag("init", "--home", str(home))
    assert again.returncode == 2 and "already exists" in again.stderr
    (home / "sarag.toml").write_text("metadata_capacity = -3\n")
    bad = sarag("land", str(home / "sarag.toml"), "--home", str(home))
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        f"sarag: error: invalid setting {home / 'sarag.toml'} metadata_capacity = -3: Input should be greater than 0"]
    assert not (home / "inbox" / "sarag.toml").exists()


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
@pytest.mark.parametrize("damage", ["garbage", "directory", "missing copy", "unpublished", "no home", "foreign"])
def test_a_damaged_or_missing_warehouse_is_one_line_from_every_reading_command(tmp_path, damage):
    home = tmp_path / "home"
    if damage == "foreign":  # a DuckDB file, but not sarag's, as the published copy
        import duckdb

        other = tmp_path / "other.duckdb"
        with duckdb.connect(str(other)) as con:
            con.execute("CREATE TABLE invoices AS SELECT range AS n FROM range(10)")
        publish_as_is(home, copy_of=other)
    elif damage in ("garbage", "directory", "missing copy"):
        state = publish_as_is(home, bytes(range(256)) * 400 if damage == "garbage" else None)
        if damage == "directory":
            state.warehouse.mkdir()
    elif damage == "unpublished":  # a warehouse that was never published (or is being built)
        home.mkdir()
        (home / "warehouse.duckdb").write_bytes(bytes(range(256)) * 400)
    commands = [("search", "my printer jams"), ("ask", "my printer jams"), ("show", "c1")]
    for args in commands + ([] if damage == "foreign" else [("sql", "SELECT 1")]):  # sql reads any table
        result = sarag(*args, env_home=home)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "materialize" in result.stderr, (args, result.stderr)  # what to run
        if damage == "foreign":  # the published copy is what is wrong: publishing again mends it
            assert "the published warehouse copy cannot be read" in result.stderr and "aside" not in result.stderr
    sql = sarag("sql", "SELECT 1", env_home=home)
    if damage == "garbage":
        assert "cannot open the warehouse" in sql.stderr and str(home) not in sql.stderr
    elif damage in ("directory", "missing copy"):
        assert "has lost its warehouse copy" in sql.stderr


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
def test_a_home_that_is_a_file_is_one_line_from_every_command(tmp_path):
    home = tmp_path / "home"
    home.write_text("not a folder")
    source = tmp_path / "chats.jsonl"
    source.write_text('{"dialogue_id": "d1", "turns": [{"speaker": "user", "text": "printer jams"}]}\n')
    for args in (("init", "--home", str(home)), ("land", str(source)), ("materialize",), ("search", "printer"),
                 ("ask", "printer"), ("sql", "SELECT 1"), ("show", "d1"), ("serve", "--port", "1")):
        result = sarag(*args, env_home=home)
        assert result.returncode == 2, (args, result.stderr[-2000:])
        lines = result.stderr.strip().splitlines()
        assert "Traceback" not in result.stderr and len(lines) == 1 and lines[0].startswith("sarag: error:"), \
            (args, result.stderr[-2000:])
        assert "is not a folder" in lines[0], (args, lines[0])
    assert home.read_text() == "not a folder"


@pytest.mark.slow  # over 8 s: subprocesses or the model on many texts
@pytest.mark.parametrize("damage", ["garbage", "directory"])
def test_materialize_on_a_damaged_warehouse_is_one_line_before_any_step(tmp_path, damage):
    home = tmp_path / "home"
    home.mkdir()
    warehouse = home / "warehouse.duckdb"
    if damage == "garbage":
        warehouse.write_bytes(bytes(range(256)) * 400)
    else:
        warehouse.mkdir()
    result = sarag("materialize", env_home=home)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr[-2000:]
    assert "warehouse" in lines[0] and "sarag materialize" in lines[0]
    assert not (home / "dagster_home" / "storage").exists()  # no run was started


def test_a_damaged_lancedb_table_is_named_with_what_to_run(tmp_path):
    import lancedb

    from sarag_assets.query.damage import damaged_store

    db = lancedb.connect(str(tmp_path / "lancedb"))
    db.create_table("table_rows", data=[{"id": "a", "text": "my printer jams"}])
    for data_file in (tmp_path / "lancedb" / "table_rows.lance" / "data").iterdir():
        data_file.unlink()
    with pytest.raises(Exception) as raised:
        lancedb.connect(str(tmp_path / "lancedb")).open_table("table_rows").to_arrow()
    message = damaged_store(raised.value)
    assert message and message.startswith("the LanceDB indices cannot be read") and "sarag materialize" in message
    assert ".cargo" not in message and damaged_store(KeyError("x")) is None


def test_sql_cuts_long_cells_unless_asked_for_them_whole(tmp_path):
    import duckdb

    empty = tmp_path / "any.duckdb"
    duckdb.connect(str(empty)).close()
    publish_as_is(tmp_path / "home", copy_of=empty)
    statement = "SELECT 'Error E-42: ' || repeat('paper jam ', 12) AS message"
    cut = sarag("sql", statement, env_home=tmp_path / "home")
    whole = sarag("sql", "--full", statement, env_home=tmp_path / "home")
    assert cut.returncode == whole.returncode == 0, cut.stderr + whole.stderr
    assert len(cut.stdout.splitlines()[1]) == 60 and cut.stdout.splitlines()[1].endswith("…")
    assert whole.stdout.splitlines()[1] == "Error E-42: " + " ".join(["paper jam"] * 12)
