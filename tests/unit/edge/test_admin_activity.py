"""The activity routes of the admin API: behind the operator credential (agent tokens refused),
newest first with filters and a cursor, one tenant's events never shown for another (nor through its
cursor), JSON lines streamed page by page, and the summary per server and tool."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from foldgate.auth.authority import TokenAuthority
from foldgate.config.source import StaticConfigSource
from foldgate.edge.access import Access
from foldgate.edge.admin import admin_router
from foldgate.edge.admin_activity import parse_time
from foldgate.edge.app import create_app
from foldgate.errors import InvalidRequestError, StoreError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.activity import ActivityEvent, Actor, AuditEvent, Outcome
from foldgate.model.agent_token import TokenHasher
from foldgate.serve.gateway import Gateway
from foldgate.store.activity.base import ActivityPage, ActivityQuery, StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.tokens.sqlite import SqliteTokenStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools

OPERATOR = "operator-key-for-tests"
OP = {"authorization": f"Bearer {OPERATOR}"}
NOW = time.time()
MCP = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class FlakyActivityStore(SqliteActivityStore):
    """The SQLite store whose reads fail after ``fail_after`` more queries (None: never)."""

    fail_after: int | None = None

    def query(self, query: ActivityQuery) -> ActivityPage:
        if self.fail_after is not None:
            if self.fail_after == 0:
                raise StoreError("disk I/O error")
            self.fail_after -= 1
        return super().query(query)


@dataclass
class Api:
    client: httpx2.AsyncClient
    store: FlakyActivityStore
    agent_token: str


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    catalogs = SqliteStore(":memory:")
    catalogs.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    gateway = Gateway(catalogs, StaticConfigSource({"default": demo_config()}), RecordingUpstream())
    authority = TokenAuthority(
        SqliteTokenStore(tmp_path / "t.sqlite3"), TokenHasher(b"s" * 32), cache_seconds=0
    )
    token, _ = authority.issue("default", tier="destructive", expires_in=None)
    store = FlakyActivityStore(tmp_path / "a.sqlite3")
    admin = admin_router(gateway, operator_secret=OPERATOR.encode(), activity=store)
    app = create_app(gateway, access=Access(authority=authority, auth_required=True), admin=admin)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield Api(client, store, token)
    store.close()


def call(i: int, tenant: str = "default", outcome: Outcome = "ok", **fields: object) -> ActivityEvent:
    return ActivityEvent(
        tenant, "tools/call", "mcp", outcome, at=NOW - 600 + i, server="github", tool="search",
        principal="tok_a", gateway_ms=float(i), upstream_ms=1.0, **fields,  # type: ignore[arg-type]
    ).with_id()  # fmt: skip


def put(store: SqliteActivityStore, *events: ActivityEvent | AuditEvent) -> None:
    store.put_many([StoredRecord(e, NOW + 3600) for e in events])


@pytest.mark.parametrize(
    "path", ["/api/v1/activity?tenant=default", "/api/v1/activity/summary?tenant=default"]
)
async def test_agent_tokens_and_anonymous_callers_are_refused(api: Api, path: str) -> None:
    put(api.store, call(1))
    # The token is a valid agent token: the MCP endpoint takes it.
    listing = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    agent = {"authorization": f"Bearer {api.agent_token}"}
    assert (await api.client.post("/mcp/all", content=listing, headers=MCP | agent)).status_code == 200
    for headers in ({}, agent, {"authorization": "Bearer wrong"}):
        r = await api.client.get(path, headers=headers)
        assert r.status_code == 401
        assert "tok_a" not in r.text
    assert (await api.client.get(path, headers=OP)).status_code == 200


async def test_events_newest_first_with_a_cursor_to_the_next_page(api: Api) -> None:
    events = [call(i) for i in range(5)]
    put(api.store, *events)
    r = await api.client.get("/api/v1/activity?tenant=default&limit=3", headers=OP)
    assert r.status_code == 200
    body = r.json()
    assert [e["event_id"] for e in body["events"]] == [e.event_id for e in reversed(events)][:3]
    assert body["events"][0] == events[-1].to_doc()
    r = await api.client.get(f"/api/v1/activity?tenant=default&limit=3&cursor={body['cursor']}", headers=OP)
    assert [e["event_id"] for e in r.json()["events"]] == [events[1].event_id, events[0].event_id]
    assert r.json()["cursor"] is None


async def test_a_tenants_events_are_never_shown_for_another_nor_through_its_cursor(api: Api) -> None:
    put(
        api.store,
        *[call(i, "default") for i in range(3)],
        *[call(i, "globex", detail="globex-canary") for i in range(3)],
    )
    r = await api.client.get("/api/v1/activity?tenant=default", headers=OP)
    assert {e["tenant"] for e in r.json()["events"]} == {"default"}
    assert "globex-canary" not in r.text
    cursor = (await api.client.get("/api/v1/activity?tenant=globex&limit=1", headers=OP)).json()["cursor"]
    r = await api.client.get(f"/api/v1/activity?tenant=default&cursor={cursor}", headers=OP)
    assert r.status_code == 400
    assert "globex-canary" not in r.text
    summary = (await api.client.get("/api/v1/activity/summary?tenant=default&window=1h", headers=OP)).json()
    assert summary["total"]["calls"] == 3


async def test_filters_time_bounds_and_operator_events(api: Api) -> None:
    audit = AuditEvent("default", "token.revoke", Actor("operator_key", "key-1"), at=NOW - 1, target="tok_a")
    put(api.store, call(1), call(2, outcome="upstream_timeout"), call(300), audit.with_id())
    get = api.client.get
    r = await get("/api/v1/activity?tenant=default&outcome=upstream_timeout", headers=OP)
    assert [e["outcome"] for e in r.json()["events"]] == ["upstream_timeout"]
    iso = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(NOW - 600 + 100))
    r = await get("/api/v1/activity", params={"tenant": "default", "since": iso}, headers=OP)
    assert [e["gateway_ms"] for e in r.json()["events"]] == [300.0]
    r = await get(f"/api/v1/activity?tenant=default&until={NOW - 600 + 2}", headers=OP)
    assert [e["gateway_ms"] for e in r.json()["events"]] == [1.0]
    r = await get("/api/v1/activity?tenant=default&kind=audit", headers=OP)
    assert [(e["kind"], e["action"], e["actor"]["who"]) for e in r.json()["events"]] == [
        ("audit", "token.revoke", "key-1")
    ]


@pytest.mark.parametrize(
    "query",
    ["tenant=../x", "tenant=default&limit=0", "tenant=default&limit=1001", "tenant=default&kind=other",
     "tenant=default&since=yesterday", "tenant=default&cursor=" + "x" * 600, "tenant=default&until=nan"],
)  # fmt: skip
async def test_malformed_queries_are_refused(api: Api, query: str) -> None:
    r = await api.client.get(f"/api/v1/activity?{query}", headers=OP)
    assert r.status_code in (400, 422)


async def test_json_lines_follow_every_page_streamed(api: Api) -> None:
    events = [call(i) for i in range(250)]
    put(api.store, *events)
    for url, headers in (
        ("/api/v1/activity?tenant=default&format=jsonl&limit=100", OP),
        ("/api/v1/activity?tenant=default&limit=100", OP | {"accept": "application/x-ndjson"}),
    ):
        async with api.client.stream("GET", url, headers=headers) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("application/x-ndjson")
            lines = [json.loads(line) async for line in r.aiter_lines() if line]
        assert [d["event_id"] for d in lines] == [e.event_id for e in reversed(events)]


async def test_a_store_failure_midway_ends_the_export_with_an_error_line(api: Api) -> None:
    put(api.store, *[call(i) for i in range(5)])
    api.store.fail_after = 1
    r = await api.client.get("/api/v1/activity?tenant=default&format=jsonl&limit=2", headers=OP)
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert len(lines) == 3
    assert lines[-1]["kind"] == "error"
    assert lines[-1]["cursor"]
    assert "disk" not in r.text


async def test_a_store_outage_is_a_503_without_the_stores_message(api: Api) -> None:
    api.store.fail_after = 0
    for path in ("/api/v1/activity?tenant=default", "/api/v1/activity/summary?tenant=default"):
        r = await api.client.get(path, headers=OP)
        assert r.status_code == 503
        assert "disk" not in r.text


async def test_the_summary_per_server_and_tool(api: Api) -> None:
    put(api.store, *[call(i) for i in range(1, 11)], call(11, outcome="tool_error"))
    r = await api.client.get("/api/v1/activity/summary?tenant=default&window=1h&buckets=6", headers=OP)
    body = r.json()
    assert body["total"]["calls"] == 11
    [row] = body["tools"]
    assert (row["server"], row["tool"], row["calls"], row["errors"]) == ("github", "search", 11, 1)
    assert row["gateway_ms"] == {"p50": 6.0, "p95": 11.0}
    assert len(body["series"]["github"]) == 6
    assert (
        await api.client.get("/api/v1/activity/summary?tenant=default&window=2h", headers=OP)
    ).status_code == 422


async def test_without_an_activity_log_the_routes_say_so(tmp_path: Path) -> None:
    catalogs = SqliteStore(":memory:")
    gateway = Gateway(catalogs, StaticConfigSource({"default": demo_config()}), RecordingUpstream())
    app = create_app(gateway, admin=admin_router(gateway, operator_secret=OPERATOR.encode()))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as client:
        r = await client.get("/api/v1/activity?tenant=default", headers=OP)
    assert r.status_code == 503
    assert "FOLDGATE_ACTIVITY" in r.json()["detail"]


def test_times_are_epoch_seconds_or_iso_8601() -> None:
    assert parse_time("since", "1800000000.5") == 1_800_000_000.5
    assert parse_time("since", "2027-01-15T08:00:00Z") == 1_800_000_000.0
    assert parse_time("since", "2027-01-15T08:00:00") == 1_800_000_000.0
    for bad in ("nan", "-1", "1e12", "soon"):
        with pytest.raises(InvalidRequestError, match="since"):
            parse_time("since", bad)


async def test_a_long_export_ends_with_the_cursor_to_continue_from(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foldgate.edge import admin_activity

    monkeypatch.setattr(admin_activity, "EXPORT_BYTES", 1000)  # a few events' worth instead of 5 MB
    events = [call(i) for i in range(40)]
    put(api.store, *events)
    exported: list[str] = []
    cursor = ""
    while True:
        params = {"tenant": "default", "format": "jsonl", "limit": "5"} | (
            {"cursor": cursor} if cursor else {}
        )
        r = await api.client.get("/api/v1/activity", params=params, headers=OP)
        lines = [json.loads(line) for line in r.text.splitlines()]
        exported += [d["event_id"] for d in lines if d["kind"] == "call"]
        if lines[-1]["kind"] != "cursor":
            break
        assert len(lines) < 40
        cursor = lines[-1]["cursor"]
    assert exported == [e.event_id for e in reversed(events)]


async def test_the_deployments_own_events_are_listed_under_the_star_tenant(api: Api) -> None:
    signin = AuditEvent("*", "console.sign_in", Actor("console", "session-1"), at=NOW - 1)
    put(api.store, signin.with_id(), call(1))
    r = await api.client.get("/api/v1/activity", params={"tenant": "*", "kind": "audit"}, headers=OP)
    assert r.status_code == 200
    assert [e["action"] for e in r.json()["events"]] == ["console.sign_in"]
    r = await api.client.get("/api/v1/activity", params={"tenant": "*x"}, headers=OP)
    assert r.status_code == 422
