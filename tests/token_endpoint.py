"""A token endpoint on loopback for machine-grant tests: a real HTTP server (stdlib, in a thread) that
answers each POST with what the test scripted and keeps every request's form and headers, so a test
can count the requests a client made and read exactly what it sent."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

Answer = tuple[int, dict[str, Any]]


@dataclass
class TokenEndpoint:
    """``url`` of the endpoint; ``answer(form)`` decides each answer; ``requests`` what arrived. Its
    origin is also an issuer whose RFC 8414 metadata names the endpoint."""

    @property
    def issuer(self) -> str:
        """The issuer whose metadata names this endpoint."""
        return self.url.removesuffix("/token")

    url: str
    answer: Callable[[dict[str, str]], Answer]
    requests: list[tuple[dict[str, str], dict[str, str]]] = field(default_factory=list)

    @property
    def forms(self) -> list[dict[str, str]]:
        """The form of every request, in order."""
        return [form for form, _ in self.requests]


def issuing(token: str, expires_in: int = 3600) -> Callable[[dict[str, str]], Answer]:
    """Answer every request with ``token``."""
    return lambda form: (200, {"access_token": token, "token_type": "Bearer", "expires_in": expires_in})


def refusing(error: str) -> Callable[[dict[str, str]], Answer]:
    """Refuse every request with the RFC 6749 ``error``."""
    return lambda form: (400, {"error": error, "error_description": "the server's own words"})


@contextlib.contextmanager
def token_endpoint(answer: Callable[[dict[str, str]], Answer]) -> Iterator[TokenEndpoint]:
    """A token endpoint on a free loopback port for the block."""
    endpoint = TokenEndpoint("", answer)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(size).decode()).items()}
            endpoint.requests.append((form, {k.lower(): v for k, v in self.headers.items()}))
            status, body = endpoint.answer(form)
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            # RFC 8414 metadata at the issuer (the endpoint's origin): for tests that give `issuer:`.
            if self.path != "/.well-known/oauth-authorization-server":
                self.send_response(404)
                self.end_headers()
                return
            base = endpoint.url.removesuffix("/token")
            doc = {
                "issuer": base,
                "token_endpoint": endpoint.url,
                "authorization_endpoint": base + "/authorize",
                "response_types_supported": ["code"],
                "token_endpoint_auth_methods_supported": ["none"],
            }
            payload = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    endpoint.url = f"http://127.0.0.1:{server.server_address[1]}/token"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
