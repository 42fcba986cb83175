"""An upstream's requests for input at 2026-07-28: ``input_required`` relayed with a sealed state.

A 2026-07-28 upstream that needs input mid-call answers ``input_required`` with ``inputRequests``
(elicitation, sampling) and its own ``requestState``. The gateway relays it to a 2026-07-28 client
that declared the capabilities those requests need (in ``_meta``), on the direct surface, as its
own ``input_required``: the upstream's requests (checked, see ``foldgate.upstream.relay``) and a
``requestState`` sealed by the gateway (``foldgate.auth.request_state``: the upstream's state inside,
bound to the caller, the tool and its arguments, with an expiry). The client's retry carries
``inputResponses`` and that state back; the gateway opens it (refusing anything it did not seal for
this caller and call, with -32602) and sends the upstream the responses and the upstream's own state.

A handshake-era client that takes the requests on its call's stream (``foldgate serve``,
``foldgate.edge.streaming``) is asked them there instead, and the call sent again with its replies
and the upstream's state (``foldgate.upstream.relay.Relay.answer_input_required``). A 2026-07-28
upstream is told exactly the capabilities for input a 2026-07-28 client declared (none when it
declared none: an upstream that needs one refuses with -32021 and its ``requiredCapabilities``, which
reach the client unchanged). Anything else (a declared capability this path cannot carry: the Lambda
path for an older client, another surface) never gets ``input_required``: the call ends in a tool
error naming what the upstream asked for (``upstream_input_required``), and nothing waits.

The sealing key is derived from the key the activity log's argument digests use, itself derived
from the stack's token secret (shared by every instance); without a token secret it is a random key
of this process, so a state then opens only on the instance that sealed it.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Mapping
from typing import Any, Final

from foldgate.auth.request_state import StateSealer, call_binding
from foldgate.edge.elicitation import input_methods
from foldgate.edge.jsonrpc import CLIENT_CAPABILITIES_META
from foldgate.edge.protocol import MODERN_PROTOCOL_VERSIONS
from foldgate.model.principal import Principal
from foldgate.serve.gateway import Gateway
from foldgate.upstream.relay import INPUT_METHODS, LOG_LEVEL_META, Ask, Notify, Relay

__all__ = ["call_relay", "prompt_target", "relayed_input_required", "sealer_for"]

_PROCESS_KEY: Final = secrets.token_bytes(32)
_KEY_CHARS: Final = 200


@functools.lru_cache(maxsize=4)
def _sealer(secret: bytes) -> StateSealer:
    return StateSealer(secret)


def sealer_for(gateway: Gateway) -> StateSealer:
    """The sealer of this gateway's states (see the module doc for its key)."""
    key = gateway.caller.arguments_key
    return _sealer(key() if key is not None else _PROCESS_KEY)


def _declared(params: Mapping[str, Any]) -> frozenset[str]:
    meta = params.get("_meta")
    return input_methods(meta.get(CLIENT_CAPABILITIES_META)) if isinstance(meta, Mapping) else frozenset()


def _log_level(meta: Any) -> str | None:
    level = meta.get(LOG_LEVEL_META) if isinstance(meta, Mapping) else None
    return level if isinstance(level, str) else None


def call_relay(
    gateway: Gateway,
    principal: Principal,
    surface: str,
    version: str,
    params: Mapping[str, Any],
    *,
    notify: Notify | None = None,
    ask: Ask | None = None,
    asks: frozenset[str] = frozenset(),
    target: str | None = None,
) -> Relay:
    """The relay of one ``tools/call``: where progress and logs go (``notify``, with the client's
    progress token), which requests for input the client takes on its stream (``ask``, ``asks``) or
    as ``input_required``, and, for a retry carrying a sealed ``requestState``, what goes back to the
    upstream. Raises InvalidStateError for a state this gateway did not seal for this call.
    ``target`` names what is called when it is not the tool ``params["name"]`` (see :func:`prompt_target`)."""
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, Mapping) else None
    modern = version in MODERN_PROTOCOL_VERSIONS
    declared = _declared(params) if modern else None
    relay = Relay(
        notify=notify,
        progress_token=token if isinstance(token, str | int) and not isinstance(token, bool) else None,
        ask=ask,
        asks=asks,
        input_required=declared if declared is not None and surface == "direct" else frozenset(),
        declared=declared,
        # A handshake-era client hears every level unless it said otherwise (logging/setLevel, which
        # the stateless edge does not keep); a 2026-07-28 client names its level per request.
        log_level=_log_level(meta) if modern else "debug",
    )
    if modern and "requestState" in params:
        name = target if target is not None else str(params.get("name"))
        binding = call_binding(principal.stamp, name, params.get("arguments"))
        claims = sealer_for(gateway).open(params.get("requestState"), binding)
        resume: dict[str, Any] = {"inputResponses": dict(params.get("inputResponses") or {})}
        if isinstance(claims.get("s"), str):
            resume["requestState"] = claims["s"]
        relay.resume = resume
    return relay


def prompt_target(name: str) -> str:
    """What a prompt's state is bound to: never the same as a tool's of the same name."""
    return f"prompts/get {name}"


def relayed_input_required(
    gateway: Gateway, principal: Principal, name: str, arguments: Any, result: Mapping[str, Any]
) -> dict[str, Any]:
    """The client's ``input_required`` for an upstream's (which the relay let through): the
    upstream's requests, each rebuilt from its method and params, and a sealed state of the gateway's."""
    requests: dict[str, Any] = {}
    raw = result.get("inputRequests")
    for key, value in raw.items() if isinstance(raw, Mapping) else ():
        if (
            not isinstance(key, str)
            or not isinstance(value, Mapping)
            or value.get("method") not in INPUT_METHODS
        ):
            continue
        params = value.get("params")
        params = {k: v for k, v in params.items() if k != "_meta"} if isinstance(params, Mapping) else {}
        requests[key[:_KEY_CHARS]] = {"method": value["method"], "params": params}
    upstream_state = result.get("requestState")
    claims = {"s": upstream_state} if isinstance(upstream_state, str) else {}
    binding = call_binding(principal.stamp, name, arguments)
    state = sealer_for(gateway).seal(claims, binding)
    return {"inputRequests": requests, "requestState": state, "resultType": "input_required"}
