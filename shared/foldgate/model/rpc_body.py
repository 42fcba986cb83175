"""One MCP request's body on its way in: the bytes as read, and their JSON parsed at most once.

Every reader on the request path (the trace context, the task layer, the plain path, the activity
log, the SEP-2243 header check, ...) takes the same :class:`RpcBody` from the endpoint, so a body is
decoded once however many of them look at it, and a reader that needs only a substring test (the
common case for most of them) never makes one decode happen.

The parsed message is shared: readers take from it and never change it (what they pass on is a new
object, as the upstream client's request body is).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["RpcBody"]

_UNPARSED: Any = object()


class RpcBody:
    """A request body (``raw``) and its JSON ``message``, parsed on first use."""

    __slots__ = ("_message", "raw")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._message: Any = _UNPARSED

    @property
    def message(self) -> Any:
        """The body's JSON value; None when it is not JSON (not UTF-8, malformed, or nested past the
        parser's depth), which every reader treats as no message of its own, as JSON ``null``."""
        if self._message is _UNPARSED:
            try:
                self._message = json.loads(self.raw)
            except (ValueError, RecursionError):
                self._message = None
        return self._message

    def mentions(self, literal: bytes) -> bool:
        """Whether the raw body holds ``literal`` (a byte search that spares a parse)."""
        return literal in self.raw

    def __len__(self) -> int:
        return len(self.raw)

    def __bool__(self) -> bool:
        return bool(self.raw)
