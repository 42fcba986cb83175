"""Token format, keyed hashing, id derivation, what a grant allows, and scope validation."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from foldgate.errors import ConfigError, InvalidRequestError
from foldgate.model.agent_token import (
    AgentToken,
    TokenHasher,
    check_scope,
    is_token_id,
    looks_like_token,
    new_token,
    parse_duration,
)

SECRET = b"0123456789abcdef0123456789abcdef"


def test_new_token_is_prefixed_unpadded_base64url_of_32_random_bytes() -> None:
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    for token in tokens:
        assert token.startswith("fgt_")
        assert len(token) == 4 + 43
        assert "=" not in token
        assert looks_like_token(token)
        assert len(base64.urlsafe_b64decode(token[4:] + "=")) == 32


@pytest.mark.parametrize(
    "value", ["", "fgt_", "fgt_" + "a" * 42, "fgt_" + "a" * 44, "fgx_" + "a" * 43, "fgt_" + "a" * 42 + "=", 7]
)
def test_malformed_tokens_are_recognized(value: object) -> None:
    assert not looks_like_token(value)


def test_digest_is_hex_hmac_sha256_under_the_secret() -> None:
    hasher = TokenHasher(SECRET)
    token = new_token()
    digest = hasher.digest(token)
    assert digest == hmac.new(SECRET, token.encode(), hashlib.sha256).hexdigest()
    assert digest != hashlib.sha256(token.encode()).hexdigest()  # keyed, not a plain hash
    assert TokenHasher(SECRET[::-1]).digest(token) != digest
    assert hasher.digest(token) == digest  # deterministic


def test_token_id_is_the_first_16_hex_characters_of_the_digest() -> None:
    hasher = TokenHasher(SECRET)
    digest = hasher.digest(new_token())
    token_id = hasher.token_id(digest)
    assert token_id == digest[:16]
    assert is_token_id(token_id)
    assert not is_token_id(digest)
    assert not is_token_id("XYZ")


def test_hasher_refuses_a_short_secret_and_never_shows_it() -> None:
    with pytest.raises(ConfigError, match="at least 16 bytes"):
        TokenHasher(b"short")
    assert "0123" not in repr(TokenHasher(SECRET))


def grant(**kw: object) -> AgentToken:
    fields: dict[str, object] = {
        "token_id": "0123456789abcdef",
        "tenant": "acme",
        "servers": None,
        "tier": "write",
        "expires_at": None,
    }
    fields.update(kw)
    return AgentToken(**fields)  # type: ignore[arg-type]


def test_tiers_are_ordered_read_write_destructive() -> None:
    assert [grant(tier="read").allows_tier(t) for t in ("read", "write", "destructive")] == [
        True,
        False,
        False,
    ]
    assert [grant(tier="write").allows_tier(t) for t in ("read", "write", "destructive")] == [
        True,
        True,
        False,
    ]
    assert all(grant(tier="destructive").allows_tier(t) for t in ("read", "write", "destructive"))


def test_servers_none_means_every_server() -> None:
    assert grant().allows_server("anything")
    scoped = grant(servers=("github", "time"))
    assert scoped.allows_server("github")
    assert not scoped.allows_server("git")


def test_expiry_scope_key_and_public_form() -> None:
    g = grant(expires_at=100.0, label="ci")
    assert not g.is_expired(99.9)
    assert g.is_expired(100.0)
    assert not grant().is_expired(1e12)
    assert g.scope_key == g.token_id
    public = g.to_public()
    assert public["token_id"] == g.token_id
    assert public["label"] == "ci"
    assert not any("digest" in k for k in public)


def test_check_scope_normalizes_servers() -> None:
    assert check_scope("acme", ["time", "github", "time"], "read", None) == (
        "acme",
        ("github", "time"),
        "read",
        None,
    )
    assert check_scope("a.b-c_d", None, "destructive", "") == ("a.b-c_d", None, "destructive", None)


@pytest.mark.parametrize(
    ("tenant", "servers", "tier", "label", "field"),
    [
        ("", None, "read", None, "tenant"),
        ("a/b", None, "read", None, "tenant"),
        ("x" * 129, None, "read", None, "tenant"),
        ("acme", None, "admin", None, "tier"),
        ("acme", "github", "read", None, "servers"),
        ("acme", [], "read", None, "servers"),
        ("acme", ["git__hub"], "read", None, "server name"),
        ("acme", ["x" * 25], "read", None, "server name"),
        ("acme", [3], "read", None, "servers"),
        ("acme", None, "read", "x" * 201, "label"),
        ("acme", None, "read", "a\nb", "label"),
    ],
)
def test_check_scope_rejects(
    tenant: str, servers: object, tier: object, label: str | None, field: str
) -> None:
    with pytest.raises(InvalidRequestError, match=field):
        check_scope(tenant, servers, tier, label)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("3600", 3600), ("90s", 90), ("15m", 900), ("12h", 43200), ("30d", 2_592_000), ("2w", 1_209_600),
     ("1.5h", 5400)],
)  # fmt: skip
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "0d", "-1", "1y", "d", "10 days", "1e999"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(InvalidRequestError, match="duration"):
        parse_duration(text)
