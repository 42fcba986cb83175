"""The operator's REST API under ``/api/v1`` (OpenAPI at ``/api/v1/openapi.json``, docs at
``/api/v1/docs``).

Guarded by the operator credential (``Authorization: Bearer <operator key>``), which is separate from
agent tokens: an agent token never opens it. The credential is checked first on every route, the
OpenAPI document and docs included, before the body is read; then every input is validated by
pydantic/FastAPI.

Wrong credentials are limited as the console's sign-in form limits them, and by the same buckets
(:class:`~foldgate.edge.console.login_limit.LoginLimit`, per client address and overall): both guard
the one operator key, so a guesser gains nothing by alternating between them. Over the limit the
credential is not checked at all, the right one included; otherwise a guesser could keep guessing at
full speed and tell a hit (200) from the rest (429).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from foldgate.auth.secrets import verify_operator
from foldgate.edge.access import source_address
from foldgate.edge.admin_activity import add_activity_routes
from foldgate.edge.admin_docs import BAD_BODY, OPERATOR_RESPONSES, UNKNOWN_TENANT, responses
from foldgate.edge.admin_guard import add_guard_routes
from foldgate.edge.connect import add_connect_routes, auth_states
from foldgate.edge.operator_audit import DEPLOYMENT, audit, operator_actor
from foldgate.errors import ConflictError, FoldgateError, NotFoundError
from foldgate.index.triggers import Reindexer
from foldgate.model.activity import Actor, AuditAction
from foldgate.model.catalog import CatalogVersion
from foldgate.serve.gateway import Gateway
from foldgate.serve.review import approve_reviewed, held_tools, reject_reviewed
from foldgate.serve.views import effective_tier
from foldgate.store.activity.base import ActivityStore
from foldgate.store.approvals.base import ApprovalStore
from foldgate.upstream.oauth.context import OAuthContext

if TYPE_CHECKING:
    from foldgate.edge.console.login_limit import LoginLimit

__all__ = ["admin_router", "operator_router"]

_TENANT = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
Tenant = Annotated[str, Query(pattern=_TENANT, description="Tenant id.")]
# approve_reviewed or reject_reviewed: (catalog, store, tenant, [(tool id, hash)]) -> what was recorded.
Verdict = Callable[[CatalogVersion, ApprovalStore, str, list[tuple[str, str]]], dict[str, str]]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReindexRequest(_Body):
    """Which tenant to reindex."""

    tenant: str = Field(pattern=_TENANT)


class ToolApproval(_Body):
    """One tool's reviewed content: its id (``server:tool`` or the published name) and content hash."""

    id: str = Field(min_length=1, max_length=200)
    hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="The content hash GET /approvals showed.")


class ApprovalRequest(_Body):
    """Approve (or reject) exactly the reviewed content of these tools (409 when any changed since)."""

    tenant: str = Field(pattern=_TENANT)
    tools: list[ToolApproval] = Field(min_length=1, max_length=1000)


def _operator(secret: bytes | None, limit: LoginLimit | None) -> Callable[[Request], JSONResponse | None]:
    """The operator check: None when the request carries the credential, else the answer to give
    (401 without it, 429 with Retry-After while ``limit`` refuses the client's attempts). Each wrong
    credential is a refused sign-in in the activity log (the limited attempts are not checked)."""

    def check(request: Request) -> JSONResponse | None:
        if secret is None:
            return JSONResponse({"detail": "the admin API has no operator credential configured"}, 503)
        address = source_address(request)
        # Spent before the check and given back on success: only wrong credentials use the budget.
        wait = limit.attempt(address) if limit is not None else 0
        if wait:
            # Not checked at all: neither the answer nor its timing says whether the credential was right.
            detail = f"too many wrong operator credentials; retry in {wait} seconds"
            return JSONResponse({"detail": detail}, 429, headers={"retry-after": str(wait)})
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        # verify_operator compares SHA-256 digests: equal lengths, so the timing tells nothing of the key.
        if scheme.lower() != "bearer" or not verify_operator(secret, presented.strip()):
            _refused_sign_in(request)
            headers = {"www-authenticate": "Bearer"}
            return JSONResponse({"detail": "operator credential required"}, 401, headers=headers)
        if limit is not None:
            limit.succeeded(address)
        return None

    return check


def _refused_sign_in(request: Request) -> None:
    """A wrong operator credential, recorded by the app's gateway: the key guards the console's sign-in
    and this API alike, so a wrong one is a refused sign-in wherever it is tried."""
    gateway = getattr(request.app.state, "gateway", None)
    if isinstance(gateway, Gateway):
        actor = Actor("operator_key", "", source_address(request))
        audit(gateway.recorder, DEPLOYMENT, "console.sign_in_refused", actor, outcome="refused",
              detail="admin API: wrong operator credential")  # fmt: skip


