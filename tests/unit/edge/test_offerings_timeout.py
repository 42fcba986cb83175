"""resources/read and prompts/get that time out upstream (issue 24, item 10) answer the JSON-RPC
upstream error with what a tool call's ``upstream_timeout`` carries: the type, the bound that ended
the wait and what to do, in the error's ``data``."""

from __future__ import annotations

from typing import Any

from foldgate.config.tenant import ServerConfig
from foldgate.errors import UpstreamError, UpstreamTimeoutError
from foldgate.upstream.client import DEADLINE_HINT
from tests.gateway_fixture import demo_config, gateway_client
from tests.unit.edge.test_mcp_offerings import add_offerings, rpc


async def test_a_timed_out_read_or_prompt_carries_the_bound_and_the_hint() -> None:
    async with gateway_client(demo_config()) as (client, gateway, upstream, _):
        add_offerings(gateway)

        async def timed_out(server: ServerConfig, method: str, params: dict[str, Any]) -> dict[str, Any]:
            raise UpstreamTimeoutError(
                f"{server.name}: {method} did not answer", timeout_s=1.2, hint=DEADLINE_HINT
            )

        upstream.request = timed_out  # type: ignore[method-assign]
        for method, params in (
            ("resources/read", {"uri": "foldgate://crm/mem%3A%2F%2Fnote"}),
            ("prompts/get", {"name": "crm__brief"}),
        ):
            error = (await rpc(client, method, params))["error"]
            assert error["code"] == -32000
            assert error["message"].startswith("crm: ")
            assert error["data"] == {
                "error_type": "upstream_timeout",
                "timeout_s": 1.2,
                "hint": DEADLINE_HINT,
            }


async def test_other_upstream_failures_carry_no_data() -> None:
    async with gateway_client(demo_config()) as (client, gateway, upstream, _):
        add_offerings(gateway)

        async def failed(server: ServerConfig, method: str, params: dict[str, Any]) -> dict[str, Any]:
            raise UpstreamError(f"{server.name}: refused", timeout_s=3, hint="x")

        upstream.request = failed  # type: ignore[method-assign]
        error = (await rpc(client, "resources/read", {"uri": "foldgate://crm/mem%3A%2F%2Fnote"}))["error"]
        assert error["code"] == -32000
        assert "data" not in error
