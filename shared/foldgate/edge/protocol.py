"""Wire constants and JSON-RPC error responses of the MCP edge, spelled out so the hot path never
imports the SDK (a unit test keeps the protocol versions equal to the SDK's)."""

from __future__ import annotations

import json
from typing import Any, Final

from fastapi.responses import JSONResponse

from foldgate import __version__

__all__ = [
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "MODERN_PROTOCOL_VERSIONS",
    "PROTOCOL_META",
    "SERVER_INFO_META",
    "SERVER_NAME",
    "jsonrpc_error",
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
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status, headers=headers)
