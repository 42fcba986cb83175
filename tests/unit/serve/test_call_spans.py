"""The call path's spans say how each call ended: the ``foldgate.call`` span's outcome is the
activity log's word for it (ok, invalid_arguments, upstream_error, upstream_timeout), the validation
span says whether the arguments passed, and the request, auth and view spans share the trace."""

from __future__ import annotations

import json
from typing import Any

import pytest

from foldgate.errors import UpstreamError, UpstreamTimeoutError
from tests.gateway_fixture import gateway_client
from tests.tracing import by_name, recording_spans, trace_hex

H = {"accept": "application/json", "content-type": "application/json"}
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def _call(arguments: Any) -> str:
    params = {"name": "crm__find_contact", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})


@pytest.mark.parametrize(
    ("arguments", "failure", "outcome", "validation"),
    [
        ({"query": "ada"}, None, "ok", "ok"),
        ({"query": 7}, None, "invalid_arguments", "invalid_arguments"),
        ({"query": "ada"}, UpstreamError("crm: find_contact failed"), "upstream_error", "ok"),
        ({"query": "ada"}, UpstreamTimeoutError("crm: no answer", timeout_s=1.0), "upstream_timeout", "ok"),
    ],
)
async def test_each_call_span_says_how_the_call_ended(
    arguments: Any, failure: UpstreamError | None, outcome: str, validation: str
) -> None:
    with recording_spans() as exporter:
        async with gateway_client() as (client, _, upstream, _):
            if failure is not None:
                upstream.fail["find_contact"] = failure
            headers = {**H, "traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}
            r = await client.post("/mcp/all", content=_call(arguments), headers=headers)
            assert r.status_code == 200
        spans = by_name(exporter.get_finished_spans())
    (call,) = spans["foldgate.call"]
    assert dict(call.attributes or {}) == {
        "foldgate.tenant": "default",
        "foldgate.server": "crm",
        "foldgate.tool": "find_contact",
        "foldgate.outcome": outcome,
    }
    (checked,) = spans["foldgate.validation"]
    assert dict(checked.attributes or {})["foldgate.outcome"] == validation
    (request,) = spans["foldgate.request"]
    assert dict(request.attributes or {}) == {
        "foldgate.surface": "direct",
        "foldgate.tenant": "default",
        "mcp.method.name": "tools/call",
    }
    (auth,) = spans["foldgate.auth"]
    assert dict(auth.attributes or {})["foldgate.outcome"] == "ok"
    everything = [s for group in spans.values() for s in group]
    assert {trace_hex(s) for s in everything} == {TRACE}
    assert {s.name for s in everything} >= {"foldgate.request", "foldgate.auth", "foldgate.view"}
