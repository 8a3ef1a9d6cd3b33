"""Resources: the settings of a run, and the backend and embedder they choose. Each is a small
ConfigurableResource; the settings are read once per run (`SaragHome`) and handed to the others."""

import dagster as dg
from pydantic import PrivateAttr

from sarag_assets.core.structuring import governance
from sarag_assets.settings import Home, Settings

# Every asset that writes DuckDB runs in this pool: dagster.yaml limits it to one step at a time on one
# machine; deploy/dagster.postgres.yaml admits 8, whose commits the warehouse's file lock serializes.
DUCKDB_POOL = "duckdb_writer"


class SaragHome(dg.ConfigurableResource):
    """The home of all state and the run's settings: `Settings.load` (defaults < <home>/sarag.toml <
    SARAG_* variables), read once when the run starts. `path` overrides SARAG_HOME."""

    path: str = ""
    _settings: Settings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._settings = Settings.load(self.path or None)

    def settings(self) -> Settings:
        if self._settings is not None:
            return self._settings
        return Settings.load(self.path or None)  # a sensor tick or a direct call: read now, not kept

    def home(self) -> Home:
        return self.settings().paths.ensure()


class IngestConfig(dg.ConfigurableResource):
    """Ingestion knobs that override the settings for this deployment (0 / None: as the settings say)."""

    max_conversations_per_batch: int = 0
    redact: bool | None = None
    max_record_bytes: int = 0

    def batch_size(self, settings: Settings) -> int:
        return self.max_conversations_per_batch or settings.batch_size

    def redacting(self, settings: Settings) -> bool:
        return settings.redact if self.redact is None else self.redact

    def record_bytes(self, settings: Settings) -> int:
        return self.max_record_bytes or settings.max_record_bytes


class Structuring(dg.ConfigurableResource):
    """The structuring backend the settings choose (the LLM backend when `llm.base_url` is set, else the
    embedded one), with LLM calls cached in `<home>/llm_cache.sqlite`. Fields set here override the
    settings' capacity, minimum support and ablation switches ("governed"/"fixed", "on"/"off")."""

    capacity: int = 0
    min_support: int = 0
    governance: str = ""
    gates: str = ""
    _opened: list = PrivateAttr(default_factory=list)

    def backend(self, settings: Settings, stats):
        from sarag_assets.backends.llm import CallCache
        from sarag_assets.backends.registry import backend_for

        backend = backend_for(settings.llm, cache=CallCache(str(settings.paths.llm_cache)), stats=stats,
                              embedder=home_embedder(settings))
        self._opened.append(backend)
        return backend

    @staticmethod
    def work_metadata(backend, stats) -> dict:
        """What the step's structuring cost, for its metadata: calls, tokens and concurrency for the LLM
        backend (`llm_*`); texts through the encoder and the seconds in it for the embedded one."""
        from sarag_assets.core.encoding.embedder import Embedder

        encoder = getattr(backend, "embedder", None)
        return encoder.work_metadata() if isinstance(encoder, Embedder) else stats.as_metadata()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        # the LLM backend holds its HTTP client and the call cache's connection until here
        while self._opened:
            close = getattr(self._opened.pop(), "close", None)
            if close is not None:
                close()

    def metadata_capacity(self, settings: Settings) -> int:
        return self.capacity or settings.metadata_capacity

    def column_min_support(self, settings: Settings) -> int:
        return self.min_support or settings.min_column_support

    def current_metadata(self, con, settings: Settings):
        """The newest saved M*, with this deployment's capacity and minimum support."""
        return governance.current_metadata(con, self.metadata_capacity(settings), self.column_min_support(settings))

    def governance_mode(self, settings: Settings) -> str:
        mode = self.governance.strip().lower() or settings.governance
        if mode not in ("governed", "fixed"):
            raise ValueError(f"governance must be governed or fixed, got {self.governance!r}")
        return mode

    def gates_on(self, settings: Settings) -> bool:
        if not self.gates.strip():
            return settings.gates
        if self.gates.strip().lower() not in ("on", "off"):
            raise ValueError(f"gates must be on or off, got {self.gates!r}")
        return self.gates.strip().lower() == "on"


def home_embedder(settings: Settings, model: str = "", batch_size: int = 64):
    """The pipeline's one encoding path: the `embedding_model` setting's model (or `model`) on the
    `encoder_runtime` setting's runtime, each distinct text encoded once per home (vectors cached in the
    warehouse by content hash, so an unchanged re-run does no model work). A new one per step: its counters
    are that step's encoding work."""
    from sarag_assets.core.encoding.embedder import DuckDBEmbeddingStore, Embedder

    return Embedder(model or settings.embedding_model, batch_size=batch_size,
                    store=DuckDBEmbeddingStore(str(settings.paths.warehouse)), runtime=settings.encoder_runtime)


class EmbedderResource(dg.ConfigurableResource):
    """The sentence embedder of `home_embedder`: the packaged all-MiniLM-L6-v2 unless `model` (or the
    `embedding_model` setting) names another local sentence-transformers model."""

    model: str = ""
    batch_size: int = 64

    def embedder(self, settings: Settings):
        return home_embedder(settings, self.model, self.batch_size)
