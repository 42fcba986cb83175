"""The IndexerFunction's queue side: an SQS batch of tenant messages, answered with the batch item
failures (``ReportBatchItemFailures``) through Powertools' batch utility.

Every record runs on the instance's own event loop, concurrently (``QueueConsumer``'s gate bounds how
many), so one tenant's run never waits for another's. A failed record is logged with its tenant,
trigger, reason, message id and receive count; when the receive count reaches the redrive policy's
``maxReceiveCount`` (``index_max_receives``) the line says the message goes to the dead-letter queue
next, so the reason of every dead-lettered tenant is one Logs Insights query away
(``filter dead_letter = 1 | fields tenant, reason``), and the DLQ message's own id is the same.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from foldgate.errors import FoldgateError
from foldgate.index.consumer import QueueConsumer
from foldgate.index.fanout import parse_message
from foldgate.index.job import JobResult

__all__ = ["build_batch_handler", "is_sqs_batch"]

BatchHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
Recorder = Callable[[JobResult, float], None]


def is_sqs_batch(event: Any) -> bool:
    """Whether the event is an SQS event source mapping's batch."""
    records = event.get("Records") if isinstance(event, dict) else None
    return (
        isinstance(records, list)
        and bool(records)
        and all(isinstance(r, dict) and r.get("eventSource") == "aws:sqs" for r in records)
    )


def _processor(loop: asyncio.AbstractEventLoop) -> Any:
    """Powertools' AsyncBatchProcessor, run on the instance's loop (its own would install a loop as
    the thread's current one, or make a new one per batch outside Lambda: pooled upstream
    connections belong to this loop). Every record is answered: an all-failed batch is reported
    item by item, not raised."""
    # Powertools' batch utility loads on the first queue batch, keeping the init phase short.
    from aws_lambda_powertools.utilities.batch import AsyncBatchProcessor, EventType

    class LoopBatchProcessor(AsyncBatchProcessor):
        def async_process(self) -> list[tuple[Any, ...]]:
            async def every_record() -> list[tuple[Any, ...]]:
                return list(await asyncio.gather(*(self._async_process_record(r) for r in self.records)))

            return loop.run_until_complete(every_record())

    return LoopBatchProcessor(EventType.SQS, raise_on_entire_batch_failure=False)


def build_batch_handler(
    consumer: QueueConsumer,
    loop: asyncio.AbstractEventLoop,
    *,
    logger: Any,
    report: Recorder,
    failed: Callable[[], None],
    max_receives: int,
) -> BatchHandler:
    """The handler for SQS batches; ``report`` hears every tenant's result and ``failed`` every
    failure (metrics)."""
    # Powertools' batch utility loads on the first queue batch, keeping the init phase short.
    from aws_lambda_powertools.utilities.batch import async_process_partial_response

    processor = _processor(loop)
    deadlines: dict[str, float | None] = {}

    # Powertools passes the record by keyword: the parameter's name is its API.
    async def one(record: Any) -> dict[str, Any]:
        started = time.monotonic()
        receives = int(record.attributes.approximate_receive_count or 1)
        fields: dict[str, Any] = {"message_id": record.message_id, "receive_count": receives}
        try:
            message = parse_message(record.body)
            fields.update(tenant=message.tenant, trigger=message.trigger, window=message.window)
            result = await consumer.index(message, deadlines.get(record.message_id))
        except Exception as exc:  # every failure is the record's: logged with its tenant, then reported
            last = receives >= max_receives
            reason = exc.message if isinstance(exc, FoldgateError) else f"{type(exc).__name__}: {exc}"
            # dead_letter: this was the last receive the redrive policy allows.
            logger.error(
                "tenant not indexed" + ("; its message goes to the dead-letter queue" if last else ""),
                extra={**fields, "reason": reason[:1000], "dead_letter": int(last)},
                exc_info=not isinstance(exc, FoldgateError),
            )
            failed()
            raise
        elapsed_ms = (time.monotonic() - started) * 1000
        report(result, elapsed_ms)
        logger.info(
            "index run finished", extra={**fields, "run": result.to_doc(), "elapsed_ms": round(elapsed_ms, 1)}
        )
        return result.to_doc()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        started = time.monotonic()
        remaining_ms = context.get_remaining_time_in_millis() if context is not None else None
        records = event["Records"]
        ids = [str(r.get("messageId", "")) for r in records]
        deadlines.clear()
        remaining_s = None if remaining_ms is None else remaining_ms / 1000
        deadlines.update(zip(ids, consumer.deadlines(ids, started, remaining_s), strict=True))
        response = async_process_partial_response(
            event=event, record_handler=one, processor=processor, context=context
        )
        return dict(response)

    return handler
