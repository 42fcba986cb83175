"""Routes built on their first request, so a function that rarely serves them never imports them.

:class:`LazyRoutes` is a raw ASGI endpoint routed at a prefix (``/console/{rest:path}``,
``/oauth/{rest:path}``); on the first request it builds the router (through the factory the app wiring
passes) into a small FastAPI app of its own, and forwards every request to it unchanged: the router's
routes carry their full paths, so the same scope matches there. FastAPI itself (its routing, its
OpenAPI models: a fifth of an agents-only function's init) loads then, not at init.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from fastapi import APIRouter, FastAPI

__all__ = ["LazyRoutes"]


class LazyRoutes:
    """An ASGI app that builds its routes on first use (``configure`` sets it up like the main app)."""

    def __init__(self, factory: Callable[[], APIRouter], configure: Callable[[FastAPI], None]) -> None:
        self._factory = factory
        self._configure = configure
        self._app: FastAPI | None = None

    @property
    def built(self) -> bool:
        """Whether a request has built the routes yet."""
        return self._app is not None

    def _build(self) -> FastAPI:
        # Loaded on the first request these routes get: an instance that never serves them never pays.
        from fastapi import FastAPI

        # Built synchronously on the event loop: two first requests cannot interleave here.
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
        app.include_router(self._factory())
        self._configure(app)
        self._app = app
        return app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Forward the request to the routes (built now if this is their first)."""
        app = self._app if self._app is not None else self._build()
        await app(scope, receive, send)
