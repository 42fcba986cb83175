"""Prompts, resources and resource templates as one caller sees them, and the proxied reads.

Visibility follows the tools' rules at server level: a server that is disabled, quarantined or outside
the caller's scope contributes nothing, and every lookup of its prompts or URIs fails exactly like a
lookup of one that never existed (same error, same message). Prompts are published only once
approved (:mod:`foldgate.index.offerings`); a prompt whose upstream changed keeps its approved listing
entry but cannot be fetched until an operator approves the new content, like a changed tool.
Resources are read-only, so every tier may list and read them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from foldgate.config.tenant import ServerConfig
from foldgate.errors import FoldgateError, NotFoundError, UpstreamError
from foldgate.model.caller import UpstreamCaller, calling_as
from foldgate.model.offerings import IndexedItem, Kind
from foldgate.model.uris import origin_template, origin_uri, publish_uri
from foldgate.serve.guarding import guard_prompt, guard_resource
from foldgate.serve.recording import current, upstream_timer
from foldgate.serve.views import TenantView

__all__ = ["EMPTY_COMPLETION", "Offered", "PromptChangedError", "Requester", "offered"]

log = logging.getLogger(__name__)

_MEMO: Final = "offerings"
EMPTY_COMPLETION: Final[dict[str, Any]] = {"completion": {"values": []}}


@runtime_checkable
class Requester(Protocol):
    """What the proxied reads need of the upstream client (:meth:`UpstreamClient.request`)."""

    async def request(self, server: ServerConfig, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one read-only request upstream and return its raw result."""
        ...


class PromptChangedError(FoldgateError):
    """The prompt's upstream content changed and awaits an operator's approval."""

    code = "tool_changed"


