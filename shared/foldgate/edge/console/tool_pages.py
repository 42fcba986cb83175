"""The console's tool, prompt, resource and Connect pages: the tenant's tools, one tool as agents get it
(with Try it), the published prompts and resources, and ready-to-paste client configs.

Added to the console's router by :func:`add_tool_pages`, behind the same route class (session, Origin
and CSRF checks before any handler); handlers only validate their own input and render.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from fastapi import APIRouter, HTTPException
from fastapi.responses import HTMLResponse, Response
from starlette.requests import Request

from foldgate.auth.authority import TokenAuthority
from foldgate.edge.console.connect_snippets import public_base, surface_snippets
from foldgate.edge.console.offerings import prompts_view, resources_view
from foldgate.edge.console.tokens import token_rows
from foldgate.edge.console.tool_detail import example_arguments, find_tool, tool_detail, tools_view
from foldgate.edge.console.try_it import Tried, try_tool
from foldgate.model.activity import AuditAction
from foldgate.serve.gateway import Gateway
from foldgate.store.activity.base import ActivityStore
from foldgate.store.approvals.base import ApprovalStore

__all__ = ["PageDeps", "add_tool_pages", "connect_base"]


class PageDeps(Protocol):
    """What these pages use of the console's dependencies (:class:`~.routes.ConsoleDeps`)."""

    gateway: Gateway
    tokens: TokenAuthority | None
    approvals: ApprovalStore | None
    activity: ActivityStore | None
    public_url: str | None


def connect_base(deps: PageDeps, request: Request) -> str:
    """The base URL agents reach this instance at, as the snippets show it."""
    return public_base(deps.public_url, request.url.scheme, request.url.netloc)


def add_tool_pages(
    router: APIRouter,
    deps: PageDeps,
    tenant_of: Callable[[Request, str | None], tuple[str, list[str]]],
    page: Callable[..., HTMLResponse],
    audited: Callable[..., None],
) -> None:
    """Add the pages to ``router``: ``tenant_of`` picks the page's tenant (404 for an unknown one),
    ``page`` renders a tenant's page, ``audited`` records an operator action of the session."""

    def choices(tenant: str) -> list[dict[str, Any]]:
        """The tenant's active tokens Try it may call as (ids and scopes only, never a secret)."""
        if deps.tokens is None:
            return []
        return [r for r in token_rows(deps.tokens, tenant) if r["state"] == "active"]

    def detail_page(
        request: Request, tenant: str, tenants: list[str], tool_id: str, tried: Tried | None = None
    ) -> HTMLResponse:
        view = deps.gateway.view(tenant)
        tool = find_tool(view.catalog, tool_id)
        if tool is None or view.resolve(tool.published) is None:
            raise HTTPException(404, "no such tool in this tenant's fleet (a held tool is on Approvals)")
        model = tool_detail(view, tool, approvals=deps.approvals, activity=deps.activity)
        arguments = tried.arguments if tried is not None else example_arguments(tool)
        return page(
            request, "tool.html", tenant, tenants, tool=model, tried=tried, arguments=arguments,
            choices=choices(tenant), token=tried.token if tried is not None else "",
        )  # fmt: skip

    @router.get("/tools")
    def tools(request: Request) -> Response:
        tenant, tenants = tenant_of(request, None)
        server = request.query_params.get("server", "")[:200]
        try:
            number = int(request.query_params.get("page") or 1)
        except ValueError:
            number = 1
        model = tools_view(deps.gateway.view(tenant), server, number)
        return page(request, "tools.html", tenant, tenants, tools=model, server=server)

    @router.get("/tools/{tool_id}")
    def tool(request: Request, tool_id: str) -> Response:
        tenant, tenants = tenant_of(request, None)
        return detail_page(request, tenant, tenants, tool_id)

    @router.post("/tools/{tool_id}/try")
    async def try_it(request: Request, tool_id: str) -> Response:
        form: dict[str, str] = request.state.form
        tenant, tenants = tenant_of(request, form.get("tenant", ""))
        view = deps.gateway.view(tenant)
        tool = find_tool(view.catalog, tool_id)
        if tool is None or view.resolve(tool.published) is None:
            raise HTTPException(404, "no such tool in this tenant's fleet")
        tried = await try_tool(deps.gateway, deps.tokens, deps.gateway.recorder, tenant, tool.published, form)
        if tried.called or tried.error is not None:
            action: AuditAction = "tool.try"
            as_who = f"as {tried.token or 'operator'}"
            if tried.called:
                audited(request, tenant, action, target=tool.tool.key, detail=f"{as_who}: {tried.outcome}")
            else:
                audited(request, tenant, action, target=tool.tool.key, outcome="refused",
                        detail=f"{as_who}: {tried.error}")  # fmt: skip
        return detail_page(request, tenant, tenants, tool.published, tried)

    @router.get("/prompts")
    def prompts(request: Request) -> Response:
        tenant, tenants = tenant_of(request, None)
        return page(request, "prompts.html", tenant, tenants, rows=prompts_view(deps.gateway.view(tenant)))

    @router.get("/resources")
    def resources(request: Request) -> Response:
        tenant, tenants = tenant_of(request, None)
        model = resources_view(deps.gateway.view(tenant))
        return page(request, "resources.html", tenant, tenants, **model)

    @router.get("/connect")
    def connect(request: Request) -> Response:
        tenant, tenants = tenant_of(request, None)
        snippets = surface_snippets(connect_base(deps, request))
        return page(request, "connect.html", tenant, tenants, connect=snippets)
