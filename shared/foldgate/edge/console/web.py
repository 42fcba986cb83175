"""The console's HTTP plumbing: templates, security headers, form parsing, the same-origin check and the
route class that puts the session, Origin and CSRF checks in front of every handler."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Coroutine
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from fastapi import HTTPException
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from starlette.requests import Request

from foldgate.edge.console.session import COOKIE_NAME, Session, SessionSigner
from foldgate.edge.forms import read_form
from foldgate.errors import FoldgateError

if TYPE_CHECKING:
    from jinja2 import Environment

__all__ = [
    "PREFIX",
    "STATIC",
    "TENANT_COOKIE",
    "console_route",
    "cookie_is_secure",
    "environment",
    "form_value",
    "render",
    "security_headers",
]

PREFIX: Final = "/console"
# The tenant the operator last chose (the header's selector): every page is about it until another is
# chosen. Not a credential (the operator key opens every tenant), so only the tenant's name is kept.
TENANT_COOKIE: Final = "foldgate_console_tenant"
_HERE = Path(__file__).resolve().parent
# Strict: scripts only from this origin (the vendored htmx), no inline script or style anywhere, no
# framing, forms post only here. The chart is inline SVG using presentation attributes, not style.
_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
# Bodies are small url-encoded forms; anything bigger is refused before parsing.
_MAX_FORM_BYTES: Final = 65_536
# Routes a visitor without a session may reach (the login form itself and its static files).
_STATIC: Final = f"{PREFIX}/static/"
_OPEN_PATHS: Final = (f"{PREFIX}/login", _STATIC)

# The static files, read once: served from memory under a fixed allow-list (no path from the URL
# ever reaches the filesystem).
STATIC: Final[dict[str, tuple[bytes, str]]] = {
    "htmx.min.js": ((_HERE / "static" / "htmx.min.js").read_bytes(), "text/javascript; charset=utf-8"),
    "htmx.LICENSE.txt": ((_HERE / "static" / "htmx.LICENSE.txt").read_bytes(), "text/plain; charset=utf-8"),
    "console.css": ((_HERE / "static" / "console.css").read_bytes(), "text/css; charset=utf-8"),
    "copy.js": ((_HERE / "static" / "copy.js").read_bytes(), "text/javascript; charset=utf-8"),
    "console.js": ((_HERE / "static" / "console.js").read_bytes(), "text/javascript; charset=utf-8"),
}


@cache
def environment() -> Environment:
    """The templates (built on the first page: a Lambda instance that serves agents never pays for it)."""
    # Loaded on first use: Jinja2 is ~40 ms of every cold start otherwise.
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    return Environment(
        loader=FileSystemLoader(str(_HERE / "templates")),
        # Every value is escaped: tool names, descriptions and schemas come from hostile upstreams.
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def security_headers(response: Response) -> Response:
    """The console's headers on any response (pages, redirects, refusals)."""
    response.headers["content-security-policy"] = _CSP
    response.headers["x-frame-options"] = "DENY"
    # same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on our own form posts.
    response.headers["referrer-policy"] = "same-origin"
    response.headers["x-content-type-options"] = "nosniff"
    response.headers.setdefault("cache-control", "no-store")
    return response


def render(request: Request, template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    """A page rendered with the session's CSRF token and the request's path available to templates."""
    session: Session | None = getattr(request.state, "session", None)
    signer: SessionSigner | None = getattr(request.state, "signer", None)
    csrf = signer.csrf(session) if signer is not None and session is not None else ""
    html = (
        environment()
        .get_template(template)
        .render(csrf=csrf, prefix=PREFIX, path=request.url.path, signed_in=session is not None, **context)
    )
    return HTMLResponse(html, status)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def cookie_is_secure(request: Request) -> bool:
    """Secure everywhere except plain http on loopback (``make run``), where browsers would drop it."""
    return not (request.url.scheme == "http" and _is_loopback(request.url.hostname or ""))


def _same_origin(request: Request) -> bool:
    """Whether a state change comes from this site (Sec-Fetch-Site and Origin, where sent)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        # No browser omits Origin on a POST today; clients that do still need the cookie and CSRF token.
        return True
    parts = urlsplit(origin)
    host = request.headers.get("host", "")
    return parts.scheme == request.url.scheme and parts.netloc.lower() == host.lower()


def form_value(request: Request, name: str) -> str:
    """A field of the POST's form (validated by the guard), or ''."""
    form: dict[str, str] = getattr(request.state, "form", None) or {}
    return form.get(name, "")


def _refuse(status: int, message: str) -> Response:
    return security_headers(Response(message, status, media_type="text/plain; charset=utf-8"))


def _live_session(keys: SessionSigner, signed_out: Callable[[str], bool], request: Request) -> Session | None:
    """The request's session: its cookie verifies and it was not signed out (FoldgateError when the
    sign-out store cannot tell)."""
    session = keys.verify(request.cookies.get(COOKIE_NAME))
    if session is not None and signed_out(session.sid):
        return None
    return session


def _remember_tenant(request: Request, response: Response) -> None:
    """Keep the tenant a page was about (see :data:`TENANT_COOKIE`) when the request chose another."""
    chosen: str | None = getattr(request.state, "chosen_tenant", None)
    if chosen is None or request.cookies.get(TENANT_COOKIE) == chosen:
        return
    response.set_cookie(TENANT_COOKIE, chosen, path=PREFIX, secure=cookie_is_secure(request), httponly=True,
                        samesite="strict")  # fmt: skip


def console_route(
    signer: Callable[[], SessionSigner | None], signed_out: Callable[[str], bool]
) -> type[APIRoute]:
    """A route class checking, before any handler: a valid session that was not signed out (except on
    the login form and static files), and on every POST the same-origin check, a well-formed form and
    its CSRF token. ``signed_out`` asks the shared store (one read per request with a valid cookie)."""

    class ConsoleRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def guarded(request: Request) -> Response:
                keys = signer()
                if keys is None:
                    return _refuse(503, "the console has no operator credential configured")
                request.state.signer = keys
                path = request.url.path
                open_path = path.startswith(_OPEN_PATHS)
                try:
                    # Static files need no session: no store read for them.
                    session = None if path.startswith(_STATIC) else _live_session(keys, signed_out, request)
                except FoldgateError:
                    if not open_path:
                        # Fail closed: a session that may have been signed out is not let in.
                        return _refuse(503, "the console cannot check its sessions now; try again")
                    session = None  # the login form works without one
                request.state.session = session
                if request.method == "POST":
                    if not _same_origin(request):
                        return _refuse(403, "cross-site request refused")
                    form = await read_form(request, max_bytes=_MAX_FORM_BYTES, max_fields=200)
                    if form is None:
                        return _refuse(400, "expected a url-encoded form")
                    request.state.form = form
                    if not open_path and (session is None or not keys.check_csrf(session, form.get("csrf"))):
                        return _refuse(403, "missing or invalid session or CSRF token")
                elif session is None and not open_path:
                    return security_headers(RedirectResponse(f"{PREFIX}/login", 303))
                try:
                    response = await handler(request)
                except HTTPException as exc:
                    if session is None or request.headers.get("hx-request") == "true":
                        return _refuse(exc.status_code, str(exc.detail))
                    # A signed-in browser gets the refusal as a console page, inside the layout.
                    response = render(
                        request,
                        "error.html",
                        {"status": exc.status_code, "message": str(exc.detail)},
                        exc.status_code,
                    )
                _remember_tenant(request, response)
                return security_headers(response)

            return guarded

    return ConsoleRoute
