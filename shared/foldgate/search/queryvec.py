"""Query vectors of one request: each text encoded alone, several texts of a request side by side.

A multi-need request (:mod:`foldgate.search.multi`) embeds two to four needs. Each is still encoded
on its own (one ``session.run`` per text, so a need's vector is exactly the vector it would get
alone; see :class:`~foldgate.search.embed.LocalEmbedder`), but the runs go to a small thread pool:
onnxruntime releases the GIL while it runs, so on two cores two needs are encoded at once, and the
calling thread scores the needs lexically meanwhile. Measured on the 11k cross-catalog multi-need
set (one onnxruntime thread per run, OPENBLAS_NUM_THREADS=1): see the README's search section.

A provider failure is per text: that text has no vector (it is answered lexically) and the failure
is returned, never raised, so one bad need cannot fail the request.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from foldgate.search.embed import Embedder

__all__ = ["PendingVectors", "encode_side_by_side", "query_vector"]

Vector = npt.NDArray[np.float32]

# Runs at once: the machine's cores, at most 2 (a request has at most 4 needs; one onnxruntime run
# of a short text is ~2-3 ms, so more threads than cores only time-slice).
_MAX_WORKERS = 2

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux: the portable count
        cores = os.cpu_count() or 1
    return max(1, min(_MAX_WORKERS, cores))


def _shared_pool() -> ThreadPoolExecutor | None:
    """The process's encode pool (created on first use), or None on a one-core machine."""
    global _pool
    if _workers() < 2:
        return None
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_workers(), thread_name_prefix="foldgate-encode")
        return _pool


def query_vector(provider: Embedder, text: str, dim: int) -> Vector:
    """``provider``'s vector of ``text``, checked to be ``dim`` finite floats; raises otherwise."""
    vec = np.asarray(provider.encode(text), dtype=np.float32).reshape(-1)
    if vec.shape != (dim,) or not np.isfinite(vec).all():
        raise ValueError(f"query vector of shape {vec.shape}")
    return vec


def _attempt(provider: Embedder, text: str, dim: int) -> Vector | Exception:
    try:
        return query_vector(provider, text, dim)
    except Exception as exc:  # any provider failure: this text is answered lexically
        return exc


class PendingVectors:
    """Vectors being computed; :meth:`result` waits for them (in the order of the texts)."""

    def __init__(self, jobs: list[Future[Vector | Exception]] | list[Vector | Exception]) -> None:
        self._jobs = jobs

    def result(self) -> list[Vector | Exception]:
        """Each text's vector, or the exception its encoding raised."""
        return [job.result() if isinstance(job, Future) else job for job in self._jobs]


def encode_side_by_side(provider: Embedder, texts: Sequence[str], dim: int) -> PendingVectors:
    """Start encoding ``texts``; with one text, or one core, they are encoded now, in this thread.

    The caller does its own work (lexical scoring) before :meth:`PendingVectors.result`.
    """
    pool = _shared_pool() if len(texts) > 1 else None
    if pool is None:
        return PendingVectors([_attempt(provider, t, dim) for t in texts])
    return PendingVectors([pool.submit(_attempt, provider, t, dim) for t in texts])
