"""Driving the Lambda handlers in tests: a LambdaContext, the recorded events in events/, and loading a
function's app.py under a given environment (handlers read their settings at import, as on Lambda)."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

from foldgate.dev.bench.moto import patched_environ
from tests.procs import REPO

__all__ = ["LambdaContext", "event", "load_function", "sqs_event"]

EVENTS = REPO / "events"


class LambdaContext:
    """The parts of the Lambda context object Powertools and Mangum read."""

    function_name = "foldgate-test"
    aws_request_id = "0f3c2b1a-test"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:foldgate-test"
    memory_limit_in_mb = 1024

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 60_000


def event(name: str, **changes: Any) -> dict[str, Any]:
    """A recorded event from events/, with top-level fields replaced."""
    data: dict[str, Any] = json.loads((EVENTS / name).read_text())
    data.update(changes)
    return data


def sqs_event(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The event an SQS event source mapping hands the function for ``messages`` as ReceiveMessage
    returned them (AttributeNames and MessageAttributeNames "All"), shaped like events/sqs-index.json."""
    [template] = event("sqs-index.json")["Records"]
    records = []
    for m in messages:
        attributes = {
            name: {"stringValue": a.get("StringValue"), "stringListValues": [], "binaryListValues": [],
                   "dataType": a["DataType"]}
            for name, a in m.get("MessageAttributes", {}).items()
        }  # fmt: skip
        records.append({
            **template,
            "messageId": m["MessageId"],
            "receiptHandle": m["ReceiptHandle"],
            "body": m["Body"],
            "attributes": {**template["attributes"], **m.get("Attributes", {})},
            "messageAttributes": attributes,
            "md5OfBody": m["MD5OfBody"],
        })  # fmt: skip
    return {"Records": records}


def load_function(function: str, module_name: str, env: dict[str, str | None] | None = None) -> Any:
    """Import functions/<function>/app.py afresh (a cold start) under ``env``; returns the module."""
    spec = importlib.util.spec_from_file_location(module_name, REPO / "functions" / function / "app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with patched_environ(env or {}):
        spec.loader.exec_module(module)
    return module