def _guarded_route(check: Callable[[Request], JSONResponse | None]) -> type[APIRoute]:
    """A route class that checks the credential before FastAPI reads, parses or validates anything.

    A router-level dependency is not enough: FastAPI parses the JSON body before it solves
    dependencies, so an anonymous malformed body got a 422 listing the fields (a schema oracle).
    """

    class OperatorRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def guarded(request: Request) -> Response:
                refusal = check(request)
                return refusal if refusal is not None else await handler(request)

            return guarded

    return OperatorRoute


def operator_router(operator_secret: bytes | None, operator_limit: LoginLimit | None = None) -> APIRouter:
    """An empty router whose every route is behind the operator credential: the check and the limit
    on wrong credentials of ``/api/v1`` (share the same ``operator_limit``)."""
    return APIRouter(route_class=_guarded_route(_operator(operator_secret, operator_limit)))


def _add_docs(router: APIRouter) -> None:
    """The OpenAPI document and its Swagger page, behind the credential like every admin route.

    Kept whole rather than stripped: it describes the admin routes only (the MCP paths are not in it),
    and an anonymous caller has no use for it. The page loads the document with the page's own
    request, so open it with a client that sends the credential (or read the JSON directly).
    """

    @router.get("/openapi.json", include_in_schema=False)
    def openapi(request: Request) -> JSONResponse:
        return JSONResponse(request.app.openapi())

    @router.get("/docs", include_in_schema=False)
    def docs(request: Request) -> Response:
        return get_swagger_ui_html(openapi_url=f"{router.prefix}/openapi.json", title="foldgate admin API")


