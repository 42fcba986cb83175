"""The index queue's SQS adapter against a real SQS API (moto_server): SendMessageBatch 10 entries per
call, every tenant once with its tenant and trigger as message attributes, entries SQS failed on its
side sent again, entries refused as the sender's fault reported (StoreError), never retried."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pytest

from foldgate.errors import StoreError
from foldgate.index.fanout import TenantMessage, parse_message
from foldgate.index.sqs_queue import SqsIndexQueue

WINDOW = "2026-11-29T21:00:00Z"


@pytest.fixture
def sqs(moto_endpoint: str) -> Any:
    return boto3.client("sqs", region_name="us-east-1")


@pytest.fixture
def queue_url(sqs: Any) -> str:
    url: str = sqs.create_queue(QueueName=f"index-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    return url


def drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while batch := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=60
    ).get("Messages", []):
        out.extend(batch)
    return out


class FailingFirst:
    """The real client, except that the first SendMessageBatch sends only its first half and answers
    the rest as failed (what SQS does under throttling, or refuses as ``sender_fault``)."""

    def __init__(self, client: Any, *, sender_fault: bool) -> None:
        self.client = client
        self.sender_fault = sender_fault
        self.entries_per_call: list[int] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.entries_per_call.append(len(Entries))
        if len(self.entries_per_call) > 1:
            response: dict[str, Any] = self.client.send_message_batch(QueueUrl=QueueUrl, Entries=Entries)
            return response
        half = len(Entries) // 2
        sent = self.client.send_message_batch(QueueUrl=QueueUrl, Entries=Entries[:half])
        failed = [
            {"Id": e["Id"], "SenderFault": self.sender_fault, "Code": "InternalError", "Message": "try again"}
            for e in Entries[half:]
        ]
        return {"Successful": sent.get("Successful", []), "Failed": failed}


def test_every_tenant_is_enqueued_once_ten_per_call(sqs: Any, queue_url: str) -> None:
    queue = SqsIndexQueue(queue_url, client=sqs, workers=2)
    messages = [TenantMessage(f"t{i:03d}", "schedule", WINDOW) for i in range(25)]
    queue.send(messages)
    assert queue.calls == 3
    got = drain(sqs, queue_url)
    assert sorted((parse_message(m["Body"]) for m in got), key=lambda m: m.tenant) == messages
    for m in got:
        body = json.loads(m["Body"])
        assert m["MessageAttributes"]["tenant"]["StringValue"] == body["tenant"]
        assert m["MessageAttributes"]["trigger"]["StringValue"] == "schedule"


def test_entries_sqs_failed_are_sent_again(sqs: Any, queue_url: str) -> None:
    client = FailingFirst(sqs, sender_fault=False)
    queue = SqsIndexQueue(queue_url, client=client, workers=1, sleep=lambda _: None)
    messages = [TenantMessage(f"t{i}", "freshness", WINDOW) for i in range(10)]
    queue.send(messages)
    assert client.entries_per_call == [10, 5]  # only the failed half again
    got = [parse_message(m["Body"]) for m in drain(sqs, queue_url)]
    assert sorted(got, key=lambda m: m.tenant) == messages


def test_entries_refused_as_the_senders_fault_are_reported_not_retried(sqs: Any, queue_url: str) -> None:
    client = FailingFirst(sqs, sender_fault=True)
    queue = SqsIndexQueue(queue_url, client=client, workers=1, sleep=lambda _: None)
    with pytest.raises(StoreError, match="5 of 10 tenant messages could not be enqueued"):
        queue.send([TenantMessage(f"t{i}", "schedule", WINDOW) for i in range(10)])
    assert client.entries_per_call == [10]
    assert len(drain(sqs, queue_url)) == 5
