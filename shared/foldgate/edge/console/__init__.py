"""The operator console at ``/console``: server-rendered pages (Jinja2, a little htmx) for the fleet, the
context budget, approvals, agent tokens and a search playground, behind the operator key.

:func:`foldgate.edge.console.routes.console_router` builds the routes from ``ConsoleDeps``; the apps pass
``edge.app`` a factory of it, and :mod:`foldgate.edge.console.lazy` builds it on the first request.
Nothing is imported here, so importing the lazy part does not load the pages.
"""
