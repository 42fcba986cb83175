"""The fleet page's view-model (servers with health, index times, counts, errors, quarantine, trust and
auth state) and the reindex jobs whose progress the page polls."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from foldgate.config.tenant import ServerConfig
from foldgate.errors import FoldgateError
from foldgate.index.triggers import Reindexer
from foldgate.serve.gateway import Gateway

__all__ = ["SERVERS_PER_PAGE", "Connector", "ReindexJobs", "fleet_view", "reindex_sentence", "start_connect"]

log = logging.getLogger(__name__)

# Issue 16's upstream OAuth: given (tenant, server), the authorization URL to send the operator to.
Connector = Callable[[str, str], Awaitable[str] | str]
# How long a reindex POST waits for the job before answering with a progress fragment: a quick one
# (the cloud's asynchronous Lambda invoke) finishes inside the request, where a frozen instance
# could not finish it afterwards.
_INLINE_WAIT_S = 0.5
# A fleet of a thousand servers is one page too many to render per request.
SERVERS_PER_PAGE = 50


def _when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch)) if epoch else "never"


def _auth_state(server: ServerConfig, states: Mapping[str, Mapping[str, Any]]) -> str:
    """How the gateway authenticates to this upstream, with an OAuth connection's state."""
    if server.auth.kind != "static":
        found = states.get(server.name, {})
        state, reason = found.get("state"), found.get("reason")
        if not state:
            return server.auth.kind
        # Why it needs consent (revoked, forgotten client, more scope) tells the operator what to do.
        return f"{server.auth.kind}: {state} ({reason})" if reason else f"{server.auth.kind}: {state}"
    if server.headers_secret:
        return "headers (secret)"
    if server.headers:
        return "headers"
    return "stdio" if server.transport == "stdio" else "none"


