"""What the scale-out tests run on: a PostgreSQL database for the Dagster instance, a Celery broker, and
`sarag worker` processes. The machine's services are used when they answer (127.0.0.1:5432, Redis 6379,
RabbitMQ 5672); where they do not, the tests start their own from PyPI packages (pgserver's bundled
PostgreSQL, Celery's filesystem transport) instead of skipping. SCALE_OUT_OWN_SERVICES=1 forces that."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SARAG = str(Path(sys.executable).parent / "sarag")
REDIS_TEST_DB = 9  # the tests' queues (each its own) and results


def _answers(port: int) -> bool:
    if os.environ.get("SCALE_OUT_OWN_SERVICES"):
        return False
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def postgres_database(scratch: Path):
    """A fresh database; yields its SQLAlchemy URL (with the psycopg2 driver Dagster's NOTIFY needs)."""
    import psycopg2

    server = None
    if _answers(5432):
        admin_args, url_base = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}, "postgres@127.0.0.1:5432"
    else:
        import pgserver

        server = pgserver.get_server(str(scratch / "pgdata"), cleanup_mode="stop")
        socket_dir = server.get_uri().split("host=")[-1]
        admin_args, url_base = {"host": socket_dir, "user": "postgres"}, f"postgres@/?host={socket_dir}"
    name = "sarag_scale_" + secrets.token_hex(4)
    admin = psycopg2.connect(dbname="postgres", connect_timeout=10, **admin_args)
    admin.autocommit = True
    admin.cursor().execute(f"CREATE DATABASE {name}")
    if server is None:
        url = f"postgresql+psycopg2://{url_base}/{name}"
    else:
        url = f"postgresql+psycopg2://postgres@/{name}?host={admin_args['host']}"
    try:
        yield url
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()
        if server is not None:
            server.cleanup()


@contextlib.contextmanager
def broker(kind: str = "redis"):
    """A Celery broker of the kind asked for (redis or rabbitmq) where the machine runs it, else the
    filesystem transport (the executor keeps its messages under the home), with a queue of this test's own:
    yields the settings `{"SARAG_CELERY_BROKER": ..., "SARAG_CELERY_QUEUE": ...}`. Nothing else on the broker
    is touched, so test sessions on one machine, or a developer's own queues, do not meet."""
    queue = "sarag-test-" + secrets.token_hex(4)
    if kind == "redis" and _answers(6379):
        import redis

        yield {"SARAG_CELERY_BROKER": f"redis://127.0.0.1:6379/{REDIS_TEST_DB}", "SARAG_CELERY_QUEUE": queue}
        client = redis.Redis(host="127.0.0.1", port=6379, db=REDIS_TEST_DB)
        client.delete(queue, *client.keys(f"{queue}\x06*"), *client.keys(f"_kombu.binding.{queue}*"))
    elif kind == "rabbitmq" and _answers(5672):
        from kombu import Connection

        url = "amqp://guest:guest@127.0.0.1:5672//"
        yield {"SARAG_CELERY_BROKER": url, "SARAG_CELERY_QUEUE": queue}
        with Connection(url) as connection, contextlib.suppress(Exception):
            connection.default_channel.queue_delete(queue)
    else:
        yield {"SARAG_CELERY_BROKER": "filesystem://", "SARAG_CELERY_QUEUE": queue}


def instance_home(scratch: Path) -> Path:
    """A DAGSTER_HOME holding the production instance configuration (deploy/dagster.postgres.yaml)."""
    dagster_home = scratch / "dagster_home"
    dagster_home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "deploy" / "dagster.postgres.yaml", dagster_home / "dagster.yaml")
    return dagster_home


@contextlib.contextmanager
def workers(env: dict[str, str], logs: Path, n: int = 2):
    """`n` `sarag worker` processes (one step at a time each), ready on the broker of `env`."""
    logs.mkdir(parents=True, exist_ok=True)
    started = []
    try:
        for i in range(n):
            log = open(logs / f"worker{i + 1}.log", "w")
            started.append((subprocess.Popen([SARAG, "worker", "--name", f"w{i + 1}@%h"], env=env, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True), logs / f"worker{i + 1}.log"))
        deadline = time.monotonic() + 120
        for process, path in started:
            while " ready." not in path.read_text(errors="replace"):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"worker did not start: {path.read_text(errors='replace')[-2000:]}")
                time.sleep(0.5)
        yield [process for process, _ in started]
    finally:
        for process, _ in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process, _ in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
