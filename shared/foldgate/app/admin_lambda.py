"""The Lambda handler of AdminFunction: the admin API (``/api/v1``, webhooks included) and the
operator console (``/console``) under Mangum, with no MCP endpoint.

The operator's writes (tenant configs, approvals, agent tokens, console sign-outs, reindex requests)
happen here, under a role of their own (template.yaml), so the functions serving agents never hold
them. X-Ray traces the invocation (``Tracing: Active``); spans configured for OTLP export are flushed
before it returns, as in :mod:`foldgate.app.mcp_lambda`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mangum import Mangum

from foldgate.app.wiring import build_mcp_app
from foldgate.config.settings import Settings
from foldgate.telemetry import tracing

__all__ = ["build_admin_handler"]

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def build_admin_handler(settings: Settings | None = None) -> LambdaHandler:
    """The handler for the settings (read from the environment when not given); its ``app`` attribute
    is the ASGI app. No call metrics: no agent call is served here."""
    settings = settings or Settings.from_env()
    app = build_mcp_app(settings, admin_api=True, agents=False)
    mangum = Mangum(app, lifespan="off")

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = mangum(event, context)
            return answer
        finally:
            tracing.flush()

    handler.app = app  # type: ignore[attr-defined]
    return handler