def admin_router(
    gateway: Gateway,
    *,
    operator_secret: bytes | None,
    approvals: ApprovalStore | None = None,
    reindex: Reindexer | None = None,
    oauth: OAuthContext | None = None,
    operator_limit: LoginLimit | None = None,
    activity: ActivityStore | None = None,
) -> APIRouter:
    """The ``/api/v1`` routes for one gateway (with ``oauth``, connecting OAuth upstreams too);
    ``operator_limit`` limits wrong operator credentials (share the console's, see the module doc);
    ``activity`` is the activity log the ``/activity`` routes read (None: they answer 503)."""
    check = _operator(operator_secret, operator_limit)
    router = APIRouter(
        prefix="/api/v1", route_class=_guarded_route(check), tags=["admin"], responses=OPERATOR_RESPONSES
    )
    _add_docs(router)

    def view_of(tenant: str) -> Any:
        try:
            return gateway.view(tenant)
        except NotFoundError:
            raise HTTPException(404, f"unknown tenant {tenant!r}") from None
        except FoldgateError as exc:
            raise HTTPException(503, exc.message) from None

    @router.get(
        "/routing",
        summary="Routing modes per endpoint and the resolved serialization settings",
        responses=responses(UNKNOWN_TENANT),
    )
    def routing(tenant: Tenant) -> dict[str, Any]:
        config = view_of(tenant).config
        return {
            "tenant": tenant,
            "routing_mode": config.routing_mode,
            "endpoints": {
                "/mcp": gateway.surface_of(tenant, "routed"),
                "/mcp/all": "direct",
                "/mcp/call": "call",
            },
            "serialization": {
                "direct_tool_response_mode": config.direct_tool_response_mode,
                "defer_schema_chars": config.defer_schema_chars,
                "defer_threshold": config.defer_threshold,
                "listing_token_budget": config.listing_token_budget,
                "tools_limit": config.tools_limit,
                "tool_response_limit": config.tool_response_limit,
            },
        }

    @router.get(
        "/status",
        summary="Catalog version, per-server health and tool counts",
        responses=responses(UNKNOWN_TENANT),
    )
    def status(tenant: Tenant) -> dict[str, Any]:
        view = view_of(tenant)
        catalog = view.catalog
        return {
            "tenant": tenant,
            "catalog_version": None if catalog.version == "none" else catalog.version,
            "indexed_at": catalog.created_at or None,
            "tools": len(catalog.tools),
            "visible_tools": len(view.visible),
            "awaiting_approval": sum(1 for w in catalog.withheld.values() if w.get("state") != "rejected"),
            "flagged": sum(1 for w in catalog.withheld.values() if w.get("state") == "flagged"),
            "rejected": sum(1 for w in catalog.withheld.values() if w.get("state") == "rejected"),
            "config_problem": gateway.configs.problem(tenant),
            "servers": {
                name: {
                    "healthy": s.healthy,
                    "tools": s.tool_count,
                    "error": s.error,
                    "checked_at": s.checked_at,
                    "indexed_at": s.indexed_at,
                    "listing": "declared" if s.declared else "fetched",
                }
                for name, s in catalog.servers.items()
            },
            # OAuth upstreams: connection state and expiry, a machine grant's latest outcome; no token.
            "auth": auth_states(oauth, gateway, tenant, activity),
            # This instance's cache budget (every tenant's, not this one's): bytes, hit rate, evictions.
            "instance_cache": gateway.memory_stats(),
        }

    @router.get(
        "/tools",
        summary="Every tool with its size, tokens, lossiness and deferral decision",
        responses=responses(UNKNOWN_TENANT),
    )
    def tools(tenant: Tenant) -> dict[str, Any]:
        view = view_of(tenant)
        visible = {t.tool.key for t in view.visible}
        servers = {s.name: s for s in view.config.servers}
        rows = []
        for t in view.catalog.tools:
            decision = view.plan.decisions.get(t.tool.key)
            tier, tier_source = effective_tier(t, servers)
            rows.append({
                "id": t.published,
                "server": t.server,
                "name": t.tool.name,
                "visible": t.tool.key in visible,
                "schema_chars": t.tool.schema_chars,
                "tokens_full": t.tokens_full,
                "tokens_deferred": t.tokens_deferred,
                "lossy": t.lossy,
                "deferred": decision.deferred if decision else None,
                "reason": decision.label if decision else None,
                "tier": tier,
                "tier_source": tier_source,
                "approval": view.approval(t) or "approved",
            })  # fmt: skip
        return {"tenant": tenant, "tools": rows}

    def audited(request: Request, tenant: str, action: AuditAction, **what: str) -> None:
        """Record an operator action of this request (the key's holder, at the request's address)."""
        audit(gateway.recorder, tenant, action, operator_actor(request, operator_secret), **what)

    @router.post(
        "/reindex",
        status_code=202,
        summary="Reindex one tenant now",
        responses=responses(BAD_BODY, UNKNOWN_TENANT),
    )
    async def reindex_tenant(body: ReindexRequest, request: Request) -> dict[str, Any]:
        view_of(body.tenant)
        if reindex is None:
            audited(
                request, body.tenant, "index.reindex", outcome="refused", detail="no indexer is reachable"
            )
            raise HTTPException(503, "no indexer is reachable from this deployment")
        outcome = await reindex(body.tenant)
        audited(
            request, body.tenant, "index.reindex", target=body.tenant, detail=str(outcome.get("reindex", ""))
        )
        return {"tenant": body.tenant, **outcome}

    @router.get(
        "/approvals",
        summary="Held tools (pending, changed, flagged, rejected) with hashes and diffs",
        responses=responses(UNKNOWN_TENANT),
    )
    def pending(tenant: Tenant) -> dict[str, Any]:
        return {"tenant": tenant, "awaiting": held_tools(view_of(tenant).catalog)}

    async def decide(body: ApprovalRequest, record: Verdict, verb: str, request: Request) -> dict[str, Any]:
        """Approve or reject (``record``) the reviewed content, then reindex so the verdict shows."""
        view = view_of(body.tenant)
        action: AuditAction = "approval.approve" if verb == "approved" else "approval.reject"
        asked = ", ".join(t.id for t in body.tools)
        if approvals is None:
            raise HTTPException(503, "approvals are not available in this deployment")
        try:
            chosen = record(view.catalog, approvals, body.tenant, [(t.id, t.hash) for t in body.tools])
        except FoldgateError as exc:
            audited(request, body.tenant, action, target=asked, outcome="refused", detail=exc.message)
            status = 404 if isinstance(exc, NotFoundError) else 409 if isinstance(exc, ConflictError) else 503
            raise HTTPException(status, exc.message) from None
        for tool in sorted(chosen):
            audited(request, body.tenant, action, target=tool, detail=f"content {chosen[tool][:12]}")
        outcome = await reindex(body.tenant) if reindex is not None else {"reindex": "not available"}
        return {"tenant": body.tenant, verb: sorted(chosen), **outcome}

    @router.post(
        "/approvals",
        summary="Approve reviewed content by hash, then reindex",
        responses=responses(
            BAD_BODY,
            s404="Unknown tenant, or a tool that is not in its catalog",
            s409="A tool's content changed since it was reviewed",
        ),
    )
    async def approve(body: ApprovalRequest, request: Request) -> dict[str, Any]:
        return await decide(body, approve_reviewed, "approved", request)

    @router.post(
        "/approvals/reject",
        summary="Reject held content by hash (it stays withheld until its content changes), then reindex",
        responses=responses(
            BAD_BODY,
            s404="Unknown tenant, or a tool that is not held for review",
            s409="A tool's content changed since it was reviewed",
        ),
    )
    async def reject(body: ApprovalRequest, request: Request) -> dict[str, Any]:
        return await decide(body, reject_reviewed, "rejected", request)

    add_activity_routes(router, activity)
    add_guard_routes(router, activity, view_of)
    if oauth is not None:
        add_connect_routes(router, gateway, oauth, operator_secret)
    return router
