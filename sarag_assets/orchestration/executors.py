"""Where the steps run: in this process (one machine, the default), on Celery workers (`sarag worker`), or
as Kubernetes Jobs (dagster-k8s, configured here, not run in this project's tests).

The assets, jobs and checks are the same either way; the settings `executor`, `celery_broker` and
`celery_backend` choose the executor. The runs' executor and the workers' Celery app are built from the
same settings here, so they always agree on the broker and the queue.
"""

from __future__ import annotations

import time

import dagster as dg

from sarag_assets.settings import Settings

# A worker takes one step at a time and acknowledges its message when the step starts (acks_late off), so
# a step is never executed twice by Celery. What happens when a worker dies mid-step:
# - Its pool process alone dies (out of memory, SIGKILL of the child): the worker's main process reports
#   the step failed at once (WorkerLostError); the run fails.
# - The whole worker dies (SIGKILL of the worker, a lost machine): nothing ever reports the step, and
#   dagster-celery's loop would wait for its result forever (seen). `task_track_started` records which
#   worker runs each step, and the run's executor asks that worker about it (WatchedStep); a step whose
#   worker has not answered for WORKER_LOST_AFTER_S is failed, so the run fails and can be retried.
# - A message the worker had taken but not started: RabbitMQ requeues it when the connection drops. Redis
#   and the filesystem broker do not, so there a worker takes a message only when it has a free process
#   (Celery's worker_disable_prefetch for Redis, the same rule in celery_worker.py for the filesystem).
CELERY_SETTINGS = {
    "worker_prefetch_multiplier": 1,
    "task_acks_late": False,
    "task_track_started": True,
    "broker_connection_retry_on_startup": True,
}
WORKER_LOST_AFTER_S = 30.0  # a step's worker silent this long is taken for dead (a busy worker still answers)
CHECK_EVERY_S = 5.0


def celery_backend(settings: Settings) -> str:
    """The result backend: the setting, else the broker itself for Redis, a folder of the home for the
    filesystem broker, else rpc:// (results back over the AMQP broker)."""
    if settings.celery_backend:
        return settings.celery_backend
    if settings.celery_broker.startswith(("redis://", "rediss://")):
        return settings.celery_broker
    if settings.celery_broker.startswith("filesystem://"):
        results = settings.home.resolve() / "celery" / "results"
        results.mkdir(parents=True, exist_ok=True)
        return f"file://{results}"
    return "rpc://"


def celery_settings(settings: Settings) -> dict:
    """Celery's own settings for the runs and the workers. The filesystem broker (one machine, no broker
    service) keeps its messages in a folder of the home."""
    config = dict(CELERY_SETTINGS)
    # the queue dagster-celery's loop sends each step to: one per home, so that homes sharing a broker never
    # take each other's steps (a worker executes a step against its own home)
    config["task_default_queue"] = settings.celery_queue
    if settings.celery_broker.startswith(("redis://", "rediss://")):
        config["worker_disable_prefetch"] = True  # Celery supports it for Redis only (and warns otherwise)
    if settings.celery_broker.startswith("filesystem://"):
        queue = settings.home.resolve() / "celery" / "queue"
        queue.mkdir(parents=True, exist_ok=True)
        config["broker_transport_options"] = {"data_folder_in": str(queue), "data_folder_out": str(queue),
                                              "control_folder": str(queue.parent / "control")}
    return config


class WorkerLost(RuntimeError):
    """The worker that was running a step stopped answering: the step is failed, and so is its run."""


class WatchedStep:
    """A step's Celery result (what dagster-celery's loop polls with ready() and get()), plus the check
    its loop lacks: whether the worker running the step is still there. Every CHECK_EVERY_S, while the
    step runs, its worker (named by the STARTED state) is asked whether it holds the step. When it has not
    said so for `lost_after_s`, ready() turns true and get() raises WorkerLost."""

    def __init__(self, result, app, step_key: str, lost_after_s: float = WORKER_LOST_AFTER_S,
                 check_every_s: float = CHECK_EVERY_S):
        self.result, self.app, self.step_key = result, app, step_key
        self.lost_after_s, self.check_every_s = lost_after_s, check_every_s
        self.lost: str | None = None
        self._checked = 0.0
        self._silent_since: float | None = None

    def ready(self) -> bool:
        if self.lost is not None or self.result.ready():
            return True
        now = time.monotonic()
        if now - self._checked < self.check_every_s:
            return False
        self._checked = now
        worker = self._worker()
        if worker is None or self._holds(worker) or self.result.ready():
            self._silent_since = None
            return self.result.ready()
        self._silent_since = self._silent_since or now
        if now - self._silent_since >= self.lost_after_s:
            self.lost = (f"the Celery worker {worker} running step {self.step_key} has not answered for "
                         f"{self.lost_after_s:.0f} s (killed, or its machine lost); the step is failed")
            return True
        return False

    def get(self):
        if self.lost is not None:
            raise WorkerLost(self.lost)
        return self.result.get()

    def revoke(self):
        return self.result.revoke()

    def _worker(self) -> str | None:
        """The node name of the worker that started the step (None while it waits in the queue)."""
        if self.result.state != "STARTED":
            return None
        info = self.result.info
        return info.get("hostname") if isinstance(info, dict) else None

    def _holds(self, worker: str) -> bool:
        """Whether `worker` answers and has the step as active (a worker restarted under the same name
        answers, but without the step)."""
        try:
            replies = self.app.control.inspect(destination=[worker], timeout=3.0, limit=1).query_task(self.result.id)
        except Exception:  # the broker itself is unreachable: nothing is known about the worker
            return True
        return bool(replies) and self.result.id in (replies.get(worker) or {})


