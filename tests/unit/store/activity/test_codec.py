"""An event as stored JSON: the fields as the dataclass holds them (nested arguments included, as
``asdict`` gives them), sorted and compact, and an ``arguments`` too deep to write dropped while the
rest of the event is kept."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from foldgate.model.activity import ActivityEvent, Actor, AuditEvent
from foldgate.store.activity.codec import record_from_json, record_to_json


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"k": [value]}
    return value


def _as_asdict(record: ActivityEvent | AuditEvent, kind: str) -> str:
    return json.dumps({"kind": kind, **asdict(record)}, separators=(",", ":"), sort_keys=True, default=str)


def test_a_call_event_is_stored_as_its_fields() -> None:
    event = ActivityEvent(
        "acme", "tools/call", "mcp", "ok", at=1.5, server="crm", tool="find", principal="tok_1",
        upstream_ms=2.0, guard={"aws_access_key": 1}, event_id="0000000001500-abc",
        arguments={"shape": {"q": "str", "ids": ["int", ("tuple", "as", "list")]}},
    )  # fmt: skip
    text = record_to_json(event)
    assert text == _as_asdict(event, "call")
    assert record_from_json(text) == ActivityEvent(
        **{**asdict(event), "arguments": {"shape": {"q": "str", "ids": ["int", ["tuple", "as", "list"]]}}}
    )


def test_an_operator_event_is_stored_with_its_actor_as_an_object() -> None:
    event = AuditEvent("acme", "token.create", Actor("cli", "me"), at=2.0, target="tok_1", event_id="e")
    assert record_to_json(event) == _as_asdict(event, "audit")
    assert record_from_json(record_to_json(event)) == event


def test_arguments_nested_too_deep_to_write_are_dropped_and_the_event_kept() -> None:
    event = ActivityEvent("acme", "tools/call", "mcp", "ok", at=3.0, tool="find", arguments=_deep(5000))
    doc = json.loads(record_to_json(event))
    assert doc["arguments"] is None
    assert (doc["tool"], doc["kind"], doc["at"]) == ("find", "call", 3.0)
