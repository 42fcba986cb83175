"""The index queue on SQS: ``SendMessageBatch`` of 10 entries, the failed entries retried.

A batch call answers per entry: entries SQS failed on its side (throttling, an internal error) are sent
again with a short backoff, up to ``attempts`` times; an entry refused as the sender's fault (it would
fail the same way again) is not. Whatever is still unsent raises StoreError with the count, so the
schedule's invocation fails and EventBridge retries it (a tenant enqueued twice publishes once).
A few batch calls run at once (``workers``): 10,000 tenants are 1,000 calls.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from foldgate.errors import StoreError
from foldgate.index.fanout import IndexQueue, TenantMessage

__all__ = ["SqsIndexQueue", "sqs_client"]

log = logging.getLogger(__name__)

# SendMessageBatch's limit: at most 10 entries per call.
BATCH: Final = 10


def sqs_client() -> Any:
    """A boto3 SQS client with bounded retries and timeouts (honours ``AWS_ENDPOINT_URL_SQS``)."""
    # boto3 loads only in the function that enqueues (the schedule's), never in the serving ones.
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=2, read_timeout=5)
    return boto3.client("sqs", config=config)


def _entry(index: int, message: TenantMessage) -> dict[str, Any]:
    # The attributes make a dead-lettered message readable without parsing its body.
    return {
        "Id": str(index),
        "MessageBody": message.body(),
        "MessageAttributes": {
            "tenant": {"DataType": "String", "StringValue": message.tenant},
            "trigger": {"DataType": "String", "StringValue": message.trigger},
        },
    }


class SqsIndexQueue(IndexQueue):
    """Tenant messages into one SQS standard queue."""

    def __init__(
        self,
        queue_url: str,
        *,
        client: Any | None = None,
        attempts: int = 4,
        workers: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.queue_url = queue_url
        self._client = client if client is not None else sqs_client()
        self.attempts = max(1, attempts)
        self.workers = max(1, workers)
        self._sleep = sleep
        # Batch calls made (the benchmark's figure), counted from the worker threads.
        self.calls = 0
        self._lock = threading.Lock()

    def _send_batch(self, entries: list[dict[str, Any]]) -> list[str]:
        """Send one batch until every entry is in or out of attempts; the reasons of those left."""
        # Loaded with the client: only the enqueuing function uses SQS.
        from botocore.exceptions import BotoCoreError, ClientError

        pending, refused, retry_reasons = entries, [], []
        for attempt in range(self.attempts):
            if attempt:
                self._sleep(min(2.0, 0.1 * 2**attempt))  # backoff before sending the rest again
            with self._lock:
                self.calls += 1
            try:
                response = self._client.send_message_batch(QueueUrl=self.queue_url, Entries=pending)
            except (ClientError, BotoCoreError) as exc:
                retry_reasons = [f"SendMessageBatch failed: {type(exc).__name__}"] * len(pending)
                continue
            failed = {f["Id"]: f for f in response.get("Failed", [])}
            # The sender's fault fails the same way every time: reported, not retried.
            refused += [
                f"{f.get('Code', 'error')}: {f.get('Message', '')}"
                for f in failed.values()
                if f.get("SenderFault")
            ]
            pending = [e for e in pending if e["Id"] in failed and not failed[e["Id"]].get("SenderFault")]
            retry_reasons = [f"{failed[e['Id']].get('Code', 'error')}" for e in pending]
            if not pending:
                break
        return refused + retry_reasons

    def backlog(self) -> int | None:
        """The queue's ApproximateNumberOfMessages (visible, not in flight); None when unreadable (the
        schedule then enqueues as usual)."""
        # Loaded with the client: only the enqueuing function uses SQS.
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self._client.get_queue_attributes(
                QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
            )
            return int(response["Attributes"]["ApproximateNumberOfMessages"])
        except (ClientError, BotoCoreError, KeyError, ValueError) as exc:
            log.warning("index queue backlog unknown: %s", type(exc).__name__)
            return None

    def send(self, messages: Sequence[TenantMessage]) -> None:
        """Enqueue every message, 10 per call, a few calls at once; StoreError if some never went."""
        entries = [_entry(i, m) for i, m in enumerate(messages)]
        batches = [entries[i : i + BATCH] for i in range(0, len(entries), BATCH)]
        # Ids need only be unique within a call: renumber each batch so a retry's Ids stay its own.
        batches = [[{**e, "Id": str(j)} for j, e in enumerate(batch)] for batch in batches]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            results = list(pool.map(self._send_batch, batches))
        unsent = [reason for reasons in results for reason in reasons]
        if unsent:
            log.error("%d of %d tenant messages not enqueued: %s", len(unsent), len(entries), unsent[0])
            raise StoreError(
                f"{len(unsent)} of {len(entries)} tenant messages could not be enqueued: {unsent[0]}"
            )
