"""The operator console at ``/console``: server-rendered pages (Jinja2, a little htmx) for the fleet, the
context budget, approvals, agent tokens and a search playground, behind the operator key.

:func:`console_router` builds the routes from :class:`ConsoleDeps`; ``edge.app`` includes them.
"""

from foldgate.edge.console.routes import ConsoleDeps, console_router

__all__ = ["ConsoleDeps", "console_router"]
