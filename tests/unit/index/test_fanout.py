"""Fan-out messages (issue 30, item 1): one message per tenant, each parsed back as hostile input, and
the consumer's time shares: every message's deadline falls inside the invocation, a tenant's share is
its own, and losing the publish race is not a failure."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import InvalidRequestError
from foldgate.index.consumer import failure_of, record_deadlines
from foldgate.index.fanout import IndexQueue, TenantMessage, enqueue_tenants, parse_message
from foldgate.index.indexer import IndexReport
from foldgate.index.job import JobResult

WINDOW = "2026-11-29T21:00:00Z"


class Collected(IndexQueue):
    def __init__(self, waiting: int | None = None) -> None:
        self.sent: list[TenantMessage] = []
        self.waiting = waiting

    def send(self, messages: Sequence[TenantMessage]) -> None:
        self.sent.extend(messages)

    def backlog(self) -> int | None:
        return self.waiting


def test_a_message_round_trips() -> None:
    message = TenantMessage("acme.prod-1", "freshness", WINDOW)
    assert parse_message(message.body()) == message


@pytest.mark.parametrize(
    "body",
    [
        None,
        "not json",
        "[]",
        json.dumps({"tenant": "../other", "trigger": "schedule"}),
        json.dumps({"tenant": "a/b", "trigger": "schedule"}),
        json.dumps({"tenant": "x" * 129, "trigger": "schedule"}),
        json.dumps({"tenant": "acme", "trigger": "reindex"}),
        json.dumps({"tenant": "acme", "trigger": "schedule", "window": 5}),
        json.dumps({"tenant": "acme", "trigger": "schedule", "window": "<script>"}),
        json.dumps({"tenant": "acme", "trigger": "schedule", "pad": "x" * 2000}),
    ],
)
def test_a_hostile_message_is_refused(body: object) -> None:
    with pytest.raises(InvalidRequestError):
        parse_message(body)


def test_every_tenant_is_enqueued_once_and_nothing_else_happens() -> None:
    config = parse_tenant_config({"servers": [{"name": "crm", "url": "http://127.0.0.1:9/mcp"}]})
    configs = StaticConfigSource({"acme": config, "beta": config, "bad name": config})
    queue = Collected()
    result = enqueue_tenants(configs, queue, "schedule", WINDOW)
    # A name that could never be parsed back (not a Parameter Store path segment) is not sent.
    assert queue.sent == [TenantMessage(t, "schedule", WINDOW) for t in ("acme", "beta")]
    assert result.to_doc() == {"trigger": "schedule", "window": WINDOW, "enqueued": 2}
    with pytest.raises(InvalidRequestError):
        enqueue_tenants(configs, queue, "invoke", WINDOW)


def test_each_message_gets_its_own_share_and_the_batch_ends_inside_the_invocation() -> None:
    # 10 messages, 4 at a time: 3 shares of (300 - 5) / 3 seconds.
    deadlines = record_deadlines(10, 4, 1000.0, 300.0)
    share = 295.0 / 3
    assert deadlines == [1000.0 + share] * 4 + [1000.0 + 2 * share] * 4 + [1000.0 + 3 * share] * 2
    assert max(d for d in deadlines if d is not None) <= 1000.0 + 300.0 - 5.0
    # One wave: every message has the whole invocation (less the margin).
    assert record_deadlines(4, 4, 0.0, 60.0) == [55.0] * 4
    assert record_deadlines(3, 4, 0.0, None) == [None, None, None]


def test_only_a_tenants_own_errors_fail_its_message() -> None:
    result = JobResult("schedule")
    assert failure_of(result, "acme") is None
    lost = IndexReport("acme", None, False, error="tenant 'acme' moved to v2 while indexing from v1")
    lost.conflict = True
    result.reports.append(lost)
    assert failure_of(result, "acme") is None  # another indexer's version is current
    result.reports.append(IndexReport("beta", None, False, error="cannot write chunks: throttled"))
    assert failure_of(result, "beta") == "cannot write chunks: throttled"
    result.errors["gamma"] = "invalid tenant config in /foldgate/tenants/gamma/config"
    assert failure_of(result, "gamma") == "invalid tenant config in /foldgate/tenants/gamma/config"


def test_nothing_is_added_while_a_whole_round_still_waits() -> None:
    config = parse_tenant_config({"servers": [{"name": "crm", "url": "http://127.0.0.1:9/mcp"}]})
    configs = StaticConfigSource({"acme": config, "beta": config})
    behind = Collected(waiting=2)
    result = enqueue_tenants(configs, behind, "freshness", WINDOW)
    assert behind.sent == []
    assert result.to_doc() == {
        "trigger": "freshness",
        "window": WINDOW,
        "enqueued": 0,
        "skipped_for_backlog": 2,
    }
    for waiting in (1, None):  # less than a round, or a depth that could not be read: sent as usual
        queue = Collected(waiting=waiting)
        assert enqueue_tenants(configs, queue, "freshness", WINDOW).tenants == 2
        assert len(queue.sent) == 2
