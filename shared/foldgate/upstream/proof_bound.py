"""An ``Authorization`` value that needs a proof of possession on every request it goes with.

A bearer token is a plain string: the session's HTTP clients set it on each request. A sender-
constrained token (RFC 9449 DPoP, :mod:`foldgate.upstream.oauth.dpop_keys`) also needs a proof made
for that very request (its method and URL, a fresh ``jti``) and may need to send it once more with a
server's nonce, so its value is a :class:`ProofBound`: still the header string (compared, pooled and
reported as one), plus :meth:`ProofBound.flow`, the httpx auth flow the session's clients hand every
request to (POST, the GET stream, the closing DELETE alike).

It lives here, below both the session pool and the OAuth client, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

__all__ = ["ProofBound"]


class ProofBound(str):
    """An Authorization header value whose requests each carry their own proof (see the module doc)."""

    __slots__ = ()

    def flow(self, request: Any) -> Generator[Any, Any, None]:
        """The httpx auth flow for one ``request``: set the headers, yield it, maybe yield it again."""
        request.headers["authorization"] = str(self)
        yield request
