"""W3C Trace Context's ``traceparent``: read from a client (HTTP header or ``params._meta``), written to
an upstream.

Pure and dependency-free, so the request path can take a client's trace without loading OpenTelemetry
(see :mod:`foldgate.telemetry.tracing`). Values come from callers and are hostile: anything but the
exact version-00 shape (or a later version's first four fields, as the spec asks) is ignored, never
echoed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Final

from foldgate.model.rpc_body import RpcBody

__all__ = ["TraceParent", "incoming_traceparent", "parse_traceparent"]

# version-traceid-parentid-flags, lowercase hex only (the spec forbids uppercase).
_SHAPE: Final = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_MAX_CHARS: Final = 512  # a header longer than this is not a traceparent worth parsing


@dataclass(frozen=True, slots=True)
class TraceParent:
    """A span's place in a trace: the trace, the span (the parent of whatever the receiver starts) and
    whether the sender records it (``sampled``)."""

    trace_id: str
    span_id: str
    sampled: bool = False

    @classmethod
    def new(cls) -> TraceParent:
        """A new trace with a new span id, not sampled: what a request without a client trace gets.

        Random as OpenTelemetry's own ids are (not secret: a trace id is sent to every upstream), and
        never all zero (invalid)."""
        return cls(f"{random.getrandbits(128) or 1:032x}", f"{random.getrandbits(64) or 1:016x}")

    def header(self) -> str:
        """The version-00 ``traceparent`` value."""
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"


def parse_traceparent(value: Any) -> TraceParent | None:
    """The traceparent ``value`` names, or None when it is absent or malformed (all-zero ids, version
    ff, uppercase hex, extra fields on version 00, anything that is not a string)."""
    if not isinstance(value, str) or len(value) > _MAX_CHARS:
        return None
    found = _SHAPE.fullmatch(value.strip(" \t"))
    if found is None:
        return None
    version, trace_id, span_id, flags, rest = found.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return None
    if trace_id == "0" * 32 or span_id == "0" * 16:
        return None
    return TraceParent(trace_id, span_id, bool(int(flags, 16) & 1))


def incoming_traceparent(header: str | None, body: RpcBody) -> TraceParent | None:
    """The client's trace for one MCP request: ``params._meta.traceparent`` (set by the MCP client for
    this very request) when valid, else the HTTP ``traceparent`` header, else None.

    The body is parsed (once for the whole request, see :class:`~foldgate.model.rpc_body.RpcBody`)
    only when it mentions ``traceparent`` at all: a request without one costs a byte search.
    """
    if body.mentions(b"traceparent"):
        found = parse_traceparent(_meta_traceparent(body.message))
        if found is not None:
            return found
    return parse_traceparent(header) if header else None


def _meta_traceparent(message: Any) -> Any:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("traceparent") if isinstance(meta, dict) else None
