"""Resources: where the home is and how the ingestion behaves. Each is a small ConfigurableResource."""


import dagster as dg

from sarag_assets.settings import (
    GOVERNANCE_MODES,
    Home,
    IngestSettings,
    StructuringSwitches,
    env_int,
)

# Every asset that writes DuckDB runs in this pool; dagster.yaml limits it to one at a time.
DUCKDB_POOL = "duckdb_writer"


class SaragHome(dg.ConfigurableResource):
    """The home directory of all state; empty means $SARAG_HOME, else `data/`."""

    path: str = ""

    def home(self) -> Home:
        return Home.from_env(self.path or None).ensure()


class IngestConfig(dg.ConfigurableResource):
    """Ingestion knobs; unset fields fall back to SARAG_BATCH_SIZE / SARAG_REDACT / SARAG_MAX_RECORD_BYTES."""

    max_conversations_per_batch: int = 0
    redact: bool | None = None
    max_record_bytes: int = 0

    def settings(self) -> IngestSettings:
        env = IngestSettings.from_env()
        return IngestSettings(
            max_conversations_per_batch=self.max_conversations_per_batch or env.max_conversations_per_batch,
            redact=env.redact if self.redact is None else self.redact,
            max_record_bytes=self.max_record_bytes or env.max_record_bytes,
        )


class Structuring(dg.ConfigurableResource):
    """The structuring backend: the LLM backend when SARAG_LLM_BASE_URL is set, else the embedded one.

    LLM calls are cached in the warehouse (table llm_call_cache). Capacity and minimum support of
    the governed metadata default to SARAG_METADATA_CAPACITY (20) and SARAG_MIN_COLUMN_SUPPORT (2).
    The ablation switches `governance` ("governed" or "fixed") and `gates` ("on" or "off") default to
    SARAG_GOVERNANCE and SARAG_GATES (governed, on).
    """

    capacity: int = 0
    min_support: int = 0
    governance: str = ""
    gates: str = ""

    def backend(self, home: Home, stats):
        from sarag_assets.backends.llm import CallCache
        from sarag_assets.backends.registry import backend_from_env

        return backend_from_env(cache=CallCache(str(home.warehouse)), stats=stats)

    def metadata_capacity(self) -> int:
        return self.capacity or env_int("SARAG_METADATA_CAPACITY", 20)

    def column_min_support(self) -> int:
        return self.min_support or env_int("SARAG_MIN_COLUMN_SUPPORT", 2)

    def switches(self) -> StructuringSwitches:
        env = StructuringSwitches.from_env()
        governance = self.governance.strip().lower() or env.governance
        if governance not in GOVERNANCE_MODES:
            raise ValueError(f"governance must be one of {', '.join(GOVERNANCE_MODES)}, got {self.governance!r}")
        gates = env.gates
        if self.gates.strip():
            if self.gates.strip().lower() not in ("on", "off"):
                raise ValueError(f"gates must be on or off, got {self.gates!r}")
            gates = self.gates.strip().lower() == "on"
        return StructuringSwitches(governance=governance, gates=gates)


class EmbedderResource(dg.ConfigurableResource):
    """The sentence embedder: the packaged all-MiniLM-L6-v2 unless `model` (or SARAG_EMBEDDING_MODEL) names
    another local sentence-transformers model. Loaded once per process; vectors cached in the warehouse."""

    model: str = ""
    batch_size: int = 64

    def embedder(self, home: Home):
        from sarag_assets.core.encoding.embedder import DuckDBEmbeddingStore, Embedder

        return Embedder(self.model or None, batch_size=self.batch_size, store=DuckDBEmbeddingStore(str(home.warehouse)))
