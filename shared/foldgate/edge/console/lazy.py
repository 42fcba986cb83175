"""The console built on its first request, so an MCP Lambda instance that only serves agents never
imports its pages, templates and view-models (tens of milliseconds of every cold start).

:class:`LazyConsole` is a raw ASGI endpoint routed at ``/console`` and ``/console/{rest:path}``; on the
first request it builds the console router (through the factory the app wiring passes) into a small
FastAPI app of its own, and forwards every request to it unchanged: its routes carry the full
``/console/...`` paths, so the same scope matches there.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, FastAPI
from starlette.types import Receive, Scope, Send

__all__ = ["LazyConsole"]


class LazyConsole:
    """An ASGI app that builds the console on first use (``configure`` sets it up like the main app)."""

    def __init__(self, factory: Callable[[], APIRouter], configure: Callable[[FastAPI], None]) -> None:
        self._factory = factory
        self._configure = configure
        self._app: FastAPI | None = None

    @property
    def built(self) -> bool:
        """Whether a request has built the console yet."""
        return self._app is not None

    def _build(self) -> FastAPI:
        # Built synchronously on the event loop: two first requests cannot interleave here.
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
        app.include_router(self._factory())
        self._configure(app)
        self._app = app
        return app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Forward the request to the console (built now if this is its first)."""
        app = self._app if self._app is not None else self._build()
        await app(scope, receive, send)
