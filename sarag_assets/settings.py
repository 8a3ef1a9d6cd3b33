"""Where state lives and the knobs read from the environment. No Dagster imports.

Everything sarag writes lives under one home directory (default `data/` in the working directory,
overridable with SARAG_HOME): the DuckDB warehouse, the LanceDB folder, the inbox, landed file
snapshots, batch manifests, reports and the local Dagster instance.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOME = "data"


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be a boolean (true/false), got {raw!r}")


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return value


GOVERNANCE_MODES = ("governed", "fixed")


@dataclass(frozen=True)
class StructuringSwitches:
    """Ablation switches of the structuring stage (both default to the full pipeline).

    - governance: "governed" evolves M* from the conversations' candidate columns; "fixed" installs a
      hand-written, domain-neutral support schema instead (SARAG_GOVERNANCE=governed|fixed).
    - gates: True runs the semantic and structural gates; False keeps every extracted value and records
      the gates as skipped (SARAG_GATES=on|off).
    """

    governance: str = "governed"
    gates: bool = True

    @staticmethod
    def from_env() -> "StructuringSwitches":
        return StructuringSwitches(
            governance=env_choice("SARAG_GOVERNANCE", GOVERNANCE_MODES, "governed"),
            gates=env_bool("SARAG_GATES", True),
        )


@dataclass(frozen=True)
class Home:
    """The directory tree of one sarag installation."""

    root: Path

    @staticmethod
    def from_env(override: str | os.PathLike | None = None) -> "Home":
        return Home(Path(override or os.environ.get("SARAG_HOME") or DEFAULT_HOME))

    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    @property
    def landed(self) -> Path:
        """Immutable, content-addressed snapshots of every file the sensor accepted."""
        return self.root / "landed"

    @property
    def batches(self) -> Path:
        """One JSON manifest per batch partition: which snapshot, which records."""
        return self.root / "batches"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse.duckdb"

    @property
    def lancedb(self) -> Path:
        return self.root / "lancedb"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster_home"

    def ensure(self) -> "Home":
        for path in (self.root, self.inbox, self.landed, self.batches, self.reports):
            path.mkdir(parents=True, exist_ok=True)
        return self


# What an instance needs when the project's dagster.yaml cannot be found (sarag run from another
# directory with a non-editable install): no telemetry, and one DuckDB writer at a time.
MINIMAL_INSTANCE_CONFIG = """telemetry:
  enabled: false
concurrency:
  pools:
    default_limit: 1
    granularity: op
"""


def ensure_instance_config(dagster_home: Path) -> Path:
    """`<dagster_home>/dagster.yaml`, written when missing: a copy of the project's dagster.yaml (in the
    working directory, else next to the package), else `MINIMAL_INSTANCE_CONFIG`. An existing file is
    left as it is (the operator may have edited it)."""
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    if not config.exists():
        for project_config in (Path("dagster.yaml"), Path(__file__).resolve().parents[1] / "dagster.yaml"):
            if project_config.is_file():
                config.write_text(project_config.read_text())
                break
        else:
            config.write_text(MINIMAL_INSTANCE_CONFIG)
    return config


@dataclass(frozen=True)
class IngestSettings:
    max_conversations_per_batch: int = 5000
    redact: bool = True
    max_record_bytes: int = 5 * 1024 * 1024

    @staticmethod
    def from_env() -> "IngestSettings":
        return IngestSettings(
            max_conversations_per_batch=env_int("SARAG_BATCH_SIZE", 5000),
            redact=env_bool("SARAG_REDACT", True),
            max_record_bytes=env_int("SARAG_MAX_RECORD_BYTES", 5 * 1024 * 1024),
        )
