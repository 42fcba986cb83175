"""Recognise the plain JSON-RPC requests the edge answers without the MCP SDK.

A request is *plain* when it is one well-formed JSON-RPC request (or ``notifications/initialized``)
for a method the edge takes over, with params the SDK would accept unchanged and headers that pass
every transport check the SDK would make. Anything else -- a malformed envelope, odd params, an
unknown method, a header mismatch, a Host the DNS-rebinding check would refuse -- is *not* plain and
goes to the SDK, so every error answer (parse error, invalid params, method not found, header
mismatch) stays the SDK's own, byte for byte. Being strict here costs nothing but a slower answer.

Methods taken over, per protocol era (mcp 2.3):

- handshake era (no ``Mcp-Protocol-Version`` header, or a 2024/2025 one): ``initialize``,
  ``notifications/initialized``, ``ping``, ``tools/call``;
- 2026-07-28 stateless: ``server/discover`` and ``tools/call`` (``ping`` and notifications are not
  served there; the SDK answers them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from starlette.requests import Request

from foldgate.edge.protocol import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS, PROTOCOL_META
from foldgate.model.rpc_body import RpcBody

__all__ = [
    "CLIENT_CAPABILITIES_META",
    "DEFAULT_VERSION",
    "UNSERVED_METHODS",
    "PlainRequest",
    "plain_request",
    "unserved_request",
]

CLIENT_CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META: Final = "io.modelcontextprotocol/clientInfo"
# The version a handshake-era request without the header is served at (mcp_types.DEFAULT_NEGOTIATED_VERSION).
DEFAULT_VERSION: Final = "2025-03-26"
_HANDSHAKE_METHODS: Final = frozenset({"initialize", "notifications/initialized", "ping", "tools/call"})
_MODERN_METHODS: Final = frozenset({"server/discover", "tools/call"})
# Methods the stateless edge does not serve, answered -32601 before the SDK runs. subscriptions/listen
# (2026-07-28) is a stream the SDK would hold open reading the request, which the edge has already
# read whole: its replay answers the second receive() with a disconnect, the handler is cancelled and
# no response starts (a bare 500). foldgate advertises no listChanged or subscribe capability, so
# there is nothing a listen stream would carry.
UNSERVED_METHODS: Final = frozenset({"subscriptions/listen"})
_ROUTING_HEADERS: Final = ("mcp-protocol-version", "mcp-method", "mcp-name")
# Client capabilities whose content the plain path passes on as opaque objects (the SDK checks only
# that each is an object, or, for roots, that listChanged is a boolean).
_CLIENT_CAPABILITIES: Final = frozenset({"experimental", "roots", "sampling", "elicitation"})


@dataclass(frozen=True, slots=True)
class PlainRequest:
    """A request the plain path answers: its id (None for a notification), method, params and the
    protocol version it is served at."""

    rid: Any
    method: str
    params: dict[str, Any]
    version: str

    @property
    def modern(self) -> bool:
        """True for the 2026-07-28 stateless era."""
        return self.version in MODERN_PROTOCOL_VERSIONS


def plain_request(body: RpcBody, request: Request) -> PlainRequest | None:
    """The request when the plain path may answer it, else None (the SDK answers)."""
    if "application/json" not in request.headers.get("accept", "").lower():
        return None
    if any(len(request.headers.getlist(h)) > 1 for h in _ROUTING_HEADERS):
        return None
    if any(k.startswith("mcp-param-") for k in request.headers):
        return None
    msg = body.message
    if (
        not isinstance(msg, dict)
        or msg.get("jsonrpc") != "2.0"
        or not set(msg) <= {"jsonrpc", "id", "method", "params"}
    ):
        return None
    method = msg.get("method")
    params = msg.get("params", {})
    if not isinstance(method, str) or not isinstance(params, dict):
        return None
    rid = msg.get("id")
    if method == "notifications/initialized":
        if "id" in msg:
            return None
    elif isinstance(rid, bool) or not isinstance(rid, int | str):
        return None
    version = request.headers.get("mcp-protocol-version")
    if version in MODERN_PROTOCOL_VERSIONS:
        return _modern(rid, method, params, version, request)
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    return _handshake(rid, method, params, version or DEFAULT_VERSION)


def _handshake(rid: Any, method: str, params: dict[str, Any], version: str) -> PlainRequest | None:
    if method not in _HANDSHAKE_METHODS or not _handshake_meta(params):
        return None
    if method == "initialize":
        ok = _initialize_params(params)
    elif method == "tools/call":
        ok = _call_params(params)
    else:
        ok = set(params) <= {"_meta"}
    return PlainRequest(rid, method, params, version) if ok else None


def _modern(
    rid: Any, method: str, params: dict[str, Any], version: str, request: Request
) -> PlainRequest | None:
    if method not in _MODERN_METHODS or request.headers.get("mcp-method") != method:
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict) or meta.get(PROTOCOL_META) != version:
        return None
    if not isinstance(meta.get(CLIENT_CAPABILITIES_META), dict) or not _capabilities(
        meta[CLIENT_CAPABILITIES_META]
    ):
        return None
    info = meta.get(CLIENT_INFO_META)
    if info is not None and not _implementation(info):
        return None
    if "progressToken" in meta and not _token(meta["progressToken"]):
        return None
    if method == "tools/call":
        name = str(params.get("name"))
        # Mcp-Name may be encoded; only a header that equals the name verbatim is taken as plain.
        if not _call_params(params) or request.headers.get("mcp-name") != name or not _header_safe(name):
            return None
    elif not set(params) <= {"_meta"}:
        return None
    return PlainRequest(rid, method, params, version)


def _handshake_meta(params: dict[str, Any]) -> bool:
    """A ``_meta`` the SDK accepts on a handshake-era request (and no modern envelope in it)."""
    meta = params.get("_meta")
    if meta is None:
        return "_meta" not in params
    if not isinstance(meta, dict) or PROTOCOL_META in meta:
        return False
    return "progressToken" not in meta or _token(meta["progressToken"])


def _initialize_params(params: dict[str, Any]) -> bool:
    if not set(params) <= {"protocolVersion", "capabilities", "clientInfo", "_meta"}:
        return False
    caps = params.get("capabilities")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(caps, dict)
        and _capabilities(caps)
        and _implementation(params.get("clientInfo"))
    )


def _call_params(params: dict[str, Any]) -> bool:
    arguments = params.get("arguments")
    return (
        set(params) <= {"name", "arguments", "_meta"}
        and isinstance(params.get("name"), str)
        and (arguments is None or isinstance(arguments, dict))
    )


def _capabilities(caps: dict[str, Any]) -> bool:
    if not set(caps) <= _CLIENT_CAPABILITIES or not all(isinstance(v, dict) for v in caps.values()):
        return False
    roots = caps.get("roots", {})
    if not set(roots) <= {"listChanged"} or not isinstance(roots.get("listChanged", False), bool):
        return False
    experimental = caps.get("experimental", {})
    return all(isinstance(v, dict) for v in experimental.values())


def _implementation(info: Any) -> bool:
    return (
        isinstance(info, dict)
        and set(info) <= {"name", "version", "title"}
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
        and isinstance(info.get("title", ""), str)
    )


def _token(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | str)


def _header_safe(name: str) -> bool:
    """A name that travels verbatim in a header (printable ASCII, no padding, not an encoded form)."""
    return (
        bool(name)
        and name.isascii()
        and name.isprintable()
        and name == name.strip()
        and not name.startswith("=?")
    )


def unserved_request(body: RpcBody) -> tuple[Any, str] | None:
    """(id, method) of a request for one of :data:`UNSERVED_METHODS`, else None (the SDK answers,
    notifications and malformed envelopes included)."""
    if not body.mentions(b"subscriptions/listen"):  # the common case, without decoding the body
        return None
    msg = body.message
    if not isinstance(msg, dict) or msg.get("method") not in UNSERVED_METHODS or "id" not in msg:
        return None
    rid = msg["id"]
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        return None
    return rid, str(msg["method"])
