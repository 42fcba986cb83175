"""McpFunction behind the AWS Lambda Web Adapter, for response streaming (template parameter
``StreamingMode: function-url``).

Python Lambda runtimes cannot stream a response themselves; the Lambda Web Adapter (a layer) can. With
it the function's handler is ``run.sh``, which starts this module: the same app as the Mangum
handler, served by uvicorn on 127.0.0.1:8080 inside the function. The adapter turns each invocation
into an HTTP request to it: one from the HttpApi (answered whole, as before) or from the function URL
in ``RESPONSE_STREAM`` invoke mode, whose event streams reach the client as they are written
(progress and log notifications relayed during a call, edge/streaming.py).

The adapter passes the invocation's context in the ``x-amzn-lambda-context`` header; it becomes the
scope's ``aws.context`` (as Mangum sets it), so a request keeps its deadline and is known to run on
Lambda: a request for input is then never sent on the stream (a client's reply could reach another
instance), it ends in the clear tool error instead. Call metrics are printed after each request.
"""

from __future__ import annotations

import json
import time
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

from foldgate.app.wiring import build_mcp_app
from foldgate.config.settings import Settings
from foldgate.telemetry import tracing
from foldgate.telemetry.emf import EmfRecorder

__all__ = ["PORT", "InvocationContext", "build_stream_app", "main"]

# The adapter's default port (AWS_LWA_PORT in the template says the same).
PORT: Final = 8080
_CONTEXT_HEADER: Final = b"x-amzn-lambda-context"


class InvocationContext:
    """The part of a Lambda context the edge reads: the time left before the invocation's deadline."""

    def __init__(self, deadline_ms: float | None, fallback_s: float) -> None:
        self._deadline_ms = deadline_ms
        self._fallback_ms = time.time() * 1000 + fallback_s * 1000

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left (the adapter's deadline, else the function's timeout from the start)."""
        deadline = self._deadline_ms if self._deadline_ms is not None else self._fallback_ms
        return max(0, int(deadline - time.time() * 1000))


def _deadline_ms(scope: Scope) -> float | None:
    for name, value in scope.get("headers", ()):
        if name == _CONTEXT_HEADER:
            try:
                deadline = json.loads(value).get("deadline")
            except (ValueError, AttributeError, RecursionError):
                return None
            ok = isinstance(deadline, int | float) and not isinstance(deadline, bool)
            return float(deadline) if ok else None
    return None


def build_stream_app(settings: Settings | None = None) -> ASGIApp:
    """The app as the adapter serves it (settings from the environment when not given)."""
    settings = settings or Settings.from_env()
    metrics = EmfRecorder(namespace=settings.metrics_namespace, service=settings.metrics_service)
    # Agents only, as McpFunction's Mangum handler (the admin API and console are AdminFunction's).
    app = build_mcp_app(settings, admin_api=False, metrics=metrics)
    timeout_s = settings.serve_timeout_s or 29.0

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        scope = {**scope, "aws.context": InvocationContext(_deadline_ms(scope), timeout_s)}
        try:
            await app(scope, receive, send)
        finally:
            metrics.flush()
            tracing.flush()

    return serve


def main() -> None:
    """Serve on 127.0.0.1:8080 until the adapter's SIGTERM (run.sh)."""
    # uvicorn comes with the mcp SDK; only this entry point needs it.
    import uvicorn

    uvicorn.run(build_stream_app(), host="127.0.0.1", port=PORT, lifespan="off", log_level="warning")


if __name__ == "__main__":
    main()
