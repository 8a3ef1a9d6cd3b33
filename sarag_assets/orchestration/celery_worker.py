"""The module a Celery worker loads (`celery -A sarag_assets.orchestration.celery_worker worker`, which is
what `sarag worker` runs): the app on the broker of the settings (SARAG_HOME, sarag.toml, SARAG_*)."""

from celery import bootsteps

from sarag_assets.orchestration.executors import worker_app
from sarag_assets.settings import Settings


class TakeOnlyWhatRuns(bootsteps.StartStopStep):
    """On the filesystem broker, a worker takes a message only when a pool process is free: the rule of
    Celery's `worker_disable_prefetch`, which Celery applies to Redis only. A message the worker had taken
    but not started would otherwise be lost with the worker (that broker has no redelivery), and the run
    waiting for its step would wait forever."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, c):
        if c.connection.transport.driver_type != "filesystem":
            return
        from celery.worker import state

        qos = c.task_consumer.channel.qos
        can_consume = qos.can_consume

        def only_when_free():
            return len(state.reserved_requests) < c.pool.num_processes and can_consume()

        qos.can_consume = only_when_free


app = worker_app(Settings.load())
app.steps["consumer"].add(TakeOnlyWhatRuns)
