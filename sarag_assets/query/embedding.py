"""The query's vector: which runtime encodes it, on how many threads, and the text it encodes. No Dagster.

The query vector is the embedding of the turns read together (`Query.embedding_text`), encoded by the
runtime this machine runs one short text on faster (`core.encoding.runtime_choice`; the
`encoder_runtime` setting can name one).
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from sarag_assets.core.encoding.embedder import Embedder, runtime_choice
from sarag_assets.query.understanding import Query, readable_text, unit_vector
from sarag_assets.settings import Settings


def query_embedder(config: Settings) -> Embedder:
    """The embedder of a home's queries: its model, on the runtime and threads its settings say."""
    threads = limit_query_threads(config.query_threads)
    # bf16 pays off on the pipeline's batches; a query's few short texts are faster on onnx, whose
    # vectors are within the same tolerance of the model's
    runtime = "onnx" if config.encoder_runtime == "bf16" else config.encoder_runtime
    if runtime == "auto":  # the faster on one short text, which need not be the pipeline's
        runtime = runtime_choice(config.embedding_model, None, threads).queries
    return Embedder(config.embedding_model, runtime=runtime, threads=threads)


def query_vector(embedder, parsed: Query) -> np.ndarray:
    """The embedding of the turns read together (`Query.embedding_text`), without its earliest lines
    where the model would cut its latest."""
    text = readable_text(parsed.embedding_text(), getattr(embedder, "fits", None))
    return unit_vector(embedder.encode([text])[0])


def limit_query_threads(threads: int) -> int | None:
    """The threads a query is encoded on (the `query_threads` setting, default 1; ONNX Runtime's or torch's),
    after limiting the BLAS library (the cluster route's products; the dense searches' too when numba is
    missing, `query.kernels`) to as many. One short query gains nothing from more, and on a busy 2-core
    machine more threads make a query slower (the channels already run side by side). Process-wide: 0
    (None returned) leaves the libraries' defaults."""
    if threads == 0:
        return None
    threadpool_limits(threads, user_api="blas")
    return threads
