"""The console's fleet page shows a machine grant's kind and latest outcome (the status route's
``auth`` entry, from :func:`foldgate.edge.grant_status.machine_state`): a refusal with the authorization
server's code and when, no connect button (no person can consent to it), never a token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.grant_status import machine_state
from tests.upstream_oauth import grant_store, oauth_context


async def test_the_fleet_shows_a_refused_workload_grant(make_console: Any, tmp_path: Path) -> None:
    auth = {"kind": "workload_jwt", "token_url": "https://as.example.com/token",
            "assertion": {"source": "aws_sts", "audience": "https://as.example.com"}}  # fmt: skip
    config = parse_tenant_config(
        {"servers": [{"name": "billing", "url": "http://127.0.0.1:9/mcp", "auth": auth}]}
    )
    with grant_store(tmp_path) as store:
        ctx = oauth_context(store)
        ctx.outcomes.record("default", "billing", "workload_jwt", "refused", "invalid_grant")

        async def connector(tenant: str, server: str) -> str:
            return "https://as.example.com/authorize"

        states = lambda t: {s.name: machine_state(ctx, None, t, s) for s in config.servers}  # noqa: E731
        async for c in make_console(config=config, connector=connector, auth_states=states):
            await c.login()
            fleet = (await c.client.get("/console/fleet")).text
    assert "workload_jwt: refused (invalid_grant at 20" in fleet
    assert "Connect billing" not in fleet