@dataclass(frozen=True)
class Offered:
    """One caller's visible prompts, resources and templates, by published identity."""

    view: TenantView
    servers: Mapping[str, ServerConfig]
    prompts: Mapping[str, IndexedItem]
    resources: tuple[IndexedItem, ...]
    templates: tuple[IndexedItem, ...]

    def listing(self, kind: Kind) -> list[dict[str, Any]]:
        """The wire entries of one kind, in catalog order."""
        items = {
            "prompt": tuple(self.prompts.values()),
            "resource": self.resources,
            "template": self.templates,
        }
        return [i.to_wire() for i in items[kind]]

    def _caller(self) -> contextlib.AbstractContextManager[UpstreamCaller]:
        # OAuth upstreams use the grant of this tenant and (per_user servers) this end user.
        return calling_as(self.view.catalog.tenant, self.view.principal.upstream_subject)

    @property
    def empty(self) -> bool:
        """Nothing to serve: the capabilities are not declared."""
        return not (self.prompts or self.resources or self.templates)

    async def read_resource(self, upstream: Any, uri: str) -> dict[str, Any]:
        """Proxy ``resources/read`` for a published URI (listed, or expanded from a template)."""
        origin = origin_uri(uri)
        server = self.servers.get(origin[0]) if origin is not None else None
        if origin is None or server is None or not isinstance(upstream, Requester):
            raise NotFoundError(f"Resource not found: {uri}")
        observed = current()
        if observed is not None:
            observed.target(server.name, origin[1])
        with self._caller(), upstream_timer():
            result = await upstream.request(server, "resources/read", {"uri": origin[1]})
        contents = result.get("contents")
        if isinstance(contents, list):
            result["contents"] = [_republish(server.name, c) for c in contents]
        # Guarded before the agent sees it (ResultBlockedError under a block policy).
        return guard_resource(self.view.config, server.name, result)

    def prompt(self, name: str) -> IndexedItem:
        """The visible, fetchable prompt by published name (NotFoundError like a nonexistent one)."""
        item = self.prompts.get(name)
        if item is None:
            raise NotFoundError(f"Unknown prompt: {name}")
        observed = current()
        if observed is not None:
            observed.target(item.server, item.upstream_id)
        held = self.view.catalog.withheld.get(item.key)
        # A published prompt with held content is a changed or rejected one: the upstream would serve
        # the unapproved text, so it is refused either way.
        if held is not None and held.get("state") in ("changed", "rejected"):
            raise PromptChangedError(
                f"{name}: the upstream changed this prompt; it is served again once an operator approves it"
            )
        return item

    async def get_prompt(
        self, upstream: Any, name: str, arguments: Mapping[str, str] | None
    ) -> dict[str, Any]:
        """Proxy ``prompts/get``; embedded resource URIs in its messages are published like listed ones."""
        item = self.prompt(name)
        if not isinstance(upstream, Requester):
            raise NotFoundError(f"Unknown prompt: {name}")
        params: dict[str, Any] = {"name": item.upstream_id}
        if arguments:
            params["arguments"] = dict(arguments)
        with self._caller(), upstream_timer():
            result = await upstream.request(self.servers[item.server], "prompts/get", params)
        messages = result.get("messages")
        if isinstance(messages, list):
            for message in messages:
                if isinstance(message, dict) and isinstance(message.get("content"), dict):
                    content = message["content"]
                    if content.get("type") == "resource":
                        content["resource"] = _republish(item.server, content.get("resource"))
                    elif content.get("type") == "resource_link":
                        message["content"] = _republish(item.server, content)
        # Guarded before the agent sees it (ResultBlockedError under a block policy).
        return guard_prompt(self.view.config, item.server, item.upstream_id, name, result)

    async def complete(self, upstream: Any, ref: Mapping[str, Any], argument: Mapping[str, Any],
                       context: Mapping[str, Any] | None) -> dict[str, Any]:  # fmt: skip
        """Proxy ``completion/complete`` for a visible prompt or template; anything else (unknown,
        invisible, or an upstream that fails) completes to nothing, so the answer never tells them apart."""
        target: tuple[ServerConfig, dict[str, Any]] | None = None
        if ref.get("type") == "ref/prompt":
            try:
                item = self.prompt(str(ref.get("name")))
            except FoldgateError:
                return EMPTY_COMPLETION
            target = self.servers[item.server], {"type": "ref/prompt", "name": item.upstream_id}
        elif ref.get("type") == "ref/resource":
            origin = origin_template(str(ref.get("uri")))
            listed = origin is not None and any(
                t.server == origin[0] and t.upstream_id == origin[1] for t in self.templates
            )
            if origin is not None and listed:
                target = self.servers[origin[0]], {"type": "ref/resource", "uri": origin[1]}
        if target is None or not isinstance(upstream, Requester):
            return EMPTY_COMPLETION
        params: dict[str, Any] = {"ref": target[1], "argument": dict(argument)}
        if context:
            params["context"] = dict(context)
        try:
            with self._caller():
                return await upstream.request(target[0], "completion/complete", params)
        except UpstreamError as exc:
            log.info("completion from %s failed: %s", target[0].name, exc.message)
            return EMPTY_COMPLETION


def _republish(server: str, content: Any) -> Any:
    """A content entry with its upstream ``uri`` replaced by the published one."""
    if isinstance(content, dict) and isinstance(content.get("uri"), str):
        return {**content, "uri": publish_uri(server, content["uri"])}
    return content


def _visible_servers(view: TenantView) -> dict[str, ServerConfig]:
    allowed = view.principal.servers
    return {
        s.name: s
        for s in view.config.servers
        if s.enabled and not s.quarantined and (allowed is None or s.name in allowed)
    }


def offered(view: TenantView) -> Offered:
    """The caller's offerings for this view (computed once per view)."""
    found = view.memo.get(_MEMO)
    if isinstance(found, Offered):
        return found
    servers = _visible_servers(view)
    items = [i for i in view.catalog.offerings if i.server in servers]
    result = Offered(
        view,
        servers,
        {i.published: i for i in items if i.kind == "prompt"},
        tuple(i for i in items if i.kind == "resource"),
        tuple(i for i in items if i.kind == "template"),
    )
    view.memo[_MEMO] = result
    return result
