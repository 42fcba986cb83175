"""The MCP server side, built on the SDK's low-level Server (kept behind this module).

One SDK Server serves every tenant and surface: the HTTP layer sets the caller's tenant and surface
in a context variable before delegating, and the handlers read it.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel, ValidationError

from foldgate import __version__
from foldgate.auth.request_state import InvalidStateError
from foldgate.edge.elicitation import elicitation_for
from foldgate.edge.input_relay import call_relay, prompt_target, relayed_input_required
from foldgate.edge.jsonrpc import CLIENT_CAPABILITIES_META
from foldgate.edge.mcp_offerings import offering_handlers, set_logging_level
from foldgate.edge.protocol import SERVER_NAME
from foldgate.errors import UpstreamError, UpstreamProtocolError
from foldgate.model.listing import instructions_text
from foldgate.model.principal import Principal
from foldgate.serve.consent import collecting
from foldgate.serve.gateway import Gateway
from foldgate.serve.offerings import Offered
from foldgate.serve.recording import current
from foldgate.serve.results import error_result
from foldgate.upstream.relay import relaying

__all__ = ["RequestScope", "build_mcp_server", "current_scope"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RequestScope:
    """Who is calling and on which surface."""

    principal: Principal
    surface: str = "direct"


current_scope: contextvars.ContextVar[RequestScope | None] = contextvars.ContextVar(
    "foldgate_scope", default=None
)


class _GatewayServer(Server[Any]):
    """A Server whose instructions are the calling tenant's (the SDK reads them per initialize)."""

    def __init__(self, gateway: Gateway, **kwargs: Any) -> None:
        self._gateway = gateway
        super().__init__(SERVER_NAME, version=__version__, **kwargs)

    @property
    def instructions(self) -> str | None:
        scope = current_scope.get()
        if scope is None:
            return instructions_text(None)
        try:
            return self._gateway.instructions(scope.principal, scope.surface)
        except Exception:  # an unknown tenant still gets the generic text, never an error here
            return instructions_text(None)

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        pass  # per tenant, see the getter

    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        """The SDK's capabilities from the registered handlers, minus prompts, resources and
        completions when the calling tenant and surface have none to serve."""
        caps = super().get_capabilities(*args, **kwargs)
        scope = current_scope.get()
        try:
            offered = self._gateway.offerings(scope.principal, scope.surface) if scope is not None else None
        except Exception:  # an unknown tenant: it has nothing to serve, never an error here
            offered = None
        update: dict[str, Any] = {}
        if offered is None or not offered.prompts:
            update["prompts"] = None
        if offered is None or not (offered.resources or offered.templates):
            update["resources"] = None
        if offered is None or not (offered.prompts or offered.templates):
            update["completions"] = None
        return caps.model_copy(update=update)


def _scope() -> RequestScope:
    scope = current_scope.get()
    if scope is None:
        raise RuntimeError("MCP request outside an HTTP request scope")
    return scope


