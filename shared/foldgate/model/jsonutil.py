"""Compact, deterministic JSON helpers shared by hashing, sizing and rendering."""

from __future__ import annotations

import hashlib
import json
from typing import Any


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
