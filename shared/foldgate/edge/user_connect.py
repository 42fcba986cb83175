"""A person connecting their own account to a ``per_user`` upstream, from the link a tool error gave.

* ``GET /oauth/connect?tenant&server&subject&exp&nonce&sig``: a confirmation page naming the upstream
  server and the identity the grant will serve. It neither uses the link nor redirects (link
  previewers and chat unfurlers fetch GETs); it sets the random browser cookie the rest of the flow is
  bound to, and its form carries a token derived from that cookie.
* ``POST /oauth/connect``: the person confirmed. The form token must match this browser's cookie
  (a cross-site POST carries no SameSite=Lax cookie), the link is marked used in the store (once,
  across instances), and the browser goes on to the upstream's authorization server, or first to the
  tenant's own issuer to sign in when the link's subject is a person there
  (:mod:`foldgate.auth.oauth.signin`).
* ``GET /oauth/signin/callback``: the sign-in is checked (same browser, valid ID token, same subject)
  and the upstream consent starts, bound to the same browser; ``/oauth/callback`` finishes it.

Every page is server-rendered, escaped HTML with no script (and a CSP that allows none).
"""

from __future__ import annotations

import html
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from foldgate.config.oauth import OAuthConfig
from foldgate.config.tenant import ServerConfig
from foldgate.edge.forms import read_form
from foldgate.edge.operator_audit import audit, browser_actor
from foldgate.errors import AuthError, FoldgateError, NotFoundError
from foldgate.serve.gateway import Gateway
from foldgate.upstream.oauth.connect_links import (
    BROWSER_COOKIE,
    CONNECT_PATH,
    LINK_FIELDS,
    ConnectLink,
    browser_hash,
    form_token,
    new_browser_cookie,
    valid_browser_cookie,
    verify_connect_link,
    verify_form_token,
)
from foldgate.upstream.oauth.consent import start_consent
from foldgate.upstream.oauth.context import OAuthContext

__all__ = [
    "OAUTH_SUBJECT_PREFIX",
    "SIGNIN_CALLBACK_PATH",
    "add_user_connect_routes",
    "browser_cookie",
    "end_refused_flow",
]

log = logging.getLogger(__name__)

SIGNIN_CALLBACK_PATH: Final = "/oauth/signin/callback"
# Subjects of people at a tenant's issuer (foldgate.auth.oauth.grant.oauth_subject): only those can
# prove who they are by signing in there; an agent token's subject has nobody to sign in as.
OAUTH_SUBJECT_PREFIX: Final = "oauth-sub-"
# No form-action: browsers apply it to the redirect after the POST, whose target is the tenant's or the
# upstream's authorization server. There is no script or style to allow: every value is escaped text.
_CSP: Final = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
_MAX_FORM_BYTES: Final = 8192
# A used link is remembered a little past its expiry: instances' clocks differ by a few seconds.
_USED_MARGIN_S: Final = 300
_USED: Final = "This connect link was already used. Call the tool again: the agent gets a new link."
# The binding must outlast the link, a sign-in and a consent (10 minutes each); it is only a random
# value that pins a flow to this browser, so an hour is harmless.
_COOKIE_SECONDS: Final = 3600


def _secure(oauth: OAuthContext) -> bool:
    return (oauth.public_url or "").startswith("https://")


def browser_cookie(request: Request, oauth: OAuthContext) -> str | None:
    """This browser's binding cookie, when it has a well-formed one."""
    # __Host- (Secure, Path=/, no Domain) where the gateway is https; plain http only on loopback.
    name = ("__Host-" if _secure(oauth) else "") + BROWSER_COOKIE
    value = request.cookies.get(name)
    return value if valid_browser_cookie(value) else None


def end_refused_flow(oauth: OAuthContext, state: str, browser: str | None, purpose: str) -> None:
    """An authorization server's refusal (``?error=``) ends the pending flow of ``state`` only when it
    comes back to the browser the flow is bound to (``browser``: its cookie's hash) and to the route of
    its ``purpose``: anyone else who learnt a state could otherwise end a person's flow."""
    pending = oauth.store.take_pending(state)
    if pending is None:
        return
    if pending.purpose != purpose or (pending.browser is not None and pending.browser != browser):
        oauth.store.put_pending(pending)  # not this browser's (or route's) flow: it goes on


def _headers() -> dict[str, str]:
    return {"content-security-policy": _CSP, "x-frame-options": "DENY", "x-content-type-options": "nosniff",
            "cache-control": "no-store", "referrer-policy": "no-referrer"}  # fmt: skip