def _submit_watched(app, plan_context, step, queue, priority, known_state):
    from dagster_celery.executor import _submit_task

    return WatchedStep(_submit_task(app, plan_context, step, queue, priority, known_state), app, step.key)


def _watched_celery_executor():
    """dagster-celery's executor (same config, same tasks, same workers) with each step's result watched."""
    from dagster_celery.core_execution_loop import core_celery_execution_loop
    from dagster_celery.executor import CELERY_CONFIG, CeleryExecutor
    from dagster._core.execution.retries import RetryMode

    class WatchedCeleryExecutor(CeleryExecutor):
        def execute(self, plan_context, execution_plan):
            return core_celery_execution_loop(plan_context, execution_plan, step_execution_fn=_submit_watched)

    @dg.executor(name="celery", config_schema=CELERY_CONFIG, requirements=dg.multiple_process_executor_requirements())
    def watched_celery_executor(init_context):
        config = init_context.executor_config
        return WatchedCeleryExecutor(broker=config.get("broker"), backend=config.get("backend"),
                                     config_source=config.get("config_source"), include=config.get("include"),
                                     retries=RetryMode.from_config(config["retries"]))

    return watched_celery_executor


# A step pod gets the settings that place it (the home, the executor, its image and claim) as values, from
# the settings however they were given (sarag.toml or SARAG_*); the instance's database URL by name, from the
# launching process's environment, which the PostgreSQL instance (deploy/dagster.postgres.yaml) needs anyway.
# dagster-k8s reads a bare name from that environment and fails the run when it is not set.
K8S_ENV_FROM_LAUNCHER = ["DAGSTER_PG_URL"]


def k8s_executor_config(settings: Settings) -> dict:
    """dagster-k8s's `k8s_job_executor` configuration: one Kubernetes Job per step, from the settings'
    image, every pod mounting the home's volume claim at the home's path (ReadWriteMany), as many steps at
    once as the celery executor's parallel runs."""
    home = str(settings.home.resolve())
    placed = {"SARAG_HOME": home, "SARAG_EXECUTOR": "k8s", "SARAG_K8S_JOB_IMAGE": settings.k8s_job_image,
              "SARAG_K8S_HOME_CLAIM": settings.k8s_home_claim}
    return {"job_image": settings.k8s_job_image,
            "env_vars": [f"{name}={value}" for name, value in placed.items()] + K8S_ENV_FROM_LAUNCHER,
            "volumes": [{"name": "sarag-home", "persistentVolumeClaim": {"claimName": settings.k8s_home_claim}}],
            "volume_mounts": [{"name": "sarag-home", "mountPath": home}],
            "max_concurrent": settings.parallel_runs}


def executor_for(settings: Settings) -> dg.ExecutorDefinition:
    if settings.executor == "k8s":
        try:
            from dagster_k8s import k8s_job_executor
        except ImportError:
            raise RuntimeError("executor = k8s needs dagster-k8s: pip install 'sarag[k8s]'") from None
        return k8s_job_executor.configured(k8s_executor_config(settings), name="k8s")
    if settings.executor != "celery":
        return dg.multi_or_in_process_executor

    return _watched_celery_executor().configured(
        {"broker": settings.celery_broker, "backend": celery_backend(settings), "config_source": celery_settings(settings)},
        name="celery",
    )


class NoWorkers(RuntimeError):
    """The executor is celery and no `sarag worker` answers on the broker: runs would wait forever."""


def check_workers(settings: Settings, timeout_s: float = 5.0) -> int:
    """The number of workers that answer a ping on the settings' broker; raises NoWorkers when none does
    (or the broker itself does not answer). The filesystem broker broadcasts through its control folder."""
    app = worker_app(settings)
    try:
        replies = app.control.ping(timeout=timeout_s)
    except Exception as exc:  # kombu's connection errors vary by transport
        raise NoWorkers(f"the Celery broker {settings.celery_broker} does not answer ({exc})") from None
    if not replies:
        raise NoWorkers(f"no `sarag worker` answers on {settings.celery_broker}: start one (docs/deployment.md), "
                        "or set executor = in_process")
    try:  # a worker of another home on the same broker answers a ping too, but never takes this home's steps
        queues = app.control.inspect(timeout=timeout_s).active_queues() or {}
    except Exception as exc:  # noqa: BLE001 - as above
        raise NoWorkers(f"the Celery broker {settings.celery_broker} does not answer ({exc})") from None
    ours = [name for name, taken in queues.items() if any(q.get("name") == settings.celery_queue for q in taken)]
    if not ours:
        raise NoWorkers(f"no `sarag worker` takes the queue {settings.celery_queue!r} on {settings.celery_broker}: "
                        "start one with this home's settings (docs/deployment.md)")
    return len(ours)


def worker_app(settings: Settings):
    """The Celery app a `sarag worker` process serves: dagster-celery's step task on the runs' broker."""
    from dagster_celery.config import DEFAULT_CONFIG, dict_wrapper
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    app = make_app({"broker": settings.celery_broker, "backend": celery_backend(settings),
                    "config_source": dict_wrapper({**DEFAULT_CONFIG, **celery_settings(settings)})})
    create_task(app)
    return app
