"""Signed, short-lived links that let one end user connect their own account for a ``per_user`` upstream.

A call for a user who has not connected answers a tool error carrying such a link. The link names
(tenant, server, subject) and an expiry, and carries an HMAC over them under a key derived from the
gateway's token secret (a separate purpose label, so a link MAC can never pass for a token hash or
anything else signed with that secret). ``GET /oauth/connect`` verifies it and starts the consent for
exactly that subject: nobody can mint a link that connects an account into someone else's grant.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlencode

from foldgate.errors import AuthError

__all__ = ["CONNECT_PATH", "LINK_SECONDS", "sign_connect_link", "verify_connect_link"]

CONNECT_PATH: Final = "/oauth/connect"
LINK_SECONDS: Final = 900
_PURPOSE: Final = b"foldgate upstream connect link v1"
_FIELDS: Final = ("tenant", "server", "subject", "exp")


def _key(secret: bytes) -> bytes:
    return hmac.new(secret, _PURPOSE, hashlib.sha256).digest()


def _mac(secret: bytes, tenant: str, server: str, subject: str, exp: str) -> str:
    message = "\x1f".join((tenant, server, subject, exp)).encode("utf-8")
    return hmac.new(_key(secret), message, hashlib.sha256).hexdigest()


def sign_connect_link(
    secret: bytes, public_url: str, tenant: str, server: str, subject: str, *, now: float | None = None
) -> str:
    """The URL a user opens to connect ``server`` for ``subject`` (valid ``LINK_SECONDS``)."""
    exp = str(int((time.time() if now is None else now) + LINK_SECONDS))
    query = {"tenant": tenant, "server": server, "subject": subject, "exp": exp,
             "sig": _mac(secret, tenant, server, subject, exp)}  # fmt: skip
    return f"{public_url.rstrip('/')}{CONNECT_PATH}?{urlencode(query)}"


def verify_connect_link(
    secret: bytes, params: Mapping[str, str], *, now: float | None = None
) -> tuple[str, str, str]:
    """(tenant, server, subject) of a genuine, unexpired link; AuthError (one message) otherwise."""
    refused = AuthError("this connect link is invalid or expired: call the tool again for a new one")
    values = [params.get(f, "") for f in _FIELDS]
    tenant, server, subject, exp = values
    if not all(values) or any(len(v) > 512 for v in values) or not exp.isdigit():
        raise refused
    expected = _mac(secret, tenant, server, subject, exp)
    if not hmac.compare_digest(expected, params.get("sig", "")):
        raise refused
    if int(exp) < (time.time() if now is None else now):
        raise refused
    return tenant, server, subject
