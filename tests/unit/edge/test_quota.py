"""Request quotas at the MCP edge (edge/quota.py) over a real SQLite quota store: over quota is a 429
with Retry-After and a JSON-RPC error on every surface; each token has its own quota; an instance
leases slices that grow with its rate (one token at a time for a quiet key) and asks nothing of a
bucket it saw empty until it refills; the store is called off the event loop; and a store that fails
or does not answer admits the request, counted and logged once."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import pytest

from foldgate.auth.authority import TokenAuthority
from foldgate.config.tenant import RequestLimits
from foldgate.edge.access import Access
from foldgate.edge.quota import QuotaExceeded, Quotas
from foldgate.model.agent_token import TokenHasher
from foldgate.model.principal import Principal
from foldgate.store.quotas.base import Bucket, Taken
from foldgate.store.quotas.sqlite import SqliteQuotaStore
from foldgate.store.tokens.sqlite import SqliteTokenStore
from tests.gateway_fixture import gateway_client

SECRET = b"unit-test-secret-0123456789abcdef"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
SURFACES = ("/mcp", "/mcp/all", "/mcp/call", "/mcp/code")
# 15 a minute: one request every 4 s, a bucket of one.
TIGHT = 15
ME = Principal("default", key="tok-a")


class Clock:
    """A clock the test moves."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class CountingStore(SqliteQuotaStore):
    """The SQLite quota store, recording the size of every take asked of it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.asked: list[int] = []

    def take(self, key: str, want: int, bucket: Bucket, now: float, *, least: int = 1) -> Taken:
        self.asked.append(want)
        return super().take(key, want, bucket, now, least=least)


class StalledStore(SqliteQuotaStore):
    """The SQLite quota store, whose takes say they started and then wait to be released."""

    def __init__(self, path: Path, entered: threading.Event) -> None:
        super().__init__(path)
        self.entered = entered
        self.release = threading.Event()

    def take(self, key: str, want: int, bucket: Bucket, now: float, *, least: int = 1) -> Taken:
        self.entered.set()
        self.release.wait(timeout=5)
        return super().take(key, want, bucket, now, least=least)


def quotas(store: SqliteQuotaStore, **limits: int) -> Quotas:
    return Quotas(store, lambda tenant: RequestLimits(**limits))


async def test_over_quota_is_a_429_with_retry_after_and_a_jsonrpc_error_on_every_surface(
    tmp_path: Path,
) -> None:
    access = Access(quotas=quotas(SqliteQuotaStore(tmp_path / "q.sqlite3"), requests_per_minute=TIGHT))
    async with gateway_client(access=access) as (client, *_):
        assert (await client.post("/mcp/all", content=PING, headers=HEADERS)).status_code == 200
        for path in SURFACES:
            r = await client.post(path, content=PING, headers=HEADERS)
            assert r.status_code == 429, (path, r.text)
            # The bucket frees its next request 4 s after the first one.
            assert 3 <= int(r.headers["retry-after"]) <= 4
            body = r.json()
            assert body["jsonrpc"] == "2.0"
            assert body["error"]["code"] == -32002
            assert "tenant's request quota exceeded" in body["error"]["message"]


async def test_each_token_has_a_quota_of_its_own(tmp_path: Path) -> None:
    authority = TokenAuthority(SqliteTokenStore(tmp_path / "t.sqlite3"), TokenHasher(SECRET))
    first, _ = authority.issue("default", expires_in=None)
    second, _ = authority.issue("default", expires_in=None)
    store = SqliteQuotaStore(tmp_path / "q.sqlite3")
    access = Access(authority=authority, quotas=quotas(store, per_token_requests_per_minute=TIGHT))
    async with gateway_client(access=access) as (client, *_):

        async def ping(token: str) -> int:
            auth = {**HEADERS, "authorization": f"Bearer {token}"}
            return (await client.post("/mcp/all", content=PING, headers=auth)).status_code

        assert [await ping(first), await ping(first)] == [200, 429]
        refused = await client.post(
            "/mcp", content=PING, headers={**HEADERS, "authorization": f"Bearer {first}"}
        )
        assert "token's request quota exceeded" in refused.json()["error"]["message"]
        assert [await ping(second), await ping(second)] == [200, 429]


async def test_a_tenant_refusal_gives_the_tokens_request_back(tmp_path: Path) -> None:
    wall, mono = Clock(1_800_000_000.0), Clock(100.0)
    store = SqliteQuotaStore(tmp_path / "q.sqlite3")
    limits = RequestLimits(requests_per_minute=TIGHT, per_token_requests_per_minute=TIGHT)
    gate = Quotas(store, lambda tenant: limits, clock=wall, monotonic=mono)
    await gate.admit(Principal("default", key="tok-b"))  # spends the tenant's one request
    with pytest.raises(QuotaExceeded, match="tenant's") as refused:
        await gate.admit(ME)
    assert refused.value.principal == ME  # who was refused, for the activity log
    wall.now += 1.0
    mono.now += 1.0
    # ME's token request was given back: the tenant still refuses, not ME's own (spent) quota.
    with pytest.raises(QuotaExceeded, match="tenant's"):
        await gate.admit(ME)


async def test_slices_grow_with_the_instances_rate_and_a_quiet_key_takes_one_at_a_time(
    tmp_path: Path,
) -> None:
    wall, mono = Clock(1_800_000_000.0), Clock(100.0)
    store = CountingStore(tmp_path / "q.sqlite3")
    gate = Quotas(store, lambda tenant: RequestLimits(requests_per_minute=12_000), clock=wall, monotonic=mono)
    for _ in range(2_000):  # 100 requests a second, half the quota
        await gate.admit(ME)
        wall.now += 0.01
        mono.now += 0.01
    assert store.asked[:6] == [1, 2, 4, 8, 16, 32]
    assert max(store.asked) == 200  # two seconds of this instance's rate
    assert len(store.asked) <= 2_000 / 50
    quiet = CountingStore(tmp_path / "quiet.sqlite3")
    gate = Quotas(quiet, lambda tenant: RequestLimits(requests_per_minute=12_000), clock=wall, monotonic=mono)
    for _ in range(5):  # a request every ten seconds
        await gate.admit(ME)
        wall.now += 10
        mono.now += 10
    assert quiet.asked == [1] * 5


async def test_a_bucket_seen_empty_is_not_asked_again_until_it_refills(tmp_path: Path) -> None:
    wall, mono = Clock(1_800_000_000.0), Clock(100.0)
    store = CountingStore(tmp_path / "q.sqlite3")
    gate = Quotas(store, lambda tenant: RequestLimits(requests_per_minute=TIGHT), clock=wall, monotonic=mono)
    await gate.admit(ME)
    for _ in range(20):  # an agent looping on 429s
        with pytest.raises(QuotaExceeded) as refused:
            await gate.admit(ME)
        assert 0 < refused.value.retry_after <= 4.0
        wall.now += 0.1
        mono.now += 0.1
    assert len(store.asked) == 2  # the first request's take and the one that found the bucket empty
    wall.now += 2.1  # past the 4 s the first request cost
    mono.now += 2.1
    await gate.admit(ME)
    assert gate.stats()["refused"] == 20


async def test_the_store_is_called_off_the_event_loop(tmp_path: Path) -> None:
    entered = threading.Event()
    store = StalledStore(tmp_path / "q.sqlite3", entered)
    gate = Quotas(store, lambda tenant: RequestLimits(requests_per_minute=600), lease_timeout=10)
    loop = asyncio.get_running_loop()
    seen = asyncio.Event()
    # The store's thread tells the loop it started; the loop can only hear it if it is not the one
    # stuck in the store.
    threading.Thread(target=lambda: entered.wait(5) and loop.call_soon_threadsafe(seen.set)).start()
    admission = asyncio.create_task(gate.admit(ME))
    await asyncio.wait_for(seen.wait(), timeout=5)
    assert not admission.done()
    store.release.set()
    await asyncio.wait_for(admission, timeout=5)
    assert gate.stats()["leases"] == 1


async def test_a_store_that_does_not_answer_in_time_admits_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = StalledStore(tmp_path / "q.sqlite3", threading.Event())
    gate = Quotas(store, lambda tenant: RequestLimits(requests_per_minute=TIGHT), lease_timeout=0.05)
    with caplog.at_level(logging.WARNING, logger="foldgate.edge.quota"):
        for _ in range(5):
            await gate.admit(ME)  # admitted: the quota fails open
    store.release.set()
    stats = gate.stats()
    assert stats["store_failed.timeout"] == 1
    assert stats["fail_open"] == 5
    assert [r.getMessage() for r in caplog.records if "request quotas unavailable" in r.getMessage()] == [
        "request quotas unavailable (timeout: no answer within 0.05s); admitting on the per-instance "
        "limit for 10s"
    ]


async def test_requests_sharing_a_stalled_lease_fail_open_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = StalledStore(tmp_path / "q.sqlite3", threading.Event())
    gate = Quotas(store, lambda tenant: RequestLimits(requests_per_minute=TIGHT), lease_timeout=0.05)
    with caplog.at_level(logging.WARNING, logger="foldgate.edge.quota"):
        await asyncio.gather(*(gate.admit(ME) for _ in range(5)))
    store.release.set()
    assert gate.stats()["store_failed.timeout"] == 1
    assert gate.stats()["fail_open"] == 5
    assert len([r for r in caplog.records if "request quotas unavailable" in r.getMessage()]) == 1


async def test_a_store_outage_admits_every_request_counted_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SqliteQuotaStore(tmp_path / "q.sqlite3")
    store.close()  # every take now fails
    access = Access(quotas=quotas(store, requests_per_minute=TIGHT))
    with caplog.at_level(logging.WARNING, logger="foldgate.edge.quota"):
        async with gateway_client(access=access) as (client, *_):
            for path in SURFACES:
                assert (await client.post(path, content=PING, headers=HEADERS)).status_code == 200
    assert access.quotas is not None
    stats = access.quotas.stats()  # type: ignore[attr-defined]
    assert stats["store_failed.StoreError"] == 1
    assert stats["fail_open"] == 4
    warnings = [r for r in caplog.records if "request quotas unavailable" in r.getMessage()]
    assert len(warnings) == 1


async def test_a_tenant_without_limits_costs_no_store_call(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "q.sqlite3")
    gate = Quotas(store, lambda tenant: None)
    for _ in range(10):
        await gate.admit(ME)
    assert store.asked == []
