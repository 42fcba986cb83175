"""End to end: `foldgate serve` fronting an OAuth-protected upstream (the SDK's resource server, with
oidc-provider as its authorization server). An operator connects it through the admin API, a person
consents in the browser and lands on foldgate's own /oauth/callback, the indexer lists the upstream's
tools, and an agent calls one with the official MCP client.

Pins: before connecting, status says ``not_connected`` and a call answers a tool error naming the
connect route (no crash, no retry loop); after, ``connected`` with an expiry and never a token; the call
reaches the upstream as the consenting person; disconnecting revokes and the status says so; the
callback refuses a replayed or unknown state with a clear page; the CIMD document is served.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from tests.oauth_provider import consent
from tests.procs import foldgate_serve
from tests.upstream_oauth import OperatorAdmin, Protected, protected_upstream

pytestmark = pytest.mark.e2e


@dataclass
class Setup(OperatorAdmin):
    upstream: Protected
    operator_db: str  # the gateway's SQLite file: the operator key lives beside it


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("upstream-oauth")
    with protected_upstream(tmp) as upstream:
        config = {"direct_tool_response_mode": "full",
                  "servers": [{"name": "files", "url": upstream.url, "auth": {"kind": "oauth"}}]}  # fmt: skip
        with foldgate_serve(config, tmp, "--interval", "600") as base:
            key = (Path(tmp) / "operator.key").read_text().strip()
            yield Setup(base, {"authorization": f"Bearer {key}"}, upstream, str(tmp / "store.sqlite3"))


async def call(base: str, name: str, arguments: dict[str, Any]) -> Any:
    async with Client(base + "/mcp/all") as client:
        return await client.call_tool(name, arguments)


def test_the_cimd_document_names_its_own_url_and_the_callback(setup: Setup) -> None:
    doc = httpx2.get(setup.base + "/oauth/client-metadata.json", timeout=10).json()
    assert doc["client_id"] == setup.base + "/oauth/client-metadata.json"
    assert doc["redirect_uris"] == [setup.base + "/oauth/callback"]
    assert doc["token_endpoint_auth_method"] == "none"


def test_the_callback_refuses_an_unknown_state_clearly(setup: Setup) -> None:
    r = httpx2.get(setup.base + "/oauth/callback", params={"code": "x", "state": "forged"}, timeout=10)
    assert r.status_code == 400
    assert "unknown or expired consent" in r.text
    assert "Traceback" not in r.text
    denied = httpx2.get(
        setup.base + "/oauth/callback", params={"error": "access_denied", "state": "s"}, timeout=10
    )
    assert denied.status_code == 400
    assert "access_denied" in denied.text


def test_connect_needs_the_operator_credential(setup: Setup) -> None:
    r = httpx2.post(setup.base + "/api/v1/servers/files/connect", params={"tenant": "default"}, timeout=10)
    assert r.status_code == 401


async def test_operator_connects_then_an_agent_calls_the_protected_tool(setup: Setup) -> None:
    assert setup.auth_state()["state"] == "not_connected"
    before = await call(setup.base, "files__whoami", {})
    # Never indexed (not connected): the tool is unknown yet; the status names the reason.
    assert before.is_error

    started = setup.admin("POST", "/api/v1/servers/files/connect", params={"tenant": "default"})
    assert started.status_code == 200, started.text
    url = started.json()["authorization_url"]
    assert "code_challenge_method=S256" in url
    # The person signs in; the browser is sent on to foldgate's callback, which completes the flow.
    callback = setup.base + "/oauth/callback"
    answer = await consent(url, callback)
    page = httpx2.get(callback, params=answer, timeout=30)
    assert page.status_code == 200, page.text
    assert "files is connected for tenant default" in page.text
    replayed = httpx2.get(callback, params=answer, timeout=30)
    assert replayed.status_code == 400  # single use

    state = setup.auth_state()
    assert state["state"] == "connected"
    assert state["expires_at"] is not None
    assert "token" not in json.dumps(
        setup.admin("GET", "/api/v1/status", params={"tenant": "default"}).json()
    )

    reindexed = setup.admin("POST", "/api/v1/reindex", json={"tenant": "default"})
    assert reindexed.status_code == 202, reindexed.text
    tools = setup.admin("GET", "/api/v1/tools", params={"tenant": "default"}).json()["tools"]
    assert {t["id"] for t in tools} == {"files__whoami", "files__echo"}

    result = await call(setup.base, "files__whoami", {})
    assert not result.is_error, result
    assert json.loads(result.content[0].text)["subject"] == "alice"

    gone = setup.admin("DELETE", "/api/v1/servers/files/connect", params={"tenant": "default"})
    assert gone.json() == {"tenant": "default", "server": "files", "disconnected": True, "revoked": True}
    assert setup.auth_state()["state"] == "not_connected"
    after = await call(setup.base, "files__whoami", {})
    assert after.is_error
    assert "/api/v1/servers/files/connect" in after.content[0].text


async def test_the_cli_prints_the_url_and_waits_until_connected(setup: Setup) -> None:
    db = Path(setup.operator_db)
    cmd = [sys.executable, "-m", "foldgate.app.cli", "connect", "files", "--url", setup.base,
           "--db", str(db), "--timeout", "60"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith(setup.upstream.provider.issuer), url
        callback = setup.base + "/oauth/callback"
        answer = await consent(url, callback, login="carol")
        assert httpx2.get(callback, params=answer, timeout=30).status_code == 200
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert setup.auth_state()["state"] == "connected"
    setup.admin("POST", "/api/v1/reindex", json={"tenant": "default"})
    result = await call(setup.base, "files__whoami", {})
    assert json.loads(result.content[0].text)["subject"] == "carol"
