"""Which OAuth client foldgate is at an upstream's authorization server, by the spec's preference.

1. Pre-registered: ``client_id`` (and ``client_secret_secret``) in the server's ``auth:`` block.
2. Client ID Metadata Document: when the authorization server advertises
   ``client_id_metadata_document_supported`` and foldgate has a public https URL, the client id *is*
   the URL of foldgate's own document (:func:`client_metadata_document`, served at
   ``/oauth/client-metadata.json``): nothing to register, nothing to store.
3. Dynamic Client Registration (RFC 7591) at the advertised ``registration_endpoint``; the answer is
   kept in the grant store per (tenant, server, issuer) and reused while its redirect URI still fits,
   its secret has not expired and no instance found it forgotten (``renewal``).

Reused from the SDK: its client metadata models, the CIMD eligibility checks and
``check_registration_usable`` (refuses an authentication method this client cannot apply).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Final
from urllib.parse import urlsplit

from foldgate.config.oauth import is_loopback_host
from foldgate.config.upstream_auth import CodeFlowAuth
from foldgate.errors import UpstreamError
from foldgate.store.grants.base import ClientRegistration, GrantStore
from foldgate.upstream.oauth.discovery import Discovered
from foldgate.upstream.oauth.http import checked_endpoint, post_json
from foldgate.upstream.oauth.renewal import RenewalPolicy, first_registration, renew, usable
from foldgate.upstream.oauth.tokens import ClientAuth

__all__ = [
    "CALLBACK_PATH",
    "CIMD_PATH",
    "SecretReader",
    "application_type",
    "client_auth",
    "client_for",
    "client_metadata_document",
    "register",
]

CALLBACK_PATH: Final = "/oauth/callback"
CIMD_PATH: Final = "/oauth/client-metadata.json"
CLIENT_NAME: Final = "foldgate MCP gateway"
_GRANTS: Final = ["authorization_code", "refresh_token"]

SecretReader = Callable[[str], Awaitable[str]]
"""``read(name)`` -> the secret parameter's value (a client secret or a PEM key); ConfigError if absent."""


def client_metadata_document(public_url: str) -> dict[str, Any]:
    """foldgate's Client ID Metadata Document: its ``client_id`` is the URL it is served at."""
    base = public_url.rstrip("/")
    return {
        "client_id": base + CIMD_PATH,
        "client_name": CLIENT_NAME,
        "client_uri": base,
        "redirect_uris": [base + CALLBACK_PATH],
        "grant_types": _GRANTS,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": application_type(base + CALLBACK_PATH),
    }


def client_auth(client: ClientRegistration, *, private_key: str | None = None) -> ClientAuth:
    """How to authenticate as ``client`` at the token endpoint."""
    return ClientAuth(
        client.client_id, client.token_endpoint_auth_method, client.client_secret, private_key=private_key
    )


def application_type(redirect_uri: str) -> str:
    """SEP-837 / OIDC Registration section 2: ``native`` for a loopback redirect (``foldgate serve`` on
    a laptop: OIDC forbids loopback redirects to ``web`` clients), else ``web`` (a deployed gateway is a
    server-side client acting for people through an https redirect)."""
    host = urlsplit(redirect_uri).hostname or ""
    return "native" if is_loopback_host(host) else "web"


def _secret_method(found: Discovered) -> str:
    supported = found.metadata.token_endpoint_auth_methods_supported or ["client_secret_basic"]
    return "client_secret_basic" if "client_secret_basic" in supported else "client_secret_post"


