"""Signed, single-use, short-lived links that let one end user connect their own account for a
``per_user`` upstream, and the browser binding of the flow such a link starts.

A call for a user who has not connected answers a tool error carrying such a link. The link names
(tenant, server, subject), an expiry and a random nonce, and carries an HMAC over them under a key
derived from the gateway's token secret (a separate purpose label, so a link MAC can never pass for a
token hash or anything else signed with that secret): nobody can mint a link that connects an account
into someone else's grant.

The link is printed where a model (and whoever reads the conversation) sees it, so it is a bearer
capability for as long as it lives: the nonce makes it single use (the store's conditional write,
across instances) and it lives ``LINK_SECONDS``. Opening it shows a confirmation page; the page sets a
random browser cookie, and its form carries a token derived from that cookie (:func:`form_token`), so
only a POST from the browser that saw the page starts the consent, and the callback later requires the
same cookie (the pending consent keeps :func:`browser_hash` of it).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlencode

from foldgate.errors import AuthError

__all__ = [
    "BROWSER_COOKIE",
    "CONNECT_PATH",
    "LINK_FIELDS",
    "LINK_SECONDS",
    "ConnectLink",
    "browser_hash",
    "form_token",
    "new_browser_cookie",
    "sign_connect_link",
    "valid_browser_cookie",
    "verify_connect_link",
    "verify_form_token",
]

CONNECT_PATH: Final = "/oauth/connect"
# Ten minutes: long enough to switch to a browser, read the confirmation page and sign in (the
# consent's own state then lives CONSENT_SECONDS), short enough that a link lifted from a transcript
# or a log is soon useless even if nobody used it. The agent gets a fresh link on its next call.
LINK_SECONDS: Final = 600
# Without the __Host- prefix on plain-http loopback (a browser refuses __Host- without Secure).
BROWSER_COOKIE: Final = "foldgate_connect"
_PURPOSE: Final = b"foldgate upstream connect link v2"
_FORM_PURPOSE: Final = b"foldgate connect form v1"
LINK_FIELDS: Final = ("tenant", "server", "subject", "exp", "nonce", "sig")
_MAX_FIELD: Final = 512
_COOKIE_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True, slots=True)
class ConnectLink:
    """What a verified link names: whose grant for which server, until when, and its one-use nonce."""

    tenant: str
    server: str
    subject: str
    expires_at: int
    nonce: str


def _key(secret: bytes, purpose: bytes = _PURPOSE) -> bytes:
    return hmac.new(secret, purpose, hashlib.sha256).digest()


def _mac(secret: bytes, *values: str) -> str:
    message = "\x1f".join(values).encode("utf-8")
    return hmac.new(_key(secret), message, hashlib.sha256).hexdigest()


def sign_connect_link(
    secret: bytes, public_url: str, tenant: str, server: str, subject: str, *, now: float | None = None
) -> str:
    """The URL a user opens once to connect ``server`` for ``subject`` (valid ``LINK_SECONDS``)."""
    exp = str(int((time.time() if now is None else now) + LINK_SECONDS))
    nonce = secrets.token_urlsafe(18)
    query = {"tenant": tenant, "server": server, "subject": subject, "exp": exp, "nonce": nonce,
             "sig": _mac(secret, tenant, server, subject, exp, nonce)}  # fmt: skip
    return f"{public_url.rstrip('/')}{CONNECT_PATH}?{urlencode(query)}"


def verify_connect_link(secret: bytes, params: Mapping[str, str], *, now: float | None = None) -> ConnectLink:
    """The link if genuine and unexpired; AuthError (one message) otherwise. Use is not checked here:
    the caller marks the nonce used in the store when the person confirms."""
    refused = AuthError("this connect link is invalid or expired: call the tool again for a new one")
    values = [params.get(f, "") for f in LINK_FIELDS[:-1]]
    tenant, server, subject, exp, nonce = values
    if not all(values) or any(len(v) > _MAX_FIELD for v in values) or not exp.isdigit():
        raise refused
    expected = _mac(secret, tenant, server, subject, exp, nonce)
    if not hmac.compare_digest(expected.encode(), _bytes(params.get("sig", ""))):
        raise refused
    if int(exp) < (time.time() if now is None else now):
        raise refused
    return ConnectLink(tenant, server, subject, int(exp), nonce)


def new_browser_cookie() -> str:
    """A fresh random browser-binding value (256 bits)."""
    return secrets.token_urlsafe(32)


def valid_browser_cookie(value: str | None) -> bool:
    """Whether ``value`` has the shape :func:`new_browser_cookie` makes (anything else is ignored)."""
    return value is not None and 40 <= len(value) <= 64 and set(value) <= _COOKIE_CHARS


def browser_hash(cookie: str) -> str:
    """What the pending consent keeps of the browser cookie (never the cookie itself)."""
    return hashlib.sha256(cookie.encode("ascii")).hexdigest()


def form_token(secret: bytes, cookie: str, nonce: str) -> str:
    """The confirmation form's anti-forgery token: bound to this browser's cookie and this link."""
    message = f"{cookie}\x1f{nonce}".encode()
    return hmac.new(_key(secret, _FORM_PURPOSE), message, hashlib.sha256).hexdigest()


def verify_form_token(secret: bytes, cookie: str | None, nonce: str, token: str) -> bool:
    """Whether ``token`` was made for this browser's ``cookie`` and this link's ``nonce``."""
    if not valid_browser_cookie(cookie) or cookie is None:
        return False
    return hmac.compare_digest(form_token(secret, cookie, nonce).encode(), _bytes(token))


def _bytes(presented: str) -> bytes:
    # Compared as bytes: compare_digest raises TypeError on a str with non-ASCII characters, which a
    # query string or form carries at will (surrogatepass: any str encodes, distinct ones stay distinct).
    return presented.encode("utf-8", "surrogatepass")
