"""Connecting OAuth upstreams over HTTP: the operator's connect/disconnect routes, the browser's
callback, and foldgate's Client ID Metadata Document.

* ``POST /api/v1/servers/<name>/connect?tenant=<t>`` (operator): ``{"authorization_url": ...}`` for the
  tenant's shared connection; a grant that needs more scope asks for it (step-up).
* ``DELETE /api/v1/servers/<name>/connect?tenant=<t>`` (operator): forget the grant, revoking it at
  the authorization server where it offers RFC 7009.
* ``GET /oauth/callback?code&state&iss`` (public; the browser lands here): completes the consent the
  ``state`` names, on whichever instance it reaches (the flow's state is in the grant store); a
  per-user consent only in the browser that confirmed its link (its cookie). Answers a small HTML page
  (JSON when asked), never a stack trace or a token.
* ``GET|POST /oauth/connect`` and ``GET /oauth/signin/callback`` (public, signed links): a
  ``per_user`` server's connect link, handed to the end user in a tool error
  (:mod:`foldgate.edge.user_connect`).
* ``GET /oauth/client-metadata.json`` (public): the document whose URL is foldgate's client id at
  authorization servers that support Client ID Metadata Documents.
"""

from __future__ import annotations

import html
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from foldgate.config.oauth import OAuthConfig
from foldgate.config.tenant import ServerConfig
from foldgate.edge.admin_docs import responses
from foldgate.edge.grant_status import MACHINE_KINDS, machine_state
from foldgate.edge.operator_audit import audit, browser_actor, operator_actor
from foldgate.edge.user_connect import add_user_connect_routes, browser_cookie, end_refused_flow
from foldgate.errors import AuthError, ConfigError, FoldgateError, NotFoundError
from foldgate.model.caller import SHARED_SUBJECT
from foldgate.serve.gateway import Gateway
from foldgate.store.activity.base import ActivityStore
from foldgate.upstream.oauth.connect_links import browser_hash
from foldgate.upstream.oauth.consent import disconnect, finish_consent, start_consent
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.provider import SCOPE_REASON
from foldgate.upstream.oauth.registration import CALLBACK_PATH, CIMD_PATH, client_metadata_document

__all__ = [
    "add_connect_routes",
    "auth_states",
    "console_connector",
    "oauth_client_router",
    "start_shared_connect",
]

log = logging.getLogger(__name__)

_CODE = re.compile(r"^[\x21-\x7e]{1,2048}$")
_ERROR = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def _oauth_server(gateway: Gateway, tenant: str, name: str) -> ServerConfig:
    try:
        server = gateway.config(tenant).server(name)
    except NotFoundError:
        raise HTTPException(404, f"unknown tenant {tenant!r}") from None
    except FoldgateError as exc:
        raise HTTPException(503, exc.message) from None
    if server is None:
        raise HTTPException(404, f"tenant {tenant!r} has no server {name!r}")
    if server.auth.kind not in ("oauth", "per_user"):
        raise HTTPException(
            409, f"server {name!r} uses auth {server.auth.kind!r}: there is nothing to connect"
        )
    return server


async def start_shared_connect(gateway: Gateway, oauth: OAuthContext, tenant: str, name: str) -> str:
    """The authorization URL that connects a server's shared grant (raises HTTPException otherwise).

    The admin API and the operator console both start a connection here.
    """
    server = _oauth_server(gateway, tenant, name)
    held = oauth.store.get_grant(tenant, name, SHARED_SUBJECT)
    # Step-up: a grant marked for more scope asks for what it has plus what the upstream wanted.
    extra = held.consent_scope() if held is not None else None
    try:
        return await start_consent(oauth, tenant, server, SHARED_SUBJECT, extra_scope=extra)
    except ConfigError as exc:
        raise HTTPException(409, exc.message) from None
    except FoldgateError as exc:
        raise HTTPException(502, exc.message) from None


def console_connector(gateway: Gateway, oauth: OAuthContext) -> Callable[[str, str], Awaitable[str]]:
    """The console's Connect button: ``(tenant, server) -> authorization URL``."""

    async def connect(tenant: str, name: str) -> str:
        return await start_shared_connect(gateway, oauth, tenant, name)

    return connect


def add_connect_routes(
    router: APIRouter, gateway: Gateway, oauth: OAuthContext, operator_secret: bytes | None = None
) -> None:
    """The operator's connect and disconnect routes, on the (credential-guarded) admin router; each
    is an audit event of the key's holder (``operator_secret`` names the key, never shown)."""

    @router.post(
        "/servers/{name}/connect",
        summary="Start connecting an OAuth upstream (shared connection)",
        responses=responses(
            s404="Unknown tenant, or no such server in its config",
            s409="The server does not use OAuth, or its OAuth settings are incomplete",
            s502="The authorization server could not be reached or refused",
        ),
    )
    async def connect(name: str, tenant: str, request: Request) -> dict[str, Any]:
        url = await start_shared_connect(gateway, oauth, tenant, name)
        actor = operator_actor(request, operator_secret)
        audit(gateway.recorder, tenant, "upstream.connect", actor, target=name, detail="consent started")
        return {"tenant": tenant, "server": name, "authorization_url": url}

    @router.delete(
        "/servers/{name}/connect",
        summary="Disconnect an OAuth upstream (revoking its grant)",
        responses=responses(
            s404="Unknown tenant, or no such server in its config", s409="The server does not use OAuth"
        ),
    )
    async def disconnect_server(name: str, tenant: str, request: Request) -> dict[str, Any]:
        server = _oauth_server(gateway, tenant, name)
        outcome = await disconnect(oauth, tenant, server, SHARED_SUBJECT)
        detail = ", ".join(f"{k}: {str(v).lower()}" for k, v in outcome.items())
        actor = operator_actor(request, operator_secret)
        audit(gateway.recorder, tenant, "upstream.disconnect", actor, target=name, detail=detail)
        return {"tenant": tenant, "server": name, **outcome}


