"""Requests to an upstream's authorization server, every one through the SSRF guard.

Discovery, registration, token and revocation URLs come from the upstream's own metadata, so they are
hostile input exactly like upstream URLs: each is checked (https, or http on loopback where private
upstreams are allowed) and fetched with a client whose connections are pinned to checked addresses.
Bodies are capped; error messages never carry a token, a secret or the resolved address.
"""

from __future__ import annotations

import json
from typing import Any, Final
from urllib.parse import urlsplit

from foldgate.config.oauth import is_loopback_host
from foldgate.errors import FoldgateError, UpstreamError
from foldgate.upstream.net_guard import check_upstream_url_async, guarded_http_client
from foldgate.upstream.oauth.fetch import fetch_json

__all__ = ["AuthServerAnswer", "checked_endpoint", "get_json", "post_form", "post_json"]

MAX_BODY_BYTES: Final = 256 * 1024
TIMEOUT_S: Final = 10.0


class AuthServerAnswer:
    """An authorization server's answer: status, the JSON object it sent (empty when none) and the
    ``DPoP-Nonce`` it handed out (RFC 9449 section 8), if any."""

    __slots__ = ("body", "dpop_nonce", "status")

    def __init__(self, status: int, body: dict[str, Any], dpop_nonce: str | None = None) -> None:
        self.status = status
        self.body = body
        self.dpop_nonce = dpop_nonce

    @property
    def error(self) -> str | None:
        """The RFC 6749 ``error`` code of a refusal, when the server gave a sane one."""
        code = self.body.get("error")
        return code if isinstance(code, str) and code.isascii() and len(code) <= 100 else None


def checked_endpoint(value: object, what: str, *, allow_loopback: bool) -> str:
    """A URL from metadata if it is https (http only on loopback when allowed); UpstreamError else."""
    if not isinstance(value, str) or not value or len(value) > 2048:
        raise UpstreamError(f"authorization metadata has no usable {what}")
    try:
        parts = urlsplit(value)
        host = parts.hostname or ""
    except ValueError:
        raise UpstreamError(f"authorization metadata {what} is not a URL") from None
    if parts.username is not None or parts.password is not None or not host:
        raise UpstreamError(f"authorization metadata {what} is not a plain URL")
    if parts.scheme == "https" or (parts.scheme == "http" and allow_loopback and is_loopback_host(host)):
        return value
    raise UpstreamError(f"authorization metadata {what} is not an https URL")


async def get_json(url: str, *, allow_private: bool) -> dict[str, Any] | None:
    """GET a metadata document (None on 404); the guard and the size cap of the inbound side."""
    return await fetch_json(url, allow_private=allow_private)


async def _post(
    url: str, *, allow_private: bool, headers: dict[str, str], **content: Any
) -> AuthServerAnswer:
    # The HTTP client loads with the first authorization-server request, not at init.
    import httpx2

    await check_upstream_url_async(url, allow_private=allow_private)
    try:
        async with (
            guarded_http_client({"accept": "application/json"}, allow_private=allow_private) as client,
            client.stream("POST", url, headers=headers, timeout=TIMEOUT_S, **content) as response,
        ):
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) > MAX_BODY_BYTES:
                    raise UpstreamError(f"authorization server answer exceeds {MAX_BODY_BYTES} bytes")
            status = response.status_code
            nonce = response.headers.get("dpop-nonce")
    except FoldgateError:
        raise
    except httpx2.HTTPError as exc:
        raise UpstreamError(f"authorization server unreachable ({type(exc).__name__})") from exc
    try:
        doc = json.loads(bytes(body)) if body.strip() else {}
    except ValueError:
        doc = {}
    return AuthServerAnswer(status, doc if isinstance(doc, dict) else {}, nonce)


async def post_form(
    url: str, form: dict[str, str], *, allow_private: bool, headers: dict[str, str] | None = None
) -> AuthServerAnswer:
    """POST ``application/x-www-form-urlencoded`` (token, revocation endpoints)."""
    return await _post(url, allow_private=allow_private, headers=headers or {}, data=form)


async def post_json(url: str, doc: dict[str, Any], *, allow_private: bool) -> AuthServerAnswer:
    """POST a JSON document (Dynamic Client Registration)."""
    return await _post(url, allow_private=allow_private, headers={}, json=doc)
