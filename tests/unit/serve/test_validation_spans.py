"""The call path's spans through the edge: the request span (the client's trace, its surface, tenant
and method), the auth span, the view span, and the validation span saying whether the arguments passed
the real schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.gateway_fixture import gateway_client
from tests.tracing import by_name, recording_spans, trace_hex

H = {"accept": "application/json", "content-type": "application/json"}
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def _call(arguments: Any) -> str:
    params = {"name": "crm__find_contact", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})


@pytest.mark.parametrize(
    ("arguments", "outcome"), [({"query": "ada"}, "ok"), ({"query": 7}, "invalid_arguments")]
)
async def test_a_calls_spans_share_the_clients_trace_and_say_how_validation_ended(
    arguments: Any, outcome: str
) -> None:
    with recording_spans() as exporter:
        async with gateway_client() as (client, *_):
            headers = {**H, "traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}
            r = await client.post("/mcp/all", content=_call(arguments), headers=headers)
            assert r.status_code == 200
        spans = by_name(exporter.get_finished_spans())
    (checked,) = spans["foldgate.validation"]
    assert dict(checked.attributes or {}) == {
        "foldgate.server": "crm",
        "foldgate.tool": "find_contact",
        "foldgate.outcome": outcome,
    }
    (request,) = spans["foldgate.request"]
    assert dict(request.attributes or {}) == {
        "foldgate.surface": "direct",
        "foldgate.tenant": "default",
        "mcp.method.name": "tools/call",
    }
    (auth,) = spans["foldgate.auth"]
    assert dict(auth.attributes or {}) == {"foldgate.tenant": "default", "foldgate.outcome": "ok"}
    everything = [s for group in spans.values() for s in group]
    assert {trace_hex(s) for s in everything} == {TRACE}
    assert "foldgate.view" in spans
