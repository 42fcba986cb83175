"""SEP-2243 at the edge: a 2026-07-28 ``tools/call`` whose ``Mcp-Param-*`` headers disagree with its
arguments is refused with HTTP 400 and -32020 (HeaderMismatch) before anything runs.

A proxy in front of foldgate may have routed on those headers, so a call whose body says otherwise
must not run. Only a tool the caller's direct listing shows in full declares headers (a deferred entry
carries a placeholder schema: its client was never told to send any), and which argument maps to
which header was read from the schema at index time (``IndexedTool.header_params``): here the tool is
found by the ``Mcp-Name`` header (the name's own check refuses a header that disagrees with the body),
and only a call to a tool that declares headers has its body read again.
"""

from __future__ import annotations

from typing import Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from foldgate.edge.protocol import MODERN_PROTOCOL_VERSIONS
from foldgate.errors import FoldgateError
from foldgate.model.param_headers import decode, param_header_mismatch
from foldgate.model.principal import Principal
from foldgate.model.rpc_body import RpcBody
from foldgate.serve.gateway import Gateway
from foldgate.serve.recording import current

__all__ = ["HEADER_MISMATCH", "param_header_refusal"]

HEADER_MISMATCH: Final = -32020
_DIRECT: Final = "direct"


def param_header_refusal(
    request: Request, body: RpcBody, gateway: Gateway, principal: Principal, surface: str
) -> Response | None:
    """The 400/-32020 answer when this request is a 2026-07-28 ``tools/call`` of a tool that declares
    ``x-mcp-header`` arguments and its ``Mcp-Param-*`` headers disagree with them, else None."""
    headers = request.headers
    if (
        headers.get("mcp-method") != "tools/call"
        or headers.get("mcp-protocol-version") not in MODERN_PROTOCOL_VERSIONS
    ):
        return None
    named = headers.get("mcp-name")
    name = decode(named.strip(" \t")) if named is not None else None
    if name is None:
        return None  # a missing or malformed Mcp-Name is refused by the routing headers' own check
    try:
        if gateway.surface_of(principal, surface) != _DIRECT:
            return None  # the meta-tools and agent code declare no header arguments
        view = gateway.view(principal)
    except FoldgateError:
        return None  # the call path reports an unknown tenant or config as it always does
    tool = view.resolve(name)
    if tool is None or not tool.header_params or view.is_deferred(tool):
        return None
    message = body.message
    params = message.get("params") if isinstance(message, dict) else None
    if not isinstance(params, dict) or params.get("name") != name:
        return None  # not this tool's call after all: the routing headers' check answers it
    mismatch = param_header_mismatch(tool.header_params, params.get("arguments"), headers.getlist)
    if mismatch is None:
        return None
    observed = current()
    if observed is not None:
        # One activity event, as for arguments that fail the schema: the tool, and that it never ran.
        observed.work("tools/call", name)
        observed.target(tool.server, tool.tool.name, view.tier(tool))
        observed.ended("invalid_arguments", "header_mismatch")
    rid = message.get("id")
    error = {"code": HEADER_MISMATCH, "message": f"Header mismatch: {mismatch}"}
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        rid = None
    return JSONResponse({"jsonrpc": "2.0", "id": rid, "error": error}, 400)
