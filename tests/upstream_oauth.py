"""Real parts for the upstream OAuth tests: oidc-provider (the upstream's authorization server) and an
MCP server that requires its tokens (demo/oauth/protected_mcp.py), both on loopback; plus the
person who signs in and consents at the provider (tests.oauth_provider.consent), driven over HTTP; the
person's browser opening a per-user connect link (``LinkBrowser``); and a provider a test restarts so
it forgets every client (``RestartableProvider``).
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from foldgate.dev.procs import free_port, stop_process
from foldgate.errors import ConfigError
from foldgate.store.grants.base import GrantStore
from foldgate.store.grants.cipher import LocalKeyCipher
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.oauth.context import OAuthContext
from tests.oauth_provider import Provider, consent, oidc_provider
from tests.procs import wait_http

SERVER = Path(__file__).resolve().parents[1] / "demo" / "oauth" / "protected_mcp.py"
UPSTREAM_SCOPE = "files:read"
PUBLIC = "http://127.0.0.1:1"  # foldgate's public URL: the browser stops at the redirect, never dials it
REDIRECT = PUBLIC + "/oauth/callback"


@dataclass
class OperatorAdmin:
    """The operator's side of a running gateway: the admin API with the operator key."""

    base: str
    operator: dict[str, str]

    def admin(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        """A request to the admin API (``path`` under the gateway's base URL) as the operator."""
        return httpx2.request(method, self.base + path, headers=self.operator, timeout=30, **kwargs)

    def auth_state(self, server: str = "files") -> dict[str, Any]:
        """``server``'s OAuth connection as ``/api/v1/status`` reports it for the default tenant."""
        status = self.admin("GET", "/api/v1/status", params={"tenant": "default"})
        assert status.status_code == 200, status.text
        state: dict[str, Any] = status.json()["auth"][server]
        return state


def connect_as_operator(base: str, tmp: Path, server: str = "files", user: str = "ops") -> dict[str, str]:
    """The operator of ``foldgate serve`` (state in ``tmp``) connects ``server``'s shared grant as
    ``user`` at the authorization server, then reindexes; the operator's headers are returned."""
    import asyncio

    operator = {"authorization": f"Bearer {(tmp / 'operator.key').read_text().strip()}"}
    started = httpx2.post(f"{base}/api/v1/servers/{server}/connect", params={"tenant": "default"},
                          headers=operator, timeout=30)  # fmt: skip
    assert started.status_code == 200, started.text
    callback = base + "/oauth/callback"
    answer = asyncio.run(consent(started.json()["authorization_url"], callback, user))
    assert httpx2.get(callback, params=answer, timeout=30).status_code == 200
    httpx2.post(f"{base}/api/v1/reindex", json={"tenant": "default"}, headers=operator, timeout=60)
    return operator


_HIDDEN = re.compile(r'<input type=hidden name="([^"]+)" value="([^"]*)">')


class LinkBrowser:
    """One person's browser opening per-user connect links on the gateway at ``base``: it keeps the
    gateway's cookies (the binding the confirmation page sets) between requests, like a real one."""

    def __init__(self, base: str, http: httpx2.AsyncClient | None = None) -> None:
        self.base = base
        self.http = http or httpx2.AsyncClient(timeout=30)

    async def __aenter__(self) -> LinkBrowser:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def confirmation(self, link: str) -> tuple[httpx2.Response, dict[str, str]]:
        """GET the link: the confirmation page and its form's fields."""
        page = await self.http.get(link)
        return page, {k: html.unescape(v) for k, v in _HIDDEN.findall(page.text)}

    async def confirm(self, form: dict[str, str]) -> httpx2.Response:
        """POST the confirmation form (the person pressed the button)."""
        return await self.http.post(self.base + "/oauth/connect", data=form)

    async def approve(self, started: httpx2.Response, login: str) -> httpx2.Response:
        """Follow a 303 to an authorization server: sign in as ``login``, approve, and land on the
        gateway's callback (the sign-in one first, when the tenant signs people in) in this browser."""
        response = started
        for _ in range(3):
            assert response.status_code == 303, response.text
            location = response.headers["location"]
            callback = "/oauth/signin/callback" if "nonce=" in location else "/oauth/callback"
            answer = await consent(location, self.base + callback, login)
            response = await self.http.get(self.base + callback, params=answer)
            if callback == "/oauth/callback":
                return response
        raise AssertionError("the connect flow did not reach the callback")

    async def connect(self, link: str, login: str) -> httpx2.Response:
        """Open the link, confirm, sign in and approve as ``login``: the callback's answer."""
        page, form = await self.confirmation(link)
        assert page.status_code == 200, page.text
        return await self.approve(await self.confirm(form), login)


@contextlib.contextmanager
def grant_store(tmp: Path) -> Iterator[SqliteGrantStore]:
    """A sealed SQLite grant store under ``tmp`` (its key file beside it), closed afterwards."""
    grants = SqliteGrantStore(tmp / "grants.sqlite3", LocalKeyCipher.from_file(tmp / "grants.key"))
    try:
        yield grants
    finally:
        grants.close()


def oauth_context(store: GrantStore, secrets: dict[str, str] | None = None, **options: Any) -> OAuthContext:
    """foldgate's upstream OAuth context at ``PUBLIC``, loopback allowed; ``secrets`` are the only
    secret names it can read (anything else is a ConfigError, as a missing parameter would be)."""

    async def read_secret(name: str) -> str:
        if secrets is None or name not in secrets:
            raise ConfigError(f"no secret {name}")
        return secrets[name]

    return OAuthContext(store, read_secret, PUBLIC, allow_private=True, **options)


@dataclass
class Protected:
    """The provider and the protected upstream's MCP URL; ``calls()`` are the tool calls it ran."""

    provider: Provider
    url: str
    calls_file: Path

    def calls(self) -> list[dict[str, Any]]:
        """Every tool call the upstream ran: tool name, subject and client of the token used."""
        return _lines(self.calls_file)

    def requests(self) -> list[dict[str, Any]]:
        """Every HTTP request to the upstream's /mcp: HTTP method and JSON-RPC method (or None)."""
        return _lines(self.calls_file.with_suffix(".requests"))


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    # Only whole lines: the server may be appending one right now.
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line]


