"""The one place an upstream request's headers are resolved: static servers keep exactly their headers
(no OAuth provider consulted), OAuth servers add the provider's Authorization for the current caller,
and an OAuth server in a process without a provider fails clearly instead of calling unauthenticated."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamError
from foldgate.model.caller import UpstreamCaller, calling_as
from foldgate.upstream.credentials import resolve_headers


class Recording:
    """An UpstreamAuth that answers a token naming the caller and records who asked."""

    def __init__(self) -> None:
        self.asked: list[UpstreamCaller | None] = []

    async def authorization(self, server: ServerConfig, caller: UpstreamCaller | None) -> str | None:
        self.asked.append(caller)
        return f"Bearer for-{caller.subject if caller else 'nobody'}"

    async def refused(self, *args: Any) -> None:
        raise AssertionError("not used here")


def server(auth: dict[str, Any] | None = None) -> ServerConfig:
    entry: dict[str, Any] = {"name": "up", "url": "https://mcp.example.com/mcp", "headers": {"x-k": "v"}}
    if auth:
        entry["auth"] = auth
    return parse_tenant_config({"servers": [entry]}).servers[0]


async def test_static_servers_keep_their_headers_and_never_ask_the_provider() -> None:
    auth = Recording()
    static = server()
    assert await resolve_headers(static, static.headers, auth) == {"x-k": "v"}
    assert auth.asked == []


async def test_oauth_servers_get_the_current_callers_token() -> None:
    auth = Recording()
    oauth = server({"kind": "per_user"})
    with calling_as("acme", "user-7"):
        headers = await resolve_headers(oauth, oauth.headers, auth)
    assert headers == {"x-k": "v", "authorization": "Bearer for-user-7"}
    assert auth.asked == [UpstreamCaller("acme", "user-7")]


async def test_an_oauth_server_without_a_provider_is_refused() -> None:
    oauth = server({"kind": "oauth"})
    with pytest.raises(UpstreamError, match="not available in this process"):
        await resolve_headers(oauth, oauth.headers, None)
