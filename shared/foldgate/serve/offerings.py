"""Prompts, resources and resource templates as one caller sees them, and the proxied reads.

Visibility follows the tools' rules at server level: a server that is disabled, quarantined or outside
the caller's scope contributes nothing, and every lookup of its prompts or URIs fails exactly like a
lookup of one that never existed (same error, same message). Prompts are published only once
approved (:mod:`foldgate.index.offerings`); a prompt whose upstream changed keeps its approved listing
entry but cannot be fetched until an operator approves the new content, like a changed tool.
Resources are read-only, so every tier may list and read them.

A bare server's URIs are published as listed (:mod:`foldgate.model.offerings`): a URI outside
foldgate's scheme is routed to the visible bare resource listed under it, else to the first visible bare
template it matches (RFC 6570 expressions matched loosely; literals exactly), else it is not found.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from foldgate.config.tenant import ServerConfig
from foldgate.errors import FoldgateError, NotFoundError, UpstreamError
from foldgate.model.caller import UpstreamCaller, calling_as
from foldgate.model.offerings import IndexedItem, Kind
from foldgate.model.uris import SCHEME, origin_uri, publish_uri
from foldgate.serve.guarding import guard_completion, guard_prompt, guard_resource
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

    def origin(self, uri: str) -> tuple[str, str] | None:
        """(server, upstream URI) of a published URI this caller may read, None when it is nobody's."""
        if uri.startswith(SCHEME):
            found = origin_uri(uri)
        else:
            listed = next((i for i in self.resources if i.published == uri and i.upstream_id == uri), None)
            template = None
            if listed is None:
                bare = (t for t in self.templates if t.published == t.upstream_id)
                template = next((t for t in bare if _matches(t.published, uri)), None)
            item = listed or template
            found = (item.server, uri) if item is not None else None
        return found if found is not None and found[0] in self.servers else None

    def published_uri(self, server: str, uri: str) -> str:
        """The URI agents see for ``uri`` of ``server``: as is for a bare server (unless another bare
        server lists it too, or it is in foldgate's scheme), else ``foldgate://server/...``."""
        bare = self.view.config.bare_servers
        if server in bare and not uri.startswith(SCHEME):
            # Every server's entries, visible or not: the index published by the same rule.
            items = self.view.catalog.offerings
            if all(i.server == server for i in items if i.upstream_id == uri and i.server in bare):
                return uri
        return publish_uri(server, uri)

    async def read_resource(self, upstream: Any, uri: str) -> dict[str, Any]:
        """Proxy ``resources/read`` for a published URI (listed, or expanded from a template)."""
        origin = self.origin(uri)
        if origin is None or not isinstance(upstream, Requester):
            raise NotFoundError(f"Resource not found: {uri}", uri=uri)
        server = self.servers[origin[0]]
        observed = current()
        if observed is not None:
            observed.target(server.name, origin[1])
        with self._caller(), upstream_timer():
            result = await upstream.request(server, "resources/read", {"uri": origin[1]})
        contents = result.get("contents")
        if isinstance(contents, list):
            result["contents"] = [self._republish(server.name, c) for c in contents]
        # Guarded before the agent sees it (ResultBlockedError under a block policy).
        return guard_resource(self.view.config, server.name, result)

    def _republish(self, server: str, content: Any) -> Any:
        """A content entry with its upstream ``uri`` replaced by the published one."""
        if isinstance(content, dict) and isinstance(content.get("uri"), str):
            return {**content, "uri": self.published_uri(server, content["uri"])}
        return content

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
                        content["resource"] = self._republish(item.server, content.get("resource"))
                    elif content.get("type") == "resource_link":
                        message["content"] = self._republish(item.server, content)
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
            template = next((t for t in self.templates if t.published == str(ref.get("uri"))), None)
            if template is not None and template.server in self.servers:
                target = self.servers[template.server], {"type": "ref/resource", "uri": template.upstream_id}
        if target is None or not isinstance(upstream, Requester):
            return EMPTY_COMPLETION
        params: dict[str, Any] = {"ref": target[1], "argument": dict(argument)}
        if context:
            params["context"] = dict(context)
        try:
            with self._caller():
                answer = await upstream.request(target[0], "completion/complete", params)
        except UpstreamError as exc:
            log.info("completion from %s failed: %s", target[0].name, exc.message)
            return EMPTY_COMPLETION
        # Completion values are text the upstream chose: guarded like a result (nothing when withheld).
        guarded = guard_completion(self.view.config, target[0].name, answer)
        return EMPTY_COMPLETION if guarded is None else guarded


# One RFC 6570 expression and its operator.
_EXPRESSION = re.compile(r"\{([+#./;?&]?)[^{}]*\}")
# By operator: the character an expansion starts with (None: any) and whether it may span "/", "?"
# and "#" (reserved expansion, fragments, paths and queries) or stays within one path segment.
_EXPANSION: Final[dict[str, tuple[str | None, bool]]] = {
    "": (None, False), "+": (None, True), "#": ("#", True), ".": (".", False),
    "/": ("/", True), ";": (";", False), "?": ("?", True), "&": ("&", True),
}  # fmt: skip
_SEGMENT_END: Final = frozenset("/?#")
# A client's URI is bounded here: matching is linear in it per template part, never backtracking.
_MAX_MATCHED_URI: Final = 8192


def _matches(template: str, uri: str) -> bool:
    """Whether ``uri`` could be an expansion of the RFC 6570 ``template`` (literals exactly, each
    expression loosely by its operator). A reachability sweep over ``uri``'s positions, not a regex:
    a hostile template of many expressions costs O(parts x len(uri)), never exponential time."""
    n = len(uri)
    if n > _MAX_MATCHED_URI:
        return False
    # next_end[i]: the first index >= i holding a segment end ("/", "?", "#"), or n.
    next_end = [n] * (n + 1)
    for i in range(n - 1, -1, -1):
        next_end[i] = i if uri[i] in _SEGMENT_END else next_end[i + 1]
    reach = {0}
    last = 0
    for match in [*_EXPRESSION.finditer(template), None]:
        literal = template[last : match.start() if match is not None else len(template)]
        if literal:
            reach = {p + len(literal) for p in reach if uri.startswith(literal, p)}
        if match is None or not reach:
            break
        last = match.end()
        lead, wide = _EXPANSION[match.group(1)]
        marks = [0] * (n + 2)  # a difference array of the positions the expansion may end at
        for p in reach:
            marks[p] += 1
            marks[p + 1] -= 1
            begin = p
            if lead is not None:
                if not uri.startswith(lead, p):
                    continue
                begin = p + 1
            stop = n if wide else next_end[begin]
            marks[begin] += 1
            marks[stop + 1] -= 1
        reach, running = set(), 0
        for i in range(n + 1):
            running += marks[i]
            if running > 0:
                reach.add(i)
    return n in reach


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
