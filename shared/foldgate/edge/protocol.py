"""Wire constants and JSON-RPC error responses of the MCP edge, spelled out so the hot path never
imports the SDK (a unit test keeps the protocol versions equal to the SDK's)."""

from __future__ import annotations

import json
from typing import Any, Final

from starlette.responses import JSONResponse

from foldgate import __version__
from foldgate.model.jsonutil import wire

__all__ = [
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "MODERN_PROTOCOL_VERSIONS",
    "PROTOCOL_META",
    "SERVER_INFO_META",
    "SERVER_NAME",
    "jsonrpc_error",
    "modern_error_status",
]

SERVER_NAME: Final = "foldgate"
# The protocol versions of mcp 2.3 (mcp_types.version).
MODERN_PROTOCOL_VERSIONS: Final = ("2026-07-28",)
HANDSHAKE_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
PROTOCOL_META: Final = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO_META: Final = json.dumps(
    {"io.modelcontextprotocol/serverInfo": {"name": SERVER_NAME, "version": __version__}},
    separators=(",", ":"),
)


# The HTTP status of a 2026-07-28 JSON-RPC error answer, by code, as the SDK's modern transport sends
# it (mcp.shared.inbound.ERROR_CODE_HTTP_STATUS, kept equal by a unit test); any other code: 200.
_MODERN_ERROR_STATUS: Final = {-32700: 400, -32600: 400, -32602: 400, -32020: 400, -32021: 400, -32601: 404}


class _WireJSON(JSONResponse):
    """A JSON response encoded by the edge's one rule (lone surrogates escaped, never a 500)."""

    def render(self, content: Any) -> bytes:
        return wire(content)


def modern_error_status(code: int) -> int:
    """The HTTP status a 2026-07-28 error answer with this JSON-RPC code is sent with."""
    return _MODERN_ERROR_STATUS.get(code, 200)


def jsonrpc_error(
    status: int,
    code: int,
    message: str,
    headers: dict[str, str] | None = None,
    data: dict[str, Any] | None = None,
) -> JSONResponse:
    """A JSON-RPC error response with no request id (the request could not be read or was refused)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _WireJSON({"jsonrpc": "2.0", "id": None, "error": error}, status, headers=headers)