def _page(title: str, paragraphs: list[str], status: int, form: str = "") -> HTMLResponse:
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    page = (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} - foldgate</title><h1>{html.escape(title)}</h1>{body}{form}</html>"
    )
    return HTMLResponse(page, status, headers=_headers())


def _refused(title: str, text: str, status: int) -> HTMLResponse:
    return _page(title, [text], status)


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, 303, headers=_headers())


def add_user_connect_routes(
    router: APIRouter,
    gateway: Gateway,
    oauth: OAuthContext,
    link_secret: bytes | None,
    issuers: Callable[[str], OAuthConfig | None] | None,
) -> None:
    """The per-user connect routes (see the module docstring) on the public OAuth client router.

    ``issuers(tenant)``: the tenant's inbound OAuth config (None: the tenant has none).
    """

    def per_user_server(link: ConnectLink) -> ServerConfig | None:
        try:
            server = gateway.config(link.tenant).server(link.server)
        except FoldgateError:
            return None
        return server if server is not None and server.auth.kind == "per_user" else None

    def issuer_of(link: ConnectLink) -> OAuthConfig | None:
        """The issuer the person must sign in at first, when the link's subject is a person there."""
        if issuers is None or not link.subject.startswith(OAUTH_SUBJECT_PREFIX):
            return None
        return issuers(link.tenant)

    def connecting(request: Request, link: ConnectLink, outcome: str, detail: str) -> None:
        """A person's confirmation of a connect link, as an audit event of their browser (``who``:
        the identity the grant will serve, an opaque subject or a token id, never a credential)."""
        actor = replace(browser_actor(request), who=link.subject)
        audit(gateway.recorder, link.tenant, "upstream.connect", actor, target=link.server,
              outcome=outcome, detail=detail)  # fmt: skip

    def verified(params: dict[str, str]) -> ConnectLink | HTMLResponse:
        if link_secret is None:
            return _refused("Not available", "Per-user connect links are not enabled.", 404)
        try:
            link = verify_connect_link(link_secret, params)
        except AuthError as exc:
            return _refused("Link refused", exc.message, 400)
        if per_user_server(link) is None:
            return _refused("Not available", "This server takes no per-user connections.", 404)
        return link

    @router.get(CONNECT_PATH)
    async def confirm_page(request: Request) -> Response:
        link = verified(dict(request.query_params))
        if isinstance(link, HTMLResponse):
            return link
        assert link_secret is not None  # verified() refused otherwise
        if oauth.store.link_used(link.nonce):
            return _refused("Link already used", _USED, 410)
        cookie = browser_cookie(request, oauth) or new_browser_cookie()
        issuer = issuer_of(link)
        minutes = max(1, int(link.expires_at - time.time()) // 60)
        who = (
            f"the person at the tenant's issuer whose foldgate identity is {link.subject}"
            if link.subject.startswith(OAUTH_SUBJECT_PREFIX)
            else f"the agent token {link.subject}"
        )
        text = [
            f"Connect your own account at the upstream server {link.server!r} of tenant {link.tenant!r}.",
            f"The connection will serve {who}: every call that identity makes to {link.server} will "
            "use the account you approve next. Continue only if that identity is yours.",
        ]
        if issuer is not None:
            text.append(f"You will first sign in at {issuer.issuer} as that person.")
        text.append(
            f"This link works once, in this browser, for about {minutes} more minutes. If you did not "
            "ask an agent to use this server, close this page."
        )
        fields = {f: request.query_params.get(f, "") for f in LINK_FIELDS}
        fields["csrf"] = form_token(link_secret, cookie, link.nonce)
        hidden = "".join(
            f'<input type=hidden name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in fields.items()
        )
        button = "Sign in and connect" if issuer is not None else "Connect"
        form = (
            f'<form method=post action="{CONNECT_PATH}">{hidden}<button type=submit>{button}</button></form>'
        )
        page = _page(f"Connect {link.server}", text, 200, form)
        page.set_cookie(
            ("__Host-" if _secure(oauth) else "") + BROWSER_COOKIE, cookie, max_age=_COOKIE_SECONDS,
            path="/", secure=_secure(oauth), httponly=True, samesite="lax",
        )  # fmt: skip
        return page

    @router.post(CONNECT_PATH)
    async def confirmed(request: Request) -> Response:
        form = await read_form(request, max_bytes=_MAX_FORM_BYTES, max_fields=20, encoding="ascii")
        if form is None:
            return _refused("Link refused", "The confirmation form is malformed: open the link again.", 400)
        link = verified(form)
        if isinstance(link, HTMLResponse):
            return link
        assert link_secret is not None  # verified() refused otherwise
        cookie = browser_cookie(request, oauth)
        if cookie is None or not verify_form_token(link_secret, cookie, link.nonce, form.get("csrf", "")):
            connecting(request, link, "refused", "not confirmed in the browser the link was opened in")
            text = "This confirmation did not come from the page this browser was shown: open the link again."
            return _refused("Not confirmed", text, 403)
        server = per_user_server(link)
        issuer = issuer_of(link)
        if server is None:
            return _refused("Not available", "This server takes no per-user connections.", 404)
        if issuer is not None and issuer.login is None:
            text = ("This tenant signs people in with OAuth, but has no sign-in client for connects "
                    "(oauth.login.client_id): ask the operator to configure one.")  # fmt: skip
            return _refused("Not available", text, 409)
        if not oauth.store.use_link(link.nonce, link.expires_at + _USED_MARGIN_S):
            connecting(request, link, "refused", "link already used")
            return _refused("Link already used", _USED, 410)
        connecting(request, link, "ok", "per-user link confirmed")
        bound = browser_hash(cookie)
        try:
            if issuer is not None:
                # Loaded with the first sign-in: PyJWT and the issuer discovery stay out of cold starts.
                from foldgate.auth.oauth.signin import start_sign_in

                url = await start_sign_in(
                    oauth.store, issuer, tenant=link.tenant, server=link.server, subject=link.subject,
                    browser=bound, redirect_uri=_signin_redirect(oauth), allow_private=oauth.allow_private,
                )  # fmt: skip
            else:
                url = await _consent(oauth, link.tenant, server, link.subject, bound)
        except FoldgateError as exc:
            log.warning(
                "per-user connect for %s/%s failed to start: %s", link.tenant, link.server, exc.message
            )
            return _refused("Not connected", exc.message, 502)
        return _redirect(url)

    @router.get(SIGNIN_CALLBACK_PATH)
    async def signed_in(request: Request) -> Response:
        # Loaded with the first sign-in: PyJWT and the issuer discovery stay out of cold starts.
        from foldgate.auth.oauth.signin import finish_sign_in

        params = request.query_params
        state, code, iss = params.get("state", ""), params.get("code", ""), params.get("iss")
        if params.get("error") is not None:
            if 0 < len(state) <= 2048:
                # A refused sign-in is over (its state must not linger), if it is this browser's.
                cookie = browser_cookie(request, oauth)
                end_refused_flow(oauth, state, browser_hash(cookie) if cookie else None, "login")
            return _refused(
                "Not signed in", "The sign-in was cancelled or refused: nothing was connected.", 400
            )
        if issuers is None or not (0 < len(state) <= 2048) or not (0 < len(code) <= 2048):
            return _refused("Not signed in", "The sign-in answer is missing its code or state.", 400)
        cookie = browser_cookie(request, oauth)
        try:
            pending = await finish_sign_in(
                oauth.store, issuers, state=state, code=code, iss=iss,
                browser=browser_hash(cookie) if cookie else None, allow_private=oauth.allow_private,
            )  # fmt: skip
        except NotFoundError as exc:
            return _refused("Not signed in", exc.message, 400)
        except AuthError as exc:
            return _refused("Not connected", exc.message, 403)
        except FoldgateError as exc:
            log.warning("per-user sign-in failed: %s", exc.message)
            return _refused("Not signed in", exc.message, 502)
        server = per_user_server(ConnectLink(pending.tenant, pending.server, pending.subject, 0, ""))
        if server is None or pending.browser is None:
            return _refused("Not available", "This server takes no per-user connections.", 404)
        try:
            url = await _consent(oauth, pending.tenant, server, pending.subject, pending.browser)
        except FoldgateError as exc:
            log.warning(
                "per-user consent for %s/%s failed to start: %s", pending.tenant, server.name, exc.message
            )
            return _refused("Not connected", exc.message, 502)
        return _redirect(url)


def _signin_redirect(oauth: OAuthContext) -> str:
    return (oauth.public_url or "").rstrip("/") + SIGNIN_CALLBACK_PATH


async def _consent(oauth: OAuthContext, tenant: str, server: ServerConfig, subject: str, browser: str) -> str:
    held = oauth.store.get_grant(tenant, server.name, subject)
    # Step-up: a grant marked for more scope asks for what it has plus what the upstream wanted.
    extra = held.consent_scope() if held is not None else None
    return await start_consent(oauth, tenant, server, subject, extra_scope=extra, browser=browser)
