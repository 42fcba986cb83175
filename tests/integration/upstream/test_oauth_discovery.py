"""Hostile discovery metadata is refused: an upstream on loopback serves a 401 challenge and whatever
protected-resource and authorization-server documents a test gives it.

Pins: a PRM naming another resource (RFC 9728 section 3.3), an authorization server on a non-https URL,
one on the link-local metadata address or (where private networks are not allowed) a private address,
AS metadata naming another issuer (RFC 8414 section 3.3, mix-up), and non-https endpoints inside it
are all refused before any credential or code is sent; well-formed documents found by the well-known
fallback (no ``resource_metadata`` in the challenge) are accepted.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from foldgate.errors import UpstreamError
from foldgate.upstream.oauth.discovery import authorization_server_metadata, discover


class Hostile:
    """A loopback server answering from ``routes`` (path -> JSON); POST /mcp gets a 401 challenge."""

    def __init__(self) -> None:
        self.routes: dict[str, Any] = {}
        self.challenge = "Bearer"
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                self._send(401, {}, {"www-authenticate": owner.challenge})

            def do_GET(self) -> None:
                if self.path in owner.routes:
                    self._send(200, owner.routes[self.path])
                else:
                    self._send(404, {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.base + "/mcp"

    def metadata(self, **overrides: Any) -> dict[str, Any]:
        """Well-formed AS metadata for an issuer at this server's origin, with ``overrides``."""
        doc = {"issuer": self.base, "authorization_endpoint": self.base + "/auth",
               "token_endpoint": self.base + "/token", "response_types_supported": ["code"],
               "code_challenge_methods_supported": ["S256"]}  # fmt: skip
        doc.update(overrides)
        return doc


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    running = Hostile()
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.server.shutdown()
        running.server.server_close()


def prm(hostile: Hostile, **overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"resource": hostile.url, "authorization_servers": [hostile.base]}
    doc.update(overrides)
    return doc


async def test_well_formed_documents_found_by_the_well_known_fallback(hostile: Hostile) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile, scopes_supported=["a", "b"])
    hostile.routes["/.well-known/oauth-authorization-server"] = hostile.metadata()
    found = await discover(hostile.url, allow_private=True)
    assert found.issuer == hostile.base
    assert found.resource == hostile.url
    assert found.scope == "a b"


async def test_a_prm_for_another_resource_is_refused(hostile: Hostile) -> None:
    hostile.challenge = f'Bearer resource_metadata="{hostile.base}/prm"'
    hostile.routes["/prm"] = prm(hostile, resource="https://bank.example.com/mcp")
    with pytest.raises(UpstreamError, match="not this server"):
        await discover(hostile.url, allow_private=True)


@pytest.mark.parametrize(
    ("server", "why"),
    [
        ("http://as.example.com", "not an https URL"),
        ("https://169.254.169.254", "cloud metadata service"),
    ],
)
async def test_an_authorization_server_on_a_forbidden_url_is_refused(
    hostile: Hostile, server: str, why: str
) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile, authorization_servers=[server])
    with pytest.raises(UpstreamError, match=why):
        await discover(hostile.url, allow_private=True)


async def test_a_private_authorization_server_is_refused_where_private_networks_are_not_allowed() -> None:
    with pytest.raises(UpstreamError, match="private"):
        await authorization_server_metadata(
            "https://10.20.30.40", "https://mcp.example.com/mcp", allow_private=False
        )


async def test_metadata_naming_another_issuer_is_refused(hostile: Hostile) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile)
    hostile.routes["/.well-known/oauth-authorization-server"] = hostile.metadata(
        issuer="https://evil.example.com"
    )
    with pytest.raises(UpstreamError, match="names issuer"):
        await discover(hostile.url, allow_private=True)


@pytest.mark.parametrize("endpoint", ["token_endpoint", "authorization_endpoint", "registration_endpoint"])
async def test_a_non_https_endpoint_in_the_metadata_is_refused(hostile: Hostile, endpoint: str) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile)
    hostile.routes["/.well-known/oauth-authorization-server"] = hostile.metadata(
        **{endpoint: "http://evil.example.com/steal"}
    )
    with pytest.raises(UpstreamError, match=f"{endpoint} is not an https URL"):
        await discover(hostile.url, allow_private=True)


async def test_an_authorization_server_without_pkce_s256_is_refused(hostile: Hostile) -> None:
    hostile.routes["/.well-known/oauth-protected-resource/mcp"] = prm(hostile)
    hostile.routes["/.well-known/oauth-authorization-server"] = hostile.metadata(
        code_challenge_methods_supported=["plain"]
    )
    with pytest.raises(UpstreamError, match="PKCE S256"):
        await discover(hostile.url, allow_private=True)
