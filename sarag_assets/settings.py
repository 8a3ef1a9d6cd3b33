"""sarag's settings: one typed object, and where state lives. No Dagster imports.

`Settings.load()` reads, in order, each later source overriding the earlier ones:

1. the defaults below;
2. `<home>/sarag.toml`, when it exists (`sarag init` writes one with every default, commented);
3. the `SARAG_*` environment variables (`SARAG_LLM_*` for the `[llm]` table).

The home itself is `--home`, else `SARAG_HOME`, else `data/`. An invalid value, in the file or the
environment, raises `SettingsError` with one line naming the setting, its source and what is wrong.

Everything sarag writes lives under the home: the DuckDB warehouse, the LanceDB folder, the inbox, landed
file snapshots, batch manifests, reports and the local Dagster instance.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_HOME = "data"
CONFIG_FILE = "sarag.toml"


class SettingsError(ValueError):
    """An invalid setting: the message is one line naming it and its source."""


# Spellings of the LLM modes (case and '-' vs '_' aside) -> the canonical name; the LLM client reads it too.
LLM_MODE_ALIASES = {
    "tools": "tools",
    "tool": "tools",
    "json_schema": "json_schema",
    "jsonschema": "json_schema",
    "json": "json",
    "markdown_json": "markdown-json",
    "md_json": "markdown-json",
    "mdjson": "markdown-json",
}


def canonical_llm_mode(value: Any) -> Any:
    """The canonical name of an LLM mode spelling; anything else is returned as it is (and refused later)."""
    if not isinstance(value, str):
        return value
    return LLM_MODE_ALIASES.get(value.strip().lower().replace("-", "_"), value)


def _blank_is_none(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else value


class LLMConfig(BaseModel):
    """The LLM backend's endpoint; with no `base_url` the embedded backend structures the conversations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(None, description="an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1")
    model: str | None = Field(None, description="the model name (required with a base URL)")
    api_key: str = Field("not-needed", description="the API key")
    mode: Literal["tools", "json_schema", "json", "markdown-json"] = Field(
        "tools", description="how structured output is asked for: tools, json_schema, json or markdown-json")
    timeout_s: float = Field(60.0, gt=0, description="seconds per HTTP request")
    max_retries: int = Field(4, ge=0, description="retries on 429, 5xx and timeouts (exponential backoff)")
    max_validation_retries: int = Field(2, ge=0, description="re-asks with the validation error after invalid output")
    concurrency: int = Field(8, ge=1, description="requests in flight at once; a 429 answer halves it for a while")

    _unset_when_blank = field_validator("base_url", "model", mode="before")(_blank_is_none)
    _mode_spelling = field_validator("mode", mode="before")(canonical_llm_mode)


RENAMED = {"query_runtime": "encoder_runtime"}  # former name -> name


