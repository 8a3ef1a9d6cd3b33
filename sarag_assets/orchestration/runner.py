"""Driving the real Definitions in-process: what `sarag materialize`, `demo`, `eval` and the tests use.

It evaluates the real inbox sensor against a real instance, registers the partitions it asks for,
executes each run request's job on that instance, then every other step of the graph whose assets are
stale, in an order the asset graph allows (`pipeline.Pipeline`: the graph is the one statement of what
depends on what). With the `executor` setting at `celery`, the runs' steps go to `sarag worker` processes
and the jobs are rebuilt from `sarag_assets.definitions` (what the workers load), not from the `defs`
passed in. The runs, materializations and check results show in the Dagster UI afterwards. A request whose
run key already ran successfully is skipped, as the daemon would skip it.
"""

from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import dagster as dg

from sarag_assets.core import publication, warehouse
from sarag_assets.core.indices.store import CONVERSATION_TEXTS, TABLE_ROWS, IndexStore
from sarag_assets.core.ingest.landing import skipped_in_inbox
from sarag_assets.defs.partitions import conversation_batches
from sarag_assets.defs.resources import SaragHome, Structuring
from sarag_assets.defs.sensors import already_landed
from sarag_assets.defs.structuring import governance_settings, stale_row_partitions
from sarag_assets.orchestration.launcher import Launcher
from sarag_assets.orchestration.pipeline import Pipeline, Step, resource
from sarag_assets.orchestration.recovery import release_dead_runs, runner_tag

RUN_KEY_TAG = "sarag/run_key"


@dataclass
class PipelineRun:
    batches: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # asked for, but already landed meanwhile
    refreshed: list[str] = field(default_factory=list)  # batches whose rows were brought up to the current M*
    indexed: list[str] = field(default_factory=list)  # batches written to LanceDB
    failed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)  # "<failed run> -> <its re-execution>", on workers
    published: str | None = None  # the state id readers now see, when this run published one
    partitions: int = 0  # batches in the home after this run
    redone: list[str] = field(default_factory=list)  # each step this run took, with why, in one line


class Words(NamedTuple):
    """How the summary names a step: while it runs, once it ran (what, and why), and when it failed."""

    running: str
    done: str
    failed: str


# The steps the summary names in its own words; any other step is named by its assets.
WORDS = {
    "cluster_job": Words("clustering", "clustered the rows: they changed", "feature_clusters"),
    "value_mentions_job": Words("counting value mentions", "counted value mentions: the rows changed",
                                "value_mentions"),
    "ranking_calibration_job": Words(
        "measuring the ranking's views",
        "looked whether the ranking's views are due a measurement: conversations landed", "ranking_calibration"),
    # governing M* again refreshes the rows it changes, so the rows stand for it here
    "evaluation_job": Words("measuring table quality",
                            "measured table quality and wrote preference pairs: the rows changed", "evaluation"),
    "retrieval_evaluation_job": Words("evaluating retrieval", "evaluated retrieval: a new state was published",
                                      "retrieval_evaluation"),
}

NOTHING_PUBLISHED = "nothing published: a step failed; readers keep the last published state"


def land_and_process(
    defs: dg.Definitions, instance: dg.DagsterInstance, *, raise_on_error: bool = False, progress=None
) -> PipelineRun:
    """Land the inbox and bring every asset up to date, in the order the asset graph gives.
    ``progress(label)``, when given, is told each run before it starts (the CLI shows it)."""
    launch = Launcher(defs, instance, raise_on_error=raise_on_error, tags=runner_tag())
    try:
        outcome = _Pass(defs, instance, launch, progress or (lambda label: None)).run()
        outcome.retried = list(launch.retried)
        return outcome
    finally:
        launch.close()


