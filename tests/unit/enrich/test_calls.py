"""Around every provider call: transient failures retried with backoff (and no more than asked),
everything else raised at once; each call counted in the run's usage, failures as EnrichmentError."""

from __future__ import annotations

import pytest

from foldgate.enrich.base import EnrichmentError, EnrichmentUsage
from foldgate.enrich.calls import accounted, with_retries


class Flaky:
    """Fails with ``errors`` in turn, then answers."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def _transient(exc: BaseException) -> float | None:
    return 0.0 if isinstance(exc, TimeoutError) else None


async def test_a_transient_failure_is_retried_until_it_succeeds() -> None:
    call = Flaky(TimeoutError(), TimeoutError())
    assert await with_retries(call, retries=3, backoff_s=0, transient=_transient) == "ok"
    assert call.calls == 3


async def test_retries_stop_at_the_limit() -> None:
    call = Flaky(TimeoutError(), TimeoutError(), TimeoutError())
    with pytest.raises(TimeoutError):
        await with_retries(call, retries=2, backoff_s=0, transient=_transient)
    assert call.calls == 3


async def test_a_permanent_failure_is_not_retried() -> None:
    call = Flaky(ValueError("bad request"))
    with pytest.raises(ValueError, match="bad request"):
        await with_retries(call, retries=5, backoff_s=0, transient=_transient)
    assert call.calls == 1


async def test_accounted_counts_calls_failures_and_time_and_raises_only_enrichment_errors() -> None:
    usage = EnrichmentUsage()
    async with accounted(usage):
        pass
    with pytest.raises(EnrichmentError, match="KeyError"):
        async with accounted(usage):
            raise KeyError("choices")
    with pytest.raises(EnrichmentError, match="refused"):
        async with accounted(usage):
            raise EnrichmentError("refused")
    assert (usage.calls, usage.failures) == (3, 2)
    assert usage.seconds >= 0
    assert usage.errors == ["KeyError: 'choices'", "EnrichmentError: refused"]
