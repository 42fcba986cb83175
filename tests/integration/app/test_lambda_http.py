"""tests/lambda_http.py, the local API Gateway (HTTP API v2) front the conformance suite drives the Lambda
handler through: the events it builds must look like API Gateway's, and responses must come back as API
Gateway would return them, or the Lambda path's results would say nothing about the cloud."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.lambda_http import lambda_http, v2_event
from tests.lambdas import event


def test_events_have_the_shape_of_the_recorded_api_gateway_events() -> None:
    recorded = event("mcp_initialize.json")
    built = v2_event("POST", "/mcp/all", [("Content-Type", "application/json")], b"{}")
    assert set(built) == set(recorded)
    assert set(built["requestContext"]) == set(recorded["requestContext"])
    assert set(built["requestContext"]["http"]) == set(recorded["requestContext"]["http"])
    assert built["routeKey"] == "ANY /mcp/all"  # the template routes every method of /mcp/all to the function


def test_headers_cookies_query_and_bodies_are_mapped_as_api_gateway_maps_them() -> None:
    built = v2_event(
        "POST", "/mcp/all?tenant=a&x=1",
        [("X-Tag", "one"), ("x-tag", "two"), ("Cookie", "a=1; b=2"), ("Host", "127.0.0.1:9")],
        b"\xff\x00binary",
    )  # fmt: skip
    assert built["rawPath"] == "/mcp/all"
    assert built["rawQueryString"] == "tenant=a&x=1"
    assert built["headers"]["x-tag"] == "one,two"
    assert built["cookies"] == ["a=1", "b=2"]
    assert "cookie" not in built["headers"]
    assert built["isBase64Encoded"] is True
    assert base64.b64decode(built["body"]) == b"\xff\x00binary"
    text = v2_event("GET", "/healthz", [], b"")
    assert text["isBase64Encoded"] is False
    assert "body" not in text


def test_a_request_round_trips_through_the_handler() -> None:
    seen: list[dict[str, Any]] = []

    def handler(ev: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(ev)
        assert context.get_remaining_time_in_millis() > 0
        payload = json.dumps({"method": ev["requestContext"]["http"]["method"], "body": ev.get("body")})
        return {
            "statusCode": 201,
            "headers": {"Content-Type": "application/json", "X-Echo": "yes"},
            "cookies": ["s=1; Path=/"],
            "body": base64.b64encode(payload.encode()).decode(),
            "isBase64Encoded": True,
        }

    with lambda_http(handler) as (base, invocations):
        request = urllib.request.Request(base + "/mcp/all?q=1", data=b'{"a": 1}', method="POST")
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 201
            assert response.headers["x-echo"] == "yes"
            assert response.headers["set-cookie"] == "s=1; Path=/"
            assert json.loads(response.read()) == {"method": "POST", "body": '{"a": 1}'}
    assert seen[0]["rawQueryString"] == "q=1"
    assert invocations == [{"method": "POST", "path": "/mcp/all", "status": 201}]


def test_an_exception_escaping_the_handler_is_an_api_gateway_500_and_is_recorded() -> None:
    def handler(ev: dict[str, Any], context: Any) -> dict[str, Any]:
        raise AttributeError("'HTTPCycle' object has no attribute 'body'")

    with lambda_http(handler) as (base, invocations), pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(base + "/mcp/all", timeout=5)
    assert raised.value.code == 500
    assert json.loads(raised.value.read()) == {"message": "Internal Server Error"}
    assert invocations[0]["method"] == "GET"
    assert "HTTPCycle" in invocations[0]["error"]
