"""The console's fleet edits: add and edit a server, switch it on or off, trust or quarantine it, and
pin a tool's tier or ``defer_loading``, written to the tenant's config document (the local file or, in
the cloud, the table: :mod:`foldgate.config.fleet_write`).

Every write goes the same way (:func:`add_fleet_edit_routes`'s ``write``): the page's version of the
document must still be the stored one (else 409 and the form again with the fresh state), the edit is
a pure function of the document (:mod:`foldgate.config.fleet_edit`), the whole new document is
validated before anything is stored (400 naming the field), the change is recorded as an operator
event (what changed, never a secret or a URL), the gateway reads the config again at once, and a
reindex of the tenant starts. Secrets never reach a page: a server's ``headers_secret`` is a parameter
name, and literal ``headers`` are shown by name with masked values and kept as they are.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.requests import Request

from foldgate.config.fleet_edit import (
    FLAGS,
    add_server,
    edit_server,
    parse_server_form,
    server_for_form,
    set_server_flag,
    set_tool_override,
    summarize,
)
from foldgate.config.fleet_write import NOT_EDITABLE, ConfigDocument, ConfigWriter
from foldgate.edge.console.fleet import reindex_sentence
from foldgate.edge.console.web import PREFIX
from foldgate.errors import ConfigError, ConflictError, FoldgateError, NotFoundError
from foldgate.model.activity import AuditAction
from foldgate.serve.gateway import Gateway

__all__ = ["add_fleet_edit_routes", "tool_rows"]

Page = Callable[..., HTMLResponse]
Edit = Callable[[dict[str, Any]], dict[str, Any]]


def tool_rows(gateway: Gateway, tenant: str, server: str, pinned: dict[str, Any]) -> list[dict[str, Any]]:
    """The server's tools for the pin form: those of the current catalog, then any pinned tool the
    catalog does not have (a tool that went away keeps its override until it is unpinned)."""
    catalog = gateway.catalog(tenant)
    rows: dict[str, dict[str, Any]] = {}
    for t in catalog.tools if catalog is not None else ():
        if t.tool.server == server:
            rows[t.tool.name] = {"name": t.tool.name, "published": t.published, "tier": t.tier}
    for name in pinned:
        rows.setdefault(str(name), {"name": str(name), "published": "", "tier": ""})
    out = []
    for name in sorted(rows):
        override = pinned.get(name)
        override = override if isinstance(override, dict) else {}
        defer = override.get("defer_loading")
        out.append({
            **rows[name],
            "pinned_tier": override.get("tier") or "",
            "pinned_defer": "" if defer is None else ("true" if defer else "false"),
        })  # fmt: skip
    return out


def add_fleet_edit_routes(
    router: APIRouter,
    gateway: Gateway,
    config_writer: ConfigWriter | None,
    *,
    tenant_of: Callable[[Request, str | None], tuple[str, list[str]]],
    page: Page,
    audited: Callable[..., None],
    start_reindex: Callable[[str], Awaitable[dict[str, Any]]],
    job_of: Callable[[str], dict[str, Any]],
) -> None:
    """Mount the fleet edit routes on the console's router (its session, Origin and CSRF guard)."""

    def writer() -> ConfigWriter | None:
        return config_writer

    def read(tenant: str) -> ConfigDocument | None:
        chosen = writer()
        return chosen.read(tenant) if chosen is not None else None

    def server_page(
        request: Request,
        tenant: str,
        tenants: list[str],
        name: str | None,
        *,
        current: ConfigDocument | None,
        values: dict[str, Any] | None = None,
        status: int = 200,
        **extra: Any,
    ) -> HTMLResponse:
        """The add form (``name`` None) or one server's edit form, switches and tool pins."""
        shown: dict[str, Any] | None = None
        tools: list[dict[str, Any]] = []
        if name is not None and current is not None:
            try:
                shown = server_for_form(current.doc, name)
            except ConfigError:
                raise HTTPException(404, "no such server in this tenant's config") from None
            tools = tool_rows(gateway, tenant, name, shown["tools"])
        chosen = writer()
        # A new server starts enabled: added with a name and a URL, it serves. A form sent back with
        # errors keeps what was ticked (an unticked box is absent from ``values``).
        fresh = {"enabled": True} if name is None and values is None else {}
        ctx = {
            "server": shown, "values": {**fresh, **(shown or {}), **(values or {})}, "tools": tools,
            "version": current.version if current is not None else "",
            "editable": chosen is not None, "not_editable": NOT_EDITABLE,
            "save_label": chosen.label if chosen is not None else "",
            "keeps_comments": chosen.keeps_comments if chosen is not None else True,
            "flags": FLAGS, "message": None, "error": None, **extra,
        }  # fmt: skip
        # The reindex a save started, in the same sentence the fleet page shows (_reindex.html).
        ctx["job"] = job = job_of(tenant)
        ctx["sentence"] = reindex_sentence(job)
        response = page(request, "server.html", tenant, tenants, **ctx)
        response.status_code = status
        return response

    async def write(
        request: Request, name: str | None, target: str, edit: Edit, values: dict[str, Any] | None = None
    ) -> Response:
        """Apply ``edit`` to the tenant's document on the page's version; see the module docstring."""
        form: dict[str, str] = request.state.form
        tenant, tenants = tenant_of(request, form.get("tenant", ""))
        action: AuditAction = "config.save"
        chosen = writer()
        if chosen is None:
            audited(request, tenant, action, target=target, outcome="refused", detail="source not editable")
            return server_page(request, tenant, tenants, None, current=None, status=409, error=NOT_EDITABLE)
        try:
            current = chosen.read(tenant)
        except (ConfigError, NotFoundError) as exc:
            raise HTTPException(409, exc.message) from None
        if form.get("version", "") != current.version:
            detail = "the config changed since this page was shown"
            audited(request, tenant, action, target=target, outcome="refused", detail=detail)
            error = f"Not saved: {detail}. This is the current config; make the change again."
            return server_page(request, tenant, tenants, name, current=current, status=409, error=error)
        try:
            new = edit(current.doc)
            chosen.write(tenant, new, current.version)
        except ConflictError:
            fresh = chosen.read(tenant)
            detail = "the config changed while saving"
            audited(request, tenant, action, target=target, outcome="refused", detail=detail)
            error = f"Not saved: {detail}. This is the current config; make the change again."
            return server_page(request, tenant, tenants, name, current=fresh, status=409, error=error)
        except ConfigError as exc:
            audited(request, tenant, action, target=target, outcome="refused", detail=exc.message)
            # The form as submitted (no secret is ever in it), with the error naming the field.
            return server_page(
                request, tenant, tenants, name, current=current, values=values, status=400, error=exc.message
            )
        audited(request, tenant, action, target=target, detail=summarize(current.doc, new))
        # Read now, not when the source's cache expires: the next page shows the change.
        with contextlib.suppress(FoldgateError):
            gateway.configs.reload(tenant)
        gateway.invalidate(tenant)
        job = await start_reindex(tenant)
        audited(request, tenant, "index.reindex", target=tenant, detail=f"after {target}: {job['state']}",
                outcome="refused" if job["state"] == "unavailable" else "ok")  # fmt: skip
        server = name if name is not None else str((values or {}).get("name", ""))
        query = urlencode({"tenant": tenant, "server": server, "saved": "1"})
        return RedirectResponse(f"{PREFIX}/fleet/server?{query}", 303)

    @router.get("/fleet/server")
    def server_form(request: Request) -> Response:
        tenant, tenants = tenant_of(request, None)
        name = request.query_params.get("server") or None
        try:
            current = read(tenant)
        except (ConfigError, NotFoundError) as exc:
            return server_page(request, tenant, tenants, None, current=None, error=exc.message)
        chosen = writer()
        saved = request.query_params.get("saved") == "1"
        message = f"Saved to {chosen.label}; reindexing the tenant." if saved and chosen else None
        if current is None:
            # Fixed configs or Parameter Store: show the server read-only with the refusal.
            return server_page(request, tenant, tenants, None, current=None, error=NOT_EDITABLE)
        return server_page(request, tenant, tenants, name, current=current, message=message)

    @router.post("/fleet/server/add")
    async def add(request: Request) -> Response:
        form: dict[str, str] = request.state.form
        try:
            fields = parse_server_form(form, adding=True)
        except ConfigError as exc:
            tenant, tenants = tenant_of(request, form.get("tenant", ""))
            values = {k: v for k, v in form.items() if k not in ("csrf", "version")}
            return server_page(
                request,
                tenant,
                tenants,
                None,
                current=read(tenant),
                values=values,
                status=400,
                error=exc.message,
            )
        name = str(fields["name"])
        return await write(request, None, f"server {name}", lambda doc: add_server(doc, fields), fields)

    @router.post("/fleet/server/edit")
    async def edit(request: Request) -> Response:
        form: dict[str, str] = request.state.form
        name = form.get("server", "")
        try:
            fields = parse_server_form(form, adding=False)
        except ConfigError as exc:
            tenant, tenants = tenant_of(request, form.get("tenant", ""))
            return server_page(
                request, tenant, tenants, name, current=read(tenant), status=400, error=exc.message
            )
        return await write(
            request, name, f"server {name}", lambda doc: edit_server(doc, name, fields), fields
        )

    @router.post("/fleet/server/switch")
    async def switch(request: Request) -> Response:
        form: dict[str, str] = request.state.form
        name, flag, value = form.get("server", ""), form.get("flag", ""), form.get("value", "")
        if flag not in FLAGS or value not in ("true", "false"):
            raise HTTPException(400, "not a server switch")
        on = value == "true"
        return await write(request, name, f"server {name}", lambda doc: set_server_flag(doc, name, flag, on))

    @router.post("/fleet/server/pin")
    async def pin(request: Request) -> Response:
        form: dict[str, str] = request.state.form
        name, tool = form.get("server", ""), form.get("tool", "")
        tier = form.get("tier", "") or None
        defer_text = form.get("defer_loading", "")
        if defer_text not in ("", "true", "false"):
            raise HTTPException(400, "defer_loading: true, false or unpinned")
        defer = None if not defer_text else defer_text == "true"
        return await write(
            request,
            name,
            f"tool {name}__{tool}",
            lambda doc: set_tool_override(doc, name, tool, tier=tier, defer_loading=defer),
        )
