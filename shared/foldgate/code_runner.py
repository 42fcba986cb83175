"""Runs ``code_execution`` calls: the sandbox on one side, the gateway's normal call path on the other.

The sandbox (``foldgate.code``) owns the JavaScript; this module decides what a run may reach. Each
``call_tool(server, tool, args)`` from the sandbox resolves against the caller's view (so scope, tier
and quarantine apply: an invisible tool is ``not_found`` as everywhere else) and goes through
``Gateway.call_tool`` (approval, validation with the self-healing error, upstream dispatch).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from foldgate.call_surface import retrieve_tool
from foldgate.code.hardening import make_not_dumpable
from foldgate.code_surface import code_tool, parse_code_arguments
from foldgate.jsonutil import compact
from foldgate.listing import join_fragments
from foldgate.views import DESCRIBE_TOOL, TenantView

if TYPE_CHECKING:
    from foldgate.code.sandbox import Sandbox
    from foldgate.gateway import Gateway

__all__ = ["CodeRunner", "make_not_dumpable"]

_MAX_LISTINGS = 256


def _payload(result: dict[str, Any]) -> Any:
    """What a tool call resolves to inside the sandbox: structured content, else the text."""
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    texts = [
        c.get("text", "")
        for c in result.get("content", [])
        if isinstance(c, dict) and c.get("type") == "text"
    ]
    return "\n".join(texts)


class CodeRunner:
    """The code surface of a gateway; ``sandbox`` is a factory so the worker starts on first use."""

    def __init__(self, gateway: Gateway, sandbox: Callable[[], Sandbox] | None) -> None:
        self.gateway = gateway
        # Without a sandbox factory this process runs no agent code: search and describe only.
        self.can_run = sandbox is not None
        self._sandbox_factory = sandbox
        self._sandbox: Sandbox | None = None
        self._lock = threading.Lock()
        self._listings: dict[tuple[Any, str, int], str] = {}

    def sandbox(self) -> Sandbox:
        """The process's sandbox (one pre-started worker), created on first use."""
        with self._lock:
            if self._sandbox is None:
                if self._sandbox_factory is None:
                    raise RuntimeError("this process runs no agent code")
                # Fail closed: no sandbox (hence no agent code) unless the host is non-dumpable.
                make_not_dumpable()
                self._sandbox = self._sandbox_factory()
            return self._sandbox

    def listing_json(self, view: TenantView) -> str:
        """code_execution (with this caller's catalog), retrieve_tools, describe_tool; cached per view."""
        key = (view.principal, view.catalog.version, id(view.config))
        listing = self._listings.get(key)
        if listing is None:
            tools = [retrieve_tool(view.config.tools_limit), DESCRIBE_TOOL]
            if view.config.code_execution.enabled and self.can_run:
                tools.insert(0, code_tool(view, view.config.code_execution))
            listing = join_fragments(compact(t) for t in tools)
            if len(self._listings) >= _MAX_LISTINGS:
                self._listings.clear()
            self._listings[key] = listing
        return listing

    async def run(self, view: TenantView, arguments: Any) -> dict[str, Any]:
        """One code_execution call: a CallToolResult wire dict (the answer, or an error to act on)."""
        from foldgate.code.sandbox import RunLimits
        from foldgate.gateway import json_result

        config = view.config.code_execution
        code, timeout_ms = parse_code_arguments(arguments, config)

        async def call_tool(server: str, tool: str, args: Any) -> tuple[bool, Any]:
            target = (
                view.resolve(f"{server}:{tool}")
                if isinstance(server, str) and isinstance(tool, str)
                else None
            )
            if target is None:
                return False, {"error": f"unknown tool: {server}.{tool}", "error_type": "not_found"}
            result = await self.gateway.call_tool(view, target, args)
            return not result.get("isError"), _payload(result)

        limits = RunLimits(
            timeout_ms=timeout_ms,
            max_calls=config.max_calls,
            concurrency=config.concurrency,
            max_result_bytes=config.max_result_bytes,
        )
        run = await self.sandbox().run(code, call_tool, limits)
        body: dict[str, Any] = {
            "value": run.value,
            "console": run.console,
            "calls": [dataclasses.asdict(c) for c in run.calls],
        }
        if run.ok:
            return json_result(body)
        error = dict(run.error or {"type": "internal", "message": "the run failed"})
        return json_result(
            {"error": error.pop("message"), "error_type": error.pop("type"), **error, **body}, is_error=True
        )

    async def aclose(self) -> None:
        """Stop the worker, if one was started."""
        if self._sandbox is not None:
            await self._sandbox.aclose()
