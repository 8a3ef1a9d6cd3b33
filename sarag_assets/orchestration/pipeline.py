"""The pipeline as the Definitions state it: which job materializes which assets, in which order the runner
runs them, and when an asset is stale. All of it is read from the resolved asset graph and the jobs'
selections, so an asset added to the Definitions is run, in its place, with no other edit."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

import dagster as dg

R = TypeVar("R")


@dataclass(frozen=True)
class Step:
    """One run of the pipeline: a job of the Definitions and the assets it materializes. `selection` is set
    for Dagster's implicit asset job, which runs the assets that no job of the Definitions selects."""

    job: str
    assets: tuple[str, ...]
    partitioned: bool
    selection: tuple[dg.AssetKey, ...] | None = None


def resource(defs: dg.Definitions, name: str, kind: type[R]) -> R:
    """The Definitions' resource `name`, which the runner reads as a `kind`."""
    found = (defs.resources or {}).get(name)
    if not isinstance(found, kind):
        raise TypeError(f"the Definitions' {name!r} resource is a {type(found).__name__}, not a {kind.__name__}")
    return found


class Pipeline:
    """The runner's view of one Definitions object."""

    def __init__(self, defs: dg.Definitions):
        self.defs = defs
        self.graph = defs.resolve_asset_graph()

    def _key(self, asset: str) -> dg.AssetKey:
        return dg.AssetKey.from_user_string(asset)

    def partitioned(self, asset: str) -> bool:
        return self.graph.get(self._key(asset)).partitions_def is not None

    @cached_property
    def _ancestors(self) -> dict[dg.AssetKey, set[dg.AssetKey]]:
        out: dict[dg.AssetKey, set[dg.AssetKey]] = {}
        for key in self.graph.toposorted_asset_keys:  # parents first
            parents = self.graph.get(key).parent_keys
            out[key] = set(parents).union(*(out.get(p, set()) for p in parents))
        return out

    def upstream(self, asset: str) -> list[str]:
        """The assets whose new materializations make `asset` stale: its parents in the graph, less those that
        reach it through another parent too. A change there that matters arrives through that parent (M*
        reaches staged_state through the indices rebuilt for it; governing again without changing M*
        restages nothing)."""
        parents = self.graph.get(self._key(asset)).parent_keys
        return sorted(p.to_user_string() for p in parents
                      if not any(p in self._ancestors[q] for q in parents if q != p))

    def job_of(self, asset: str) -> str:
        """The job the runner materializes `asset` with."""
        return next(step.job for step in self.steps if asset in step.assets)

    @cached_property
    def steps(self) -> list[Step]:
        """Every materializable asset in one step, the steps in an order the graph allows. Each asset goes
        to the smallest job that selects it; where the graph leaves steps free, the order in which the
        Definitions list their jobs decides (assets of no job come last, in the graph's order)."""
        keys = [k for k in self.graph.toposorted_asset_keys if self.graph.get(k).is_materializable]
        selections: dict[str, set[dg.AssetKey]] = {}  # in the order the Definitions list the jobs
        for job in self.defs.jobs or []:
            selected = set(self.defs.resolve_job_def(job.name).asset_layer.selected_asset_keys)
            if selected:
                selections[job.name] = selected
        listed = list(selections)
        implicit = self.defs.resolve_implicit_global_asset_job_def().name
        steps: dict[str, Step] = {}
        rank: dict[str, int] = {}
        owner: dict[dg.AssetKey, str] = {}
        for n, key in enumerate(keys):
            partitioned = self.graph.get(key).partitions_def is not None
            covering = [name for name in listed if key in selections[name]]
            if covering:
                name = min(covering, key=lambda job: (len(selections[job]), listed.index(job)))
                if name not in steps:
                    assets = tuple(k.to_user_string() for k in keys if k in selections[name])
                    steps[name], rank[name] = Step(name, assets, partitioned), listed.index(name)
            else:
                name = f"{implicit}[{key.to_user_string()}]"
                steps[name], rank[name] = Step(implicit, (key.to_user_string(),), partitioned, (key,)), len(listed) + n
            owner[key] = name
        needs = {name: {owner[p] for a in step.assets for p in self.graph.get(self._key(a)).parent_keys
                        if p in owner} - {name} for name, step in steps.items()}
        order: list[str] = []
        while len(order) < len(steps):
            ready = [name for name in steps if name not in order and needs[name] <= set(order)]
            if not ready:
                raise ValueError(f"the jobs {sorted(set(steps) - set(order))} need each other's assets")
            order.append(min(ready, key=rank.__getitem__))
        return [steps[name] for name in order]

    def outdated(self, instance: dg.DagsterInstance, asset: str, partition: str | None = None) -> bool:
        """Never materialized (and every upstream asset is), or an upstream asset materialized since: that
        partition of a partitioned one, any partition of another."""
        own = _latest_storage_id(instance, asset, partition)
        deps = [(d, partition if self.partitioned(d) else None) for d in self.upstream(asset)]
        if own is None:
            return all(_latest_storage_id(instance, d, p) is not None for d, p in deps)
        return any((_latest_storage_id(instance, d, p) or 0) > own for d, p in deps)


def _latest_storage_id(instance: dg.DagsterInstance, asset: str, partition: str | None) -> int | None:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey.from_user_string(asset),
                              asset_partitions=[partition] if partition else None),
        limit=1,
    ).records
    return records[0].storage_id if records else None
