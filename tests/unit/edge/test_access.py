"""Access at the MCP edge: a token store outage is a JSON 503 to retry, not a 500; bogus tokens are
rate-limited per source address before they cost a token-store read."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldgate.auth.authority import TokenAuthority
from foldgate.edge.access import Access
from foldgate.edge.endpoint import STORE_RETRY_AFTER_S
from foldgate.edge.ratelimit import RateLimiter
from foldgate.errors import StoreError
from foldgate.model.agent_token import AgentToken, TokenHasher, new_token
from foldgate.store.tokens.base import TokenStore
from foldgate.store.tokens.sqlite import SqliteTokenStore
from tests.gateway_fixture import gateway_client

SECRET = b"unit-test-secret-0123456789abcdef"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LIST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'


class FlakyStore(TokenStore):
    """A real token store whose reads can be made to fail (a DynamoDB outage) and are counted."""

    def __init__(self, inner: TokenStore) -> None:
        self.inner = inner
        self.down = False
        self.gets = 0

    def put(self, token: AgentToken, digest: str) -> None:
        self.inner.put(token, digest)

    def get(self, token_id: str) -> tuple[AgentToken, str] | None:
        self.gets += 1
        if self.down:
            raise StoreError("dynamodb: ProvisionedThroughputExceededException")
        return self.inner.get(token_id)

    def list(self, tenant: str | None = None) -> list[AgentToken]:
        return self.inner.list(tenant)

    def revoke(self, token_id: str) -> bool:
        return self.inner.revoke(token_id)

    def touch(self, token_id: str, at: float) -> None:
        if self.down:
            raise StoreError("dynamodb: ProvisionedThroughputExceededException")
        self.inner.touch(token_id, at)


@pytest.fixture
def store(tmp_path: Path) -> FlakyStore:
    return FlakyStore(SqliteTokenStore(tmp_path / "tokens.sqlite3"))


def bearer(token: str) -> dict[str, str]:
    return {**HEADERS, "authorization": f"Bearer {token}"}


async def test_a_token_store_outage_is_a_json_503_with_retry_after(store: FlakyStore) -> None:
    authority = TokenAuthority(store, TokenHasher(SECRET), cache_seconds=0)
    token, _ = authority.issue("default", expires_in=None)
    access = Access(authority=authority, auth_required=True)
    async with gateway_client(access=access) as (client, *_):
        assert (await client.post("/mcp/all", content=LIST, headers=bearer(token))).status_code == 200
        store.down = True
        for path in ("/mcp", "/mcp/all", "/mcp/call", "/mcp/code"):
            r = await client.post(path, content=LIST, headers=bearer(token))
            assert r.status_code == 503, r.text
            assert r.headers["retry-after"] == str(STORE_RETRY_AFTER_S)
            body = r.json()
            assert body["jsonrpc"] == "2.0"
            assert body["error"]["code"] == -32003
            assert "dynamodb" not in r.text  # the store's own message stays in the log
        store.down = False
        assert (await client.post("/mcp/all", content=LIST, headers=bearer(token))).status_code == 200


async def test_bogus_tokens_are_limited_per_source_before_the_store_is_read(store: FlakyStore) -> None:
    authority = TokenAuthority(store, TokenHasher(SECRET), cache_seconds=0)
    access = Access(
        authority=authority, auth_required=True, source_limiter=RateLimiter(per_minute=60, burst=3)
    )
    async with gateway_client(access=access) as (client, *_):
        answers = [
            (await client.post("/mcp/all", content=LIST, headers=bearer(new_token()))).status_code
            for _ in range(10)
        ]
        assert answers == [401, 401, 401] + [429] * 7
        assert store.gets == 3  # refused requests never reached the token table
        limited = await client.post("/mcp/all", content=LIST, headers=bearer(new_token()))
        assert int(limited.headers["retry-after"]) >= 1
        assert limited.json()["error"]["code"] == -32002


async def test_the_source_is_the_asgi_client_not_a_forwarded_header(store: FlakyStore) -> None:
    authority = TokenAuthority(store, TokenHasher(SECRET), cache_seconds=0)
    limiter = RateLimiter(per_minute=60, burst=1)
    access = Access(authority=authority, auth_required=True, source_limiter=limiter)
    async with gateway_client(access=access) as (client, *_):
        first = bearer(new_token()) | {"x-forwarded-for": "198.51.100.1"}
        second = bearer(new_token()) | {"x-forwarded-for": "198.51.100.2"}
        assert (await client.post("/mcp/all", content=LIST, headers=first)).status_code == 401
        # A different X-Forwarded-For is the same socket peer: the caller cannot mint fresh buckets.
        assert (await client.post("/mcp/all", content=LIST, headers=second)).status_code == 429
    assert len(limiter) == 1


async def test_requests_without_a_token_do_not_spend_the_source_budget() -> None:
    # Local serve without tokens: many agents share 127.0.0.1 and no lookup is made for them.
    limiter = RateLimiter(per_minute=60, burst=1)
    access = Access(source_limiter=limiter)
    async with gateway_client(access=access) as (client, *_):
        for _ in range(3):
            assert (await client.post("/mcp/all", content=LIST, headers=HEADERS)).status_code == 200
    assert len(limiter) == 0
