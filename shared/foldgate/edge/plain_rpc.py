"""Answer the plain requests (see edge/jsonrpc.py) as the SDK would, without importing it.

The SDK (mcp 2.3) shapes every spec result through its per-version wire models: keys come out in
alphabetical order, ``None`` fields are dropped, 2026-07-28 results carry ``resultType`` and a
``serverInfo`` stamp in ``_meta`` (appended last). The results here are written out in that shape
directly. A differential test sends each request through both paths and compares the JSON.

Tool results: the gateway returns CallToolResult wire dicts. The common shape (text content,
``isError``, optional ``structuredContent``, and what a 2026-07-28 upstream adds: ``resultType``
"complete" and a ``_meta`` object) is known to pass the SDK's validation unchanged and is written
directly. Any other shape (images, resources, unknown keys, or something malformed
from an upstream) goes through the SDK's own types (``mcp_types``, imported on that first unusual
result only): validated as the SDK's ``call_tool`` handler does -- a malformed result becomes an error
result -- and sieved for the request's protocol version. Importing ``mcp_types`` at init instead
would add ~0.3-1 s to every cold start for results most tools never return, so it stays lazy.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from starlette.types import Send

from foldgate import __version__
from foldgate.edge.elicitation import elicitation_for
from foldgate.edge.input_relay import relayed_input_required
from foldgate.edge.jsonrpc import PlainRequest
from foldgate.edge.observe import note_client
from foldgate.edge.protocol import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    SERVER_NAME,
    modern_error_status,
)
from foldgate.errors import UpstreamError, UpstreamProtocolError
from foldgate.model.jsonutil import wire
from foldgate.model.principal import Principal
from foldgate.serve.consent import collecting
from foldgate.serve.gateway import Gateway
from foldgate.serve.recording import current
from foldgate.serve.results import error_result
from foldgate.telemetry.tracing import span
from foldgate.upstream.relay import current_relay

__all__ = ["answer"]

log = logging.getLogger(__name__)

SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"


def _capabilities(gateway: Gateway, principal: Principal, surface: str) -> dict[str, Any]:
    """What the SDK server advertises to this caller, in the SDK's key order: logging always; prompts,
    resources and completions only when the caller has some to serve (edge/mcp_server.py's
    ``get_capabilities``). The differential tests in tests/unit/edge/test_plain_rpc.py keep both equal."""
    try:
        offered = gateway.offerings(principal, surface)
    except Exception:  # an unknown tenant has nothing to serve, as on the SDK path
        offered = None
    prompts = offered is not None and bool(offered.prompts)
    resources = offered is not None and bool(offered.resources or offered.templates)
    completions = offered is not None and bool(offered.prompts or offered.templates)
    caps: dict[str, Any] = {"logging": {}}
    if prompts:
        caps["prompts"] = {"listChanged": False}
    if resources:
        caps["resources"] = {"subscribe": False, "listChanged": False}
    caps["tools"] = {"listChanged": False}
    if completions:
        caps["completions"] = {}
    return caps


_SERVER_INFO: Final = {"name": SERVER_NAME, "version": __version__}
_LATEST_HANDSHAKE: Final = HANDSHAKE_PROTOCOL_VERSIONS[-1]


async def answer(req: PlainRequest, gateway: Gateway, principal: Principal, surface: str, send: Send) -> None:
    """Answer one plain request (the caller has authenticated it and checked its tenant)."""
    if req.method == "notifications/initialized":
        await _send(send, 202, b"")
        return
    try:
        with collecting() as links:
            result = await _result(req, gateway, principal, surface)
        # A per_user upstream the caller has not connected: URL-mode elicitation where the client takes it.
        asked = elicitation_for(result, links, req.version, req.params, principal) if links else None
    except UpstreamProtocolError as exc:
        # An upstream's error the client must act on (a capability to declare): its code and data.
        error = {"code": exc.rpc_code, "message": exc.message}
        if exc.rpc_data is not None:
            error["data"] = exc.rpc_data
        status = modern_error_status(exc.rpc_code) if req.modern else 200
        await _send(send, status, _dumps({"jsonrpc": "2.0", "id": req.rid, "error": error}))
        return
    except Exception:  # a gateway bug must not become a 500 without a JSON-RPC answer
        log.exception("plain %s failed", req.method)
        error = {"code": -32603, "message": "Internal error"}
        await _send(send, 200, _dumps({"jsonrpc": "2.0", "id": req.rid, "error": error}))
        return
    if asked is not None and asked[0] == "error":
        await _send(send, 200, _dumps({"jsonrpc": "2.0", "id": req.rid, "error": asked[1]}))
        return
    if asked is not None:
        result = asked[1]
    with span("foldgate.encode"):
        if req.modern:
            result = _modern_envelope(result)
        payload = _dumps({"jsonrpc": "2.0", "id": req.rid, "result": result})
    await _send(send, 200, payload)


async def _result(req: PlainRequest, gateway: Gateway, principal: Principal, surface: str) -> dict[str, Any]:
    if req.method == "ping":
        return {}
    if req.method == "initialize":
        requested = req.params["protocolVersion"]
        negotiated = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else _LATEST_HANDSHAKE
        return {
            "capabilities": _capabilities(gateway, principal, surface),
            "instructions": _instructions(gateway, principal, surface),
            "protocolVersion": negotiated,
            "serverInfo": dict(_SERVER_INFO),
        }
    if req.method == "server/discover":
        return {
            "cacheScope": "private",
            "capabilities": _capabilities(gateway, principal, surface),
            "instructions": _instructions(gateway, principal, surface),
            "supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
            "ttlMs": 0,
        }
    name = req.params["name"]
    observed = current()
    if observed is not None:
        observed.work("tools/call", name)
        if req.modern:
            note_client(req.params)
    try:
        result = await gateway.call(principal, name, req.params.get("arguments"), surface)
    except BaseException as exc:
        if observed is not None:
            observed.failed(exc)
        raise
    relay = current_relay()
    if req.modern and result.get("resultType") == "input_required" and relay and relay.input_required:
        # Only an upstream's, which the call's relay let through for this client (edge/input_relay.py).
        return relayed_input_required(gateway, principal, name, req.params.get("arguments"), result)
    with span("foldgate.encode"):
        plain = _plain_result(result)
        return plain if plain is not None else _sdk_result(name, result, req.version)


def _instructions(gateway: Gateway, principal: Principal, surface: str) -> str:
    try:
        return gateway.instructions(principal, surface)
    except Exception:  # as the SDK glue: an unknown tenant still gets the generic text, never an error
        # Imported here to keep the model's text helpers off the plain path's import list.
        from foldgate.model.listing import instructions_text

        return instructions_text(None)


_COMMON_KEYS: Final = frozenset({"content", "isError", "structuredContent", "resultType", "_meta"})


def _plain_result(result: Any) -> dict[str, Any] | None:
    """The wire form of a result in the common shape, or None when the SDK's types must judge it."""
    if not isinstance(result, dict) or not set(result) <= _COMMON_KEYS:
        return None
    # What a 2026-07-28 upstream adds to every result: resultType "complete" (the envelope's default,
    # and absent before 2026) and a _meta object (its serverInfo stamp). A None at the top of _meta is
    # kept before 2026 and dropped at 2026 by the SDK's types, so such a _meta is theirs to judge.
    meta = result.get("_meta")
    if result.get("resultType", "complete") != "complete":
        return None
    if "_meta" in result and (not isinstance(meta, dict) or None in meta.values()):
        return None
    content = result.get("content")
    # A missing isError is the SDK model's default, false (server-everything leaves it out).
    is_error = result.get("isError", False)
    if not isinstance(content, list) or not isinstance(is_error, bool):
        return None
    items = []
    for item in content:
        if not isinstance(item, dict) or set(item) != {"type", "text"} or item["type"] != "text":
            return None
        if not isinstance(item["text"], str):
            return None
        items.append({"text": item["text"], "type": "text"})
    out: dict[str, Any] = {"_meta": meta} if "_meta" in result else {}
    out.update(content=items, isError=is_error)
    if "structuredContent" in result:
        structured = result["structuredContent"]
        if not isinstance(structured, dict):
            return None
        out["structuredContent"] = structured
    return out