class _Pass:
    """One pass over the pipeline: land the inbox, then each step of the graph whose assets are stale."""

    def __init__(self, defs: dg.Definitions, instance: dg.DagsterInstance, launch: Launcher,
                 progress: Callable[[str], None]):
        self.defs, self.instance, self.launch, self.progress = defs, instance, launch, progress
        self.pipeline = Pipeline(defs)
        self.sarag_home = resource(defs, "sarag_home", SaragHome)
        self.outcome = PipelineRun()
        self.lost: list[str] = []
        self.keys: list[str] = []

    def run(self) -> PipelineRun:
        sensor = self.defs.resolve_sensor_def("inbox_sensor")
        self.land(sensor)
        self.keys = self.instance.get_dynamic_partitions(conversation_batches.name)
        # the assets whose staleness the domain states (the inbox, M* and its settings, the published state)
        special = {"governed_metadata": self.govern, "validated_rows": self.structure_rows,
                   "lancedb_indices": self.index, "staged_state": self.publish}
        for step in self.pipeline.steps:
            if step.job == sensor.job_name:
                continue  # landed above, from the inbox and the batches the warehouse lost
            handler = next((special[a] for a in step.assets if a in special), self.materialize)
            if not handler(step):
                return self.outcome
        self.outcome.partitions = len(self.keys)
        return self.outcome

    def land(self, sensor: dg.SensorDefinition) -> None:
        outcome, launch = self.outcome, self.launch
        outcome.problems.extend(release_dead_runs(self.instance))
        with dg.build_sensor_context(instance=self.instance, definitions=self.defs,
                                     resources=self.defs.resources) as context:
            result = sensor(context)
        outcome.problems.extend(skipped_in_inbox(self.sarag_home.home()))
        for request in result.dynamic_partitions_requests or []:
            self.instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        wanted = []
        for request in result.run_requests or []:
            if already_landed(self.instance, request.run_key):
                outcome.skipped.append(request.partition_key)
            else:
                wanted.append(request)
        if wanted:
            outcome.redone.append(f"ingested {len(wanted)} batch(es): new or changed files in the inbox")
        for request, run in launch.each(
                sensor.job_name, wanted, lambda r: r.partition_key, lambda r: f"ingesting batch {r.partition_key}",
                self.progress, tags=lambda r: {**r.tags, RUN_KEY_TAG: r.run_key}):
            (outcome.batches if run.success else outcome.failed).append(request.partition_key)

        # A warehouse moved aside or replaced has lost batches the instance landed: land them again from their
        # snapshots (replace-by-batch), then structure and index them whatever their data versions say.
        self.lost = _batches_missing_from_warehouse(self.sarag_home, self.instance, sensor.job_name, [
            key for key in self.instance.get_dynamic_partitions(conversation_batches.name)
            if key not in outcome.batches and key not in outcome.failed])
        if self.lost:
            outcome.problems.append(f"{len(self.lost)} landed batches were missing from the warehouse: ingested "
                                    "again from their landed files")
        for key, run in launch.each(sensor.job_name, self.lost, str, lambda k: f"ingesting batch {k} again",
                                    self.progress):
            (outcome.batches if run.success else outcome.failed).append(key)

    def govern(self, step: Step) -> bool:
        why = self.governance_due()
        if why:
            self.progress("governing the metadata")
            self.outcome.redone.append(f"governed the metadata: {why}")
            if not self.launch.run(step.job).success:
                self.outcome.failed.append("governed_metadata")
                return False
        return True

    def governance_due(self) -> str | None:
        """Why governed_metadata must run now, in a few words; None when M* is up to date."""
        latest = self.instance.get_latest_materialization_event(dg.AssetKey("governed_metadata"))
        if latest is None:
            return "never governed yet"
        if self.pipeline.outdated(self.instance, "governed_metadata"):
            return "new candidate columns"
        recorded = latest.asset_materialization.metadata.get("settings")
        now = governance_settings(self.sarag_home.settings(), resource(self.defs, "structuring", Structuring))
        if recorded is None or recorded.value != now:
            return f"its settings changed (now {now})"
        return None

    def structure_rows(self, step: Step) -> bool:
        stale = stale_row_partitions(self.instance, self.keys)
        stale += [key for key in self.lost if key not in stale]
        if stale:
            self.outcome.redone.append(f"structured the rows of {len(stale)} batch(es): built against another M* "
                                       "or gate setting, or never")
        for key, run in self.launch.each(step.job, stale, str, lambda k: f"structuring rows of batch {k}",
                                         self.progress):
            (self.outcome.refreshed if run.success else self.outcome.failed).append(key)
        return True

    def index(self, step: Step) -> bool:
        unindexed_text = _batches_without_text_index(self.sarag_home, self.keys)
        to_index = [key for key in self.keys if key in unindexed_text or key in self.lost
                    or self.pipeline.outdated(self.instance, "lancedb_indices", key)]
        if to_index:
            self.outcome.redone.append(f"indexed {len(to_index)} batch(es): their rows, documents or graphs changed")
        for key, run in self.launch.each(step.job, to_index, str, lambda k: f"indexing batch {k}", self.progress):
            (self.outcome.indexed if run.success else self.outcome.failed).append(key)
        return True

    def materialize(self, step: Step) -> bool:
        """A step without rules of its own: run when one of its assets is outdated (per batch when
        partitioned)."""
        names = ", ".join(step.assets)
        upstream = ", ".join(sorted({u for a in step.assets for u in self.pipeline.upstream(a)}))
        words = WORDS.get(step.job, Words(f"materializing {names}", f"materialized {names}: {upstream} changed",
                                          names))
        if step.partitioned:
            due = [key for key in self.keys if any(self.pipeline.outdated(self.instance, a, key) for a in step.assets)]
            if due:
                self.outcome.redone.append(f"{words.done} ({len(due)} batch(es))")
            for key, run in self.launch.each(step.job, due, str, lambda k: f"{words.running}, batch {k}", self.progress,
                                             assets=step.selection):
                if not run.success:
                    self.outcome.failed.append(f"{words.failed} [{key}]")
            return True
        if any(self.pipeline.outdated(self.instance, a) for a in step.assets):
            self.progress(words.running)
            self.outcome.redone.append(words.done)
            if not self.launch.run(step.job, assets=step.selection).success:
                self.outcome.failed.append(words.failed)
        return True

    def publish(self, step: Step) -> bool:
        """Stage, audit and publish what changed, unless a step failed: readers keep the last good state."""
        outcome, outdated = self.outcome, self.pipeline.outdated
        if outcome.failed:
            outcome.problems.append(NOTHING_PUBLISHED)
            return True
        home = self.sarag_home.home()
        if outdated(self.instance, "staged_state"):
            why = "the indices, clusters, value mentions or ranking calibration changed"
        elif outdated(self.instance, "published_state"):
            why = "a staged state was not published yet"
        elif not publication.readable(home):  # a damaged or deleted state is published again
            why = "the published state does not open"
        else:
            return True
        self.progress("auditing and publishing")
        outcome.redone.append(f"audited and published a state: {why}")
        # a batch whose index is out of step with the warehouse (an index step killed between two tables'
        # writes, a table damaged by hand) would fail the audit at every run: none of its inputs changed,
        # so nothing else indexes it again
        partitions = set(self.instance.get_dynamic_partitions(conversation_batches.name))
        heal = [key for key in publication.batches_out_of_step(home) if key in partitions]
        for key, again in self.launch.each(self.pipeline.job_of("lancedb_indices"), heal, str,
                                           lambda k: f"indexing batch {k} again (its index and warehouse disagreed)",
                                           self.progress):
            (outcome.indexed if again.success else outcome.failed).append(key)
        if outcome.failed:
            outcome.problems.append(NOTHING_PUBLISHED)
            return True
        if heal:
            self.progress("auditing and publishing")
        run = self.launch.run(step.job)
        if run.success:
            outcome.published = _published_id(self.instance, run.run_id)
        else:
            outcome.failed.append("published_state")
            outcome.problems.append("nothing published: the staged state failed its audit; readers keep the last "
                                    "published state (see staged_state's checks in the Dagster UI)")
        return True