def fleet_view(
    gateway: Gateway,
    tenant: str,
    *,
    can_connect: bool,
    page: int = 1,
    auth_states: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything the fleet page shows for one tenant (servers ``SERVERS_PER_PAGE`` at a time);
    ``auth_states`` are the OAuth connections' states by server (the status route's ``auth`` block)."""
    error: str | None = None
    try:
        config = gateway.config(tenant)
    except FoldgateError as exc:
        return {"tenant": tenant, "error": exc.message, "servers": [], "catalog": None}
    catalog = gateway.catalog(tenant)
    statuses = catalog.servers if catalog is not None else {}
    withheld = catalog.withheld if catalog is not None else {}
    held_by_server: dict[str, int] = {}
    for held in withheld.values():
        name = str(held.get("server"))
        held_by_server[name] = held_by_server.get(name, 0) + 1
    pages = max(1, -(-len(config.servers) // SERVERS_PER_PAGE))
    page = min(max(1, page), pages)
    start = (page - 1) * SERVERS_PER_PAGE
    rows = []
    for server in config.servers[start : start + SERVERS_PER_PAGE]:
        status = statuses.get(server.name)
        rows.append({
            "name": server.name,
            "transport": server.transport,
            "enabled": server.enabled,
            "quarantined": server.quarantined,
            "trusted": server.trusted,
            "auth": _auth_state(server, auth_states or {}),
            "connect": can_connect and server.auth.kind in ("oauth", "per_user"),
            "healthy": None if status is None else status.healthy,
            "tools": status.tool_count if status is not None else 0,
            "held": held_by_server.get(server.name, 0),
            "error": status.error if status is not None else None,
            "checked_at": _when(status.checked_at if status is not None else None),
            "indexed_at": _when(status.indexed_at if status is not None else None),
        })  # fmt: skip
    return {
        "tenant": tenant,
        "error": error,
        "config_problem": gateway.configs.problem(tenant),
        "catalog": None
        if catalog is None
        else {
            "version": catalog.version,
            "indexed_at": _when(catalog.created_at),
            "tools": len(catalog.tools),
            "withheld": sum(1 for w in withheld.values() if w.get("state") != "rejected"),
            "flagged": sum(1 for w in withheld.values() if w.get("state") == "flagged"),
            "rejected": sum(1 for w in withheld.values() if w.get("state") == "rejected"),
        },
        "servers": rows,
        "server_count": len(config.servers),
        "page": page,
        "pages": pages,
    }


@dataclass
class _Job:
    task: asyncio.Future[dict[str, Any]]
    started: float
    result: dict[str, Any] | None = None
    error: str | None = None


@dataclass
class ReindexJobs:
    """Reindex runs started from the console, one per tenant at a time (progress is per process)."""

    reindex: Reindexer | None
    clock: Callable[[], float] = time.monotonic
    _jobs: dict[str, _Job] = field(default_factory=dict)

    async def start(self, tenant: str, *, after_change: bool = False) -> dict[str, Any]:
        """Start (or join) the tenant's reindex; waits briefly so a quick one reports done at once.

        ``after_change`` (a config write just landed): a run already going may have read the config
        before it, so another run follows it instead of being joined."""
        reindex = self.reindex
        if reindex is None:
            return {"state": "unavailable", "detail": "no indexer is reachable from this deployment"}
        job = self._jobs.get(tenant)
        if job is None or job.task.done():
            task: asyncio.Future[dict[str, Any]] = asyncio.ensure_future(reindex(tenant))
            job = self._jobs[tenant] = _Job(task, self.clock())
        elif after_change:
            previous = job.task

            async def again() -> dict[str, Any]:
                # Its outcome is reported by its own status; this run only needs it finished.
                with contextlib.suppress(Exception):
                    await asyncio.shield(previous)
                return await reindex(tenant)

            job = self._jobs[tenant] = _Job(asyncio.ensure_future(again()), self.clock())
        with contextlib.suppress(asyncio.TimeoutError, Exception):
            await asyncio.wait_for(asyncio.shield(job.task), _INLINE_WAIT_S)
        return self.status(tenant)

    def status(self, tenant: str) -> dict[str, Any]:
        """``idle``, ``running`` (with seconds elapsed), ``done`` (with the outcome) or ``failed``."""
        job = self._jobs.get(tenant)
        if job is None:
            return {"state": "idle"}
        elapsed = round(self.clock() - job.started, 1)
        if not job.task.done():
            return {"state": "running", "elapsed": elapsed}
        if job.result is None and job.error is None:
            exc = job.task.exception()
            if exc is None:
                job.result = job.task.result()
            else:
                # Logged whole for the operator's logs; the page shows the message only.
                log.error("console reindex of %s failed: %s", tenant, exc)
                job.error = exc.message if isinstance(exc, FoldgateError) else type(exc).__name__
        if job.error is not None:
            return {"state": "failed", "detail": job.error, "elapsed": elapsed}
        return {"state": "done", "result": job.result or {}, "elapsed": elapsed}


def _count(n: object, one: str, many: str) -> str:
    number = n if isinstance(n, int) and not isinstance(n, bool) else 0
    return f"{number:,} {one if number == 1 else many}"


def reindex_sentence(job: Mapping[str, Any]) -> str:
    """A reindex job's outcome in one sentence for the operator (the reindexers' result dicts:
    :mod:`foldgate.index.triggers`), never the dict itself."""
    state = job.get("state")
    if state == "running":
        return f"Reindexing… {job.get('elapsed', 0)} s so far."
    if state in ("failed", "unavailable"):
        return f"Reindex failed: {job.get('detail')}."
    if state != "done":
        return "No reindex started from this console."
    result: Mapping[str, Any] = job.get("result") or {}
    took = f"in {job.get('elapsed', 0)} s"
    outcome = result.get("reindex")
    if outcome == "requested":
        return "Reindex requested: the indexer runs it now; reload this page in a minute for the result."
    if outcome == "failed":
        return f"Reindex failed {took}: {result.get('error') or 'no reason given'}."
    held = _count(result.get("awaiting_approval"), "tool awaits", "tools await")
    flagged = result.get("flagged")
    held += f" approval ({flagged} flagged by the scan)" if flagged else " approval"
    tools = _count(result.get("tools"), "tool", "tools")
    if result.get("changed"):
        head = f"Reindex finished {took}: new catalog version {result.get('version')} with {tools}; {held}."
    else:
        head = f"Reindex finished {took}: nothing changed ({tools}); {held}."
    if result.get("error"):
        head += f" Some servers could not be listed: {result.get('error')}."
    for failed in result.get("failed_servers") or ():
        said = f"{failed.get('server')} could not be listed ({failed.get('error')})"
        head += f" {said}: {failed.get('serving')}."
    if result.get("recovered"):
        head += f" The previous version could not be read and was rebuilt ({result.get('recovered')})."
    return head


async def start_connect(connector: Connector, tenant: str, server: str) -> str | None:
    """The authorization URL the connector gives for (tenant, server), or None when it is not an
    http(s) URL (never redirect an operator to a javascript: or relative target)."""
    url = connector(tenant, server)
    if inspect.isawaitable(url):
        url = await url
    if not isinstance(url, str) or not url.lower().startswith(("https://", "http://")):
        return None
    return url
