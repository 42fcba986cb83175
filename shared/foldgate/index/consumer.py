"""The queue's consumer: each tenant message is its own index job, with its own share of the time.

A batch of ``n`` messages runs ``concurrency`` tenants at a time, in delivery order. The invocation's
remaining time (less a margin for the batch answer) is cut into ``ceil(n / concurrency)`` equal shares:
message ``i`` must be done by the end of share ``i // concurrency + 1``. Every message of a share has
started by the time that share begins (the earlier ones ended by their deadlines), so a tenant that
hangs costs its own slot for its own share, never another tenant's time, and the whole batch ends
inside the invocation. A tenant's run raises (the batch utility reports it as a batch item failure,
the queue retries it, the dead-letter queue keeps it after the redrive count) when its config cannot
be used or its catalog could not be published; losing the publish race to another indexer is not a
failure (that run's version is current, see :mod:`foldgate.index.fanout`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

from foldgate.errors import ConfigError, StoreError
from foldgate.index.fanout import TenantMessage
from foldgate.index.job import IndexJob, IndexRequest, JobResult

__all__ = ["QueueConsumer", "failure_of", "record_deadlines"]

# Kept back from the invocation's end for the batch answer, the metrics flush and the log lines.
_ANSWER_MARGIN_S = 5.0


def record_deadlines(
    count: int, concurrency: int, started: float, remaining_s: float | None
) -> list[float | None]:
    """Each message's deadline (monotonic seconds), in delivery order; None everywhere without one."""
    if remaining_s is None:
        return [None] * count
    waves = max(1, math.ceil(count / max(1, concurrency)))
    share = max(0.0, remaining_s - _ANSWER_MARGIN_S) / waves
    return [started + (i // max(1, concurrency) + 1) * share for i in range(count)]


def failure_of(result: JobResult, tenant: str) -> str | None:
    """Why the tenant's run failed, None when it did what it could (published, found nothing to
    publish, kept an unhealthy server's last good tools, or lost the publish race)."""
    if tenant in result.errors:
        return result.errors[tenant]
    for report in result.reports:
        if report.tenant == tenant and report.error is not None and not report.conflict:
            return report.error
    return None


class QueueConsumer:
    """Runs tenant messages through an :class:`IndexJob`, ``concurrency`` tenants at a time."""

    def __init__(self, job: IndexJob, *, concurrency: int = 4) -> None:
        self.job = job
        self.concurrency = max(1, concurrency)
        self._gate: asyncio.Semaphore | None = None

    def deadlines(
        self, messages: Sequence[object], started: float, remaining_s: float | None
    ) -> list[float | None]:
        """The batch's deadlines (:func:`record_deadlines` at this consumer's concurrency)."""
        return record_deadlines(len(messages), self.concurrency, started, remaining_s)

    async def index(self, message: TenantMessage, deadline: float | None) -> JobResult:
        """One tenant's run; ConfigError (its config) or StoreError (its publish) when it failed."""
        if self._gate is None:
            # Made on the loop that runs the batches (one per instance).
            self._gate = asyncio.Semaphore(self.concurrency)
        async with self._gate:
            request = IndexRequest(message.trigger, (message.tenant,))
            result = await self.job.run(request, deadline=deadline)
        reason = failure_of(result, message.tenant)
        if reason is None:
            return result
        if message.tenant in result.errors:
            raise ConfigError(reason, result=result.to_doc())
        raise StoreError(reason, result=result.to_doc())
