"""Compact, deterministic JSON helpers shared by hashing, sizing and rendering."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

# UTF-16 surrogates: a lone one (from a "\ud800" escape in what a client or upstream sent) is a valid
# JSON string character that UTF-8 cannot carry.
_SURROGATE = re.compile("[\ud800-\udfff]")


def compact(value: Any) -> str:
    """Compact JSON text as it goes on the wire: no spaces, non-ASCII kept raw, key order preserved."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)


def canonical(value: Any) -> str:
    """Canonical JSON text (sorted keys): equal values give equal text, whatever their key order."""
    return json.dumps(
        value, separators=(",", ":"), ensure_ascii=False, sort_keys=True, allow_nan=False, default=str
    )


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def wire(value: Any) -> bytes:
    """A JSON-RPC message as sent to a client: compact UTF-8 (see :func:`wire_text`)."""
    return wire_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def wire_text(text: str) -> bytes:
    """JSON text as UTF-8 bytes. The one rule for lone surrogates in answers: each is sent as its JSON
    escape (``\\ud800``), so the body is valid UTF-8 and the receiver decodes exactly the string that
    was given; every other character stays raw. Only for JSON text (a surrogate can only be inside a
    string literal there). The common case costs one encode."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")
