"""End to end: `foldgate serve` (local mode, which listens for every pooled upstream's list changes)
fronting an OAuth-protected upstream whose authorization server (oidc-provider) issues access tokens
that live 45 seconds, less than the old fixed 60-second refresh margin.

Pins: once connected and indexed, an idle gateway sends the upstream nothing (no refresh, no
``tools/list``, no new session or listen stream), where it used to refresh on every request and open a
session, a listen stream and a re-list per new token; an agent's call after that still works.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
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

TTL = 45
IDLE_SECONDS = 5.0


@dataclass
class Setup(OperatorAdmin):
    upstream: Protected


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("short-lived-e2e")
    with protected_upstream(tmp, access_ttl=TTL) as upstream:
        config = {"direct_tool_response_mode": "full",
                  "servers": [{"name": "files", "url": upstream.url, "auth": {"kind": "oauth"}}]}  # fmt: skip
        with foldgate_serve(config, tmp, "--interval", "600") as base:
            key = (Path(tmp) / "operator.key").read_text().strip()
            yield Setup(base, {"authorization": f"Bearer {key}"}, upstream)


async def until(condition: Callable[[], bool], seconds: float) -> None:
    """Wait for ``condition`` (polled; the upstream's request log is a file)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds}s")
        await asyncio.sleep(0.05)


async def quiet(upstream: Protected, for_s: float, within_s: float) -> list[dict[str, Any]]:
    """The upstream's request log once no request arrived for ``for_s`` (within ``within_s``)."""
    deadline = time.monotonic() + within_s
    seen, since = upstream.requests(), time.monotonic()
    while time.monotonic() - since < for_s:
        if time.monotonic() > deadline:
            raise AssertionError(f"the upstream kept getting requests: {[r['rpc'] for r in seen[-20:]]}")
        await asyncio.sleep(0.05)
        now = upstream.requests()
        if now != seen:
            seen, since = now, time.monotonic()
    return seen


def listed_after_listening(requests: list[dict[str, Any]]) -> bool:
    """The listen stream was opened and a tools/list followed (local mode's re-list on its ack)."""
    methods = [r["rpc"] for r in requests]
    if "subscriptions/listen" not in methods:
        return False
    return "tools/list" in methods[methods.index("subscriptions/listen") :]


async def test_an_idle_gateway_with_45_second_tokens_sends_the_upstream_nothing(setup: Setup) -> None:
    started = setup.admin("POST", "/api/v1/servers/files/connect", params={"tenant": "default"})
    assert started.status_code == 200, started.text
    callback = setup.base + "/oauth/callback"
    page = httpx2.get(
        callback, params=await consent(started.json()["authorization_url"], callback), timeout=30
    )
    assert page.status_code == 200, page.text
    assert setup.admin("POST", "/api/v1/reindex", json={"tenant": "default"}).status_code == 202
    await until(lambda: listed_after_listening(setup.upstream.requests()), 30)
    # The listing the acknowledgement asked for may still be finishing (prompts, resources).
    before = await quiet(setup.upstream, 0.5, 10)
    expires = setup.auth_state()["expires_at"]

    deadline = time.monotonic() + IDLE_SECONDS
    while time.monotonic() < deadline:  # watched, not slept through: the first stray request fails
        assert setup.upstream.requests() == before, setup.upstream.requests()[len(before) :][:20]
        await asyncio.sleep(0.1)
    assert setup.auth_state()["expires_at"] == expires  # not refreshed

    async with Client(setup.base + "/mcp/all") as client:
        result = await client.call_tool("files__whoami", {})
    assert not result.is_error, result
    assert json.loads(result.content[0].text)["subject"] == "alice"
