"""W3C traceparent: exactly the spec's shape is taken from a client, from ``_meta`` before the header,
and anything else is ignored (never an error, never echoed)."""

from __future__ import annotations

import json

import pytest

from foldgate.model.rpc_body import RpcBody
from foldgate.telemetry.traceparent import TraceParent, incoming_traceparent, parse_traceparent

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"
VALID = f"00-{TRACE}-{SPAN}-01"


def test_a_version_00_traceparent_is_read_with_its_sampled_flag() -> None:
    assert parse_traceparent(VALID) == TraceParent(TRACE, SPAN, sampled=True)
    assert parse_traceparent(f"00-{TRACE}-{SPAN}-00") == TraceParent(TRACE, SPAN, sampled=False)


def test_a_later_version_keeps_its_first_four_fields() -> None:
    assert parse_traceparent(f"01-{TRACE}-{SPAN}-03-future") == TraceParent(TRACE, SPAN, sampled=True)


@pytest.mark.parametrize(
    "value",
    [
        None,
        42,
        "",
        f"ff-{TRACE}-{SPAN}-01",  # version ff is invalid
        f"00-{TRACE.upper()}-{SPAN}-01",  # uppercase hex is invalid
        f"00-{'0' * 32}-{SPAN}-01",  # all-zero trace id
        f"00-{TRACE}-{'0' * 16}-01",  # all-zero parent id
        f"00-{TRACE}-{SPAN}-01-extra",  # version 00 has exactly four fields
        f"00-{TRACE[:-1]}-{SPAN}-01",
        "00-" + "a" * 600,
    ],
)
def test_anything_else_is_ignored(value: object) -> None:
    assert parse_traceparent(value) is None


def test_a_new_trace_has_fresh_ids_and_is_not_sampled() -> None:
    one, two = TraceParent.new(), TraceParent.new()
    assert one.trace_id != two.trace_id
    assert parse_traceparent(one.header()) == one
    assert not one.sampled


def _body(meta: object) -> RpcBody:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": meta}}
    return RpcBody(json.dumps(message).encode())


def test_meta_wins_over_the_header() -> None:
    other = f"00-{'1' * 32}-{'2' * 16}-01"
    assert incoming_traceparent(other, _body({"traceparent": VALID})) == parse_traceparent(VALID)


def test_the_header_serves_when_meta_has_none_or_a_malformed_one() -> None:
    assert incoming_traceparent(VALID, _body({})) == parse_traceparent(VALID)
    assert incoming_traceparent(VALID, _body({"traceparent": "nonsense"})) == parse_traceparent(VALID)
    assert incoming_traceparent(VALID, _body("not an object")) == parse_traceparent(VALID)


@pytest.mark.parametrize("body", [b"\xff traceparent", b"[" * 100_000 + b'"traceparent"', b"traceparent"])
def test_an_unreadable_body_falls_back_to_the_header(body: bytes) -> None:
    assert incoming_traceparent(VALID, RpcBody(body)) == parse_traceparent(VALID)
    assert incoming_traceparent(None, RpcBody(body)) is None
