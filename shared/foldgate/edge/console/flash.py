"""The one-time flash that carries a newly created token's secret from the POST that made it to the
page the browser is redirected to (POST-redirect-GET: reloading that page never creates another token).

The flash is a cookie of its own, sealed with AES-GCM under a key derived from the operator key, bound
to the session that created the token (its id is the associated data) and valid for
:data:`FLASH_SECONDS`: it is opened on the first view and deleted by that response, so the secret is
still shown exactly once, on whichever instance serves the redirect. No store holds the secret; the
browser holds it sealed, for the length of one redirect, the way it holds the session itself.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from typing import Any, Final

__all__ = ["FLASH_COOKIE", "FLASH_SECONDS", "FlashSealer"]

FLASH_COOKIE: Final = "foldgate_console_flash"
# Long enough for a redirect on a slow link, short enough that a forgotten cookie is worthless soon.
FLASH_SECONDS: Final = 120
# Bigger cookie values are not ours (refused before decoding).
_MAX_VALUE: Final = 2048
_NONCE: Final = 12


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class FlashSealer:
    """Seals and opens flashes under a key derived from the operator key (rotating it voids them)."""

    def __init__(self, operator_secret: bytes) -> None:
        self._key = hmac.new(operator_secret, b"foldgate console flash v1", hashlib.sha256).digest()

    def seal(self, sid: str, payload: dict[str, Any], now: float) -> str:
        """A cookie value carrying ``payload`` to the session ``sid`` until ``now`` + FLASH_SECONDS."""
        # Loaded with the first token created from the console (a dependency of pyjwt[crypto]).
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        body = json.dumps({"p": payload, "exp": int(now) + FLASH_SECONDS}, separators=(",", ":")).encode()
        nonce = os.urandom(_NONCE)
        return _b64(nonce + AESGCM(self._key).encrypt(nonce, body, sid.encode()))

    def open(self, sid: str, value: str | None, now: float) -> dict[str, Any] | None:
        """The payload, or None: absent, malformed, forged, of another session or expired."""
        if not value or len(value) > _MAX_VALUE:
            return None
        # Loaded with the first token created from the console (a dependency of pyjwt[crypto]).
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
            body = AESGCM(self._key).decrypt(raw[:_NONCE], raw[_NONCE:], sid.encode())
            doc = json.loads(body)
        except (binascii.Error, ValueError, InvalidTag):
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("p"), dict):
            return None
        expires = doc.get("exp")
        if not isinstance(expires, int) or expires <= now:
            return None
        return dict(doc["p"])
