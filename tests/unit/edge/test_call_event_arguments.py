"""A call event carries no argument value by default; a tenant's ``activity.arguments: hashed`` keeps a
keyed digest (equal arguments, equal digests) and ``redacted`` keys and shapes only."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.serve.activity_arguments import arguments_key
from tests.gateway_fixture import demo_config, gateway_client
from tests.recorders import ListRecorder

H = {"accept": "application/json", "content-type": "application/json", "mcp-protocol-version": "2025-11-25"}
CANARY = "CANARY-ARG-91c2"


async def calls(policy: str | None, *arguments: dict[str, Any]) -> list[Any]:
    config = demo_config(**({"activity": {"arguments": policy}} if policy else {}))
    async with gateway_client(config) as (client, gateway, _, _):
        gateway.caller.arguments_key = lambda: arguments_key(b"k" * 32)
        recorder = ListRecorder()
        gateway.recorder = recorder
        for args in arguments:
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "crm__find_contact", "arguments": args}}  # fmt: skip
            assert (await client.post("/mcp/all", json=call, headers=H)).status_code == 200
        assert CANARY not in recorder.text()
        return [e.arguments for e in recorder.calls]


@pytest.mark.parametrize("policy", [None, "none"])
async def test_by_default_no_argument_is_kept(policy: str | None) -> None:
    assert await calls(policy, {"query": CANARY}) == [None]


async def test_hashed_keeps_a_digest_equal_for_equal_arguments() -> None:
    first, again, other = await calls("hashed", {"query": CANARY}, {"query": CANARY}, {"query": "x"})
    assert first.startswith("hmac-sha256:")
    assert first == again != other


async def test_redacted_keeps_keys_and_shapes_only() -> None:
    [shape] = await calls("redacted", {"query": CANARY, "limit": 3, "api_key": "sk-" + "a" * 20})
    assert shape == {"query": "string", "limit": "number"}
