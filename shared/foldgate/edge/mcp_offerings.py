"""SDK handlers for prompts, resources, resource templates, completion and logging/setLevel.

They map :class:`foldgate.serve.offerings.Offered` to the MCP types and foldgate's errors to JSON-RPC
errors: an unknown or invisible resource is resource-not-found (``-32002`` up to 2025-11-25, ``-32602``
from 2026-07-28 per SEP-2164) with ``data.uri`` the URI the caller sent; an unknown or invisible prompt
``-32602``; both carry only what the caller sent, so the two never differ. An upstream that fails is
``-32000`` with foldgate's message; an upstream's own JSON-RPC error passes through, except its
resource-not-found, which is answered as foldgate's own (its message and data could name the upstream's
raw URI, which a prefixed server never publishes).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from foldgate.edge.protocol import MODERN_PROTOCOL_VERSIONS
from foldgate.errors import (
    FoldgateError,
    NotFoundError,
    ResultBlockedError,
    UpstreamError,
    UpstreamTimeoutError,
)
from foldgate.model.offerings import Kind
from foldgate.serve.gateway import Gateway
from foldgate.serve.offerings import Offered
from foldgate.serve.recording import current

__all__ = ["RESOURCE_NOT_FOUND", "UPSTREAM_FAILED", "offering_handlers"]

log = logging.getLogger(__name__)

RESOURCE_NOT_FOUND = -32002
# SEP-2164 (2026-07-28): a resource that does not exist is invalid params, with the URI in data.
_MODERN_NOT_FOUND: Final = types.INVALID_PARAMS
# An upstream that could not be reached or timed out: a server error (-32000..-32099), not the SDK's
# internal error (-32603), which means a bug in the gateway.
UPSTREAM_FAILED = -32000
_M = TypeVar("_M", bound=BaseModel)


def _entries(model: type[_M], entries: list[dict[str, Any]]) -> list[_M]:
    out = []
    for entry in entries:
        try:
            out.append(model.model_validate(entry))
        except ValidationError:  # checked at index time; a published identity could still break it
            log.warning("%s entry not representable by the MCP types; skipped", model.__name__)
    return out


async def _observed(run: Awaitable[dict[str, Any]], method: str, name: str) -> dict[str, Any]:
    """``run``, observed for the activity log as ``method`` on ``name`` with how it ended."""
    observed = current()
    if observed is not None:
        observed.work(method, name)
    try:
        result = await run
    except BaseException as exc:
        if observed is not None:
            observed.failed(exc)
        raise
    if observed is not None:
        observed.ended("ok")
    return result


async def _proxied(run: Awaitable[dict[str, Any]], not_found: int) -> dict[str, Any]:
    try:
        return await run
    except NotFoundError as exc:
        raise MCPError(not_found, exc.message) from None
    except UpstreamTimeoutError as exc:
        # As on a tool call: the bound that ended the wait and what to do, set by foldgate itself.
        data: dict[str, Any] = {
            "error_type": exc.code,
            **{k: exc.details[k] for k in ("timeout_s", "hint") if k in exc.details},
        }
        raise MCPError(UPSTREAM_FAILED, exc.message, data) from None
    except UpstreamError as exc:
        raise MCPError(UPSTREAM_FAILED, exc.message) from None
    except ResultBlockedError as exc:
        # The upstream answered and the tenant's guard withheld it: not the caller's fault, and never
        # mistaken for a not-found (whose code is the same -32602 from 2026-07-28).
        raise MCPError(UPSTREAM_FAILED, exc.message, {"error_type": exc.code}) from None
    except FoldgateError as exc:
        raise MCPError(types.INVALID_PARAMS, exc.message) from None


def offering_handlers(gateway: Gateway, offered: Callable[[], Offered]) -> dict[str, Any]:
    """``on_*`` keyword arguments for the SDK server; ``offered`` gives the current caller's view."""

    def hinted(kind: Kind, model: type[_M]) -> tuple[list[_M], dict[str, Any]]:
        ttl, scope = gateway.list_hint()
        return _entries(model, offered().listing(kind)), {"ttl_ms": ttl, "cache_scope": scope}

    async def list_resources(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        items, hint = hinted("resource", types.Resource)
        return types.ListResourcesResult(resources=items, **hint)

    async def list_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        items, hint = hinted("template", types.ResourceTemplate)
        return types.ListResourceTemplatesResult(resource_templates=items, **hint)

    async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        items, hint = hinted("prompt", types.Prompt)
        return types.ListPromptsResult(prompts=items, **hint)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        read = _observed(offered().read_resource(gateway.upstream, params.uri), "resources/read", params.uri)
        modern = getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS
        not_found = _MODERN_NOT_FOUND if modern else RESOURCE_NOT_FOUND
        try:
            raw = await _proxied(read, not_found)
        except MCPError as exc:
            if exc.error.code not in (RESOURCE_NOT_FOUND, _MODERN_NOT_FOUND):
                raise
            # Ours or the upstream's (whose message and data may hold its own URI): the one answer,
            # naming the URI exactly as the caller sent it.
            raise MCPError(not_found, f"Resource not found: {params.uri}", {"uri": params.uri}) from None
        # Read live: fresh only as long as the upstream says (0 when it says nothing), and private always,
        # since whether the caller may read it at all depends on their scope.
        return types.ReadResourceResult.model_validate({"ttlMs": 0, **raw, "cacheScope": "private"})

    async def get_prompt(
        ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        run = _observed(
            offered().get_prompt(gateway.upstream, params.name, params.arguments), "prompts/get", params.name
        )
        result = await _proxied(run, types.INVALID_PARAMS)
        if result.get("resultType") == "input_required":
            # Only one the request's relay took; the SDK glue seals it (edge/input_relay.py).
            return types.InputRequiredResult.model_validate(result)
        return types.GetPromptResult.model_validate(result)

    async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref.model_dump(by_alias=True, mode="json", exclude_none=True)
        argument = params.argument.model_dump(by_alias=True, mode="json", exclude_none=True)
        context = (
            params.context.model_dump(by_alias=True, mode="json", exclude_none=True)
            if params.context
            else None
        )
        run = offered().complete(gateway.upstream, ref, argument, context)
        return types.CompleteResult.model_validate(await _proxied(run, types.INVALID_PARAMS))

    return {
        "on_list_resources": list_resources,
        "on_list_resource_templates": list_templates,
        "on_read_resource": read_resource,
        "on_list_prompts": list_prompts,
        "on_get_prompt": get_prompt,
        "on_completion": complete,
    }


async def set_logging_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    """Accepted and ignored: the gateway is stateless and sends no log notifications to remember a
    level for (upstream log messages are not relayed)."""
    return types.EmptyResult()
