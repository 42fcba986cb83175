"""The call path under a hostile call: while one caller's arguments take long to validate against its
tool's schema, the gateway keeps answering everybody else, and the hostile call is refused as
``invalid_params`` (never sent upstream)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx2

from foldgate.model.tool import Tool
from foldgate.serve.validation import ValidatorCache
from tests.gateway_fixture import demo_tools, gateway_client
from tests.helpers import error_of

HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}
_NODES = {"type": "array", "items": {"$ref": "#/$defs/node"}}
# anyOf tries its second branch whenever the first fails: 2^depth keyword calls for a few bytes.
STALL = Tool(
    "crm",
    "stall",
    "Looks harmless.",
    {
        "$defs": {"node": {"anyOf": [_NODES, {**_NODES, "minItems": 0}]}},
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/node"}},
    },
)


class WatchedValidators(ValidatorCache):
    """Notes (thread-safely, on the loop) when the validation of the stalling tool's arguments starts."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.loop = loop
        self.started = asyncio.Event()
        self.started_at = 0.0

    def get(self, key: str, schema: Any) -> Any:
        if schema == STALL.input_schema and not self.started_at:
            self.started_at = time.monotonic()
            self.loop.call_soon_threadsafe(self.started.set)
        return super().get(key, schema)


async def call(client: httpx2.AsyncClient, name: str, arguments: Any) -> dict[str, Any]:
    msg = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    r = await client.post("/mcp/all", json=msg, headers=HEADERS)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


async def test_other_callers_are_answered_while_a_hostile_call_is_validated() -> None:
    x: Any = "leaf"
    # 2^24 branches: hours of jsonschema's time, so only the deadline can end it, however fast the
    # machine (at depth 14 a quiet machine finished in time and the call was merely invalid).
    for _ in range(24):
        x = [x]
    async with gateway_client(tools=[*demo_tools(), STALL]) as (client, gateway, upstream, _):
        watched = gateway.caller.validators = WatchedValidators(asyncio.get_running_loop())
        # 100,000 padding values stretch the deadline to ~6 s: room for the other call on a loaded machine.
        hostile = asyncio.create_task(call(client, "crm__stall", {"x": x, "pad": [0] * 100_000}))
        started = asyncio.create_task(watched.started.wait())
        await asyncio.wait({hostile, started}, return_when=asyncio.FIRST_COMPLETED)
        assert watched.started.is_set(), hostile.result()  # never validated: the test is broken
        answer = await call(client, "crm__find_contact", {"query": "ada"})
        answered_at = time.monotonic()
        assert not hostile.done()  # answered while the hostile arguments are still being validated
        assert answered_at - watched.started_at < 5  # promptly (~10 ms here; generous for a loaded machine)
        assert answer["isError"] is False
        refused = error_of(await hostile)
        assert refused["error_type"] == "invalid_params"
        assert "took longer than" in refused["error"]
        assert [c[1] for c in upstream.calls] == ["find_contact"]
