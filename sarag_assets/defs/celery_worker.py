"""The module a Celery worker loads (`celery -A sarag_assets.defs.celery_worker worker`, which is what
`sarag worker` runs): the app on the broker of the settings (SARAG_HOME, sarag.toml, SARAG_*)."""

from sarag_assets.defs.executors import worker_app
from sarag_assets.settings import Settings

app = worker_app(Settings.load())
