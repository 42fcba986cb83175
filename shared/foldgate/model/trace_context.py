"""The trace the running request belongs to, for every layer that records or propagates it.

A context variable, like the upstream caller (:mod:`foldgate.model.caller`): the edge sets it once per
request (from the client's W3C ``traceparent``, or a new trace), asyncio copies it into every task the
request starts, and the activity recorder, logs and the upstream client read it without any layer in
between passing it along. Empty means no trace is known.
"""

from __future__ import annotations

from contextvars import ContextVar

from foldgate.model.scoped import scoped

__all__ = ["current_trace_id", "in_trace"]

_TRACE_ID: ContextVar[str] = ContextVar("foldgate_trace_id", default="")


def current_trace_id() -> str:
    """The running request's trace id (32 lowercase hex digits), or "" when none is known."""
    return _TRACE_ID.get()


def in_trace(trace_id: str) -> scoped[str]:
    """Within the block, the running request belongs to trace ``trace_id``."""
    return scoped(_TRACE_ID, trace_id)
