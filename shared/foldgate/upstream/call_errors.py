"""How an upstream call's failure reads: the leaf of an exception group, a bounded description, the
upstream's own JSON-RPC errors a client must see (passed through), and whether a request was lost in
transit (never reached an upstream that could have run it)."""

from __future__ import annotations

import json
import sys
from typing import Final

from foldgate.errors import UpstreamProtocolError
from foldgate.model.bounded import bounded
from foldgate.upstream.plain_session import RpcError
from foldgate.upstream.wire import WireError

__all__ = [
    "PASSED_THROUGH",
    "as_mcp_error",
    "describe",
    "leaf_of",
    "lost_in_transit",
    "passed_through",
    "rpc_error_message",
]

# An upstream's tools/call errors its client must see as JSON-RPC errors, not as tool results: -32021,
# a client capability the call needs was not declared (2026-07-28); the client acts on the code.
PASSED_THROUGH: Final = frozenset({-32021})
_MAX_PASSED_MESSAGE: Final = 500
_MAX_PASSED_DATA: Final = 4096


def leaf_of(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the exception itself when it is none)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """A one-line description of what failed, at most 300 characters."""
    leaf = leaf_of(exc)
    return bounded(str(leaf).strip() or type(leaf).__name__, 300)


def rpc_error_message(leaf: BaseException) -> str | None:
    """The upstream's own JSON-RPC error message when ``leaf`` is such an error (plain or SDK), else None."""
    if isinstance(leaf, RpcError):
        return leaf.message
    # A stdio session's MCPError exists only once the SDK is loaded: never load it just to ask.
    sdk_error = getattr(sys.modules.get("mcp.shared.exceptions"), "MCPError", None)
    if isinstance(sdk_error, type) and isinstance(leaf, sdk_error):
        return str(getattr(leaf, "message", "")) or str(leaf)
    return None


def passed_through(leaf: BaseException) -> UpstreamProtocolError | None:
    """An upstream's tools/call JSON-RPC error its client must see (:data:`PASSED_THROUGH`), bounded:
    the message cut, ``data`` kept only in the shape the spec gives it. None for any other error."""
    code = getattr(leaf, "code", None)
    if rpc_error_message(leaf) is None or code not in PASSED_THROUGH:
        return None
    message = str(getattr(leaf, "message", "")) or "missing required client capability"
    message = bounded(message, _MAX_PASSED_MESSAGE)
    data = getattr(leaf, "data", None)
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    kept = None
    if isinstance(required, dict):
        try:
            if len(json.dumps(required)) <= _MAX_PASSED_DATA:
                kept = {"requiredCapabilities": required}
        except (TypeError, ValueError, RecursionError):
            kept = None
    return UpstreamProtocolError(message, int(code), kept)


def as_mcp_error(leaf: BaseException) -> BaseException:
    """An upstream JSON-RPC error as the SDK's MCPError, for the SDK edge that answers with its code."""
    if not isinstance(leaf, RpcError):
        return leaf  # already the SDK's
    # Only requests the SDK edge serves (resources, prompts, completions) get here: it is loaded.
    from mcp.shared.exceptions import MCPError

    # Bounded like every upstream text the agent reads: the message cut, an outsized data dropped.
    return MCPError(leaf.code, bounded(leaf.message), leaf.data if _small(leaf.data) else None)


def _small(data: object) -> bool:
    try:
        return len(json.dumps(data)) <= _MAX_PASSED_DATA
    except (TypeError, ValueError, RecursionError):
        return False


def lost_in_transit(exc: BaseException) -> bool:
    """Whether a pooled (plain) session's request failed in the transport, with no answer from the
    upstream: not an upstream JSON-RPC error nor an unreadable answer (either way the upstream got the
    request and may have run it)."""
    return not isinstance(leaf_of(exc), RpcError | WireError)
