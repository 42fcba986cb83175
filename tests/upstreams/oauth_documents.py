"""A loopback upstream serving whatever OAuth documents a test gives it, for discovery and issuer tests.

``POST /mcp`` answers a 401 challenge; ``GET`` answers from ``routes`` (path -> JSON, else 404); every
other ``POST`` (a token, revocation or registration endpoint) is recorded in ``posts`` and refused with
``invalid_request``, so a test can assert that nothing (no refresh token, no client secret, no code) was
sent to this server.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class DocumentServer:
    """The server (see the module docstring); ``base`` is its origin, ``url`` its MCP endpoint."""

    def __init__(self, mcp_path: str = "/mcp") -> None:
        self.routes: dict[str, Any] = {}
        self.challenge = "Bearer"
        self.posts: list[str] = []  # the paths of every POST other than the MCP endpoint's
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
                if self.path == mcp_path:
                    self._send(401, {}, {"www-authenticate": owner.challenge})
                    return
                owner.posts.append(self.path)
                self._send(400, {"error": "invalid_request"})

            def do_GET(self) -> None:
                if self.path in owner.routes:
                    self._send(200, owner.routes[self.path])
                else:
                    self._send(404, {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.base + mcp_path

    def metadata(self, **overrides: Any) -> dict[str, Any]:
        """Well-formed AS metadata for an issuer at this server's origin, with ``overrides``."""
        doc = {"issuer": self.base, "authorization_endpoint": self.base + "/auth",
               "token_endpoint": self.base + "/token", "revocation_endpoint": self.base + "/revoke",
               "response_types_supported": ["code"],
               "code_challenge_methods_supported": ["S256"]}  # fmt: skip
        doc.update(overrides)
        return doc

    def prm(self, **overrides: Any) -> dict[str, Any]:
        """Protected resource metadata for this server's MCP endpoint naming this origin's issuer."""
        doc: dict[str, Any] = {"resource": self.url, "authorization_servers": [self.base]}
        doc.update(overrides)
        return doc

    def protect(self) -> None:
        """Serve the current spec's layout: PRM at the path-aware well-known URL, AS metadata at root."""
        self.routes["/.well-known/oauth-protected-resource" + self.url.removeprefix(self.base)] = self.prm()
        self.routes["/.well-known/oauth-authorization-server"] = self.metadata()


@contextlib.contextmanager
def document_server(mcp_path: str = "/mcp") -> Iterator[DocumentServer]:
    """A running :class:`DocumentServer`, shut down afterwards."""
    running = DocumentServer(mcp_path)
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.server.shutdown()
        running.server.server_close()
