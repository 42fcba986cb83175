"""Fan-out indexing: a run over every tenant is one queue message per tenant, never one long run.

The schedules (``ScheduleExpression`` and ``FreshnessSchedule``) reach a small function that lists the
tenants and enqueues ``{"tenant", "trigger", "window"}`` per tenant (:func:`enqueue_tenants`); the
IndexerFunction consumes the queue a few messages at a time, each tenant its own job with its own share
of the invocation's time (:mod:`foldgate.index.consumer`). A tenant that fails is retried by the queue
and, after the redrive policy's receive count, lands in the dead-letter queue, without delaying anyone.

``window`` names the trigger that produced the message (the schedule's time): it is logged with every
outcome and set as a message attribute, so a dead-lettered message says which run it came from. A
message delivered twice publishes once: the catalog's compare-and-set and fingerprint do that (an
unchanged listing publishes nothing; of two runs racing on one tenant only one moves the pointer).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from foldgate.config.source import ConfigSource
from foldgate.errors import InvalidRequestError

__all__ = [
    "TRIGGERS",
    "EnqueueResult",
    "IndexQueue",
    "TenantMessage",
    "enqueue_tenants",
    "parse_message",
]

# The triggers that fan out: the full schedule and the freshness check.
TRIGGERS: Final = ("schedule", "freshness")
# A tenant is a Parameter Store path segment (what tenant_of_parameter yields), bounded.
_TENANT: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_WINDOW: Final = re.compile(r"^[0-9A-Za-z:.+-]{1,40}$")
_MAX_BODY: Final = 1024


@dataclass(frozen=True)
class TenantMessage:
    """One tenant's share of a schedule: which tenant, which trigger, and the trigger's time."""

    tenant: str
    trigger: str
    window: str

    def body(self) -> str:
        """The queue message body (compact JSON)."""
        return json.dumps({"tenant": self.tenant, "trigger": self.trigger, "window": self.window})


def parse_message(body: Any) -> TenantMessage:
    """A queue message body back into a message; InvalidRequestError for anything else (a message is
    hostile input like any event: bounded, every field checked)."""
    if not isinstance(body, str) or len(body) > _MAX_BODY:
        raise InvalidRequestError("index message: expected a JSON body of at most 1 KB")
    try:
        doc = json.loads(body)
    except ValueError:
        raise InvalidRequestError("index message: the body is not JSON") from None
    if not isinstance(doc, dict):
        raise InvalidRequestError("index message: expected a JSON object")
    tenant, trigger, window = doc.get("tenant"), doc.get("trigger"), doc.get("window", "")
    if not isinstance(tenant, str) or not _TENANT.match(tenant):
        raise InvalidRequestError("index message: 'tenant' is not a tenant name")
    if trigger not in TRIGGERS:
        raise InvalidRequestError(f"index message: 'trigger' must be one of {', '.join(TRIGGERS)}")
    if not isinstance(window, str) or (window and not _WINDOW.match(window)):
        raise InvalidRequestError("index message: 'window' is not a timestamp")
    return TenantMessage(tenant, str(trigger), window)


class IndexQueue(ABC):
    """Where tenant messages go (the cloud: an SQS standard queue, :mod:`foldgate.index.sqs_queue`)."""

    @abstractmethod
    def send(self, messages: Sequence[TenantMessage]) -> None:
        """Enqueue every message (batched, failed entries retried); StoreError naming how many could
        not be sent when some never were."""

    def backlog(self) -> int | None:
        """About how many messages wait to be received (None: unknown)."""
        return None


@dataclass(frozen=True)
class EnqueueResult:
    """What one schedule enqueued (nothing, when a whole round was still waiting: ``backlog``)."""

    trigger: str
    window: str
    tenants: int
    backlog: int | None = None

    def to_doc(self) -> dict[str, Any]:
        """JSON-ready summary (the function's answer and its log line)."""
        doc: dict[str, Any] = {"trigger": self.trigger, "window": self.window, "enqueued": self.tenants}
        if self.backlog is not None:
            doc["skipped_for_backlog"] = self.backlog
        return doc


def enqueue_tenants(configs: ConfigSource, queue: IndexQueue, trigger: str, window: str) -> EnqueueResult:
    """List every tenant and enqueue one message each; nothing is indexed here. A tenant name that
    could never be parsed back is skipped (it cannot be in Parameter Store's path syntax anyway).

    While at least one message per tenant still waits in the queue (the consumers are behind a whole
    round, e.g. a five-minute freshness schedule over more tenants than five minutes index), nothing is
    added: the waiting round refreshes every tenant anyway, and the backlog never grows past it.
    """
    if trigger not in TRIGGERS:
        raise InvalidRequestError(f"trigger {trigger!r} does not fan out")
    tenants = [t for t in dict.fromkeys(configs.tenants()) if _TENANT.match(t)]
    waiting = queue.backlog()
    if tenants and waiting is not None and waiting >= len(tenants):
        return EnqueueResult(trigger, window, 0, backlog=waiting)
    queue.send([TenantMessage(t, trigger, window) for t in tenants])
    return EnqueueResult(trigger, window, len(tenants))