class Settings(BaseModel):
    """Every knob of sarag, typed and validated (see the module docstring for where values come from)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    home: Path = Field(Path(DEFAULT_HOME), description="the home of all state")
    batch_size: int = Field(5000, gt=0, description="most conversations per batch partition; bigger files are split")
    redact: bool = Field(True, description="replace names, mentions, e-mails, phones and IPs in the text")
    max_record_bytes: int = Field(5 * 1024 * 1024, gt=0, description="a line or record larger than this is quarantined unparsed")
    metadata_capacity: int = Field(20, gt=0, description="most columns in the governed metadata M*")
    min_column_support: int = Field(2, gt=0, description="conversations that must propose a new concept before it becomes a column, at least")
    min_column_share: float = Field(0.05, ge=0, le=1, description="share of the corpus that must propose a new concept before it becomes a column (min_column_support is the floor)")
    governance: Literal["governed", "fixed"] = Field(
        "governed", description="ablation switch: fixed installs a hand-written support schema instead of M*")
    gates: bool = Field(True, description="ablation switch: false keeps every extracted value (no semantic or structural gate)")
    embedding_model: str | None = Field(None, description="a local sentence-transformers model path or name; unset = the packaged all-MiniLM-L6-v2")
    query_threads: int = Field(1, ge=0, description="threads a query is encoded on and BLAS threads of the cluster route (0 = the libraries' defaults)")
    encoder_runtime: Literal["auto", "onnx", "torch", "bf16"] = Field(
        "auto", description="what encodes texts, in the pipeline and for queries: auto (whichever of onnx and torch "
                            "this machine runs faster, timed once per machine), onnx (ONNX Runtime), torch, "
                            "or bf16 (the pipeline in bfloat16 where the CPU has it, queries on onnx)")
    exact_search_max_rows: int = Field(1_000_000, gt=0, description="a dense table up to this many rows is searched exactly in memory")
    sql_timeout_s: float = Field(10.0, gt=0, le=86_400, description="seconds a read-only SQL statement (sarag sql, sql --ask) may run before it is stopped (at most a day)")
    sql_memory_limit: str = Field("1GB", pattern=r"(?i)^\s*\d+(\.\d+)?\s*[KMGT]?i?B\s*$", description="memory a SQL statement may use (DuckDB's memory_limit, e.g. 512MB, 2GB, 1GiB); nothing spills to disk")
    sql_max_rows: int = Field(1000, gt=0, description="rows a SQL statement returns at most (the answer says when there were more)")
    sql_max_result_bytes: int = Field(10_000_000, gt=0, description="bytes a SQL statement's result may hold, as text; a larger result is refused")
    max_request_bytes: int = Field(1_000_000, gt=0, description="bytes a request body to `sarag serve` may hold; a larger one is refused (413) before it is read")
    ranking_calibration: bool = Field(True, description="measure on the home's own conversations which views vote in its ranking (a calibration home of up to 150 of them, built again when the home has doubled); false: the text views vote")
    executor: Literal["in_process", "celery", "k8s"] = Field(
        "in_process", description="where the pipeline's steps run: in_process (one machine), celery (on `sarag worker` processes) or k8s (a Kubernetes Job per step; docs/deployment.md)")
    celery_broker: str = Field("redis://127.0.0.1:6379/0", min_length=1, description="the Celery broker the runs and the workers share (redis://..., amqp://...)")
    celery_backend: str = Field("", description="the Celery result backend; blank = the broker's URL for redis://, else rpc://")
    celery_queue: str = Field("dagster", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
                              description="the Celery queue this home's steps go to and its workers take them "
                                          "from; homes sharing a broker each need their own")
    parallel_runs: int = Field(4, gt=0, description="with the celery executor, batch runs launched at once (their steps queue on the workers)")
    k8s_job_image: str = Field("", description="with the k8s executor, the image (sarag installed) each step's Kubernetes Job runs")
    k8s_home_claim: str = Field("sarag-home", min_length=1, description="with the k8s executor, the ReadWriteMany PersistentVolumeClaim holding the home, mounted at the home's path in every step pod")
    asset_owners: str = Field("team:support-data", pattern=r"^\s*(team:[\w.-]+|[^@\s,]+@[^@\s,]+)(\s*,\s*(team:[\w.-]+|[^@\s,]+@[^@\s,]+))*\s*$",
                              description="who owns the assets, as the Dagster UI shows them: e-mail addresses or team:<name>, comma-separated")
    run_retries: int = Field(1, ge=0, description="with the celery executor, times a failed run is re-executed from its failure (a worker lost mid-step costs a retry of its step)")
    llm: LLMConfig = Field(default_factory=LLMConfig)

    @field_validator("governance", "encoder_runtime", "executor", mode="before")
    @classmethod
    def _lowercase(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    _unset_when_blank = field_validator("embedding_model", mode="before")(_blank_is_none)

    @staticmethod
    def load(home: str | os.PathLike | None = None, environ: Mapping[str, str] | None = None) -> "Settings":
        """Defaults < `<home>/sarag.toml` < environment. Raises SettingsError (one line) on a bad value."""
        env = os.environ if environ is None else environ
        root = Path(home or env.get("SARAG_HOME", "").strip() or DEFAULT_HOME)
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        config = root / CONFIG_FILE
        if config.is_file():
            try:
                from_file = tomllib.loads(config.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise SettingsError(f"{config}: not a readable TOML file ({exc})") from None
            for key, value in from_file.items():
                if key == "llm" and isinstance(value, dict):
                    values["llm"] = dict(value)
                    sources.update({f"llm.{k}": f"{config} [llm] {k}" for k in value})
                else:
                    values[key] = value
                    sources[key] = f"{config} {key}"
        for old, new in RENAMED.items():  # a setting's former name still works, the new one winning
            if old in values:
                values.setdefault(new, values[old])
                sources.setdefault(new, sources[old])
                del values[old]
            raw = env.get(_env_name(old), "").strip()
            if raw and not env.get(_env_name(new), "").strip():
                values[new] = raw
                sources[new] = _env_name(old)
        # A variable set to blank counts as unset, as it always has.
        for name in _TOP_LEVEL:
            raw = env.get(_env_name(name), "").strip()
            if raw:
                values[name] = raw
                sources[name] = _env_name(name)
        for name in LLMConfig.model_fields:
            raw = env.get(_env_name(f"llm_{name}"), "").strip()
            if raw:
                values.setdefault("llm", {})[name] = raw
                sources[f"llm.{name}"] = _env_name(f"llm_{name}")
        values["home"] = root
        try:
            settings = Settings(**values)
        except ValidationError as exc:
            raise SettingsError(_one_line(exc, sources)) from None
        if settings.llm.base_url and not settings.llm.model:
            raise SettingsError("SARAG_LLM_MODEL (llm.model) must be set when an LLM base URL is set")
        if settings.executor == "k8s" and not settings.k8s_job_image.strip():
            raise SettingsError("SARAG_K8S_JOB_IMAGE (k8s_job_image) must be set when the executor is k8s")
        return settings

    @property
    def paths(self) -> "Home":
        """The directory tree under the home."""
        return Home(self.home)


_TOP_LEVEL = [name for name in Settings.model_fields if name not in ("home", "llm")]


def _env_name(name: str) -> str:
    return "SARAG_" + name.upper()


def _one_line(exc: ValidationError, sources: Mapping[str, str]) -> str:
    error = exc.errors()[0]
    path = ".".join(str(p) for p in error["loc"])
    where = sources.get(path, path)
    value = error.get("input")
    shown = f" = {value!r}" if not isinstance(value, dict) else ""
    return f"invalid setting {where}{shown}: {error['msg']}"


def default_config() -> str:
    """A sarag.toml with every setting at its default, each with its meaning, all commented out."""
    lines = ["# sarag settings. The SARAG_* environment variables override what is set here.", ""]

    def render(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            if name in ("home", "llm"):
                continue
            default = field.get_default(call_default_factory=True)
            lines.append(f"# {field.description} ({_env_name(prefix + name)})")
            lines.append(f"# {name} = {_toml(default)}")

    render(Settings, "")
    lines += ["", "[llm]"]
    render(LLMConfig, "llm_")
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Home:
    """The directory tree of one sarag installation."""

    root: Path

    @staticmethod
    def from_env(override: str | os.PathLike | None = None) -> "Home":
        """`override`, else SARAG_HOME, else `data/` (no other setting is read)."""
        return Home(Path(override or os.environ.get("SARAG_HOME", "").strip() or DEFAULT_HOME))

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
    def llm_cache(self) -> Path:
        return self.root / "llm_cache.sqlite"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster_home"

    def unusable(self, why: str) -> SettingsError:
        """The one-line error for a home that cannot be used, and why."""
        return SettingsError(f"the home {self.root} cannot be used: {why}")

    def ensure(self) -> "Home":
        """Create the home's folders; a home that cannot hold them is one line naming why."""
        for path in (self.root, self.inbox, self.landed, self.batches, self.reports):
            try:
                path.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                raise self.unusable(f"{path} is not a folder; point --home (or SARAG_HOME) at a folder") from None
            except PermissionError:
                raise self.unusable(f"no permission to create {path}") from None
            except OSError as exc:  # a read-only file system, a full disk, ...
                raise self.unusable(f"{path}: {exc.strerror or exc}") from None
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
