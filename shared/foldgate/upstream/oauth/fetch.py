"""Fetch a small JSON document from an authorization server, through the SSRF guard.

Issuer, JWKS and metadata URLs come from tenant configuration and from the issuer's own metadata, so
they are hostile input exactly like upstream URLs: every fetch goes through
:func:`foldgate.upstream.net_guard.check_upstream_url_async` and a client whose connections are pinned
to checked addresses (redirects included). Bodies are capped, and errors never carry the body or the resolved
address (they end up in logs, and the caller only ever sees a uniform 401).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from foldgate.errors import FoldgateError, UpstreamError
from foldgate.upstream.net_guard import check_upstream_url_async, guarded_http_client

__all__ = ["MAX_DOCUMENT_BYTES", "FetchJson", "fetch_json", "guarded_fetcher"]

# Discovery documents and JWKS are a few KB; a generous cap still stops a hostile issuer streaming GBs.
MAX_DOCUMENT_BYTES: Final = 256 * 1024
_TIMEOUT_S: Final = 5.0

FetchJson = Callable[[str], Awaitable[dict[str, Any] | None]]
"""``fetch(url)`` -> the JSON object there, None when the server answers 404; UpstreamError else."""


async def fetch_json(url: str, *, allow_private: bool) -> dict[str, Any] | None:
    """GET ``url`` as JSON through the SSRF guard; None on 404, UpstreamError on anything else bad."""
    # The HTTP client loads with the first OAuth fetch, not at init.
    import json

    import httpx2

    await check_upstream_url_async(url, allow_private=allow_private)
    try:
        async with (
            guarded_http_client({"accept": "application/json"}, allow_private=allow_private) as client,
            client.stream("GET", url, timeout=_TIMEOUT_S) as response,
        ):
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise UpstreamError(f"authorization server answered HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise UpstreamError(f"authorization server document exceeds {MAX_DOCUMENT_BYTES} bytes")
    except FoldgateError:
        raise
    except httpx2.HTTPError as exc:
        raise UpstreamError(f"authorization server unreachable ({type(exc).__name__})") from exc
    try:
        doc = json.loads(bytes(body))
    except ValueError as exc:
        raise UpstreamError("authorization server document is not JSON") from exc
    if not isinstance(doc, dict):
        raise UpstreamError("authorization server document is not a JSON object")
    return doc


def guarded_fetcher(*, allow_private: bool) -> FetchJson:
    """A :data:`FetchJson` bound to the deployment's private-network setting."""

    async def fetch(url: str) -> dict[str, Any] | None:
        return await fetch_json(url, allow_private=allow_private)

    return fetch
