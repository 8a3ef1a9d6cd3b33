"""The dense search's two loops, compiled by numba: an int8 scan and float32 scores of chosen rows.
No Dagster.

numpy has no fast int8 product, and its float32 product (BLAS) may round a row's score differently
depending on which other rows are in the matrix (its kernels work on blocks of rows), so a row scored
among a few candidates could get a score one unit of rounding away from the one a full scan gives it,
and two rows tied at float32 precision could swap. Here every row's dot product is the same compiled loop,
whichever rows are scored with it: a row's score does not depend on the others.

numba compiles both on first use (~1 s) and keeps them in ``SARAG_MODEL_CACHE``/numba (or
``NUMBA_CACHE_DIR``), so later processes load them. Without numba, `available()` is False (and
`unavailable` says why); callers then scan the float32 matrix with numpy.
"""

from __future__ import annotations

import os
import threading

_LOCK = threading.Lock()
_KERNELS = None
unavailable: str | None = None


def _compile():
    if "NUMBA_CACHE_DIR" not in os.environ:  # numba reads it when imported
        from sarag_assets.core.encoding.onnx_encoder import model_cache_dir

        os.environ["NUMBA_CACHE_DIR"] = str(model_cache_dir() / "numba")
    import numba
    import numpy as np

    # reassociation lets the loop over a row run in SIMD lanes; the same lanes for every row
    options = dict(nogil=True, cache=True, boundscheck=False, fastmath={"reassoc", "contract"})

    @numba.njit(**options)
    def int8_scores(codes, query, out):  # pragma: no cover (compiled)
        rows, dimension = codes.shape
        for i in range(rows):
            total = np.float32(0.0)
            for j in range(dimension):
                total += np.float32(codes[i, j]) * query[j]
            out[i] = total

    @numba.njit(**options)
    def row_scores(vectors, rows, query, out):  # pragma: no cover (compiled)
        dimension = vectors.shape[1]
        for r in range(rows.shape[0]):
            i = rows[r]
            total = np.float32(0.0)
            for j in range(dimension):
                total += vectors[i, j] * query[j]
            out[r] = total

    return int8_scores, row_scores


def available() -> bool:
    """Whether the kernels run here; compiles (or loads) them on the first call, on the argument types the
    dense search passes, so a numba that is missing or cannot compile shows here, not in a search."""
    global _KERNELS, unavailable
    with _LOCK:
        if _KERNELS is None and unavailable is None:
            try:
                kernels = _compile()
                import numpy as np

                query, out = np.zeros(4, dtype=np.float32), np.empty(2, dtype=np.float32)
                kernels[0](np.zeros((2, 4), dtype=np.int8), query, out)
                kernels[1](np.zeros((2, 4), dtype=np.float32), np.arange(2), query, out)
                _KERNELS = kernels
            except ImportError as error:
                unavailable = f"numba is not installed ({error})"
            except Exception as error:  # numba's compiler errors have no common base class
                unavailable = f"numba cannot compile the kernels here ({type(error).__name__}: {error})"
    return _KERNELS is not None


def int8_scores(codes, query, out) -> None:
    """out[i] = codes[i] . query, in float32 (codes: int8 rows x d, C order; query: float32 d)."""
    _KERNELS[0](codes, query, out)


def row_scores(vectors, rows, query, out) -> None:
    """out[r] = vectors[rows[r]] . query, in float32, each row by the same loop (rows: int64 indices)."""
    _KERNELS[1](vectors, rows, query, out)
