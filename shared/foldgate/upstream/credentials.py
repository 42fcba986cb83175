"""An upstream request's credentials: the one place its headers are resolved, and what a refusal means.

Static credentials are the server's ``headers`` and ``headers_secret`` (a :data:`HeaderSource`); the
other ``auth:`` kinds add an OAuth ``Authorization`` header from an :class:`UpstreamAuth` (the
``foldgate.upstream.oauth`` token provider) for the tenant and subject the running request or index job
set (:mod:`foldgate.model.caller`). A 401/403 to credentials becomes :class:`AuthRefusedError`, on which
the client asks the provider for better credentials and sends once more.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from foldgate.config.tenant import ServerConfig
from foldgate.config.upstream_auth import per_person
from foldgate.errors import UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller, current_caller
from foldgate.upstream.pool import AuthRefusedError, auth_refusal

__all__ = [
    "UpstreamAuth",
    "after_refusal",
    "credential_identity",
    "raise_if_refused",
    "resolve_headers",
    "split_authorization",
]

log = logging.getLogger(__name__)


class UpstreamAuth(Protocol):
    """OAuth credentials for upstreams (``foldgate.upstream.oauth.provider.TokenProvider``)."""

    async def authorization(self, server: ServerConfig, caller: UpstreamCaller | None) -> str | None:
        """The Authorization value for a request to ``server`` (None: the server uses static auth)."""
        ...

    async def refused(
        self,
        server: ServerConfig,
        caller: UpstreamCaller | None,
        sent: str | None,
        status: int,
        header: str | None,
    ) -> None:
        """Improve the credentials after a 401/403, or raise when only a person can."""
        ...


async def resolve_headers(
    server: ServerConfig, static: Mapping[str, str], auth: UpstreamAuth | None
) -> dict[str, str]:
    """``static`` headers plus the OAuth Authorization header when the server uses OAuth."""
    headers = dict(static)
    if server.auth.kind != "static":
        if auth is None:
            raise UpstreamError(f"{server.name}: auth {server.auth.kind!r} is not available in this process")
        authorization = await auth.authorization(server, current_caller())
        if authorization is not None:
            headers["authorization"] = authorization
    return headers


def credential_identity(server: ServerConfig) -> tuple[str, ...]:
    """Whose OAuth credentials a request to ``server`` carries now: (auth kind, tenant, subject) for
    the current caller, () for static auth. Sessions are pooled by it, never by the token itself."""
    caller = current_caller()
    if server.auth.kind == "static" or caller is None:
        return ()
    # per_user and the exchange kinds with an inbound subject: the caller's own credential; every
    # other kind is one credential per tenant.
    subject = caller.subject if per_person(server.auth) else SHARED_SUBJECT
    return (server.auth.kind, caller.tenant, subject)


def split_authorization(server: ServerConfig, headers: dict[str, str]) -> str | None:
    """Take the OAuth Authorization value out of resolved ``headers`` (it is sent per request, not
    part of the session's identity); None for static auth, whose headers stay as they are."""
    if server.auth.kind == "static":
        return None
    return headers.pop("authorization", None)


def raise_if_refused(exc: BaseException, name: str) -> None:
    """Re-raise a failure the upstream answered with 401/403 as AuthRefusedError. The session stays:
    the retry sends the better credentials on it."""
    refused = auth_refusal(name, exc)
    if refused is not None:
        raise refused from exc


async def after_refusal(
    server: ServerConfig, auth: UpstreamAuth | None, exc: AuthRefusedError, attempt: int
) -> None:
    """After a credentials refusal on ``attempt``: fix the credentials for one more, or raise."""
    if auth is None or server.auth.kind == "static" or attempt == 2:
        raise UpstreamError(exc.message) from None
    await auth.refused(server, current_caller(), exc.sent, exc.status, exc.challenge)
    log.info("%s: credentials refused (HTTP %d); retrying with fresh ones", server.name, exc.status)
