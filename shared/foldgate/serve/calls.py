"""The one call path every surface shares: approval, validation against the real schema, dispatch.

Whatever surface a call arrives on (a direct ``tools/call``, a ``call_tool_*`` variant, a
``call_tool`` from agent code), it ends here with a tool the caller's view already resolved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from foldgate.config.tenant import ServerConfig
from foldgate.errors import (
    NotFoundError,
    ToolChangedError,
    ToolPendingApprovalError,
    UpstreamConsentError,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamTimeoutError,
)
from foldgate.model.bounded import bounded
from foldgate.model.caller import calling_as
from foldgate.model.catalog import IndexedTool
from foldgate.model.lru import MemoryBudget
from foldgate.model.param_headers import HeaderParam
from foldgate.serve.consent import note_consent_link
from foldgate.serve.guarding import guard_error, guard_tool_result, relay_screen
from foldgate.serve.recording import Observation, activity_arguments, current, upstream_timer
from foldgate.serve.results import error_result, json_result
from foldgate.serve.validation import ValidatorCache
from foldgate.serve.views import TenantView
from foldgate.telemetry.tracing import span
from foldgate.upstream.relay import Relay, current_relay, relaying

if TYPE_CHECKING:
    from foldgate.serve.tasks import TaskService

__all__ = ["HINT", "ToolCaller", "Upstream"]

log = logging.getLogger(__name__)

HINT = "Call describe_tool with this tool's id for its full definition, then retry with valid arguments."


class Upstream(Protocol):
    """What the call path needs of the upstream client."""

    async def call_tool(
        self,
        server: ServerConfig,
        name: str,
        arguments: dict[str, Any],
        *,
        annotations: Mapping[str, Any] | None = None,
        header_params: tuple[HeaderParam, ...] = (),
    ) -> dict[str, Any]:
        """Call one tool upstream; a CallToolResult wire dict, or UpstreamError. ``annotations`` tell
        whether a call lost in transit may be sent again (read-only or idempotent tools only);
        ``header_params`` are the arguments a 2026-07-28 upstream gets in Mcp-Param-* headers too."""
        ...


class ToolCaller:
    """Validates and proxies calls to visible tools; validators are compiled once per schema hash."""

    def __init__(
        self,
        upstream: Upstream,
        *,
        arguments_key: Callable[[], bytes] | None = None,
        memory: MemoryBudget | None = None,
    ) -> None:
        self.upstream = upstream
        # Durable tasks (issue 28): set by the wiring where a task store exists; None: calls only.
        self.tasks: TaskService | None = None
        self.validators = ValidatorCache(memory=memory)
        # The key a tenant's hashed arguments are digested with (None: arguments are never kept).
        self.arguments_key = arguments_key

    def check_arguments(self, tool: IndexedTool, arguments: Any) -> dict[str, Any] | None:
        """The self-healing error result when arguments fail the real schema, None when they pass.

        Validates on this thread (the call path uses :meth:`check_arguments_async`)."""
        if not isinstance(arguments, dict | None):
            return self._invalid(tool, [_not_an_object(arguments)])
        return self._invalid(
            tool, self.validators.errors(tool.tool.content_hash, tool.tool.input_schema, arguments or {})
        )

    async def check_arguments_async(self, tool: IndexedTool, arguments: Any) -> dict[str, Any] | None:
        """:meth:`check_arguments` without holding the event loop for heavy or slow arguments: other
        callers are answered while they are validated (bounded in time either way)."""
        with span("foldgate.validation", server=tool.server, tool=tool.tool.name) as traced:
            if not isinstance(arguments, dict | None):
                invalid = self._invalid(tool, [_not_an_object(arguments)])
            else:
                key, schema = tool.tool.content_hash, tool.tool.input_schema
                invalid = self._invalid(
                    tool, await self.validators.errors_async(key, schema, arguments or {})
                )
            traced.set(outcome="ok" if invalid is None else "invalid_arguments")
            return invalid

    @staticmethod
    def _invalid(tool: IndexedTool, errors: list[str] | None) -> dict[str, Any] | None:
        if not errors:
            return None  # valid, or the schema is uncompilable (fail-open, counted)
        return json_result(
            {
                "error": f"invalid arguments for {tool.published}: {'; '.join(errors)}",
                "error_type": "invalid_params",
                "tool": tool.published,
                "input_schema": tool.tool.input_schema,
                "hint": HINT,
            },
            is_error=True,
        )

    async def call(self, view: TenantView, tool: IndexedTool, arguments: Any) -> dict[str, Any]:
        """Validate against the stored schema, then proxy to the tool's upstream.

        Every surface's calls to a tool end here, so here the activity log learns the tool, its tier
        and how the call ended (:mod:`foldgate.serve.recording`)."""
        observed = current()
        if observed is not None:
            observed.target(tool.server, tool.tool.name, view.tier(tool))
            observed.arguments = activity_arguments(
                view.config, arguments, tenant=view.catalog.tenant, key=self.arguments_key
            )
        awaiting = view.approval(tool)
        if awaiting is not None:
            # Listed and describable, never callable until an operator approves this exact version.
            what = "is new and awaits" if awaiting == "pending" else "changed upstream and awaits"
            unavailable = ToolPendingApprovalError if awaiting == "pending" else ToolChangedError
            return error_result(
                unavailable(f"{tool.published} {what} an operator's approval before it can be called")
            )
        invalid = await self.check_arguments_async(tool, arguments)
        if invalid is not None:
            return invalid
        server = view.config.server(tool.server)
        if server is None:  # visibility already requires a configured server
            return error_result(NotFoundError(f"unknown tool: {tool.published}"))
        if self.tasks is not None:
            # Long calls may continue as durable tasks (serve/tasks.py decides; the edge renders).
            return await self.tasks.run(
                view.principal, view.config, server, tool, arguments or {},
                lambda: self.dispatch(view, tool, server, arguments, observed),
            )  # fmt: skip
        return await self.dispatch(view, tool, server, arguments, observed)

    async def dispatch(
        self,
        view: TenantView,
        tool: IndexedTool,
        server: ServerConfig,
        arguments: Any,
        observed: Observation | None = None,
    ) -> dict[str, Any]:
        """Proxy a validated, approved call upstream; upstream errors become error results."""
        try:
            # OAuth upstreams use the grant of this tenant and (per_user servers) this end user.
            # What the upstream sends during the call (progress, logs, requests for input) is guarded too.
            screened = (current_relay() or Relay()).for_call(screen=relay_screen(view.config))
            with (
                calling_as(view.catalog.tenant, view.principal.upstream_subject),
                upstream_timer(),
                relaying(screened),
            ):
                # The annotations decide whether a call lost in transit may be sent again; a tool
                # that declares x-mcp-header arguments has them mirrored in headers (SEP-2243).
                mirrored = {"header_params": tool.header_params} if tool.header_params else {}
                result = await self.upstream.call_tool(
                    server, tool.tool.name, arguments or {}, annotations=tool.tool.annotations, **mirrored
                )
        except UpstreamProtocolError as exc:
            # The client must act on it (a capability to declare): answered as the upstream's error.
            guard_error(view.config, server.name, tool.tool.name, exc)
            if observed is not None:
                observed.failed(exc)
            raise
        except UpstreamError as exc:
            # What the upstream said in its error is guarded before a log line, an event or the agent.
            guard_error(view.config, server.name, tool.tool.name, exc)
            if observed is not None:
                observed.failed(exc)
            log.warning("tenant %s: %s", view.catalog.tenant, bounded(exc.message))
            if not isinstance(exc, UpstreamConsentError):
                # Imported here: the tasks module stays off the cold-start path of gateways without tasks.
                from foldgate.serve.task_context import note_protocol_error

                # No answer from the tool: a task's call ends failed (a consent link is the agent's).
                note_protocol_error(exc)
            extra: dict[str, Any] = {}
            if isinstance(exc, UpstreamConsentError) and isinstance(exc.details.get("connect_url"), str):
                # The caller's own connect link, as a field, and noted for the edge, which may offer
                # it as a URL elicitation (never taking a link from a result: results are hostile).
                extra = {"server": server.name, "connect_url": exc.details["connect_url"]}
                note_consent_link(server.name, exc.details["connect_url"])
            elif isinstance(exc, UpstreamTimeoutError):
                # The bound that ended the wait and what to do: set by foldgate, never by the upstream.
                extra = {k: exc.details[k] for k in ("timeout_s", "hint") if k in exc.details}
            return error_result(exc, tool=tool.published, **extra)
        upstream_error = isinstance(result, dict) and bool(result.get("isError"))
        if isinstance(result, dict):
            # Guarded here, before any surface, the result pager or a code run sees the answer.
            with span("foldgate.guard"):
                result, blocked = await guard_tool_result(view.config, tool, result, self.validators)
            if observed is not None and blocked:
                observed.ended("denied", "result_blocked")
        if observed is not None:
            # The upstream's own answer: its isError decides, never what its text says.
            observed.ended("tool_error" if upstream_error else "ok")
        return result


def _not_an_object(arguments: Any) -> str:
    return f"arguments must be a JSON object, got {type(arguments).__name__}"
