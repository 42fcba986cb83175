"""Fan-out indexing on loopback (issue 30, item 1): the schedule function and the IndexerFunction, driven
by the real EventBridge events and by SQS batches received from a real queue (moto_server, with the
dead-letter redrive and the receive count template.yaml deploys), tenants in Parameter Store, catalogs
in DynamoDB, upstreams replayed over Streamable HTTP.

Pinned: the schedule enqueues one message per tenant and indexes nothing (and the IndexerFunction
refuses to run it inline); a tenant whose config cannot be used is a batch item failure, retried and
then dead-lettered with its reason logged under its name, while the other tenants of its batch are
published, including one whose upstream hangs (it is released only once the others have published:
processed one after the other, it would time out first); a message delivered twice publishes once.
"""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
import yaml

from foldgate.app.indexer_lambda import build_indexer_handler
from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import _CfnLoader
from foldgate.dev.bench.wire_proxy import WireProxy, wire_proxy
from foldgate.index.fanout import TenantMessage
from foldgate.index.sqs_queue import SqsIndexQueue
from foldgate.store.catalog.dynamodb import DynamoStore
from foldgate.store.connections import dynamodb_client
from tests.aws import TEMPLATE, create_table_from_template, template_resource
from tests.lambdas import LambdaContext, event, load_function, sqs_event
from tests.procs import Replay, replay

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
TENANTS = ["acme", "beta", "broken", "slow"]
# Longer than the whole test needs: only a run that waits for the other tenants first would reach it.
SLOW_TIMEOUT_S = 20.0


def max_receives() -> int:
    """The redrive policy's maxReceiveCount as deployed: the template parameter's default."""
    doc = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)  # a SafeLoader subclass
    assert template_resource("IndexQueue")["Properties"]["RedrivePolicy"]["maxReceiveCount"] == (
        "IndexMaxReceiveCount"
    )
    return int(doc["Parameters"]["IndexMaxReceiveCount"]["Default"])


@dataclass
class World:
    env: dict[str, str | None]
    sqs: Any
    queue_url: str
    dlq_url: str
    store: DynamoStore
    proxy: WireProxy

    def indexer(self) -> Handler:
        """IndexerFunction's handler as functions/indexer/app.py builds it, over this process's DynamoDB
        client (where the tests hook in; loading app.py under a patched environment makes its own)."""
        return build_indexer_handler(Settings.from_env({k: v for k, v in self.env.items() if v is not None}))

    def schedule(self, name: str) -> Handler:
        handler: Handler = load_function("schedule", name, self.env).handler
        return handler

    def receive(self, url: str | None = None) -> list[dict[str, Any]]:
        got = self.sqs.receive_message(
            QueueUrl=url or self.queue_url,
            MaxNumberOfMessages=10,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            VisibilityTimeout=0,  # a failed message is visible again at once (the test's redelivery)
        )
        messages: list[dict[str, Any]] = got.get("Messages", [])
        return messages

    def delete(self, messages: list[dict[str, Any]]) -> None:
        for m in messages:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])


@pytest.fixture(scope="module")
def upstream() -> Iterator[Replay]:
    with replay() as running:
        yield running


