"""What of a call's arguments an activity event may carry, by the tenant's ``activity.arguments``.

- ``none`` (the default): nothing (``None``).
- ``hashed``: ``"hmac-sha256:<hex>"``, an HMAC-SHA256 of the tenant's name and the arguments'
  canonical JSON (sorted keys, so key order does not matter). Equal arguments give equal digests within
  a tenant, so an operator can see that an agent sent the same call again (a retry, a loop) without
  seeing what it sent. Keyed, not a plain hash: arguments are mostly low-entropy (an issue number, an
  email address, a city), and anyone who can read the log (an export of the table, a console user)
  could recover them from a plain SHA-256 by hashing guesses. The key is derived from the gateway's
  token secret under a purpose label of its own (:func:`arguments_key`), so it is shared by every
  instance, never stored beside the events, and no digest can pass for a token or link MAC. The tenant
  is part of the message: the same arguments in two tenants do not correlate.
- ``redacted``: the same keys and shape with every value replaced by its JSON type (``"string"``,
  ``"number"``, ``"boolean"``, ``"null"``), and every member that looks like a credential dropped
  entirely, key and all: keys named like secrets (``password``, ``api_key``, ``authorization``, ...),
  keys or string values in a known token format (JWTs, ``ghp_``/``sk-``/``AKIA``/``xox?-`` tokens,
  foldgate's ``fgt_`` tokens, PEM blocks, ``Bearer``/``Basic`` credentials, URLs with a password) or
  long unbroken high-entropy strings. The shape is bounded (depth, members, array items, key length)
  so an event stays small whatever an agent sends.

Arguments are hostile input: nothing here raises on any JSON value (NaN, deep nesting, huge objects).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any, Final

from foldgate.config.tenant import ArgumentsPolicy

__all__ = ["arguments_key", "looks_like_credential", "recorded_arguments", "secret_named"]

_PURPOSE: Final = b"foldgate activity arguments v1"
MAX_DEPTH: Final = 8
MAX_MEMBERS: Final = 64
MAX_ITEMS: Final = 8
MAX_KEY: Final = 64
SCAN_CHARS: Final = 4096
_ELIDED: Final = "..."

# Substrings that name a credential wherever they appear in a key (``githubToken``, ``x-api-key``), and
# short words that do only as a whole word (``pin`` but not ``shipping``, ``otp`` but not ``footprint``).
_SECRET_PARTS: Final = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey",
    "credential", "authorization", "cookie", "session", "signature", "bearer", "cardnumber",
)  # fmt: skip
_SECRET_WORDS: Final = frozenset({"pwd", "pass", "auth", "pin", "otp", "ssn", "cvv", "cvc", "jwt", "sid"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORDS = re.compile(r"[^a-z0-9]+")
_TOKEN_FORMATS = re.compile(
    r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}"  # JWT / JWS
    r"|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}"
    r"|sk-[A-Za-z0-9_-]{12,}|(sk|rk|pk)_(live|test)_[A-Za-z0-9]{8,}"
    r"|A(KIA|SIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}"
    r"|xox[abposr]-[A-Za-z0-9-]{8,}|glpat-[A-Za-z0-9_-]{16,}"
    r"|fgt_[A-Za-z0-9_-]{8,}"  # foldgate's own agent tokens
    r"|-----BEGIN [A-Z ]*PRIVATE KEY|-----BEGIN"
    r"|\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|[a-z][a-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@",  # a URL carrying a password
    re.IGNORECASE,
)
# An unbroken run of key-like characters, long, and mixing letters and digits: an opaque secret.
_OPAQUE = re.compile(r"[A-Za-z0-9+/=_.~-]{32,}")


def arguments_key(secret: bytes) -> bytes:
    """The key digests of arguments are made with, derived from the token secret (a purpose of its own)."""
    return hmac.new(secret, _PURPOSE, hashlib.sha256).digest()


def secret_named(key: str) -> bool:
    """Whether a member's name says it holds a credential."""
    words = [w for w in _WORDS.split(_CAMEL.sub("_", key).lower()) if w]
    joined = "".join(words)
    return any(part in joined for part in _SECRET_PARTS) or any(w in _SECRET_WORDS for w in words)


def looks_like_credential(text: str) -> bool:
    """Whether a string is in a known token format or an opaque high-entropy run of 32+ characters
    (its first :data:`SCAN_CHARS` are looked at: a value is never recorded, only its key's presence)."""
    text = text[:SCAN_CHARS]
    if _TOKEN_FORMATS.search(text):
        return True
    for run in _OPAQUE.findall(text):
        if any(c.isdigit() for c in run) and any(c.isalpha() for c in run):
            return True
    return False


def recorded_arguments(arguments: Any, policy: ArgumentsPolicy, *, key: bytes, tenant: str) -> Any:
    """What an event may carry of ``arguments`` under ``policy`` (None for ``none``); never raises."""
    if policy == "hashed":
        return _digest(arguments, key, tenant)
    if policy == "redacted":
        return _shape(arguments, 0)
    return None


def _digest(arguments: Any, key: bytes, tenant: str) -> str:
    try:
        text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        # Unserialisable (mixed key types, nesting past the interpreter's limit): still a digest, of
        # its bounded shape, never an exception on the call path.
        text = json.dumps(_shape(arguments, 0), sort_keys=True, default=str)
    message = tenant.encode("utf-8") + b"\x00" + text.encode("utf-8", "surrogatepass")
    return "hmac-sha256:" + hmac.new(key, message, hashlib.sha256).hexdigest()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def _credential(value: Any) -> bool:
    return isinstance(value, str) and looks_like_credential(value)


def _shape(value: Any, depth: int) -> Any:
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return {_ELIDED: "object"}
        out: dict[str, Any] = {}
        for count, (k, v) in enumerate(value.items()):
            if count >= MAX_MEMBERS:
                out[_ELIDED] = f"{len(value) - MAX_MEMBERS} more"
                break
            name = str(k)
            if len(name) > MAX_KEY or secret_named(name) or looks_like_credential(name) or _credential(v):
                continue  # dropped entirely: not even the key says it was there
            out[name] = _shape(v, depth + 1)
        return out
    if isinstance(value, list | tuple):
        if depth >= MAX_DEPTH:
            return [_ELIDED]
        items = [_shape(v, depth + 1) for v in value[:MAX_ITEMS] if not _credential(v)]
        if len(value) > MAX_ITEMS:
            items.append(f"{_ELIDED} {len(value) - MAX_ITEMS} more")
        return items
    return _kind(value)