@contextlib.contextmanager
def protected_server(
    tmp: Path, issuer: str, scopes: str = UPSTREAM_SCOPE, *, tool_scopes: bool = False
) -> Iterator[tuple[str, Path]]:
    """One protected MCP server trusting ``issuer`` and requiring ``scopes``: its URL and calls file.
    ``tool_scopes``: with the tools that need scope of their own (see demo/oauth/protected_mcp.py)."""
    port = free_port()
    cmd = [sys.executable, str(SERVER), str(port), issuer, scopes, "--log-requests"]
    cmd += ["--tool-scopes"] if tool_scopes else []
    with (tmp / f"protected-{port}.log").open("w") as log:
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_http(base + "/.well-known/oauth-protected-resource/mcp")
            yield base + "/mcp", tmp / f"{port}.calls"
        finally:
            stop_process(proc)


@contextlib.contextmanager
def protected_upstream(tmp: Path, *, access_ttl: int = 300) -> Iterator[Protected]:
    """oidc-provider plus the protected MCP server, for the duration of the block."""
    with (
        oidc_provider(tmp, f"{UPSTREAM_SCOPE} files:write", access_ttl=access_ttl) as provider,
        protected_server(tmp, provider.issuer) as (url, calls),
    ):
        yield Protected(provider, url, calls)


class RestartableProvider:
    """oidc-provider that a test can restart: the same issuer and keys, every client and grant lost
    (as a real one with an in-memory store after a deploy)."""

    def __init__(self, tmp: Path, *, access_ttl: int = 300) -> None:
        self.tmp = tmp
        self.access_ttl = access_ttl
        self._running = contextlib.ExitStack()
        self.provider = self._start(None)

    def _start(self, before: Provider | None) -> Provider:
        scopes = f"{UPSTREAM_SCOPE} files:write"
        started = oidc_provider(self.tmp, scopes, access_ttl=self.access_ttl, restart_of=before)
        return self._running.enter_context(started)

    def restart(self) -> None:
        """Stop the provider and start it again on its issuer URL."""
        before = self.provider
        self._running.close()
        self.provider = self._start(before)

    def close(self) -> None:
        """Stop it."""
        self._running.close()