def _published_id(instance: dg.DagsterInstance, run_id: str) -> str:
    """The state id the run's published_state materialization names."""
    records = instance.fetch_materializations(dg.AssetKey("published_state"), limit=1).records
    record = next(r for r in records if r.run_id == run_id)
    return record.asset_materialization.metadata["state_id"].value


def _batches_missing_from_warehouse(sarag_home: SaragHome, instance: dg.DagsterInstance, ingest_job: str,
                                    keys: list[str]) -> list[str]:
    """Batches that landed (their ingest run succeeded) and of which the warehouse holds neither a turn nor
    a quarantine row: it was moved aside, replaced or lost."""
    if not keys:
        return []
    home = sarag_home.home()
    held: set[str] = set()
    if home.warehouse.is_file():
        with warehouse.connect(home.warehouse, read_only=True) as con:
            held = warehouse.landed_batch_keys(con)
    return [key for key in keys if key not in held and instance.get_runs(filters=dg.RunsFilter(
        job_name=ingest_job, tags={"dagster/partition": key}, statuses=[dg.DagsterRunStatus.SUCCESS]),
        limit=1)]


def _batches_without_text_index(sarag_home: SaragHome, keys: list[str]) -> set[str]:
    """Batches whose conversations are in `table_rows` but not in `conversation_texts`: indexed by a sarag
    from before the text indices (or cut off between the two writes). They are indexed again."""
    store = IndexStore.open_for_read(str(sarag_home.home().lancedb))
    if TABLE_ROWS not in store.tables():
        return set()
    return {key for key in keys if store.counts(TABLE_ROWS, key) != store.counts(CONVERSATION_TEXTS, key)}
