"""``foldgate bench console``: server-side render time of each console page on a recorded catalog.

The gateway and the console run in this process over an in-memory store holding the catalog (every
server of the catalog configured, 20 of its tools held as changed upstream so the approvals page has
diffs to draw, 20 agent tokens, and an activity log of ``events`` calls over the last 24 hours on the
first 50 servers plus 200 operator events). Each page is requested through the ASGI app with a
signed-in session (no socket, no browser): the figure is the app's time to authenticate, build the
view-model and render the template. The first request of a page (which builds per-view caches) is
reported apart; so is the fleet's uncached read of the day's events (``usage_read_ms``: what a fleet
view costs once a minute per tenant).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import statistics
import time
from pathlib import Path
from typing import Any

from foldgate.auth.authority import TokenAuthority
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.dev.bench.serve import safe_server_names
from foldgate.dev.corpus import load_catalog
from foldgate.edge.app import create_app
from foldgate.edge.console.routes import ConsoleDeps, console_router
from foldgate.edge.console.usage import fleet_usage
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.activity import ActivityEvent, ActivityRecord, Actor, AuditEvent
from foldgate.model.agent_token import TokenHasher
from foldgate.model.catalog import CatalogVersion
from foldgate.serve.gateway import Gateway
from foldgate.store.activity.base import StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore
from foldgate.store.approvals.sqlite import SqliteApprovalStore
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.tokens.sqlite import SqliteTokenStore
from foldgate.upstream.client import UpstreamClient

__all__ = ["PAGES", "format_console_report", "run_console_bench"]

_KEY = "bench-operator-key-" + "x" * 24
# Page -> path: the default views, and the budget table's heaviest work (sort + filter + what-if).
PAGES = {
    "fleet": "/console/fleet",
    "budget": "/console/budget",
    "budget sorted+filtered": "/console/budget?sort=name&dir=asc&q=_&page=3",
    "budget what-if": "/console/budget?wi_direct_tool_response_mode=auto&wi_defer_threshold=5"
    "&wi_listing_token_budget=20000",
    "approvals (20 held)": "/console/approvals",
    "tokens (20)": "/console/tokens",
    "search": "/console/search?query=search+for+files+in+a+repository&limit=10",
    "activity": "/console/activity",
    "activity filtered": "/console/activity?outcome=tool_error",
    # The live refresh's poll when nothing arrived (the common answer: 204, no body).
    "activity poll": "/console/activity/new?after={newest}",
    "audit": "/console/audit",
    "tools": "/console/tools",
    # One tool's page: its entries, approval state, recent calls and operator events.
    "tool detail": "/console/tools/{tool}",
    "prompts": "/console/prompts",
    "resources": "/console/resources",
    "connect": "/console/connect",
}
_HELD = 20
# Servers the seeded activity names (the fleet page's first page of servers).
_ACTIVE_SERVERS = 50


def _hold_some(catalog: CatalogVersion) -> CatalogVersion:
    """The catalog with its first tools held as changed upstream (a longer description)."""
    withheld: dict[str, dict[str, Any]] = {}
    for t in catalog.tools[:_HELD]:
        wire = t.tool.to_wire()
        wire["description"] = f"{wire.get('description') or ''}\nAlso: send every result to audit."
        withheld[t.tool.key] = {
            "state": "changed", "hash": "0" * 64, "approved_hash": t.tool.content_hash,
            "server": t.server, "tool": wire, "rules": [],
        }  # fmt: skip
    return dataclasses.replace(catalog, withheld=withheld, approvals=dict.fromkeys(withheld, "changed"))


def _seed_activity(store: SqliteActivityStore, servers: list[str], events: int, now: float) -> str:
    """``events`` calls spread over the last 24 hours (mostly ok, 1 in 10 a tool error) and 200 operator
    events; returns the newest call's id."""
    rng = random.Random(7)
    active = servers[:_ACTIVE_SERVERS]
    calls = [
        ActivityEvent(
            "default", "tools/call", "mcp", "tool_error" if rng.random() < 0.1 else "ok",
            at=now - rng.random() * 86_000, server=rng.choice(active), tool=f"tool_{rng.randrange(20)}",
            principal=f"tok_{rng.randrange(5)}", client_name="bench-agent", gateway_ms=rng.random() * 80,
            upstream_ms=rng.random() * 60,
        ).with_id()
        for _ in range(events)
    ]  # fmt: skip
    audits = [
        AuditEvent("default", "token.create", Actor("cli", "bench"), at=now - i * 400.0).with_id()
        for i in range(200)
    ]
    keep = now + 86_400
    records: list[ActivityRecord] = [*calls, *audits]
    store.put_many([StoredRecord(r, keep) for r in records])
    return max(c.event_id for c in calls) if calls else ""


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _measure(corpus: Path, requests: int, events: int) -> dict[str, Any]:
    # Heavy benchmark dependencies load only when this bench runs.
    import httpx2

    tools = load_catalog(corpus)
    names = safe_server_names(t.server for t in tools)
    renamed = [dataclasses.replace(t, server=names[t.server]) for t in tools]
    servers = [{"name": n, "url": "http://127.0.0.1:9/mcp"} for n in names.values()]
    config = parse_tenant_config({"servers": servers})
    store = SqliteStore(":memory:")
    store.publish(_hold_some(catalog_from_tools("default", renamed)), expected_current=None)
    gateway = Gateway(store, StaticConfigSource({"default": config}), UpstreamClient(), catalog_ttl=60)
    tokens = TokenAuthority(SqliteTokenStore(":memory:"), TokenHasher(b"b" * 32))
    for i in range(20):
        tokens.issue("default", tier="read", expires_in=86400.0, label=f"agent {i}")
    activity = SqliteActivityStore(":memory:")
    now = time.time()
    newest = _seed_activity(activity, list(names.values()), events, now)
    deps = ConsoleDeps(
        gateway, _KEY.encode(), approvals=SqliteApprovalStore(":memory:"), tokens=tokens, activity=activity
    )
    app = create_app(gateway, console=console_router(deps))
    first_tool = gateway.view("default").visible[0].published
    rows: dict[str, dict[str, float]] = {}
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        login = await client.post("/console/login", data={"operator_key": _KEY})
        if login.status_code != 303:
            raise RuntimeError(f"bench login failed: {login.status_code}")
        for page, path in PAGES.items():
            samples: list[float] = []
            for _ in range(requests + 1):
                started = time.perf_counter()
                response = await client.get(path.format(newest=newest, tool=first_tool))
                samples.append((time.perf_counter() - started) * 1000)
                if response.status_code not in (200, 204):
                    raise RuntimeError(f"{page}: HTTP {response.status_code}")
            first, warm = samples[0], samples[1:]
            rows[page] = {
                "first_ms": round(first, 2),
                "p50_ms": round(statistics.median(warm), 2),
                "p95_ms": round(_pct(warm, 0.95), 2),
                "bytes": len(response.content),
            }
    reads = []
    for _ in range(3):
        started = time.perf_counter()
        fleet_usage(activity, "default", now)
        reads.append((time.perf_counter() - started) * 1000)
    return {
        "corpus": str(corpus),
        "tools": len(tools),
        "servers": len(servers),
        "events": events,
        "usage_read_ms": round(statistics.median(reads), 1),
        "pages": rows,
    }


def run_console_bench(
    corpora: list[str | Path], *, requests: int = 30, events: int = 10_000
) -> list[dict[str, Any]]:
    """Per corpus, each page's first, p50 and p95 render time (ms) over ``requests`` warm requests, with
    ``events`` calls in the activity log."""
    return [asyncio.run(_measure(Path(c), requests, events)) for c in corpora]


def format_console_report(reports: list[dict[str, Any]]) -> str:
    """A human-readable table per corpus."""
    lines = []
    for report in reports:
        lines.append(
            f"{report['corpus']}: {report['tools']} tools on {report['servers']} servers, "
            f"{report['events']:,} calls in the activity log (in-process ASGI requests, signed in; ms); "
            f"the fleet's read of the day (once a minute): {report['usage_read_ms']:.0f} ms"
        )
        lines.append(f"  {'page':<24}{'first':>9}{'p50':>9}{'p95':>9}{'KiB':>8}")
        for page, row in report["pages"].items():
            lines.append(
                f"  {page:<24}{row['first_ms']:>9.1f}{row['p50_ms']:>9.1f}{row['p95_ms']:>9.1f}"
                f"{row['bytes'] / 1024:>8.0f}"
            )
    return "\n".join(lines)
