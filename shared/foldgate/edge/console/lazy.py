"""The console built on its first request, so an MCP Lambda instance that only serves agents never
imports its pages, templates and view-models (tens of milliseconds of every cold start).

:class:`LazyConsole` is routed at ``/console`` and ``/console/{rest:path}``; it is a
:class:`~foldgate.edge.lazy_routes.LazyRoutes` over the console router's factory.
"""

from __future__ import annotations

from foldgate.edge.lazy_routes import LazyRoutes

__all__ = ["LazyConsole"]


class LazyConsole(LazyRoutes):
    """An ASGI app that builds the console on first use (``configure`` sets it up like the main app)."""
