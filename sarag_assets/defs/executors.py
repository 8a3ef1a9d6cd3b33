"""Where the steps run: in this process (one machine, the default) or on Celery workers (`sarag worker`).

The assets, jobs and checks are the same either way; the settings `executor`, `celery_broker` and
`celery_backend` choose the executor. The runs' executor and the workers' Celery app are built from the
same settings here, so they always agree on the broker and the queue.
"""

from __future__ import annotations

import dagster as dg

from sarag_assets.settings import Settings

QUEUE = "dagster"  # dagster-celery's queue; its tasks are routed there
# A worker takes one step at a time, and a step whose worker process dies is failed at once
# (WorkerLostError), so Dagster's run retry re-executes it instead of the run waiting forever.
CELERY_SETTINGS = {
    "worker_prefetch_multiplier": 1,
    "task_acks_late": False,
    "broker_connection_retry_on_startup": True,
}


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
    if settings.celery_broker.startswith("filesystem://"):
        queue = settings.home.resolve() / "celery" / "queue"
        queue.mkdir(parents=True, exist_ok=True)
        config["broker_transport_options"] = {"data_folder_in": str(queue), "data_folder_out": str(queue),
                                              "control_folder": str(queue.parent / "control")}
    return config


def executor_for(settings: Settings) -> dg.ExecutorDefinition:
    if settings.executor != "celery":
        return dg.multi_or_in_process_executor
    from dagster_celery import celery_executor

    return celery_executor.configured(
        {"broker": settings.celery_broker, "backend": celery_backend(settings), "config_source": celery_settings(settings)},
        name="celery",
    )


class NoWorkers(RuntimeError):
    """The executor is celery and no `sarag worker` answers on the broker: runs would wait forever."""


def check_workers(settings: Settings, timeout_s: float = 5.0) -> int:
    """The number of workers that answer a ping on the settings' broker; raises NoWorkers when none does
    (or the broker itself does not answer). The filesystem broker cannot broadcast, so it is not asked."""
    if settings.celery_broker.startswith("filesystem://"):
        return 0
    app = worker_app(settings)
    try:
        replies = app.control.ping(timeout=timeout_s)
    except Exception as exc:  # kombu's connection errors vary by transport
        raise NoWorkers(f"the Celery broker {settings.celery_broker} does not answer ({exc})") from None
    if not replies:
        raise NoWorkers(f"no `sarag worker` answers on {settings.celery_broker}: start one (docs/deployment.md), "
                        "or set executor = in_process")
    return len(replies)


def worker_app(settings: Settings):
    """The Celery app a `sarag worker` process serves: dagster-celery's step task on the runs' broker."""
    from dagster_celery.config import DEFAULT_CONFIG, dict_wrapper
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    app = make_app({"broker": settings.celery_broker, "backend": celery_backend(settings),
                    "config_source": dict_wrapper({**DEFAULT_CONFIG, **celery_settings(settings)})})
    create_task(app)
    return app
