"""Real parts for the upstream OAuth tests: oidc-provider (the upstream's authorization server) and an
MCP server that requires its tokens (demo/oauth/protected_mcp.py), both on loopback; plus the
person who signs in and consents at the provider, driven over HTTP.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2

from foldgate.dev.procs import free_port, stop_process
from tests.oauth_provider import Provider, oidc_provider
from tests.procs import wait_http

SERVER = Path(__file__).resolve().parents[1] / "demo" / "oauth" / "protected_mcp.py"
UPSTREAM_SCOPE = "files:read"


@dataclass
class Protected:
    """The provider and the protected upstream's MCP URL; ``calls()`` are the tool calls it ran."""

    provider: Provider
    url: str
    calls_file: Path

    def calls(self) -> list[dict[str, Any]]:
        """Every tool call the upstream ran: tool name, subject and client of the token used."""
        if not self.calls_file.exists():
            return []
        return [json.loads(line) for line in self.calls_file.read_text().splitlines() if line]


@contextlib.contextmanager
def protected_server(tmp: Path, issuer: str, scopes: str = UPSTREAM_SCOPE) -> Iterator[tuple[str, Path]]:
    """One protected MCP server trusting ``issuer`` and requiring ``scopes``: its URL and calls file."""
    port = free_port()
    cmd = [sys.executable, str(SERVER), str(port), issuer, scopes]
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


async def consent(authorize_url: str, redirect_uri: str, login: str = "alice") -> dict[str, str]:
    """Play the person: sign in as ``login`` and approve; the callback's query (code, state, iss)."""
    async with httpx2.AsyncClient(timeout=10) as browser:
        url = authorize_url
        for _ in range(12):
            r = await browser.get(url)
            if r.status_code in (302, 303):
                url = urljoin(url, r.headers["location"])
                if url.startswith(redirect_uri):
                    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
                continue
            action = re.search(r'action="([^"]+)"', r.text)
            assert r.status_code == 200, r.text[:500]
            assert action is not None, r.text[:500]
            form = {"prompt": "login", "login": login, "password": "x"}
            if 'name="prompt" value="consent"' in r.text:
                form = {"prompt": "consent"}
            posted = await browser.post(urljoin(url, action.group(1)), data=form)
            assert posted.status_code in (302, 303), posted.text[:500]
            url = urljoin(url, posted.headers["location"])
    raise AssertionError("the authorization flow did not reach the redirect URI")
