"""Running the graph outside Dagster's daemon: the runner of `sarag materialize`, `demo` and `eval`, the
executors that place steps (in process, Celery workers, Kubernetes), and the recovery of dead runs.
What runs, in which order and when it is stale, is read from the Definitions' asset graph."""
