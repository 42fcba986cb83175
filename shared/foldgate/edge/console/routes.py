"""The console's pages under ``/console``: login, fleet, context budget, approvals, tokens, the search
playground, activity and audit (the tool, prompt, resource and Connect pages are in
:mod:`foldgate.edge.console.tool_pages`). Every route sits behind
:func:`foldgate.edge.console.web.console_route` (session, Origin and CSRF checks first); handlers only
validate their own input and render."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from starlette.requests import Request

from foldgate.auth.authority import TokenAuthority
from foldgate.auth.secrets import verify_operator
from foldgate.config.fleet_write import ConfigWriter, config_writer
from foldgate.edge.access import source_address
from foldgate.edge.admin import ApprovalRequest, ReindexRequest, Verdict
from foldgate.edge.console.activity import activity_view, newer_view
from foldgate.edge.console.approvals import MAX_BULK, approvals_view, by_server
from foldgate.edge.console.budget import budget_view, what_if_settings
from foldgate.edge.console.connect_snippets import surface_snippets
from foldgate.edge.console.flash import FLASH_COOKIE, FlashSealer
from foldgate.edge.console.fleet import (
    Connector,
    ReindexJobs,
    fleet_view,
    reindex_sentence,
    start_connect,
)
from foldgate.edge.console.fleet_edit import add_fleet_edit_routes
from foldgate.edge.console.guard import guard_view
from foldgate.edge.console.login_limit import LoginLimit
from foldgate.edge.console.playground import EngineScores, lexical_only, run_playground
from foldgate.edge.console.session import COOKIE_NAME, Session, SessionSigner
from foldgate.edge.console.tokens import issue_token, scope_servers, token_rows, token_scope
from foldgate.edge.console.tool_pages import add_tool_pages, connect_base
from foldgate.edge.console.usage import UsageCache
from foldgate.edge.console.web import (
    PREFIX,
    STATIC,
    TENANT_COOKIE,
    console_route,
    cookie_is_secure,
    form_value,
    render,
)
from foldgate.edge.operator_audit import DEPLOYMENT, audit, console_actor, operator_key_id
from foldgate.errors import ConfigError, ConflictError, FoldgateError, NotFoundError
from foldgate.index.triggers import Reindexer
from foldgate.model.activity import AuditAction
from foldgate.model.agent_token import is_token_id
from foldgate.model.naming import display_name
from foldgate.serve.gateway import Gateway
from foldgate.serve.review import approve_reviewed, reject_reviewed
from foldgate.store.activity.base import ActivityStore
from foldgate.store.approvals.base import ApprovalStore
from foldgate.store.signouts.base import SignOutStore
from foldgate.store.signouts.sqlite import SqliteSignOutStore

__all__ = ["ConsoleDeps", "console_router"]


@dataclass
class ConsoleDeps:
    """What the console works with; every part but the gateway is optional (its page says so)."""

    gateway: Gateway
    operator_secret: bytes | None
    approvals: ApprovalStore | None = None
    reindex: Reindexer | None = None
    tokens: TokenAuthority | None = None
    # Issue 16: the upstream OAuth connect flow, wired by the app when it exists.
    connector: Connector | None = None
    # The OAuth connections' states by server for a tenant (issue 16's status ``auth`` block).
    auth_states: Callable[[str], dict[str, dict[str, Any]]] | None = None
    # The local config file's path, named on the context budget page (None in the cloud).
    config_file: str | None = None
    # Where fleet edits and the what-if are written (None: derived from the gateway's config source;
    # still None for a source the console cannot write, see foldgate.config.fleet_write).
    config_writer: ConfigWriter | None = None
    # Where this instance's operator key is, in words (auth.secrets.operator_key_location): the sign-in
    # form says so. None: the form names both usual places.
    operator_key_at: str | None = None
    # Wrong operator keys the sign-in form takes (None: unlimited, e.g. benches).
    login_limit: LoginLimit | None = None
    # Signed-out sessions, shared by every instance (None: kept in this process only, e.g. benches).
    signouts: SignOutStore | None = None
    # The activity log (issue 25): the Activity and Audit pages and the fleet's last 24 hours.
    activity: ActivityStore | None = None
    # The base URL agents reach this instance at (FOLDGATE_PUBLIC_URL): the Connect snippets' URLs.
    public_url: str | None = None
    # The deployment's allow_private_upstreams: a fleet edit naming a loopback or private host is
    # refused at save when it is off (metadata and link-local hosts always are).
    allow_private_upstreams: bool = True
    clock: Callable[[], float] = time.time
    signer: SessionSigner | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.signer = SessionSigner(self.operator_secret) if self.operator_secret else None
        if self.signouts is None:
            self.signouts = SqliteSignOutStore(":memory:")
        if self.config_writer is None:
            self.config_writer = config_writer(
                self.gateway.configs, allow_private=self.allow_private_upstreams
            )

    def signed_out(self, sid: str) -> bool:
        """Whether the session was signed out (on any instance sharing the store)."""
        assert self.signouts is not None  # set by __post_init__
        return self.signouts.signed_out(sid)


def _tenant(deps: ConsoleDeps, request: Request, value: str | None = None) -> tuple[str, list[str]]:
    """The tenant a page is about: the one asked for (a form's or the query's ``tenant``), else the one
    this session last chose (the header's selector), else the first. Whichever it is, it must be one of
    the configured tenants, checked on every request as the admin API checks it (404 otherwise); one
    asked for becomes the session's choice."""
    tenants = deps.gateway.configs.tenants()
    asked = value if value is not None else request.query_params.get("tenant")
    if asked:
        if asked not in tenants:
            raise HTTPException(404, "unknown tenant")
        request.state.chosen_tenant = asked
        return asked, tenants
    kept = request.cookies.get(TENANT_COOKIE)
    if kept in tenants:
        return str(kept), tenants
    if not tenants:
        raise HTTPException(404, "no tenant is configured")
    return tenants[0], tenants


def _page(request: Request, name: str, tenant: str, tenants: list[str], **ctx: Any) -> HTMLResponse:
    """A page about one tenant (the tenant switcher needs the others)."""
    return render(request, name, {"tenant": tenant, "tenants": tenants, **ctx})


def console_router(deps: ConsoleDeps) -> APIRouter:
    """The ``/console`` routes (not in the OpenAPI document)."""
    router = APIRouter(
        prefix=PREFIX,
        route_class=console_route(lambda: deps.signer, deps.signed_out),
        include_in_schema=False,
    )
    jobs = ReindexJobs(deps.reindex)
    flashes = FlashSealer(deps.operator_secret) if deps.operator_secret else None
    engines = EngineScores(deps.gateway)
    usage_cache = UsageCache(deps.activity, clock=deps.clock)

    def audited(request: Request, tenant: str, action: AuditAction, **what: str) -> None:
        """Record an operator action of this request's console session."""
        audit(deps.gateway.recorder, tenant, action, console_actor(request), **what)

    @router.get("")
    def home() -> Response:
        return RedirectResponse(f"{PREFIX}/fleet", 303)

    @router.get("/static/{name}")
    def static(name: str) -> Response:
        found = STATIC.get(name)
        if found is None:
            raise HTTPException(404, "not found")
        return Response(found[0], media_type=found[1], headers={"cache-control": "public, max-age=3600"})

    def login_page(request: Request, error: str | None, status: int = 200) -> HTMLResponse:
        signed_out = error is None and request.query_params.get("signed_out") == "1"
        ctx = {"error": error, "key_at": deps.operator_key_at, "signed_out": signed_out}
        return render(request, "login.html", ctx, status)

    @router.get("/login")
    def login_form(request: Request) -> Response:
        return login_page(request, None)

    @router.post("/login")
    def login(request: Request) -> Response:
        # The guard answered 503 when there is no operator key, so both are set here.
        assert deps.operator_secret is not None
        assert deps.signer is not None
        address = source_address(request)
        wait = deps.login_limit.attempt(address) if deps.login_limit is not None else 0
        if wait:
            # Limited: the key is not even checked, so neither the answer nor its timing says anything.
            # Not recorded: the wrong keys that brought the address here were, and a flood of limited
            # attempts must not become as many store writes.
            message = f"Too many failed sign-ins; try again in {wait} seconds."
            limited = login_page(request, message, 429)
            limited.headers["retry-after"] = str(wait)
            return limited
        # Only the operator key opens the console: an agent token (or anything else) is refused alike.
        if not verify_operator(deps.operator_secret, form_value(request, "operator_key")):
            audited(request, DEPLOYMENT, "console.sign_in_refused", outcome="refused", detail="wrong key")
            return login_page(request, "That is not the operator key.", 401)
        if deps.login_limit is not None:
            deps.login_limit.succeeded(address)
        value, session = deps.signer.issue()
        actor = console_actor(request, session.sid)
        audit(
            deps.gateway.recorder,
            DEPLOYMENT,
            "console.sign_in",
            actor,
            detail=operator_key_id(deps.operator_secret),
        )
        response = RedirectResponse(f"{PREFIX}/fleet", 303)
        response.set_cookie(
            COOKIE_NAME,
            value,
            max_age=deps.signer.ttl_s,
            path=PREFIX,
            secure=cookie_is_secure(request),
            httponly=True,
            samesite="strict",
        )
        return response

    @router.post("/logout")
    def logout(request: Request) -> Response:
        # The guard let this POST through only with a live session and its CSRF token.
        session: Session = request.state.session
        assert deps.signouts is not None  # set by ConsoleDeps.__post_init__
        try:
            # Until the cookie would expire: a copy of it is refused on every instance from now on.
            deps.signouts.sign_out(session.sid, session.expires_at)
        except FoldgateError:
            raise HTTPException(503, "the sign-out could not be recorded; try again") from None
        audited(request, DEPLOYMENT, "console.sign_out")
        # The form says so: an operator must not wonder whether the click did anything.
        response = RedirectResponse(f"{PREFIX}/login?signed_out=1", 303)
        response.delete_cookie(COOKIE_NAME, path=PREFIX)
        response.delete_cookie(TENANT_COOKIE, path=PREFIX)
        return response

    def fleet_model(request: Request, tenant: str) -> dict[str, Any]:
        try:
            page = int(request.query_params.get("page") or 1)
        except ValueError:
            page = 1
        states = deps.auth_states(tenant) if deps.auth_states is not None else None
        return fleet_view(
            deps.gateway, tenant, can_connect=deps.connector is not None, page=page, auth_states=states
        )

    def reindex_fragment(request: Request, tenant: str, job: dict[str, Any]) -> HTMLResponse:
        """The progress line; a finished job also tells the page to re-read its facts."""
        fragment = render(request, "_reindex.html", {"tenant": tenant, "job": job,
                                                     "sentence": reindex_sentence(job)})  # fmt: skip
        if job["state"] in ("done", "failed"):
            fragment.headers["hx-trigger"] = "fleet-changed"
        return fragment

    @router.get("/fleet")
    def fleet(request: Request) -> Response:
        tenant, tenants = _tenant(deps, request)
        model = fleet_model(request, tenant)
        usage = usage_cache.get(tenant)
        rows = usage_cache.rows(usage, [s["name"] for s in model["servers"]])
        as_of = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(usage["as_of"]))
        usage = {**usage, "rows": rows, "as_of": as_of}
        job = jobs.status(tenant)
        return _page(request, "fleet.html", tenant, tenants, fleet=model, usage=usage, job=job,
                     sentence=reindex_sentence(job))  # fmt: skip

    @router.get("/fleet/facts")
    def fleet_facts(request: Request) -> Response:
        tenant, _ = _tenant(deps, request)
        return render(request, "_fleet_facts.html", {"tenant": tenant, "fleet": fleet_model(request, tenant)})

    @router.post("/fleet/reindex")
    async def reindex(request: Request) -> Response:
        try:
            body = ReindexRequest(tenant=form_value(request, "tenant"))
        except ValidationError:
            raise HTTPException(400, "invalid tenant") from None
        tenant, _ = _tenant(deps, request, body.tenant)
        job = await jobs.start(tenant)
        refused = job["state"] == "unavailable"
        audited(request, tenant, "index.reindex", target=tenant, outcome="refused" if refused else "ok",
                detail=str(job.get("detail") or job["state"]))  # fmt: skip
        if job["state"] == "done":
            deps.gateway.invalidate(tenant)
        if request.headers.get("hx-request") == "true":
            return reindex_fragment(request, tenant, job)
        return RedirectResponse(f"{PREFIX}/fleet?tenant={tenant}", 303)

    @router.get("/fleet/reindex")
    def reindex_status(request: Request) -> Response:
        tenant, _ = _tenant(deps, request)
        job = jobs.status(tenant)
        if job["state"] == "done":
            deps.gateway.invalidate(tenant)
        return reindex_fragment(request, tenant, job)

    @router.post("/fleet/connect")
    async def connect(request: Request) -> Response:
        tenant, _ = _tenant(deps, request, form_value(request, "tenant"))
        server = form_value(request, "server")
        config = deps.gateway.config(tenant)
        if deps.connector is None or config.server(server) is None:
            raise HTTPException(404, "no connect flow for that server")
        url = await start_connect(deps.connector, tenant, server)
        if url is None:
            audited(
                request, tenant, "upstream.connect", target=server, outcome="refused", detail="no usable URL"
            )
            raise HTTPException(502, "the connect flow gave no usable authorization URL")
        audited(request, tenant, "upstream.connect", target=server, detail="consent started")
        return RedirectResponse(url, 303)

    def budget_page(
        request: Request, tenant: str, tenants: list[str], params: dict[str, str], **extra: Any
    ) -> HTMLResponse:
        model = budget_view(deps.gateway.view(tenant), params)
        what = model["what_if"]
        config_hash = None
        writer = deps.config_writer
        if writer is not None and what is not None and not what["error"]:
            # The save form sends the document's version back (the file's hash, the table's revision):
            # a config changed since the page was shown is kept. An unreadable one just gets no save
            # button (the JSON to copy still shows).
            with contextlib.suppress(FoldgateError):
                config_hash = writer.read(tenant).version
        ctx = {"saved": None, "save_error": None, **extra}
        return _page(
            request, "budget.html", tenant, tenants, budget=model, config_file=deps.config_file,
            config_hash=config_hash, save_label=writer.label if writer is not None else None, **ctx,
        )  # fmt: skip

    @router.get("/budget")
    def budget(request: Request) -> Response:
        tenant, tenants = _tenant(deps, request)
        params = dict(request.query_params)
        writer = deps.config_writer
        saved = (writer.label if writer else None) if params.get("saved") == "1" else None
        return budget_page(request, tenant, tenants, params, saved=saved)

    @router.post("/budget/save")
    async def save_budget(request: Request) -> Response:
        form: dict[str, str] = request.state.form
        tenant, tenants = _tenant(deps, request, form.get("tenant", ""))
        writer = deps.config_writer
        if writer is None:
            raise HTTPException(404, "this gateway's config cannot be written here: copy the JSON instead")
        settings, error = what_if_settings(deps.gateway.config(tenant), form)
        status = 400
        if error is None:
            try:
                writer.save_settings(tenant, settings, form.get("config_hash", ""))
            except ConflictError as exc:
                error, status = exc.message, 409
            except (ConfigError, NotFoundError) as exc:
                error = exc.message
            else:
                audited(request, tenant, "config.save", target=writer.label,
                        detail="set " + ", ".join(sorted(settings)))  # fmt: skip
                # Read now, not when the source's cache expires: the next page shows the saved totals.
                deps.gateway.configs.reload(tenant)
                # The cloud's indexer keeps the config with the catalog (a fresh instance's fallback).
                await jobs.start(tenant, after_change=True)
                return RedirectResponse(f"{PREFIX}/budget?{urlencode({'tenant': tenant, 'saved': '1'})}", 303)
        audited(request, tenant, "config.save", target=writer.label, outcome="refused",
                detail=str(error))  # fmt: skip
        params = {"tenant": tenant, **{k: v for k, v in form.items() if k.startswith("wi_")}}
        refused = budget_page(request, tenant, tenants, params, save_error=error)
        refused.status_code = status
        return refused

    def approvals_page(request: Request, tenant: str, tenants: list[str], **extra: Any) -> HTMLResponse:
        try:
            config = deps.gateway.config(tenant)
        except FoldgateError:
            config = None  # the tiers are then the declared ones (the config problem is the fleet's)
        held = approvals_view(deps.gateway.catalog(tenant), config)
        groups = by_server([t for t in held if t["state"] != "rejected"])
        return _page(request, "approvals.html", tenant, tenants, held=held, groups=groups, **extra)

    @router.get("/approvals")
    def approvals(request: Request) -> Response:
        tenant, tenants = _tenant(deps, request)
        return approvals_page(request, tenant, tenants, message=None, error=None)

    async def decide(
        request: Request, record: Verdict, verb: str, tools: list[dict[str, str]], why: str = ""
    ) -> Response:
        """Approve or reject (``record``) reviewed tools, each by its own content hash, as the admin API
        does; every tool is named ``server__tool`` on the page (:func:`display_name`)."""
        try:
            body = ApprovalRequest.model_validate({"tenant": form_value(request, "tenant"), "tools": tools})
        except ValidationError:
            raise HTTPException(400, "invalid approval: a tool id and its 64-hex content hash") from None
        tenant, tenants = _tenant(deps, request, body.tenant)
        catalog = deps.gateway.catalog(tenant)
        if deps.approvals is None or catalog is None:
            return approvals_page(request, tenant, tenants, message=None, error="approvals are not available")
        action: AuditAction = "approval.approve" if verb == "Approved" else "approval.reject"
        try:
            chosen = record(catalog, deps.approvals, tenant, [(t.id, t.hash) for t in body.tools])
        except (NotFoundError, ConflictError) as exc:
            audited(request, tenant, action, target=body.tools[0].id, outcome="refused", detail=exc.message)
            # The review names the keys the form sent; the page names tools as agents call them.
            said = exc.message
            for asked in body.tools:
                said = said.replace(asked.id, display_name(asked.id))
            refused = approvals_page(request, tenant, tenants, message=None, error=said)
            refused.status_code = 409
            return refused
        for tool in sorted(chosen):
            audited(request, tenant, action, target=tool, detail=f"content {chosen[tool][:12]}{why}")
        outcome = await deps.reindex(tenant) if deps.reindex is not None else {}
        deps.gateway.invalidate(tenant)
        names = ", ".join(sorted(display_name(key) for key in chosen))
        message = f"{verb} {names}; reindex: {outcome.get('reindex', 'not available')}"
        return approvals_page(request, tenant, tenants, message=message, error=None)

    def one_tool(request: Request) -> list[dict[str, str]]:
        return [{"id": form_value(request, "id"), "hash": form_value(request, "hash")}]

    @router.post("/approvals")
    async def approve(request: Request) -> Response:
        return await decide(request, approve_reviewed, "Approved", one_tool(request))

    @router.post("/approvals/server")
    async def approve_server(request: Request) -> Response:
        # One confirmation for one server's pending tools, each still approved by the hash shown for it:
        # a tool whose content changed since the page was shown refuses the whole batch (nothing recorded).
        server = form_value(request, "server")
        tools = [
            {"id": form_value(request, f"id_{n}"), "hash": form_value(request, f"hash_{n}")}
            for n in range(MAX_BULK)
            if form_value(request, f"id_{n}")
        ]
        if not tools or any(not t["id"].startswith(f"{server}:") for t in tools):
            raise HTTPException(400, "invalid approval: the pending tools of one server, each with its hash")
        return await decide(request, approve_reviewed, "Approved", tools, f"; all pending tools of {server}")

    @router.post("/approvals/reject")
    async def reject(request: Request) -> Response:
        return await decide(request, reject_reviewed, "Rejected", one_tool(request))

    def tokens_page(request: Request, tenant: str, tenants: list[str], **extra: Any) -> HTMLResponse:
        rows = token_rows(deps.tokens, tenant) if deps.tokens is not None else None
        servers = [s.name for s in deps.gateway.config(tenant).servers]
        ctx = {"created": None, "error": None, "message": None, **extra}
        if ctx["created"]:  # the new token's client configs, on the one page that shows it
            ctx["connect"] = surface_snippets(connect_base(deps, request), ctx["created"]["token"])
        return _page(request, "tokens.html", tenant, tenants, rows=rows, servers=servers, **ctx)

    @router.get("/tokens")
    def tokens(request: Request) -> Response:
        tenant, tenants = _tenant(deps, request)
        session: Session = request.state.session
        flash = request.cookies.get(FLASH_COOKIE)
        created = flashes.open(session.sid, flash, deps.clock()) if flashes is not None else None
        if created is not None and created.get("tenant") != tenant:
            created = None
        page = tokens_page(request, tenant, tenants, created=created)
        if flash is not None:
            # Consumed by this view: a reload, or the back button, shows the secret no more.
            page.delete_cookie(FLASH_COOKIE, path=PREFIX)
        return page

    @router.post("/tokens")
    def create_token(request: Request) -> Response:
        form: dict[str, str] = request.state.form
        tenant, tenants = _tenant(deps, request, form.get("tenant", ""))
        if deps.tokens is None or flashes is None:
            return tokens_page(request, tenant, tenants, error="tokens are not available")
        known = [s.name for s in deps.gateway.config(tenant).servers]
        # The scope is picked from the tenant's servers (checkboxes), never typed.
        servers, error = scope_servers(form, known)
        token, grant = None, None
        if error is None:
            token, grant, error = issue_token(deps.tokens, {**form, "servers": servers}, tenants)
        if token is None or grant is None:
            audited(request, tenant, "token.create", outcome="refused", detail=str(error))
            return tokens_page(request, tenant, tenants, error=error)
        audited(request, grant.tenant, "token.create", target=grant.token_id, detail=token_scope(grant))
        # POST-redirect-GET: a reload of the page that shows the secret never creates a second token.
        session: Session = request.state.session
        sealed = flashes.seal(session.sid, {"token": token, "id": grant.token_id, "tenant": grant.tenant},
                              deps.clock())  # fmt: skip
        done = RedirectResponse(f"{PREFIX}/tokens?{urlencode({'tenant': grant.tenant})}", 303)
        done.set_cookie(FLASH_COOKIE, sealed, path=PREFIX, secure=cookie_is_secure(request), httponly=True,
                        samesite="strict")  # fmt: skip
        return done

    @router.post("/tokens/revoke")
    def revoke_token(request: Request) -> Response:
        tenant, tenants = _tenant(deps, request, form_value(request, "tenant"))
        token_id = form_value(request, "token_id")
        if deps.tokens is None or not is_token_id(token_id):
            audited(request, tenant, "token.revoke", outcome="refused", detail="not a token id")
            return tokens_page(request, tenant, tenants, error="not a token id")
        owned = {g.token_id for g in deps.tokens.list(tenant)}
        if token_id not in owned or not deps.tokens.revoke(token_id):
            audited(
                request, tenant, "token.revoke", target=token_id, outcome="refused", detail="no such token"
            )
            return tokens_page(request, tenant, tenants, error=f"no token {token_id} in this tenant")
        audited(request, tenant, "token.revoke", target=token_id)
        return tokens_page(request, tenant, tenants, message=f"Revoked {token_id}.")

    @router.get("/search")
    async def search(request: Request) -> Response:
        tenant, tenants = _tenant(deps, request)
        params = dict(request.query_params)
        try:
            result = await run_playground(deps.gateway, engines, deps.tokens, tenant, params)
        except FoldgateError as exc:
            result = {"error": exc.message, "query": params.get("query", "")}
        choices = (
            [r for r in token_rows(deps.tokens, tenant) if r["state"] == "active"] if deps.tokens else []
        )
        lexical = lexical_only(deps.gateway, deps.gateway.catalog(tenant))
        return _page(
            request, "search.html", tenant, tenants, result=result, choices=choices, lexical_only=lexical
        )

    @router.get("/activity")
    def activity(request: Request) -> Response:
        tenant, tenants = _tenant(deps, request)
        model = activity_view(deps.activity, tenant, request.query_params)
        return _page(request, "activity.html", tenant, tenants, activity=model)

    @router.get("/activity/new")
    def activity_new(request: Request) -> Response:
        tenant, _ = _tenant(deps, request)
        model = newer_view(deps.activity, tenant, request.query_params)
        if model["live"] is None:
            # Not a poll this page can continue (no log, a bad filter): 286 tells htmx to stop polling.
            return Response(status_code=286)
        if not model["rows"]:
            # Nothing new: htmx swaps nothing on 204 and the poller asks again.
            return Response(status_code=204)
        return render(request, "_activity_new.html", {"model": model, "tenant": tenant})

    add_fleet_edit_routes(
        router, deps.gateway, deps.config_writer, page=_page, audited=audited,
        tenant_of=lambda request, value: _tenant(deps, request, value),
        start_reindex=lambda tenant: jobs.start(tenant, after_change=True), job_of=jobs.status,
    )  # fmt: skip

    @router.get("/guard")
    def guard_page(request: Request) -> Response:
        tenant, tenants = _tenant(deps, request)
        model = guard_view(deps.gateway, deps.activity, tenant, request.query_params)
        return _page(request, "guard.html", tenant, tenants, guard=model)

    @router.get("/audit")
    def audit_page(request: Request) -> Response:
        tenant, tenants = _tenant(deps, request)
        deployment = request.query_params.get("scope") == "deployment"
        model = activity_view(deps.activity, tenant, request.query_params, "audit", deployment=deployment)
        return _page(request, "audit.html", tenant, tenants, audit=model)

    add_tool_pages(router, deps, lambda request, value: _tenant(deps, request, value), _page, audited)

    # Keep this route the router's last: it answers every /console path no route above took, with the
    # console's own 404 page (behind the same session check as every page) instead of raw JSON.
    @router.api_route("/{rest:path}", methods=["GET", "POST"])
    def not_found(request: Request) -> Response:
        raise HTTPException(404, f"There is no console page {request.url.path}.")

    return router
