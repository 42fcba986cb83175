"""The gateway's sealed ``requestState`` (MCP 2026-07-28 multi round-trip requests).

When an upstream answers a call with ``input_required``, the gateway hands its client a
``requestState`` of its own: the upstream's state (never shown to the client, never trusted from it)
sealed with AES-256-GCM (``cryptography``) under a key derived with HKDF-SHA256 from the stack's
token secret, so any instance opens what another sealed. The sealed claims bind it to

* the principal (the credential's stamp: another token cannot use it),
* the call (the tool's published name and a SHA-256 of its canonical arguments: another tool or other
  arguments cannot use it),
* an expiry (``ttl``, 10 minutes by default).

A token that fails any check (tampered, truncated, another key, another principal, another call, or
expired) is refused with one message: the refusal is no oracle for which check failed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import time
from typing import Any, Final

from foldgate.errors import InvalidRequestError

__all__ = ["DEFAULT_TTL_S", "InvalidStateError", "StateSealer", "call_binding"]

DEFAULT_TTL_S: Final = 600.0
_INFO: Final = b"foldgate/request-state/v1"
_PREFIX: Final = "fg1."
_NONCE: Final = 12
# Bound under the tag, so a token cannot pass for another format version.
_AAD: Final = _PREFIX.encode()
# The longest token opened at all (a sealed upstream state is bounded by the relay's own limits).
MAX_TOKEN_CHARS: Final = 512 * 1024


class InvalidStateError(InvalidRequestError):
    """A ``requestState`` the gateway did not seal for this principal and call, or one past its expiry."""


_REFUSED: Final = (
    "requestState is not valid for this call (altered, expired, or issued for another caller or call); "
    "send the call again without it"
)


def call_binding(stamp: str, tool: str, arguments: Any) -> str:
    """The digest a state is bound to: the principal's stamp, the tool's name and its arguments."""
    canonical = json.dumps(arguments or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    joined = "\0".join((stamp, tool, canonical)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(joined).hexdigest()


class StateSealer:
    """Seals and opens request states under one key (derived from ``secret``, 32+ bytes)."""

    def __init__(self, secret: bytes, *, ttl: float = DEFAULT_TTL_S) -> None:
        # Loaded with the first state sealed or opened: most requests never need it (cold start).
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.hashes import SHA256
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        key = HKDF(algorithm=SHA256(), length=32, salt=None, info=_INFO).derive(secret)
        self._aead = AESGCM(key)
        self.ttl = ttl

    def seal(self, claims: dict[str, Any], binding: str, *, now: float | None = None) -> str:
        """An opaque token carrying ``claims`` (JSON), bound to ``binding``, valid for ``ttl``."""
        issued = time.time() if now is None else now
        payload = json.dumps({"b": binding, "exp": issued + self.ttl, "c": claims}, separators=(",", ":"))
        nonce = os.urandom(_NONCE)
        sealed = self._aead.encrypt(nonce, payload.encode("utf-8"), _AAD)
        return _PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii").rstrip("=")

    def open(self, token: Any, binding: str, *, now: float | None = None) -> dict[str, Any]:
        """The claims of a token this key sealed for ``binding`` and that has not expired, else
        InvalidStateError (one message for every reason)."""
        if not isinstance(token, str) or not token.startswith(_PREFIX) or len(token) > MAX_TOKEN_CHARS:
            raise InvalidStateError(_REFUSED)
        # Loaded already: this instance's constructor imported it.
        from cryptography.exceptions import InvalidTag

        body = token[len(_PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            plain = self._aead.decrypt(raw[:_NONCE], raw[_NONCE:], _AAD)
            opened = json.loads(plain)
        except (binascii.Error, ValueError, InvalidTag):
            raise InvalidStateError(_REFUSED) from None
        expires = opened.get("exp") if isinstance(opened, dict) else None
        current = time.time() if now is None else now
        if (
            not isinstance(opened, dict)
            or opened.get("b") != binding
            or not isinstance(expires, int | float)
            or current >= expires
            or not isinstance(opened.get("c"), dict)
        ):
            raise InvalidStateError(_REFUSED)
        claims: dict[str, Any] = opened["c"]
        return claims
