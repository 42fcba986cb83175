"""The console's session: a signed, expiring cookie and the CSRF token bound to it.

The operator key is exchanged once (the login form) for a cookie whose value is
``base64url(payload) "." base64url(HMAC)``; the payload holds a random session id and the expiry, so
any instance holding the operator key verifies it. The MAC key is derived from the operator key:
rotating the key ends every session. Sign-out ends one session: its id is recorded in the shared
:mod:`foldgate.store.signouts` until its expiry, and the console refuses a recorded id (that check is
the console route's; this module stays free of server state). A payload without a session id of the
form issued here (32 hex digits) is refused, so every accepted session can be signed out.

The CSRF token is an HMAC of the session id under a second derived key (a synchronizer token that
needs no store): a page embeds it in every form, every POST must send it back, and a token from
another session, or any other value, is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["COOKIE_NAME", "SESSION_SECONDS", "Session", "SessionSigner"]

COOKIE_NAME: Final = "foldgate_console"
# Short-lived on purpose: an operator session is a bearer credential for the whole fleet.
SESSION_SECONDS: Final = 3600
# A cookie value longer than this is not one of ours (refused before any decoding).
_MAX_COOKIE: Final = 512
# The session ids issue() makes (secrets.token_hex(16)); nothing else is a session id.
_SID: Final = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class Session:
    """A verified session: its random id and when it expires (epoch seconds)."""

    sid: str
    expires_at: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SessionSigner:
    """Issues and verifies session cookies and CSRF tokens under keys derived from the operator key."""

    def __init__(
        self,
        operator_secret: bytes,
        *,
        ttl_s: int = SESSION_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        # Separate keys per use: a session MAC can never be replayed as a CSRF token, or the reverse.
        self._session_key = hmac.new(operator_secret, b"foldgate console session v1", hashlib.sha256).digest()
        self._csrf_key = hmac.new(operator_secret, b"foldgate console csrf v1", hashlib.sha256).digest()
        self.ttl_s = ttl_s
        self.clock = clock

    def issue(self) -> tuple[str, Session]:
        """A new session and its cookie value."""
        session = Session(secrets.token_hex(16), int(self.clock()) + self.ttl_s)
        payload = json.dumps({"sid": session.sid, "exp": session.expires_at}, separators=(",", ":")).encode()
        mac = hmac.new(self._session_key, payload, hashlib.sha256).digest()
        return f"{_b64(payload)}.{_b64(mac)}", session

    def verify(self, cookie: str | None) -> Session | None:
        """The session a cookie value carries, or None (absent, malformed, forged or expired)."""
        if not cookie or len(cookie) > _MAX_COOKIE or cookie.count(".") != 1:
            return None
        body, _, tag = cookie.partition(".")
        try:
            payload, mac = _unb64(body), _unb64(tag)
        except (binascii.Error, ValueError):
            return None
        expected = hmac.new(self._session_key, payload, hashlib.sha256).digest()
        # compare_digest: how much of a forged MAC matched must not show in the timing.
        if not hmac.compare_digest(mac, expected):
            return None
        try:
            doc = json.loads(payload)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        sid, expires = doc.get("sid"), doc.get("exp")
        if not isinstance(sid, str) or not _SID.fullmatch(sid):
            return None
        if not isinstance(expires, int) or isinstance(expires, bool):
            return None
        if expires <= self.clock():
            return None
        return Session(sid, expires)

    def csrf(self, session: Session) -> str:
        """The CSRF token of a session (the same on every page of that session)."""
        return _b64(hmac.new(self._csrf_key, session.sid.encode(), hashlib.sha256).digest())

    def check_csrf(self, session: Session, presented: str | None) -> bool:
        """Whether a POST's CSRF token belongs to this session."""
        if not presented or len(presented) > 100:
            return False
        return hmac.compare_digest(presented.encode(), self.csrf(session).encode())
