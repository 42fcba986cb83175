"""SEP-2243 on the tasks/* methods: routing headers that disagree with the body are refused (-32020)."""

from __future__ import annotations

import base64
import json

import pytest
from starlette.requests import Request

from foldgate.edge.tasks import Parsed, parse, routing_mismatch
from foldgate.model.rpc_body import RpcBody


def request(headers: dict[str, str] | list[tuple[str, str]]) -> Request:
    pairs = headers.items() if isinstance(headers, dict) else headers
    raw = [(k.lower().encode(), v.encode()) for k, v in pairs]
    return Request({"type": "http", "method": "POST", "path": "/mcp/all", "headers": raw})


MODERN = {"mcp-protocol-version": "2026-07-28"}


def tasks_get(req: Request, task_id: str = "abc123") -> Parsed:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": task_id}})
    parsed = parse(RpcBody(body.encode()), req)
    assert parsed is not None
    return parsed


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"mcp-method": "tasks/get"},
        {"mcp-method": "tasks/get", "mcp-name": "abc123"},
        {"mcp-name": "=?base64?" + base64.b64encode(b"abc123").decode() + "?="},
    ],
)
def test_matching_or_absent_routing_headers_are_served(headers: dict[str, str]) -> None:
    req = request({**MODERN, **headers})
    assert routing_mismatch(tasks_get(req), req) is None


@pytest.mark.parametrize(
    "headers",
    [
        {"mcp-name": "sep-2663-wrong-task-id-for-routing-header-mismatch"},
        {"mcp-method": "tasks/cancel"},
        {"mcp-name": "=?base64?not base64!?="},
        {"mcp-name": "=?base64?" + base64.b64encode(b"other").decode() + "?="},
    ],
)
def test_a_tasks_get_whose_routing_headers_name_another_task_or_method_is_refused(
    headers: dict[str, str],
) -> None:
    req = request({**MODERN, **headers})
    assert routing_mismatch(tasks_get(req), req) is not None


def test_a_repeated_mcp_name_header_is_refused_even_when_one_matches() -> None:
    req = request([*MODERN.items(), ("mcp-name", "abc123"), ("mcp-name", "other")])
    assert routing_mismatch(tasks_get(req), req) is not None


def test_handshake_era_requests_carry_no_routing_headers_to_check() -> None:
    req = request({"mcp-protocol-version": "2025-11-25", "mcp-name": "other"})
    assert routing_mismatch(tasks_get(req), req) is None
