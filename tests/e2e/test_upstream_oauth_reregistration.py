"""End to end: `foldgate serve` fronting an OAuth upstream whose authorization server (oidc-provider,
in-memory) restarts and forgets the client foldgate registered with it.

Pins: the agent's next call (its refresh answered ``invalid_client``) is a tool error naming the
reason, not a crash; ``/api/v1/status`` says ``needs_consent`` with that reason; the operator's next
connect sends the person with a new client that the authorization server knows, and the agent's calls
reach the upstream again under that client.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client

from tests.oauth_provider import consent
from tests.procs import foldgate_serve
from tests.upstream_oauth import OperatorAdmin, RestartableProvider, protected_server

pytestmark = pytest.mark.e2e

FORGOTTEN = "no longer knows foldgate's client registration"
ACCESS_TTL = 2


@dataclass
class Setup(OperatorAdmin):
    auth_server: RestartableProvider
    calls_file: Path

    async def connect(self) -> str:
        """The operator connects ``files`` and alice consents; the client_id she was sent with."""
        started = self.admin("POST", "/api/v1/servers/files/connect", params={"tenant": "default"})
        assert started.status_code == 200, started.text
        url = started.json()["authorization_url"]
        callback = self.base + "/oauth/callback"
        page = httpx2.get(callback, params=await consent(url, callback), timeout=30)
        assert page.status_code == 200, page.text
        return parse_qs(urlsplit(url).query)["client_id"][0]

    def last_client(self) -> str:
        """The client of the token behind the upstream's last tool call."""
        calls = [json.loads(line) for line in self.calls_file.read_text().splitlines() if line]
        client: str = calls[-1]["client"]
        return client


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    # No cap between registrations: the provider restarts seconds after the first one. Access tokens
    # of two seconds: the first call after the restart (once the last token expired) refreshes.
    monkeypatch.setenv("FOLDGATE_UPSTREAM_REREGISTER_SECONDS", "0")
    auth_server = RestartableProvider(tmp_path, access_ttl=ACCESS_TTL)
    try:
        with protected_server(tmp_path, auth_server.provider.issuer) as (url, calls):
            config = {"direct_tool_response_mode": "full",
                      "servers": [{"name": "files", "url": url, "auth": {"kind": "oauth"}}]}  # fmt: skip
            with foldgate_serve(config, tmp_path, "--interval", "600") as base:
                key = (tmp_path / "operator.key").read_text().strip()
                yield Setup(base, {"authorization": f"Bearer {key}"}, auth_server, calls)
    finally:
        auth_server.close()


async def call(base: str, name: str, arguments: dict[str, Any]) -> Any:
    async with Client(base + "/mcp/all") as client:
        return await client.call_tool(name, arguments)


async def test_a_forgotten_client_is_registered_again_and_the_connect_flow_works_again(setup: Setup) -> None:
    first = await setup.connect()
    reindexed = setup.admin("POST", "/api/v1/reindex", json={"tenant": "default"})
    assert reindexed.status_code == 202, reindexed.text
    assert not (await call(setup.base, "files__whoami", {})).is_error
    assert setup.last_client() == first

    setup.auth_server.restart()
    # The restarted provider signs with the same keys, so the held token stays good until it expires
    # (foldgate refreshes a token only within its margin): the scenario starts once it has.
    expires = setup.auth_state()["expires_at"]
    assert expires is not None
    assert expires <= time.time() + ACCESS_TTL
    while time.time() < expires:
        await asyncio.sleep(0.1)
    refused = await call(setup.base, "files__whoami", {})
    assert refused.is_error
    assert FORGOTTEN in refused.content[0].text
    assert "/api/v1/servers/files/connect" in refused.content[0].text
    state = setup.auth_state()
    assert state["state"] == "needs_consent"
    assert FORGOTTEN in state["reason"]

    second = await setup.connect()
    assert second != first
    state = setup.auth_state()
    assert state["state"] == "connected"
    assert "reason" not in state
    result = await call(setup.base, "files__whoami", {})
    assert not result.is_error, result
    assert json.loads(result.content[0].text)["subject"] == "alice"
    assert setup.last_client() == second
