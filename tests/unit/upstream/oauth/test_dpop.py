"""DPoP proofs as RFC 9449 section 4 defines them, checked with PyJWT the way a server checks them.

Pins: a proof verifies against the public key in its own ``jwk`` header (ES256, ``typ: dpop+jwt``, no
private member); ``htm`` is the method and ``htu`` the URL without query or fragment; ``iat`` is now;
no two proofs share a ``jti``; ``ath`` is base64url(SHA-256(token)) and only on requests presenting a
token; a nonce is carried when given; nonces are remembered per origin and per role (authorization
server apart from resource server), malformed ones ignored; the thumbprint is RFC 7638's.
"""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

import jwt
import pytest

from foldgate.upstream.oauth.dpop import DPoPProver, access_token_hash, new_key_pem, proof_url
from tests.upstreams.dpop_server import thumbprint


@pytest.fixture(scope="module")
def prover() -> DPoPProver:
    return DPoPProver(new_key_pem())


def _verified(proof: str) -> tuple[dict[str, Any], dict[str, Any]]:
    header = jwt.get_unverified_header(proof)
    key = jwt.PyJWK(header["jwk"], algorithm="ES256")
    return header, jwt.decode(proof, key.key, algorithms=["ES256"])


def test_a_proof_verifies_with_its_own_public_key_and_names_the_request(prover: DPoPProver) -> None:
    header, claims = _verified(prover.proof("post", "https://as.example.com/token?x=1#frag"))
    assert header["typ"] == "dpop+jwt"
    assert header["alg"] == "ES256"
    assert set(header["jwk"]) == {"crv", "kty", "x", "y"}
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://as.example.com/token"
    assert abs(int(claims["iat"]) - time.time()) <= 2
    assert "ath" not in claims
    assert "nonce" not in claims


def test_ath_is_the_hash_of_the_presented_token(prover: DPoPProver) -> None:
    token = "eyJ.access-token.sig"
    _, claims = _verified(prover.proof("GET", "https://mcp.example.com/mcp", access_token=token))
    expected = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
    assert claims["ath"] == expected == access_token_hash(token)


def test_a_nonce_is_carried_when_given(prover: DPoPProver) -> None:
    _, claims = _verified(prover.proof("POST", "https://as.example.com/token", nonce="n-1"))
    assert claims["nonce"] == "n-1"


def test_every_proof_has_its_own_jti(prover: DPoPProver) -> None:
    jtis = {_verified(prover.proof("POST", "https://mcp.example.com/mcp"))[1]["jti"] for _ in range(500)}
    assert len(jtis) == 500


def test_the_thumbprint_is_rfc_7638s_of_the_header_key(prover: DPoPProver) -> None:
    header, _ = _verified(prover.proof("POST", "https://as.example.com/token"))
    assert prover.thumbprint == thumbprint(header["jwk"])
    assert "jkt=" in repr(prover)
    assert "BEGIN" not in repr(prover)


def test_proof_url_drops_query_and_fragment_only() -> None:
    assert proof_url("https://h.example:8443/a/b/?q=1#f") == "https://h.example:8443/a/b/"


def test_nonces_are_per_origin_and_per_role(prover: DPoPProver) -> None:
    fresh = DPoPProver(new_key_pem())
    assert fresh.note_nonce("as", "https://as.example.com/token", "as-1") == "as-1"
    assert fresh.nonce("as", "https://AS.example.com/other") == "as-1"  # the origin, not the path
    assert fresh.nonce("rs", "https://as.example.com/token") is None  # the resource server's apart
    assert fresh.nonce("as", "https://as.example.com:444/token") is None
    fresh.note_nonce("as", "https://as.example.com/token", "as-2")
    assert fresh.nonce("as", "https://as.example.com/token") == "as-2"  # the latest wins


@pytest.mark.parametrize("bad", [None, "", 'has"quote', "has space", "x" * 600, "ctl\x01"])
def test_malformed_nonces_are_ignored(bad: str | None) -> None:
    fresh = DPoPProver(new_key_pem())
    fresh.note_nonce("rs", "https://mcp.example.com/mcp", "good")
    assert fresh.note_nonce("rs", "https://mcp.example.com/mcp", bad) is None
    assert fresh.nonce("rs", "https://mcp.example.com/mcp") == "good"


def test_only_a_p256_key_is_accepted() -> None:
    # A key of another curve (or kind) stored by mistake is refused, never used with the wrong alg.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    other = ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(ValueError, match="P-256"):
        DPoPProver(other.decode())
