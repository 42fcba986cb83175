"""Oversized tool results: cut to the tenant's ``tool_response_limit`` and kept whole for ``read_cache``.

The key is random (unguessable); the entry carries the caller's authorization stamp, and a reader with
another stamp gets exactly the answer a missing key gets.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

from foldgate.errors import NotFoundError, StoreError
from foldgate.store.results.base import CachedResult, ResultStore

__all__ = ["ResultPager"]

log = logging.getLogger(__name__)

_NOT_FOUND = "no cached result for this key (it may have expired)"


class ResultPager:
    """Truncates long results into a store and pages them back."""

    def __init__(self, store: ResultStore, *, ttl_seconds: int = 3600) -> None:
        self.store = store
        self.ttl_seconds = ttl_seconds

    def truncate(self, result: dict[str, Any], *, limit: int, stamp: str) -> dict[str, Any]:
        """The result, or a copy whose text is cut at ``limit`` characters with a read_cache note."""
        content = result.get("content")
        if not isinstance(content, list):
            return result
        texts = [c for c in content if isinstance(c, dict) and c.get("type") == "text"]
        full = "\n".join(str(c.get("text", "")) for c in texts)
        if len(full) <= limit:
            return result
        key = secrets.token_urlsafe(18)
        try:
            self.store.put(key, CachedResult(stamp, full, time.time() + self.ttl_seconds))
            note = (
                f"\n\n[foldgate: result cut at {limit:,} of {len(full):,} characters. Call read_cache with "
                f'key "{key}" and offset {limit} for the rest (kept {self.ttl_seconds // 60} minutes).]'
            )
        except StoreError as exc:
            log.error("cannot keep a truncated result: %s", exc.message)
            note = (
                f"\n\n[foldgate: result cut at {limit:,} of {len(full):,} characters; the rest was not kept.]"
            )
        others = [c for c in content if not (isinstance(c, dict) and c.get("type") == "text")]
        # structuredContent would repeat the whole result: a truncated answer carries text only.
        return {
            "content": [{"type": "text", "text": full[:limit] + note}, *others],
            "isError": bool(result.get("isError")),
        }

    def read(self, key: str, offset: int, limit: int, *, stamp: str) -> dict[str, Any]:
        """One page of a cached result; NotFoundError for missing, expired and foreign keys alike."""
        entry = self.store.get(key)
        if entry is None or not secrets.compare_digest(entry.stamp.encode(), stamp.encode()):
            raise NotFoundError(_NOT_FOUND)
        total = len(entry.text)
        end = min(total, offset + limit)
        return {
            "key": key,
            "offset": offset,
            "total": total,
            "text": entry.text[offset:end],
            "next_offset": end if end < total else None,
        }