def _wire_params(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
    """The call's params as on the wire: ``_meta`` (2026-07-28 client capabilities, read from the
    session, which the SDK fills from the envelope) and ``inputResponses``."""
    wire: dict[str, Any] = {}
    caps = ctx.session.client_capabilities
    if caps is not None:
        declared = caps.model_dump(by_alias=True, exclude_none=True, mode="json")
        wire["_meta"] = {CLIENT_CAPABILITIES_META: declared}
    if params.input_responses:
        wire["inputResponses"] = dict(params.input_responses)
    return wire


def _call(params: types.CallToolRequestParams, wire: dict[str, Any]) -> dict[str, Any]:
    """The call as the input relay reads it: name, arguments, ``_meta``, and a retry's state."""
    call = {**wire, "name": params.name, "arguments": params.arguments}
    if params.request_state is not None:
        call["requestState"] = params.request_state
    if params.input_responses:
        call["inputResponses"] = _dumped(params.input_responses)
    return call


def _relaying_prompts(gateway: Gateway, get_prompt: Any) -> Any:
    """``prompts/get`` with the upstream's requests for input relayed as a tool call's are: a
    2026-07-28 ``input_required`` sealed for the caller and prompt, a retry's state opened first."""

    async def relayed(
        ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        scope = _scope()
        target = prompt_target(params.name)
        call: dict[str, Any] = {"name": params.name, "arguments": params.arguments or {}}
        caps = ctx.session.client_capabilities
        if caps is not None:
            declared = caps.model_dump(by_alias=True, exclude_none=True, mode="json")
            call["_meta"] = {CLIENT_CAPABILITIES_META: declared}
        if params.request_state is not None:
            call["requestState"] = params.request_state
        if params.input_responses:
            call["inputResponses"] = _dumped(params.input_responses)
        try:
            relay = call_relay(
                gateway, scope.principal, scope.surface, ctx.protocol_version, call, target=target
            )
        except InvalidStateError as exc:
            raise MCPError(INVALID_PARAMS, exc.message) from None
        with relaying(relay):
            result: types.GetPromptResult | types.InputRequiredResult = await get_prompt(ctx, params)
        if isinstance(result, types.InputRequiredResult):
            raw = result.model_dump(by_alias=True, exclude_none=True, mode="json")
            sealed = relayed_input_required(gateway, scope.principal, target, call["arguments"], raw)
            return types.InputRequiredResult.model_validate(sealed)
        return result

    return relayed


def _dumped(responses: Mapping[str, Any]) -> dict[str, Any]:
    """Input responses as on the wire (the SDK parsed each into its model)."""
    return {
        key: value.model_dump(by_alias=True, exclude_none=True, mode="json")
        if isinstance(value, BaseModel)
        else value
        for key, value in responses.items()
    }


def build_mcp_server(gateway: Gateway) -> Server[Any]:
    """The SDK server with foldgate's handlers."""
    listings: dict[str, list[types.Tool]] = {}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        # The HTTP layer answers plain tools/list from pre-rendered text; this path serves the rest.
        scope = _scope()
        listing = gateway.listing_json(scope.principal, scope.surface)
        tools = listings.get(listing)  # keyed by the text itself (its hash is cached on the str)
        if tools is None:
            tools = []
            for entry in json.loads(listing):
                try:
                    tools.append(types.Tool.model_validate(entry))
                except ValidationError:
                    log.warning("tool %s is not representable by the MCP types; skipped", entry.get("name"))
            if len(listings) > 64:  # old views' listings are garbage
                listings.clear()
            listings[listing] = tools
        ttl, cache_scope = gateway.list_hint()
        return types.ListToolsResult(tools=tools, ttl_ms=ttl, cache_scope=cache_scope)

    def offered() -> Offered:
        scope = _scope()
        return gateway.offerings(scope.principal, scope.surface)

    async def call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        scope = _scope()
        observed = current()
        if observed is not None:
            observed.work("tools/call", params.name)
        wire = _wire_params(ctx, params)
        try:
            # A retry's sealed requestState is opened (or refused) before anything runs (edge/input_relay.py).
            relay = call_relay(
                gateway, scope.principal, scope.surface, ctx.protocol_version, _call(params, wire)
            )
        except InvalidStateError as exc:
            raise MCPError(INVALID_PARAMS, exc.message) from None
        try:
            with collecting() as links, relaying(relay):
                result = await gateway.call(scope.principal, params.name, params.arguments, scope.surface)
        except UpstreamProtocolError as exc:
            # An upstream's error the client must act on (a capability to declare): its code and data.
            if observed is not None:
                observed.failed(exc)
            raise MCPError(exc.rpc_code, exc.message, exc.rpc_data) from None
        except BaseException as exc:
            if observed is not None:
                observed.failed(exc)
            raise
        if result.get("resultType") == "input_required" and relay.input_required:
            # Only an upstream's, which the call's relay let through for this client.
            relayed = relayed_input_required(gateway, scope.principal, params.name, params.arguments, result)
            return types.InputRequiredResult.model_validate(relayed)
        # A per_user upstream the caller has not connected: URL-mode elicitation where the client takes it.
        asked = elicitation_for(result, links, ctx.protocol_version, wire, scope.principal) if links else None
        if asked is not None and asked[0] == "error":
            data = asked[1]["data"]["elicitations"]
            raise UrlElicitationRequiredError(
                [types.ElicitRequestURLParams.model_validate(e) for e in data], asked[1]["message"]
            )
        if asked is not None:
            return types.InputRequiredResult.model_validate(asked[1])
        try:
            return types.CallToolResult.model_validate(result)
        except ValidationError as exc:
            if observed is not None:
                observed.overruled("upstream_error", "malformed_result")
            err = UpstreamError(
                f"{params.name}: the upstream returned a malformed result: {exc.errors()[0]['msg']}"
            )
            return types.CallToolResult.model_validate(error_result(err))

    handlers = offering_handlers(gateway, offered)
    handlers["on_get_prompt"] = _relaying_prompts(gateway, handlers["on_get_prompt"])
    server = _GatewayServer(
        gateway,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        # Without this, 2026-07-28 calls would re-run the list handler per call to check Mcp-Param
        # headers; the endpoint checks them before the SDK runs, from what the index read
        # (edge/param_headers.py), so there is nothing left to check here.
        get_tool_input_schema=lambda name: None,
        **handlers,
    )
    # Registered directly: the constructor argument warns that logging is deprecated in 2026-07-28,
    # but handshake-era clients (and the conformance suite) still send logging/setLevel.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_logging_level)
    return server
