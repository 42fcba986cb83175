"""Listing an upstream's prompts, resources and resource templates, and the request types the gateway
sends besides ``tools/*`` (the session handling lives in :mod:`foldgate.upstream.client`).

Entries are kept raw (as the upstream sent them) once the MCP types accept them, so nothing unknown is
lost on the way to agents; a rejected entry is skipped and reported, never failing the listing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from foldgate.config.tenant import ServerConfig
from foldgate.errors import UpstreamError

__all__ = ["MAX_PAGES", "Offerings", "list_offerings_on", "request_of"]

MAX_PAGES = 200
_RAW = TypeAdapter(dict[str, Any])


@dataclass
class Offerings:
    """Prompts, resources and resource templates an upstream listed (raw wire dicts), by kind
    (``prompt``, ``resource``, ``template``); entries that cannot be published are skipped."""

    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)


# kind -> (list method, result array, capability, MCP type name, identifying field)
_OFFERED = {
    "prompt": ("prompts/list", "prompts", "prompts", "Prompt", "name"),
    "resource": ("resources/list", "resources", "resources", "Resource", "uri"),
    "template": (
        "resources/templates/list",
        "resourceTemplates",
        "resources",
        "ResourceTemplate",
        "uriTemplate",
    ),
}
# The MCP request type of each method the gateway sends besides tools/*.
_REQUESTS = {
    "prompts/list": "ListPromptsRequest",
    "resources/list": "ListResourcesRequest",
    "resources/templates/list": "ListResourceTemplatesRequest",
    "resources/read": "ReadResourceRequest",
    "prompts/get": "GetPromptRequest",
    "completion/complete": "CompleteRequest",
}


def request_of(method: str, params: dict[str, Any] | None) -> Any:
    """The SDK request model for ``method`` (one of ``_REQUESTS``) with ``params`` validated into it."""
    # The SDK (~0.4 s to import) loads on first use, not at init.
    import mcp_types as types

    doc: dict[str, Any] = {"method": method}
    if params:
        doc["params"] = params
    return getattr(types, _REQUESTS[method]).model_validate(doc)


def _rejection(model: Any, method: str, array: str, raw: Any) -> str | None:
    """Why the SDK would refuse to serve this entry (None when it would serve it)."""
    # The per-version serializers are heavy to import and only the indexer needs them.
    from mcp_types.methods import serialize_server_result
    from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS

    try:
        model.model_validate(raw)
        # As for tools: the SDK re-checks each list answer per protocol version, and one entry it
        # refuses there would fail the caller's whole listing.
        page = {array: [raw], "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
        for version in SUPPORTED_PROTOCOL_VERSIONS:
            serialize_server_result(method, version, page)
    except ValidationError as exc:
        return f"rejected by the MCP types: {exc.errors()[0]['msg']}"
    except Exception as exc:  # any other refusal of the SDK's serializer is the same verdict
        return f"rejected by the MCP types: {str(exc)[:300] or type(exc).__name__}"
    return None


async def list_offerings_on(server: ServerConfig, session: Any) -> Offerings:
    """Every prompt, resource and template ``server`` offers over an open ``session``, by the
    capabilities it declared; entries the MCP types reject are skipped with a reason."""
    # The SDK (~0.4 s to import) loads on first use, not at init.
    import mcp_types as types

    caps = session.server_capabilities
    out = Offerings()
    for kind, (method, array, capability, type_name, ident) in _OFFERED.items():
        # A plain session's capabilities are the wire dict; an SDK (stdio) session's, its model.
        declared = caps.get(capability) if isinstance(caps, dict) else getattr(caps, capability, None)
        if declared is None:
            continue
        model = getattr(types, type_name)
        entries = out.items.setdefault(kind, [])
        seen_cursors: set[str] = set()
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await session.send_request(
                request_of(method, {"cursor": cursor} if cursor else None), _RAW
            )
            raw_items = page.get(array)
            if not isinstance(raw_items, list):
                raise UpstreamError(f"{server.name}: {method} result has no {array} array")
            for raw in raw_items:
                name = str(raw.get(ident)) if isinstance(raw, dict) else "?"
                reason = _rejection(model, method, array, raw)
                if reason is not None:
                    out.skipped.append((f"{kind} {name}", reason))
                    continue
                if not isinstance(raw.get(ident), str) or not raw[ident]:
                    out.skipped.append((f"{kind} {name}", f"no {ident}"))
                    continue
                entries.append(raw)
            cursor = page.get("nextCursor")
            if not cursor:
                break
            if not isinstance(cursor, str) or cursor in seen_cursors:
                raise UpstreamError(f"{server.name}: {method} pagination repeats a cursor")
            seen_cursors.add(cursor)
        else:
            raise UpstreamError(f"{server.name}: {method} did not end within {MAX_PAGES} pages")
    return out
