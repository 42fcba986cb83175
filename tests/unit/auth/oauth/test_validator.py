"""JWT access-token validation: what is accepted (RS256/ES256/EdDSA, right iss/aud/time) and every
forgery or mismatch that must be refused, each with a reason for the log and nothing else."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest
from cryptography.hazmat.primitives import serialization

from foldgate.auth.oauth.jwks import JwksCache
from foldgate.auth.oauth.validator import TokenRejected, TokenValidator
from tests.unit.auth.oauth.issuer import ISSUER, RESOURCE, FakeIssuer, new_key

ALGS = ("RS256", "ES256", "EdDSA")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _validator(
    issuer: FakeIssuer, *, algorithms: tuple[str, ...] = ALGS, leeway: float = 30
) -> TokenValidator:
    async def uri() -> str:
        return issuer.jwks_uri

    jwks = JwksCache(issuer.fetch, uri, algorithms=algorithms)
    return TokenValidator(jwks, issuer=ISSUER, algorithms=algorithms, leeway=leeway)


@pytest.mark.parametrize("alg", ALGS)
async def test_a_token_of_each_allowed_algorithm_validates(alg: str) -> None:
    issuer = FakeIssuer()
    claims = await _validator(issuer).validate(issuer.sign(alg, scope="foldgate:write"), [RESOURCE])
    assert claims["scope"] == "foldgate:write"
    assert claims["sub"] == "user-1"


async def test_audience_may_be_a_list_containing_one_accepted_value() -> None:
    issuer = FakeIssuer()
    token = issuer.sign(aud=["https://other.example", RESOURCE + "/mcp/all"])
    claims = await _validator(issuer).validate(token, [RESOURCE, RESOURCE + "/mcp/all"])
    assert RESOURCE + "/mcp/all" in claims["aud"]


async def _rejected(issuer: FakeIssuer, token: str, audiences: list[str] | None = None) -> str:
    with pytest.raises(TokenRejected) as info:
        await _validator(issuer).validate(token, audiences or [RESOURCE])
    return info.value.reason


async def test_wrong_audience_is_refused() -> None:
    issuer = FakeIssuer()
    assert await _rejected(issuer, issuer.sign(aud="https://other.example/mcp")) == "InvalidAudienceError"


async def test_missing_audience_is_refused() -> None:
    issuer = FakeIssuer()
    assert await _rejected(issuer, issuer.sign(aud=None)) == "MissingRequiredClaimError"


async def test_wrong_issuer_is_refused() -> None:
    issuer = FakeIssuer()
    assert await _rejected(issuer, issuer.sign(iss="https://evil.example")) == "InvalidIssuerError"


async def test_expired_beyond_the_leeway_is_refused_and_within_it_accepted() -> None:
    issuer = FakeIssuer()
    now = int(time.time())
    assert await _rejected(issuer, issuer.sign(exp=now - 60)) == "ExpiredSignatureError"
    claims = await _validator(issuer).validate(issuer.sign(exp=now - 10), [RESOURCE])
    assert claims["exp"] == now - 10


async def test_not_yet_valid_is_refused() -> None:
    issuer = FakeIssuer()
    assert await _rejected(issuer, issuer.sign(nbf=int(time.time()) + 600)) == "ImmatureSignatureError"


async def test_a_token_without_exp_is_refused() -> None:
    issuer = FakeIssuer()
    assert await _rejected(issuer, issuer.sign(exp=None)) == "MissingRequiredClaimError"


async def test_alg_none_is_refused_before_any_key_is_fetched() -> None:
    issuer = FakeIssuer()
    header = _b64(json.dumps({"alg": "none", "kid": issuer.keys["ES256"][0]}).encode())
    token = f"{header}.{_b64(json.dumps(issuer.claims()).encode())}."
    assert "not allowed" in await _rejected(issuer, token)
    assert issuer.fetched == []


async def test_hs256_keyed_with_the_public_key_is_refused() -> None:
    issuer = FakeIssuer()
    kid, key = issuer.keys["RS256"]
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = _b64(json.dumps({"alg": "HS256", "kid": kid}).encode())
    body = f"{header}.{_b64(json.dumps(issuer.claims()).encode())}"
    token = f"{body}.{_b64(hmac.new(pem, body.encode(), hashlib.sha256).digest())}"
    assert "not allowed" in await _rejected(issuer, token)


async def test_a_header_alg_that_differs_from_the_keys_is_refused() -> None:
    issuer = FakeIssuer()
    # Signed RS256 but naming the ES256 key: the key is bound to its own algorithm.
    token = issuer.sign("RS256", kid=issuer.keys["ES256"][0])
    assert await _rejected(issuer, token) == "no key for the token's kid"


async def test_tampered_payload_is_refused() -> None:
    issuer = FakeIssuer()
    header, payload, signature = issuer.sign().split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["scope"] = "foldgate:destructive"
    forged = f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"
    assert await _rejected(issuer, forged) == "InvalidSignatureError"


async def test_a_key_the_issuer_does_not_publish_is_refused() -> None:
    issuer = FakeIssuer()
    stranger = new_key("ES256")
    assert await _rejected(issuer, issuer.sign(key=stranger)) == "InvalidSignatureError"
    assert await _rejected(issuer, issuer.sign(kid="unknown", key=stranger)) == "no key for the token's kid"


async def test_an_algorithm_the_tenant_did_not_allow_is_refused() -> None:
    issuer = FakeIssuer()
    with pytest.raises(TokenRejected, match="not allowed"):
        await _validator(issuer, algorithms=("ES256",)).validate(issuer.sign("RS256"), [RESOURCE])


@pytest.mark.parametrize("token", ["", "abc", "a.b", "a.b.c.d", "x" * 20_000 + ".a.b", "%%%.###.$$$"])
async def test_garbage_is_refused_without_a_fetch(token: str) -> None:
    issuer = FakeIssuer()
    await _rejected(issuer, token)
    assert issuer.fetched == []