async def register(
    found: Discovered, *, tenant: str, server: str, redirect_uri: str, allow_private: bool
) -> ClientRegistration:
    """Register foldgate as a public client (RFC 7591) at ``found``'s authorization server."""
    # The SDK's registration models load with the first registration.
    from mcp.client.auth.oauth2 import check_registration_usable
    from mcp.shared.auth import OAuthClientInformationFull
    from pydantic import ValidationError

    endpoint = found.endpoint("registration_endpoint")
    if endpoint is None:
        raise UpstreamError(
            "the authorization server offers neither dynamic registration nor client metadata "
            "documents: configure a pre-registered client_id in the server's auth: block"
        )
    url = checked_endpoint(endpoint, "registration_endpoint", allow_loopback=allow_private)
    request = {
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": _GRANTS,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": application_type(redirect_uri),
    }
    answer = await post_json(url, request, allow_private=allow_private)
    if answer.status not in (200, 201):
        raise UpstreamError(f"dynamic client registration refused (HTTP {answer.status})")
    body = {k: v for k, v in answer.body.items() if k != "issuer"}  # never trust a wire-side binding
    try:
        info = OAuthClientInformationFull.model_validate(body)
        check_registration_usable(info)
    except ValidationError:
        raise UpstreamError("dynamic client registration answer is malformed") from None
    except Exception as exc:  # the SDK's OAuthRegistrationError: an unusable auth method
        raise UpstreamError(f"dynamic client registration unusable: {exc}") from None
    return ClientRegistration(
        tenant=tenant,
        server=server,
        issuer=found.issuer,
        client_id=info.client_id,
        client_secret=info.client_secret,
        token_endpoint_auth_method=info.token_endpoint_auth_method or "none",
        redirect_uris=(redirect_uri,),
        registration={
            k: v for k, v in body.items() if k not in ("client_secret", "registration_access_token")
        },
        registered_at=time.time(),
    )


async def client_for(
    store: GrantStore,
    auth: CodeFlowAuth,
    found: Discovered,
    *,
    tenant: str,
    server: str,
    redirect_uri: str,
    public_url: str | None,
    read_secret: SecretReader,
    allow_private: bool,
    renewal: RenewalPolicy | None = None,
) -> ClientRegistration:
    """The client to use at ``found``'s authorization server (registering one when needed, or again
    when the stored one is expired or was found forgotten)."""
    # The SDK's CIMD checks load with the first registration.
    from mcp.client.auth.utils import is_valid_client_metadata_url, should_use_client_metadata_url

    mode = auth.registration
    if auth.client_id and mode in ("auto", "preregistered"):
        if auth.issuer is not None and auth.issuer.rstrip("/") != found.issuer.rstrip("/"):
            # Checked before the secret is even read: nothing of the client goes to another server.
            raise UpstreamError(
                f"{server}: the upstream names the authorization server {found.issuer!r}, not "
                f"{auth.issuer!r} that its pre-registered client belongs to (auth.issuer); nothing was "
                "sent to it"
            )
        secret = await read_secret(auth.client_secret_secret) if auth.client_secret_secret else None
        return ClientRegistration(
            tenant=tenant,
            server=server,
            issuer=found.issuer,
            client_id=auth.client_id,
            client_secret=secret,
            token_endpoint_auth_method=_secret_method(found) if secret else "none",
            redirect_uris=(redirect_uri,),
        )
    cimd_url = public_url.rstrip("/") + CIMD_PATH if public_url else None
    cimd_ok = is_valid_client_metadata_url(cimd_url) and should_use_client_metadata_url(
        found.metadata, cimd_url
    )
    if mode == "cimd" and not cimd_ok:
        raise UpstreamError(
            "registration 'cimd' needs an authorization server that supports client metadata documents "
            "and a public https URL for foldgate (public_url)"
        )
    if cimd_ok and mode in ("auto", "cimd") and cimd_url is not None:
        return ClientRegistration(
            tenant=tenant,
            server=server,
            issuer=found.issuer,
            client_id=cimd_url,
            redirect_uris=(redirect_uri,),
        )

    def new() -> Awaitable[ClientRegistration]:
        return register(
            found, tenant=tenant, server=server, redirect_uri=redirect_uri, allow_private=allow_private
        )

    known = store.get_client(tenant, server, found.issuer)
    if known is None:
        return await first_registration(store, new)
    if usable(known, redirect_uri, time.time()):
        return known
    # A new redirect URI (foldgate's public URL changed) is the operator's doing: not capped.
    moved = known.claimed_at is None and redirect_uri not in known.redirect_uris
    return await renew(store, known, new, renewal or RenewalPolicy(), capped=not moved)