def _sdk_result(name: str, result: Any, version: str) -> dict[str, Any]:
    """An unusual result, validated and sieved by the SDK's types exactly as its server would."""
    # Lazy: only results outside the common shape pay the SDK types' import (see the module docstring).
    import mcp_types as types
    from mcp_types import methods
    from pydantic import ValidationError

    try:
        model = types.CallToolResult.model_validate(result)
        dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
        shaped: dict[str, Any] = methods.serialize_server_result("tools/call", version, dumped)
    except ValidationError as exc:
        # The SDK's handler does this for what its model rejects; what only the per-version wire model
        # rejects (structuredContent not an object) the SDK answers with a JSON-RPC internal error.
        # Both are the upstream's fault, so both become an error result here.
        observed = current()
        if observed is not None:
            observed.overruled("upstream_error", "malformed_result")
        err = UpstreamError(f"{name}: the upstream returned a malformed result: {exc.errors()[0]['msg']}")
        model = types.CallToolResult.model_validate(error_result(err))
        dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
        shaped = methods.serialize_server_result("tools/call", version, dumped)
    return shaped


def _modern_envelope(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result: ``resultType`` defaulted, keys sorted (``_meta`` sorts first, as in the
    SDK's wire dump), and the ``serverInfo`` stamp: appended last when the result has no ``_meta``,
    merged into an object ``_meta`` in place, a result's own stamp or non-object ``_meta`` left alone."""
    out = dict(sorted({"resultType": "complete", **result}.items()))
    meta = out.get("_meta")
    if meta is None:
        out.pop("_meta", None)
        out["_meta"] = {SERVER_INFO_KEY: dict(_SERVER_INFO)}
    elif isinstance(meta, dict) and meta.get(SERVER_INFO_KEY) is None:
        out["_meta"] = {**meta, SERVER_INFO_KEY: dict(_SERVER_INFO)}
    return out


def _dumps(message: dict[str, Any]) -> bytes:
    return wire(message)  # lone surrogates escaped (model/jsonutil.py): never an encode error


async def _send(send: Send, status: int, payload: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    # The HTTP server's share (its response framing and the socket write), a stage of its own.
    with span("foldgate.send"):
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
