"""The Lambda handler of the functions that serve agents (McpFunction, CodeFunction).

The app runs under Mangum; call metrics go to CloudWatch in embedded metric format (Powertools
Metrics, printed when each invocation ends, see :mod:`foldgate.telemetry.emf`) with the instance's own
figures at most once a minute (:mod:`foldgate.telemetry.instance`) and, where OTLP export
is configured, the invocation's spans are exported before it returns (a frozen instance exports
nothing). X-Ray traces the invocation itself (the template's ``Tracing: Active``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mangum import Mangum

from foldgate.app.wiring import build_mcp_app
from foldgate.config.settings import Settings
from foldgate.telemetry import tracing
from foldgate.telemetry.emf import EmfRecorder
from foldgate.telemetry.instance import InstanceMetrics

__all__ = ["build_mcp_handler"]

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def build_mcp_handler(settings: Settings | None = None, *, admin_api: bool = True) -> LambdaHandler:
    """The handler for the settings (read from the environment when not given); ``admin_api`` False
    for McpFunction and CodeFunction (the admin API and the console are AdminFunction's, see
    :mod:`foldgate.app.admin_lambda`). Its ``app`` attribute is the ASGI app (as on a bare Mangum
    handler), its ``metrics`` the recorder the gateway's events reach."""
    settings = settings or Settings.from_env()
    # Namespace and service from POWERTOOLS_METRICS_NAMESPACE / POWERTOOLS_SERVICE_NAME (the template).
    metrics = EmfRecorder(namespace=settings.metrics_namespace, service=settings.metrics_service)
    # No lifespan: the app starts a stateless SDK session manager per MCP request that needs one.
    app = build_mcp_app(settings, admin_api=admin_api, metrics=metrics)
    # The instance's cache, quota leasing and drops, printed with the call metrics once a minute.
    metrics.instance = InstanceMetrics(app.state.instance_figures)
    mangum = Mangum(app, lifespan="off")

    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = mangum(event, context)
            return answer
        finally:
            tracing.flush()

    handler.app = app  # type: ignore[attr-defined]
    handler.metrics = metrics  # type: ignore[attr-defined]
    return handler