@pytest.fixture
def world(moto_endpoint: str, upstream: Replay, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    table = f"foldgate-{uuid.uuid4().hex[:8]}"
    prefix = f"/fg-{uuid.uuid4().hex[:8]}"
    create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), table)
    sqs = boto3.client("sqs", region_name="us-east-1")
    dlq_url = sqs.create_queue(QueueName=f"dlq-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receives())}
    queue_url = sqs.create_queue(
        QueueName=f"index-{uuid.uuid4().hex[:8]}", Attributes={"RedrivePolicy": json.dumps(redrive)}
    )["QueueUrl"]
    ssm = boto3.client("ssm", region_name="us-east-1")

    def put(name: str, value: str) -> None:
        ssm.put_parameter(Name=f"{prefix}/tenants/{name}", Value=value, Type="String", Overwrite=True)

    parts = urlsplit(upstream.urls["crm"])
    assert parts.hostname is not None
    assert parts.port is not None
    with wire_proxy(parts.hostname, parts.port) as proxy:
        put("acme/config", json.dumps({"servers": [{"name": "crm", "url": upstream.urls["crm"]}]}))
        put("beta/config", json.dumps({"servers": [{"name": "tickets", "url": upstream.urls["tickets"]}]}))
        slow = {"name": "crm", "url": proxy.url(parts.path), "timeout_s": SLOW_TIMEOUT_S}
        put("slow/config", json.dumps({"servers": [slow]}))
        put("broken/config", "{this is not json")
        env: dict[str, str | None] = {
            "FOLDGATE_STORE": "dynamodb",
            "FOLDGATE_TABLE_NAME": table,
            "FOLDGATE_CONFIG_SOURCE": "ssm",
            "FOLDGATE_CONFIG_PREFIX": prefix,
            "FOLDGATE_CONFIG_CACHE_SECONDS": "0",
            "FOLDGATE_EMBEDDING_PROVIDER": "none",
            "FOLDGATE_INDEX_QUEUE_URL": queue_url,
            "FOLDGATE_INDEX_MAX_RECEIVES": str(max_receives()),
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_NAMESPACE": "foldgate",
        }
        yield World(env, sqs, queue_url, dlq_url, DynamoStore(table), proxy)


def flips(tenants: list[str]) -> list[str]:
    """The tenants whose catalog pointer is flipped (a publish), in order, from now on."""
    seen: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        # The serialised request: its JSON body names the pointer's key, {"pk": {"S": "TENANT#<t>"}}.
        body = params["body"].decode() if isinstance(params["body"], bytes) else str(params["body"])
        seen.extend(t for t in tenants if f'"TENANT#{t}"' in body)

    dynamodb_client().meta.events.register("before-call.dynamodb.TransactWriteItems", record)
    return seen


def indexer_log() -> io.StringIO:
    """The indexer's structured log lines from now on (Powertools writes them to its own handler)."""
    buffer = io.StringIO()
    for handler in logging.getLogger("foldgate-indexer").handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(buffer)
    return buffer


def test_the_schedule_enqueues_one_message_per_tenant_and_indexes_nothing(world: World) -> None:
    schedule = world.schedule("schedule_fanout_app")
    doc = schedule(event("schedule.json"), LambdaContext())
    assert doc == {"trigger": "schedule", "window": "2026-11-29T21:00:00Z", "enqueued": len(TENANTS)}
    messages = world.receive()
    bodies = sorted((json.loads(m["Body"]) for m in messages), key=lambda b: b["tenant"])
    assert bodies == [{"tenant": t, "trigger": "schedule", "window": "2026-11-29T21:00:00Z"} for t in TENANTS]
    assert sorted(m["MessageAttributes"]["tenant"]["StringValue"] for m in messages) == TENANTS
    assert world.store.tenants() == []  # nothing was indexed by the schedule
    assert world.proxy.count() == 0  # nor any upstream listed
    world.delete(messages)

    fresh = schedule(event("freshness.json"), LambdaContext())
    assert fresh["trigger"] == "freshness"
    assert fresh["enqueued"] == len(TENANTS)
    assert {json.loads(m["Body"])["trigger"] for m in world.receive()} == {"freshness"}
    assert world.store.tenants() == []


def test_a_schedule_adds_nothing_while_a_whole_round_still_waits(world: World) -> None:
    schedule = world.schedule("schedule_backlog_app")
    assert schedule(event("schedule.json"), LambdaContext())["enqueued"] == len(TENANTS)
    behind = schedule(event("freshness.json"), LambdaContext())
    assert behind["enqueued"] == 0
    assert behind["skipped_for_backlog"] == len(TENANTS)
    messages = world.receive()
    assert len(messages) == len(TENANTS)
    world.delete(messages[:1])  # less than a round waits: the next schedule enqueues
    assert schedule(event("freshness.json"), LambdaContext())["enqueued"] == len(TENANTS)


def test_the_indexer_refuses_to_run_a_schedule_inline(world: World) -> None:
    indexer = world.indexer()
    for name in ("schedule.json", "freshness.json"):
        doc = indexer(event(name), LambdaContext())
        assert doc["error"]["code"] == "invalid_request"
        assert "index queue" in doc["error"]["message"]
    assert world.store.tenants() == []
    assert world.proxy.count() == 0


def test_a_failing_tenant_is_a_batch_item_failure_then_dead_lettered_and_delays_no_other(
    world: World,
) -> None:
    world.schedule("schedule_for_batch_app")(event("schedule.json"), LambdaContext())
    indexer = world.indexer()
    log = indexer_log()
    published = flips(TENANTS)
    # The hanging upstream answers only once both fast tenants have published (their pointer flips).
    world.proxy.hold.add("tools/list")

    def release_when_others_published(**_: Any) -> None:
        if {"acme", "beta"} <= set(published):
            world.proxy.release()

    dynamodb_client().meta.events.register(
        "after-call.dynamodb.TransactWriteItems", release_when_others_published
    )
    try:
        messages = world.receive()
        assert len(messages) == len(TENANTS)
        # The hanging tenant first: a consumer that ran the batch in order would wait on it.
        messages.sort(key=lambda m: json.loads(m["Body"])["tenant"] != "slow")
        ids = {json.loads(m["Body"])["tenant"]: m["MessageId"] for m in messages}
        response = indexer(sqs_event(messages), LambdaContext())
    finally:
        world.proxy.release()
    assert response == {"batchItemFailures": [{"itemIdentifier": ids["broken"]}]}, log.getvalue()[-3000:]
    assert sorted(published) == ["acme", "beta", "slow"]
    slow = world.store.load_current("slow")
    assert slow is not None
    assert slow.servers["crm"].healthy, slow.servers["crm"].error  # answered, never timed out
    assert slow.tools
    world.delete([m for m in messages if m["MessageId"] != ids["broken"]])

    # The event source mapping's redelivery: the broken tenant fails every receive, then the queue's
    # redrive policy moves it to the dead-letter queue.
    receives = 1
    while batch := world.receive():
        assert [json.loads(m["Body"])["tenant"] for m in batch] == ["broken"]
        assert indexer(sqs_event(batch), LambdaContext()) == {
            "batchItemFailures": [{"itemIdentifier": ids["broken"]}]
        }
        receives += 1
    assert receives == max_receives()
    [dead] = world.receive(world.dlq_url)
    assert dead["MessageId"] == ids["broken"]
    assert dead["MessageAttributes"]["tenant"]["StringValue"] == "broken"

    # Its reason is logged under its name; the last receive says where the message goes.
    lines = [json.loads(line) for line in log.getvalue().splitlines() if line.startswith("{")]
    failures = [x for x in lines if x.get("tenant") == "broken" and x.get("reason")]
    assert [x["receive_count"] for x in failures] == list(range(1, max_receives() + 1))
    assert "broken/config" in failures[0]["reason"]
    assert "not valid JSON" in failures[0]["reason"]
    assert [x["dead_letter"] for x in failures] == [0] * (max_receives() - 1) + [1]
    assert failures[-1]["message_id"] == ids["broken"]
    assert "dead-letter queue" in failures[-1]["message"]


def test_a_message_delivered_twice_publishes_once(world: World) -> None:
    indexer = world.indexer()
    published = flips(["acme"])
    # Two copies of one tenant's message (SQS delivers at least once), in one batch: run concurrently.
    SqsIndexQueue(world.queue_url).send([TenantMessage("acme", "schedule", "2026-11-29T21:00:00Z")] * 2)
    messages = world.receive()
    assert len(messages) == 2
    assert indexer(sqs_event(messages), LambdaContext()) == {"batchItemFailures": []}
    assert published == ["acme"]
    version = world.store.current_version("acme")
    assert version is not None
    # The same messages again (a redelivery after the visibility timeout): nothing new to publish.
    assert indexer(sqs_event(messages), LambdaContext()) == {"batchItemFailures": []}
    assert published == ["acme"]
    assert world.store.current_version("acme") == version
