"""The MCP endpoints' half of the activity log: one observation per request, one event when it did work.

:class:`~foldgate.edge.endpoint.McpEndpoint` opens an observation once it knows the caller
(:func:`open_observation`, with what only the HTTP request tells: the request id, the client's name,
version and protocol version), counts the bytes it sends through :func:`counting`, and when the
answer is out emits it (:func:`finish`). A request refused before it reaches the gateway (a
credential that does not verify, a rate limit, a token store that cannot answer) is an event too when
it asked for work (:func:`record_refusal`).

Where the client comes from, per protocol era, on every path (the SDK-free plain path, the SDK's,
and the stateless Lambda path, which are the same code): a 2026-07-28 request carries its
``clientInfo`` in ``params._meta`` and its version in ``Mcp-Protocol-Version``; a handshake-era
request carries only the header (from 2025-06-18), so the name and version are the ones the
credential's latest ``initialize`` declared to this process (:data:`foldgate.edge.elicitation.CLIENTS`),
empty when another instance served it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from starlette.requests import Request
from starlette.types import Message, Scope, Send

from foldgate.edge.elicitation import CLIENTS, client_info
from foldgate.edge.guard import request_id
from foldgate.edge.jsonrpc import CLIENT_INFO_META, DEFAULT_VERSION
from foldgate.edge.protocol import MODERN_PROTOCOL_VERSIONS
from foldgate.model.activity import Outcome, Recorder
from foldgate.model.principal import Principal
from foldgate.model.rpc_body import RpcBody
from foldgate.serve.recording import WORK_METHODS, Observation, current

__all__ = [
    "counting",
    "finish",
    "note_client",
    "open_observation",
    "record_refusal",
    "surface_label",
    "work_of",
]

# A refused request's body is parsed (for the tool it named) only up to this size; a bigger one is
# recorded by its method alone, found by a substring search, so a flood of refused megabyte bodies
# costs no JSON parsing.
_PARSE_REFUSED_BYTES: Final = 65_536
_SNIFF: Final = tuple((m, f'"{m}"'.encode()) for m in ("tools/call", "resources/read", "prompts/get"))
_MAX_HEADER: Final = 100


def surface_label(path: str) -> str:
    """The event's ``surface``: the endpoint's path without its slash (``mcp``, ``mcp/call``, ...)."""
    return path.lstrip("/")


def open_observation(
    recorder: Recorder,
    scope: Scope,
    request: Request,
    principal: Principal,
    path: str,
    started: float,
    body: RpcBody,
) -> Observation:
    """The observation of an authenticated MCP request, with the caller facts known before it runs
    (so that the calls of a code run, emitted while it runs, carry them). Nothing is recorded unless
    the request does work."""
    observation = Observation(
        recorder, principal.tenant, surface_label(path), principal=principal.who, started=started,
        request_ids=lambda: request_id(scope), request_bytes=len(body),
    )  # fmt: skip
    header = request.headers.get("mcp-protocol-version")
    if header in MODERN_PROTOCOL_VERSIONS:
        observation.protocol = header
    else:
        name, version, asked = CLIENTS.client(principal.stamp)
        observation.client_name, observation.client_version = name, version
        observation.protocol = header[:_MAX_HEADER] if header else asked or DEFAULT_VERSION
    return observation


def note_client(params: Any) -> None:
    """A 2026-07-28 request's client, from its ``params._meta`` (the plain path has them parsed)."""
    observation = current()
    meta = params.get("_meta") if isinstance(params, dict) else None
    if observation is not None and isinstance(meta, dict):
        observation.client_name, observation.client_version = client_info(meta.get(CLIENT_INFO_META))


def counting(observation: Observation, send: Send) -> Send:
    """``send`` that adds every body byte sent to the observation's ``response_bytes``."""

    async def counted(message: Message) -> None:
        if message["type"] == "http.response.body":
            observation.response_bytes += len(message.get("body", b""))
        await send(message)

    return counted


def _modern_client(body: RpcBody) -> tuple[str, str]:
    msg = body.message
    params = msg.get("params") if isinstance(msg, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return client_info(meta.get(CLIENT_INFO_META)) if isinstance(meta, dict) else ("", "")


def finish(observation: Observation, body: RpcBody) -> None:
    """Emit the request's event when it did work (after its answer was sent; never raises)."""
    if observation.emitted or observation.suppressed or observation.method not in WORK_METHODS:
        return
    if observation.protocol in MODERN_PROTOCOL_VERSIONS and not observation.client_name:
        # The SDK answered it: its client is read again, only for a request that did work.
        observation.client_name, observation.client_version = _modern_client(body)
    observation.emit()


def work_of(body: RpcBody) -> tuple[str, str] | None:
    """(method, name) when a request body asks for work, else None; bounded (see the constant)."""
    found = next((method for method, quoted in _SNIFF if body.mentions(quoted)), None)
    if found is None:
        return None
    if len(body) > _PARSE_REFUSED_BYTES:
        return found, ""
    msg = body.message
    if not isinstance(msg, dict) or msg.get("method") not in WORK_METHODS:
        return None
    params = msg.get("params")
    key = "uri" if msg["method"] == "resources/read" else "name"
    name = params.get(key) if isinstance(params, dict) else ""
    return str(msg["method"]), name if isinstance(name, str) else ""


def record_refusal(
    recorder: Recorder,
    scope: Scope,
    request: Request,
    body: RpcBody,
    path: str,
    started: float,
    refused: tuple[Outcome, str, Principal | None, str],
    named: Callable[[str, str], tuple[str, str] | None] | None = None,
) -> None:
    """The event of a request refused before the gateway, when it asked for work. ``refused`` is
    (outcome, detail, the caller when known, the tenant to record it under otherwise); ``named``
    turns a tenant's published tool name into its (server, upstream tool name), so a refused call
    is named as a served one is (an unknown name is kept as sent, with no server).

    A source address over its own limit is not recorded: nobody is known yet, and an anonymous flood
    must not turn into as many store writes. The refusals that brought it there were (at most the
    source limit's worth per address), and a known caller's own rate limit is.
    """
    outcome, detail, principal, tenant = refused
    if outcome == "rate_limited" and principal is None:
        return
    work = work_of(body)
    if work is None:
        return
    observation = Observation(
        recorder, principal.tenant if principal is not None else tenant, surface_label(path),
        principal=principal.who if principal is not None else "", started=started,
        request_bytes=len(body),
    )  # fmt: skip
    observation.work(*work)
    if work[0] == "tools/call" and named is not None:
        target = named(observation.tenant, work[1])
        if target is not None:
            observation.target(*target)
    observation.ended(outcome, detail)
    observation.request_id = request_id(scope)
    header = request.headers.get("mcp-protocol-version")
    observation.protocol = header[:_MAX_HEADER] if header else ""
    observation.emit()