def auth_states(
    oauth: OAuthContext | None, gateway: Gateway, tenant: str, activity: ActivityStore | None = None
) -> dict[str, dict[str, Any]]:
    """Each OAuth server's connection state for the status route: never a token. A machine grant's
    latest outcome is this process's, else the newest in ``activity`` (see ``grant_status``)."""
    try:
        servers = [s for s in gateway.config(tenant).servers if s.auth.kind != "static"]
    except FoldgateError:
        return {}
    if not servers:
        return {}
    summaries = oauth.store.list_grants(tenant) if oauth is not None else []
    now = time.time()
    states: dict[str, dict[str, Any]] = {}
    for server in servers:
        if server.auth.kind in MACHINE_KINDS:
            states[server.name] = machine_state(oauth, activity, tenant, server)
            continue
        mine = [g for g in summaries if g.server == server.name]
        shared = next((g for g in mine if g.subject == SHARED_SUBJECT), None)
        state = "not_connected" if shared is None else shared.state
        if (
            shared is not None
            and state == "connected"
            and shared.expires_at is not None
            and shared.expires_at < now
        ):
            state = "expired"  # refreshed on next use when the upstream gave a refresh token
        entry: dict[str, Any] = {
            "kind": server.auth.kind,
            "state": state,
            "expires_at": shared.expires_at if shared is not None else None,
            "scope": shared.scope if shared is not None else None,
        }
        if shared is not None and shared.reason and state == "needs_consent":
            entry["reason"] = shared.reason  # foldgate's own words (why a person must connect again)
        elif shared is not None and shared.reason == SCOPE_REASON and state in ("connected", "expired"):
            # A pending step-up: the connection serves, but one tool waits for a consent to more scope.
            entry["step_up"] = shared.reason
        if server.auth.kind == "per_user":
            entry["users_connected"] = sum(
                1 for g in mine if g.subject != SHARED_SUBJECT and g.state == "connected"
            )
        states[server.name] = entry
    return states


def _page(title: str, text: str, status: int) -> HTMLResponse:
    body = (
        "<!doctype html><meta charset=utf-8><title>foldgate</title>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
    )
    return HTMLResponse(body, status, headers={"cache-control": "no-store", "referrer-policy": "no-referrer"})


def _answer(request: Request, ok: bool, title: str, text: str, status: int, **extra: Any) -> Response:
    if "application/json" in request.headers.get("accept", ""):
        return JSONResponse(
            {"connected": ok, "detail": text, **extra}, status, headers={"cache-control": "no-store"}
        )
    return _page(title, text, status)


def oauth_client_router(
    gateway: Gateway,
    oauth: OAuthContext,
    link_secret: bytes | None = None,
    issuers: Callable[[str], OAuthConfig | None] | None = None,
) -> APIRouter:
    """The public routes of foldgate as an OAuth client: the callback, the CIMD document, and (with
    ``link_secret``) the signed per-user connect links (``foldgate.edge.user_connect``); ``issuers``
    gives a tenant's inbound OAuth config, whose people sign in there before connecting."""
    router = APIRouter(include_in_schema=False)

    add_user_connect_routes(router, gateway, oauth, link_secret, issuers)

    @router.get(CALLBACK_PATH)
    async def callback(request: Request) -> Response:
        params = request.query_params
        state, code, iss = params.get("state", ""), params.get("code", ""), params.get("iss")
        error = params.get("error")
        if error is not None:
            shown = error if _ERROR.match(error) else "invalid"
            if _CODE.match(state):
                # A refused consent is over (its state must not linger), if it is this browser's.
                cookie = browser_cookie(request, oauth)
                end_refused_flow(oauth, state, browser_hash(cookie) if cookie else None, "consent")
            return _answer(
                request, False, "Not connected", f"The authorization server answered: {shown}.", 400
            )
        if not _CODE.match(state) or not _CODE.match(code) or (iss is not None and not _CODE.match(iss)):
            return _answer(request, False, "Not connected", "The callback is missing its code or state.", 400)

        def server_of(tenant: str, name: str) -> ServerConfig | None:
            try:
                return gateway.config(tenant).server(name)
            except FoldgateError:
                return None

        cookie = browser_cookie(request, oauth)
        try:
            pending = await finish_consent(
                oauth, state, code, iss, server_of, browser=browser_hash(cookie) if cookie else None
            )
        except NotFoundError as exc:
            return _answer(request, False, "Not connected", exc.message, 400)
        except AuthError as exc:
            return _answer(request, False, "Not connected", exc.message, 403)
        except FoldgateError as exc:
            log.warning("upstream consent failed: %s", exc.message)
            return _answer(request, False, "Not connected", exc.message, 502)
        # Whose connection: the tenant's shared one, or one person's (per_user), never who by name.
        whose = "shared connection" if pending.subject == SHARED_SUBJECT else "per-user connection"
        audit(gateway.recorder, pending.tenant, "upstream.connect", browser_actor(request),
              target=pending.server, detail=f"consent completed ({whose})")  # fmt: skip
        text = f"{pending.server} is connected for tenant {pending.tenant}. You can close this window."
        return _answer(request, True, "Connected", text, 200, tenant=pending.tenant, server=pending.server)

    @router.get(CIMD_PATH)
    def client_metadata() -> JSONResponse:
        if not oauth.public_url:
            raise HTTPException(404, "foldgate has no public URL configured")
        return JSONResponse(
            client_metadata_document(oauth.public_url), headers={"cache-control": "max-age=3600"}
        )

    return router
