"""What every enrichment provider does around a model call: retries with backoff, and accounting.

:func:`with_retries` retries what a provider says is transient (a throttle, a timeout, a 5xx) with
exponential backoff and jitter, honouring a server's Retry-After; :func:`accounted` counts the call,
its time and, when it fails, the failure and its message in the provider's
:class:`~foldgate.enrich.base.EnrichmentUsage`, and turns any exception into
:class:`~foldgate.enrich.base.EnrichmentError` (a provider raises nothing else); :func:`answered`
counts a model's tokens and reads its text into a raw enrichment.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final, TypeVar

from foldgate.enrich.base import EnrichmentError, EnrichmentUsage, RawEnrichment
from foldgate.enrich.prompt import parse_answer

__all__ = ["MAX_BACKOFF_S", "accounted", "answered", "with_retries"]

T = TypeVar("T")

MAX_BACKOFF_S: Final = 30.0
_KEPT_ERRORS: Final = 5  # error messages kept per run: the first few say what went wrong
_ERROR_CHARS: Final = 300


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    retries: int,
    backoff_s: float,
    transient: Callable[[BaseException], float | None],
) -> T:
    """``call()``, retried up to ``retries`` times while ``transient(exc)`` answers a delay (seconds the
    server asked for, 0 for none); the wait is the larger of that and ``backoff_s * 2**attempt``
    (with jitter, at most :data:`MAX_BACKOFF_S`). Anything else is raised at once."""
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            asked = transient(exc)
            if asked is None or attempt >= retries:
                raise
            delay = min(MAX_BACKOFF_S, backoff_s * (2**attempt))
            # Jitter: parallel indexers throttled together do not come back together.
            delay = max(min(asked, MAX_BACKOFF_S), delay * random.uniform(0.5, 1.0))
            attempt += 1
            await asyncio.sleep(delay)


@contextlib.asynccontextmanager
async def accounted(usage: EnrichmentUsage) -> AsyncIterator[None]:
    """Count one enrichment call in ``usage`` (and its failure); any exception leaves as
    :class:`EnrichmentError`."""
    started = time.perf_counter()
    usage.calls += 1
    try:
        yield
    except Exception as exc:
        usage.failures += 1
        message = f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS]
        if len(usage.errors) < _KEPT_ERRORS:
            usage.errors.append(message)
        if isinstance(exc, EnrichmentError):
            raise
        raise EnrichmentError(message) from exc
    finally:
        usage.seconds += time.perf_counter() - started


def answered(usage: EnrichmentUsage, text: str, tokens_in: int, tokens_out: int) -> RawEnrichment:
    """A model's answer as a raw enrichment, its tokens counted in ``usage`` first (an answer that
    cannot be read still spent them: :class:`~foldgate.enrich.base.EnrichmentError` after counting)."""
    usage.tokens_in += tokens_in
    usage.tokens_out += tokens_out
    parsed = parse_answer(text)
    return RawEnrichment(parsed.hint, parsed.queries, tokens_in, tokens_out)
