"""The ID token of a connect-link sign-in: only a token the tenant's issuer signed with one of its
keys, for foldgate's sign-in client, carrying the nonce foldgate sent and unexpired, yields claims;
everything else is one refusal. The signed-in subject is spelled exactly like an OAuth principal's,
so a sign-in as the link's subject matches and any other person does not."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt import PyJWK
from jwt.algorithms import RSAAlgorithm

from foldgate.auth.oauth.grant import claims_principal, oauth_subject
from foldgate.auth.oauth.signin import validate_id_token
from foldgate.config.oauth import parse_oauth_config
from foldgate.errors import AuthError

ISSUER = "https://login.example.com"
CLIENT = "foldgate-connect"
NONCE = "n-0123456789abcdef"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PUBLIC = PyJWK({**RSAAlgorithm.to_jwk(KEY.public_key(), as_dict=True), "kid": "k1"}, algorithm="RS256")
CONFIG = parse_oauth_config({"issuer": ISSUER, "login": {"client_id": CLIENT}}, allow_loopback=False)


async def key_for(kid: str | None, alg: str) -> PyJWK | None:
    return PUBLIC if kid == "k1" and alg == "RS256" else None


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": ISSUER, "aud": CLIENT, "sub": "alice", "iat": now, "exp": now + 300, "nonce": NONCE}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def signed(body: dict[str, Any], *, key: Any = KEY, kid: str = "k1", alg: str = "RS256") -> str:
    return jwt.encode(body, key, algorithm=alg, headers={"kid": kid})


async def validate(token: str, nonce: str = NONCE) -> dict[str, Any]:
    return await validate_id_token(token, config=CONFIG, client_id=CLIENT, nonce=nonce, key_for=key_for)


async def test_a_genuine_id_token_yields_its_claims() -> None:
    assert (await validate(signed(claims())))["sub"] == "alice"
    several = claims(aud=[CLIENT, "other"], azp=CLIENT)
    assert (await validate(signed(several)))["sub"] == "alice"


@pytest.mark.parametrize(
    ("why", "body"),
    [
        ("another nonce (a replayed token)", claims(nonce="n-other")),
        ("no nonce", claims(nonce=None)),
        ("another client", claims(aud="another-client")),
        ("another issuer", claims(iss="https://evil.example.com")),
        ("expired beyond the leeway", claims(iat=1_700_000_000, exp=1_700_000_300)),
        ("no subject", claims(sub=None)),
        ("an empty subject", claims(sub="")),
        ("several audiences without azp", claims(aud=[CLIENT, "other"])),
        ("azp naming another client", claims(azp="another-client")),
        ("no expiry", claims(exp=None)),
    ],
)
async def test_an_id_token_that_is_not_for_this_sign_in_is_refused(why: str, body: dict[str, Any]) -> None:
    with pytest.raises(AuthError, match="ID token is not valid"):
        await validate(signed(body))


async def test_a_token_the_issuer_did_not_sign_is_refused() -> None:
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for token in (
        signed(claims(), key=stranger),  # the issuer's kid, another key
        signed(claims(), kid="unknown"),  # a key the issuer does not publish
        signed(claims(), key=ec.generate_private_key(ec.SECP256R1()), alg="ES256"),
        jwt.encode(claims(), "shared-secret-of-32-bytes-or-more!!", algorithm="HS256", headers={"kid": "k1"}),
        jwt.encode(claims(), None, algorithm="none"),  # type: ignore[arg-type]
        "not a jwt",
        "",
    ):
        with pytest.raises(AuthError):
            await validate(token)


async def test_a_sign_in_without_a_nonce_sent_never_validates() -> None:
    with pytest.raises(AuthError):
        await validate(signed(claims(nonce="")), nonce="")


def test_the_signed_in_subject_is_spelled_like_the_oauth_principals() -> None:
    """The link's subject is an OAuth principal's; a sign-in as the same person at the same issuer
    must give the same value, and another person or issuer another one."""
    token_claims = {"iss": ISSUER, "sub": "alice", "scope": "foldgate:read"}
    principal = claims_principal(token_claims, "default", CONFIG)
    assert oauth_subject(ISSUER, "alice") == principal.subject
    assert oauth_subject(ISSUER, "mallory") != principal.subject
    assert oauth_subject("https://other.example.com", "alice") != principal.subject
