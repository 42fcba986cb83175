"""The signed webhook route: a correctly signed, fresh, new ping schedules a reindex and is answered
202; forged, stale, replayed and unknown-name pings all get one identical 401; a burst is rate-limited
per server and coalesced into one reindex."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time

import httpx2
import pytest
from fastapi import FastAPI

from foldgate.edge.hooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, HookVerifier, cached_secrets, hooks_router
from foldgate.edge.ratelimit import RateLimiter
from foldgate.index.coalesce import Coalescer

SECRET = b"0123456789abcdef0123456789abcdef"


def sign(body: bytes, ts: int, secret: bytes = SECRET) -> dict[str, str]:
    mac = hmac.new(secret, str(ts).encode() + b"." + body, hashlib.sha256).hexdigest()
    return {TIMESTAMP_HEADER: str(ts), SIGNATURE_HEADER: f"sha256={mac}"}


def secrets(tenant: str, server: str) -> bytes | None:
    return SECRET if (tenant, server) == ("acme", "crm") else None


def app_with(trigger: list[tuple[str, str]], **kwargs: object) -> FastAPI:
    async def record(tenant: str, server: str) -> None:
        trigger.append((tenant, server))

    app = FastAPI()
    app.include_router(hooks_router(secrets, record, **kwargs))  # type: ignore[arg-type]
    return app


def client(app: FastAPI) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test")


async def test_a_signed_fresh_ping_is_accepted_with_202_and_schedules_that_server() -> None:
    seen: list[tuple[str, str]] = []
    async with client(app_with(seen)) as c:
        body = b'{"event": "tools_changed"}'
        r = await c.post("/api/v1/hooks/acme/crm", content=body, headers=sign(body, int(time.time())))
    assert r.status_code == 202
    assert seen == [("acme", "crm")]


async def test_forged_stale_replayed_and_unknown_pings_get_one_identical_401() -> None:
    seen: list[tuple[str, str]] = []
    now = int(time.time())
    body = b"{}"
    good = sign(body, now)
    async with client(app_with(seen)) as c:
        assert (await c.post("/api/v1/hooks/acme/crm", content=body, headers=good)).status_code == 202
        cases = {
            "replayed": ("/api/v1/hooks/acme/crm", body, good),
            "forged": ("/api/v1/hooks/acme/crm", body, sign(body, now, b"x" * 32)),
            "stale": (
                "/api/v1/hooks/acme/crm",
                body,
                sign(body, now - 360),
            ),  # a minute past the window: a slow run stays stale
            "future": ("/api/v1/hooks/acme/crm", body, sign(body, now + 360)),
            "other body": ("/api/v1/hooks/acme/crm", b'{"a": 1}', sign(body, now + 1)),
            "unknown server": ("/api/v1/hooks/acme/mail", body, sign(body, now)),
            "unknown tenant": ("/api/v1/hooks/other/crm", body, sign(body, now)),
            "no headers": ("/api/v1/hooks/acme/crm", body, {}),
            "junk timestamp": ("/api/v1/hooks/acme/crm", body, {**good, TIMESTAMP_HEADER: "soon"}),
        }
        answers = {}
        for name, (path, content, headers) in cases.items():
            r = await c.post(path, content=content, headers=headers)
            answers[name] = (r.status_code, r.content, sorted(r.headers.items()))
    assert seen == [("acme", "crm")]
    assert {a[0] for a in answers.values()} == {401}
    assert len({(a[1], tuple(a[2])) for a in answers.values()}) == 1, answers


async def test_pings_beyond_the_per_server_rate_are_refused_with_429_before_any_secret_lookup() -> None:
    seen: list[tuple[str, str]] = []
    app = app_with(seen, per_server=RateLimiter(60, burst=3))
    async with client(app) as c:
        codes = [(await c.post("/api/v1/hooks/acme/nope", content=b"")).status_code for _ in range(5)]
    assert codes == [401, 401, 401, 429, 429]


async def test_a_burst_of_100_signed_pings_in_a_second_yields_one_reindex() -> None:
    runs: list[tuple[str, str]] = []

    async def reindex(tenant: str, server: str) -> None:
        runs.append((tenant, server))

    # The burst must land inside the coalescer's delay; 100 in-process requests take well under a
    # second, and 5 s keeps that true on a loaded machine. Then wait for the run itself, not a time.
    changes = Coalescer(reindex, delay_s=5.0)
    app = FastAPI()
    app.include_router(hooks_router(secrets, changes.signal))
    start = int(time.time())
    async with client(app) as c:
        codes = []
        for i in range(100):
            body = f'{{"n": {i}}}'.encode()
            r = await c.post("/api/v1/hooks/acme/crm", content=body, headers=sign(body, start))
            codes.append(r.status_code)
    assert codes == [202] * 100
    assert changes.pending() == 1
    async with asyncio.timeout(60):
        while changes.pending():
            await asyncio.sleep(0.05)
    assert runs == [("acme", "crm")]
    await changes.aclose()


def test_replay_memory_is_bounded_and_forgets_expired_signatures() -> None:
    clock = [1_000_000.0]
    verifier = HookVerifier(window_s=300, max_seen=10, clock=lambda: clock[0])
    for i in range(25):
        body = str(i).encode()
        headers = sign(body, int(clock[0]))
        assert verifier.verify(
            "acme", "crm", SECRET, headers[TIMESTAMP_HEADER], headers[SIGNATURE_HEADER], body
        )
    assert len(verifier) == 10
    clock[0] += 301
    body = b"late"
    headers = sign(body, int(clock[0]))
    assert verifier.verify("acme", "crm", SECRET, headers[TIMESTAMP_HEADER], headers[SIGNATURE_HEADER], body)
    assert len(verifier) == 1  # the expired ones went first


@pytest.mark.parametrize("missing", [True, False])
def test_secret_answers_are_cached_including_unknown_names(missing: bool) -> None:
    asked: list[tuple[str, str]] = []

    def lookup(tenant: str, server: str) -> bytes | None:
        asked.append((tenant, server))
        return None if missing else SECRET

    cached = cached_secrets(lookup, ttl_s=60)
    assert [cached("acme", "crm") for _ in range(3)] == [None if missing else SECRET] * 3
    assert asked == [("acme", "crm")]


async def test_a_non_ascii_signature_gets_the_same_401_not_a_server_error() -> None:
    """Header values decode as latin-1, so a signature may hold non-ASCII characters: compared as
    str, compare_digest raised TypeError (a 500 that told a prober its input reached the check)."""
    seen: list[tuple[str, str]] = []
    now = int(time.time())
    headers = {TIMESTAMP_HEADER: str(now), SIGNATURE_HEADER: "sha256=" + "\xe9" * 64}
    async with client(app_with(seen)) as c:
        r = await c.post(
            "/api/v1/hooks/acme/crm",
            content=b"{}",
            headers={k: v.encode("latin-1") for k, v in headers.items()},
        )
    assert r.status_code == 401
    assert seen == []
