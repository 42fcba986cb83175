"""``GET /metrics`` on the local gateway: the operator reads the call metrics in Prometheus' text
format; an agent token, a wrong key or no credential gets the 401 of ``/api/v1``."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from foldgate.app.local import METRICS_MISSING, LocalGateway, build_local
from foldgate.auth.authority import TokenAuthority
from foldgate.config.settings import Settings
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.model.activity import ActivityEvent
from foldgate.model.agent_token import TokenHasher
from foldgate.store.tokens.sqlite import SqliteTokenStore

TOKEN_SECRET = "t" * 32
OPERATOR = "o" * 32


def _local(tmp_path: Path, operator: str) -> LocalGateway:
    settings = Settings(
        sqlite_path=str(tmp_path / "fg.sqlite3"),
        auth_required=True,
        token_secret=TOKEN_SECRET,
        operator_key=operator,
        embedding_provider="none",
    )
    return build_local(StaticConfigSource({"acme": parse_tenant_config({"servers": []})}), settings)


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[tuple[LocalGateway, httpx2.AsyncClient]]:
    gateway = _local(tmp_path, OPERATOR)
    transport = httpx2.ASGITransport(app=gateway.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield gateway, client


async def test_a_recorded_call_shows_in_the_operators_metrics(
    local: tuple[LocalGateway, httpx2.AsyncClient],
) -> None:
    gateway, client = local
    assert gateway.metrics is not None
    assert gateway.app.state.metrics is gateway.metrics
    gateway.metrics.record(
        ActivityEvent(tenant="acme", method="tools/call", surface="mcp", outcome="tool_error", server="crm")
    )
    r = await client.get("/metrics", headers={"authorization": f"Bearer {OPERATOR}"})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert 'foldgate_calls_total{outcome="tool_error",server="crm",tenant="acme"} 1.0' in r.text


async def test_the_instances_cache_quota_and_drop_figures_are_exposed(
    local: tuple[LocalGateway, httpx2.AsyncClient],
) -> None:
    gateway, client = local
    gateway.gateway.view("acme")  # something in the instance cache
    r = await client.get("/metrics", headers={"authorization": f"Bearer {OPERATOR}"})
    assert r.status_code == 200
    values = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in r.text.splitlines()
        if line.startswith("foldgate_instance_")
    }
    assert values["foldgate_instance_cache_budget_bytes"] == Settings().cache_mb * 1024 * 1024
    assert values["foldgate_instance_cache_bytes"] > 0
    for name in ("cache_hit_rate", "quota_leases_total", "quota_refused_total", "activity_dropped_total"):
        assert f"foldgate_instance_{name}" in values


async def test_agents_and_anonymous_callers_are_refused(
    local: tuple[LocalGateway, httpx2.AsyncClient], tmp_path: Path
) -> None:
    _, client = local
    authority = TokenAuthority(
        SqliteTokenStore(str(tmp_path / "fg.sqlite3")), TokenHasher(TOKEN_SECRET.encode())
    )
    agent = authority.issue("acme", tier="destructive", expires_in=3600)[0]
    for headers in (
        {},
        {"authorization": f"Bearer {agent}"},
        {"authorization": "Bearer wrong"},
        {"authorization": OPERATOR},
    ):
        r = await client.get("/metrics", headers=headers)
        assert r.status_code == 401, headers
        assert "foldgate_calls" not in r.text


async def test_without_the_metrics_extra_the_gateway_serves_and_metrics_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # prometheus-client not installed: importing it fails (a None entry in sys.modules does that).
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    monkeypatch.delitem(sys.modules, "foldgate.telemetry.prometheus", raising=False)
    with caplog.at_level(logging.WARNING, logger="foldgate.app.local"):
        gateway = _local(tmp_path, OPERATOR)
    assert gateway.metrics is None
    assert [r.getMessage() for r in caplog.records] == [METRICS_MISSING]
    assert METRICS_MISSING == (
        "GET /metrics needs prometheus-client, which is not installed: pip install 'foldgate[metrics]'"
    )
    transport = httpx2.ASGITransport(app=gateway.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        r = await client.get("/metrics", headers={"authorization": f"Bearer {OPERATOR}"})
        assert (r.status_code, r.json()) == (501, {"detail": METRICS_MISSING})
        # Still behind the operator credential: an anonymous caller learns nothing about extras.
        assert (await client.get("/metrics")).status_code == 401
        assert (await client.get("/healthz")).status_code in (200, 503)
