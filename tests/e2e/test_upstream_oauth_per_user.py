"""End to end: a ``per_user`` OAuth upstream behind `foldgate serve` with agent tokens required. Each
agent token is its own end user; the operator's shared connection only lists the tools.

Pins: a user without a grant gets a tool error carrying a signed connect link (and the shared
connection is never used for their call); opening the link connects exactly that user; afterwards
each user's calls reach the upstream as themselves, on the direct surface and the code surface, and
user A's token is never used for user B (checked on the upstream's own record of who called).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.oauth_provider import consent
from tests.procs import foldgate_serve
from tests.upstream_oauth import Protected, protected_upstream

pytestmark = pytest.mark.e2e

LINK = re.compile(r"https?://\S+/oauth/connect\?\S+")


@dataclass
class Setup:
    base: str
    upstream: Protected
    tokens: dict[str, str]  # user -> agent token


def _token(db: Path, label: str) -> str:
    cmd = [sys.executable, "-m", "foldgate.app.cli", "token", "create", "--tenant", "default",
           "--tier", "destructive", "--label", label, "--db", str(db)]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("per-user")
    db = tmp / "store.sqlite3"
    tokens = {user: _token(db, user) for user in ("a", "b")}
    saved = os.environ.get("FOLDGATE_AUTH_REQUIRED")
    os.environ["FOLDGATE_AUTH_REQUIRED"] = "true"
    try:
        with ExitStack() as stack:
            upstream = stack.enter_context(protected_upstream(tmp))
            files = {"name": "files", "url": upstream.url, "auth": {"kind": "per_user"}}
            config = {"direct_tool_response_mode": "full", "servers": [files]}
            base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "600"))
            # The operator's shared connection lets the indexer list the tools.
            operator = {"authorization": f"Bearer {(tmp / 'operator.key').read_text().strip()}"}
            started = httpx2.post(f"{base}/api/v1/servers/files/connect", params={"tenant": "default"},
                                  headers=operator, timeout=30)  # fmt: skip
            assert started.status_code == 200, started.text
            _complete(started.json()["authorization_url"], base, "ops")
            httpx2.post(f"{base}/api/v1/reindex", json={"tenant": "default"}, headers=operator, timeout=60)
            yield Setup(base, upstream, tokens)
    finally:
        if saved is None:
            os.environ.pop("FOLDGATE_AUTH_REQUIRED", None)
        else:
            os.environ["FOLDGATE_AUTH_REQUIRED"] = saved


def _complete(authorization_url: str, base: str, login: str) -> None:
    callback = base + "/oauth/callback"
    answer = asyncio.run(consent(authorization_url, callback, login))
    page = httpx2.get(callback, params=answer, timeout=30)
    assert page.status_code == 200, page.text


async def call(setup: Setup, user: str, path: str, name: str, arguments: dict[str, Any]) -> Any:
    http = create_mcp_http_client(headers={"authorization": f"Bearer {setup.tokens[user]}"})
    async with Client(streamable_http_client(setup.base + path, http_client=http)) as client:
        return await client.call_tool(name, arguments)


async def whoami(setup: Setup, user: str) -> Any:
    return await call(setup, user, "/mcp/all", "files__whoami", {})


async def connect_with_link(setup: Setup, user: str, login: str) -> None:
    refused = await whoami(setup, user)
    assert refused.is_error
    text = refused.content[0].text
    found = LINK.search(text)
    assert found is not None, text
    link = found.group(0)
    async with httpx2.AsyncClient(timeout=30) as browser:
        start = await browser.get(link)
    assert start.status_code == 303, start.text
    callback = setup.base + "/oauth/callback"
    answer = await consent(start.headers["location"], callback, login)
    async with httpx2.AsyncClient(timeout=30) as browser:
        assert (await browser.get(callback, params=answer)).status_code == 200


def subjects(setup: Setup) -> list[str]:
    return [c["subject"] for c in setup.upstream.calls()]


async def test_each_user_reaches_the_upstream_as_themselves_and_never_as_another(setup: Setup) -> None:
    ran = len(setup.upstream.calls())
    first = await whoami(setup, "a")
    assert first.is_error
    assert "/oauth/connect?" in first.content[0].text
    assert len(setup.upstream.calls()) == ran  # the shared (operator) grant was not used for user a

    await connect_with_link(setup, "a", "alice")
    assert json.loads((await whoami(setup, "a")).content[0].text)["subject"] == "alice"

    # User b has no grant: refused with b's own link, never served with a's token.
    before_b = len(setup.upstream.calls())
    assert (await whoami(setup, "b")).is_error
    assert len(setup.upstream.calls()) == before_b

    await connect_with_link(setup, "b", "bob")
    assert json.loads((await whoami(setup, "b")).content[0].text)["subject"] == "bob"
    assert json.loads((await whoami(setup, "a")).content[0].text)["subject"] == "alice"
    assert "ops" not in subjects(setup)[ran:]  # the indexer's shared grant never served a user's call


async def test_the_code_surface_uses_the_callers_own_grant(setup: Setup) -> None:
    program = 'return await call_tool("files", "whoami", {});'
    for user, login in (("a", "alice"), ("b", "bob")):
        result = await call(setup, user, "/mcp/code", "code_execution", {"code": program})
        assert not result.is_error, result.content
        assert login in result.content[0].text


def test_a_forged_link_for_another_subject_is_refused(setup: Setup) -> None:
    response = httpx2.get(setup.base + "/oauth/connect",
                          params={"tenant": "default", "server": "files", "subject": "someone-else",
                                  "exp": "9999999999", "sig": "0" * 64}, timeout=10)  # fmt: skip
    assert response.status_code == 400
    assert "invalid or expired" in response.text
