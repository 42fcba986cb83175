"""The JWKS cache: one fetch serves a warm instance; an unknown kid triggers at most one bounded
refresh (a rotation is picked up, a kid spray is not amplified); symmetric keys never enter."""

from __future__ import annotations

import pytest

from foldgate.auth.oauth.jwks import JwksCache
from foldgate.errors import UpstreamError
from tests.unit.auth.oauth.issuer import FakeIssuer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _cache(issuer: FakeIssuer, clock: Clock, **kw: float) -> JwksCache:
    async def uri() -> str:
        return issuer.jwks_uri

    return JwksCache(issuer.fetch, uri, algorithms=("RS256", "ES256", "EdDSA"), clock=clock, **kw)


async def test_keys_are_fetched_once_for_many_lookups() -> None:
    issuer, clock = FakeIssuer(), Clock()
    cache = _cache(issuer, clock)
    for alg in ("RS256", "ES256", "EdDSA"):
        for _ in range(5):
            key = await cache.key(issuer.keys[alg][0], alg)
            assert key is not None
            assert key.algorithm_name == alg
    assert issuer.fetched == [issuer.jwks_uri]


async def test_a_rotated_key_is_found_with_one_refresh() -> None:
    issuer, clock = FakeIssuer(), Clock()
    cache = _cache(issuer, clock, refresh_interval=30)
    assert await cache.key(issuer.keys["ES256"][0], "ES256") is not None
    clock.now += 31
    new_kid = issuer.rotate("ES256")
    assert await cache.key(new_kid, "ES256") is not None
    assert len(issuer.fetched) == 2


async def test_unknown_kids_cost_at_most_one_fetch_per_interval() -> None:
    issuer, clock = FakeIssuer(), Clock()
    cache = _cache(issuer, clock, refresh_interval=30)
    for i in range(20):
        assert await cache.key(f"spray-{i}", "ES256") is None
    assert len(issuer.fetched) == 1
    clock.now += 31
    assert await cache.key("spray-again", "ES256") is None
    assert len(issuer.fetched) == 2


async def test_keys_are_re_read_after_the_ttl() -> None:
    issuer, clock = FakeIssuer(), Clock()
    cache = _cache(issuer, clock, ttl=600)
    kid = issuer.keys["RS256"][0]
    await cache.key(kid, "RS256")
    clock.now += 601
    await cache.key(kid, "RS256")
    assert len(issuer.fetched) == 2


async def test_a_failed_refresh_keeps_the_keys_read_before() -> None:
    issuer, clock = FakeIssuer(), Clock()
    cache = _cache(issuer, clock, ttl=600)
    kid = issuer.keys["RS256"][0]
    await cache.key(kid, "RS256")
    issuer.documents[issuer.jwks_uri] = None  # the issuer now answers 404
    clock.now += 601
    assert await cache.key(kid, "RS256") is not None


async def test_no_keys_at_all_is_an_upstream_error() -> None:
    issuer, clock = FakeIssuer(), Clock()
    issuer.documents[issuer.jwks_uri] = None
    with pytest.raises(UpstreamError):
        await _cache(issuer, clock).key("any", "ES256")


async def test_symmetric_and_mismatched_keys_are_dropped() -> None:
    issuer, clock = FakeIssuer(), Clock()
    rs = issuer.documents[issuer.jwks_uri]["keys"][0]  # type: ignore[index]
    issuer.documents[issuer.jwks_uri] = {
        "keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac", "alg": "HS256"},
            {**rs, "kid": "enc", "use": "enc"},
            {**rs, "kid": "rs-as-es"},
        ]
    }
    cache = _cache(issuer, clock)
    assert await cache.key("hmac", "ES256") is None
    assert await cache.key("enc", "RS256") is None
    assert await cache.key("rs-as-es", "ES256") is None  # an RSA key never verifies ES256
    assert await cache.key("rs-as-es", "RS256") is not None


async def test_a_token_without_kid_uses_the_only_key_of_its_algorithm() -> None:
    issuer, clock = FakeIssuer(), Clock()
    cache = _cache(issuer, clock)
    assert await cache.key(None, "EdDSA") is not None
