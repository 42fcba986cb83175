"""End to end: `foldgate serve` with ``dpop: true`` in front of the enterprise real parts run with DPoP
nonces on and DPoP required (tests/e2e/enterprise_idp/: the authlib authorization server refuses a
token request without a proof and answers ``use_dpop_nonce`` with a ``DPoP-Nonce`` until a proof carries
it, and so does the MCP SDK resource server, whose every 401 challenges in the ``DPoP`` scheme; RFC 9449
sections 7 to 9).

A ``workload_jwt`` server with ``dpop: true`` and no token endpoint configured.
Pins: foldgate discovers the AS from a ``DPoP`` challenge; the agent's call succeeds with a bound
token; foldgate answered each server's nonce challenge exactly once (one ``use_dpop_nonce`` refusal then
a grant at the AS, one 401 at the MCP server), with no refresh of the token for a nonce challenge and
no loop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import Client

from foldgate.dev.procs import free_port
from tests.e2e.enterprise_idp.parts import WORKLOAD, Parts, enterprise_parts
from tests.procs import foldgate_serve

pytestmark = pytest.mark.e2e


@dataclass
class Setup:
    base: str
    parts: Parts


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("enterprise-nonce")
    port = free_port()
    with ExitStack() as stack:
        parts = stack.enter_context(
            enterprise_parts(
                tmp / "parts", gateway=f"http://127.0.0.1:{port}", dpop_nonce=True, dpop_required=True
            )
        )
        # No token endpoint configured: found from the server's DPoP challenge and its metadata.
        agent = parts.workload_agent()
        wl = {"kind": "workload_jwt", "assertion": {"source": "command", "argv": agent}, "dpop": True}
        config = {
            "direct_tool_response_mode": "full",
            "servers": [{"name": "wl", "url": parts.mcp, "auth": wl}],
        }
        base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "600", port=port))
        yield Setup(base, parts)


async def test_each_servers_nonce_is_answered_once_and_the_call_runs_bound(setup: Setup) -> None:
    async with Client(setup.base + "/mcp/all") as client:
        result = await client.call_tool("wl__whoami", {})
    assert not result.is_error, result.content
    who: dict[str, Any] = json.loads(result.content[0].text)
    assert (who["subject"], who["bound"]) == (WORKLOAD, True)

    at_as = [(e["outcome"], e.get("error")) for e in setup.parts.as_log()]
    # The indexer's grant: one nonce challenge, then the token; the call used the token it holds.
    assert at_as == [("refused", "use_dpop_nonce"), ("issued", None)]
    requests = setup.parts.rs_log()["requests"]
    nonce_refusals = [r for r in requests if r.get("error") == "use_dpop_nonce"]
    assert len(nonce_refusals) == 1  # the first request with the token; every later proof has the nonce
    assert all(r["scheme"] == "DPoP" and r["proof"] for r in requests if r["scheme"])
    assert [
        r for r in requests if r["scheme"] and r.get("outcome") == 401 and r.get("error") != "use_dpop_nonce"
    ] == []
    # Before any token, the server challenged in the DPoP scheme: foldgate found its metadata from that.
    assert any(r["scheme"] is None and r.get("outcome") == 401 for r in requests)
