"""The hot path: a plain ``tools/list`` answered from the pre-rendered listing, without the SDK.

In the stateless protocol era a new Lambda instance often serves a tools/list first; answering it here
means that instance never pays the SDK's import, model building or re-serialization for it.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.types import Send

from foldgate.edge.protocol import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_META,
    SERVER_INFO_META,
)
from foldgate.model.jsonutil import wire_text
from foldgate.model.rpc_body import RpcBody

__all__ = ["plain_tools_list", "send_listing"]


def plain_tools_list(body: RpcBody, request: Request) -> tuple[Any, bool] | None:
    """(id, modern) when the body is a single, plain tools/list request the fast path may answer."""
    if not body.mentions(b"tools/list"):
        return None
    accept = request.headers.get("accept", "")
    if "application/json" not in accept and "*/*" not in accept:
        return None
    if not request.headers.get("content-type", "").startswith("application/json"):
        return None
    # Not JSON (or nested too deep): the SDK path answers it with its -32700, never a 500.
    msg = body.message
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or msg.get("method") != "tools/list":
        return None
    rid = msg.get("id")
    if (
        isinstance(rid, bool)
        or not isinstance(rid, int | str)
        or not set(msg) <= {"jsonrpc", "id", "method", "params"}
    ):
        return None
    params = msg.get("params") or {}
    if (
        not isinstance(params, dict)
        or params.get("cursor") is not None
        or not set(params) <= {"_meta", "cursor"}
    ):
        return None
    version = request.headers.get("mcp-protocol-version")
    if version in MODERN_PROTOCOL_VERSIONS:
        meta = params.get("_meta")
        if request.headers.get("mcp-method") != "tools/list" or not isinstance(meta, dict):
            return None
        if meta.get(PROTOCOL_META) != version:
            return None  # let the SDK answer the mismatch with its own error
        return rid, True
    if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
        return rid, False
    return None


async def send_listing(
    rid: Any, modern: bool, listing: str, send: Send, hint: tuple[int, str] = (0, "private")
) -> None:
    """Send a tools/list result whose ``tools`` array is the given JSON text; ``hint`` is the
    2026-07-28 ``(ttlMs, cacheScope)`` (see ``Gateway.list_hint``), not sent to older eras."""
    head = '{"jsonrpc":"2.0","id":' + json.dumps(rid) + ',"result":{'
    if modern:
        ttl, scope = hint
        text = (
            head + '"cacheScope":' + json.dumps(scope) + ',"resultType":"complete","tools":' + listing
            + ',"ttlMs":' + str(int(ttl)) + ',"_meta":' + SERVER_INFO_META + "}}"
        )  # fmt: skip
    else:
        text = head + '"tools":' + listing + "}}"
    payload = wire_text(text)  # a listing keeps an upstream's lone surrogates escaped, never a 500
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
