"""The code-execution sandbox: agent-written JavaScript that calls many tools in one program.

``Sandbox`` (in :mod:`foldgate.code.sandbox`) runs each program in a QuickJS worker process
(:mod:`foldgate.code.worker`). Importing this package stays cheap: the worker imports
``foldgate.code.worker`` through it, so the host-side names load on first use only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foldgate.code.sandbox import CallRecord, RunLimits, RunResult, Sandbox, ToolCaller

__all__ = ["CallRecord", "RunLimits", "RunResult", "Sandbox", "ToolCaller"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        # The host-side sandbox loads on first use (the worker imports this package too).
        from foldgate.code import sandbox

        return getattr(sandbox, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
