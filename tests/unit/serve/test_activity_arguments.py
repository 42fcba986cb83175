"""What an activity event keeps of a call's arguments under each tenant policy: nothing by default, a
keyed per-tenant digest when hashed, keys and shapes without values when redacted (credential-looking
members dropped, key and all). Planted canaries must never come back in any form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from foldgate.serve.activity_arguments import (
    MAX_DEPTH,
    arguments_key,
    looks_like_credential,
    recorded_arguments,
    secret_named,
)

KEY = arguments_key(b"token-secret-for-tests")
CANARY = "canary-7f3a91"
SECRETS = [
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ.c2lnbmF0dXJlLWNhbmFyeQ",
    "ghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF",
    "sk-ant-api03-canaryCANARYcanary0123",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-123456789012-canarycanary",
    "fgt_Q2FuYXJ5LXRva2VuLWJ5dGVz",
    "Bearer abc.def.canary-token-value",
    "https://admin:hunter2canary@db.internal/x",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIcanary\n-----END RSA PRIVATE KEY-----",
    "c2VjcmV0LWNhbmFyeS0wMTIzNDU2Nzg5YWJjZGVm",  # an opaque base64 blob
]

ARGUMENTS: dict[str, Any] = {
    "query": f"bugs about {CANARY}",
    "limit": 10,
    "draft": False,
    "labels": [CANARY, "p1"],
    "filters": {"owner": CANARY, "since": None, "score": 0.5},
    "password": "hunter2",
    "apiKey": "not-a-format-but-named",
    "githubToken": "named-token",
    "Authorization": "whatever",
    "client_secret": "s3",
    "nested": {"session_id": "abc", "x": SECRETS[0]},
    "shipping_address": "12 Canary Road",
    "footprint": 3,
}


def test_by_default_no_argument_is_recorded() -> None:
    assert recorded_arguments(ARGUMENTS, "none", key=KEY, tenant="acme") is None


def test_hashed_arguments_are_one_keyed_digest_equal_for_equal_arguments_in_a_tenant() -> None:
    digest = recorded_arguments(ARGUMENTS, "hashed", key=KEY, tenant="acme")
    assert isinstance(digest, str)
    assert digest.startswith("hmac-sha256:")
    assert len(digest) == len("hmac-sha256:") + 64
    assert CANARY not in digest
    reordered = dict(reversed(list(ARGUMENTS.items())))
    assert recorded_arguments(reordered, "hashed", key=KEY, tenant="acme") == digest
    assert recorded_arguments({**ARGUMENTS, "limit": 11}, "hashed", key=KEY, tenant="acme") != digest


def test_a_digest_differs_across_tenants_and_keys_and_is_not_a_plain_hash() -> None:
    import hashlib

    digest = recorded_arguments({"id": 42}, "hashed", key=KEY, tenant="acme")
    assert recorded_arguments({"id": 42}, "hashed", key=KEY, tenant="globex") != digest
    other = arguments_key(b"another-deployment")
    assert recorded_arguments({"id": 42}, "hashed", key=other, tenant="acme") != digest
    plain = hashlib.sha256(b'{"id":42}').hexdigest()
    assert digest.removeprefix("hmac-sha256:") != plain


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize("value", [float("nan"), {1: "a", "b": 2}, object(), "\ud800", _deep(5000)])
def test_hashing_never_raises_on_odd_values(value: Any) -> None:
    assert recorded_arguments(value, "hashed", key=KEY, tenant="acme").startswith("hmac-sha256:")


def test_redacted_arguments_keep_keys_and_shapes_but_no_value() -> None:
    shape = recorded_arguments(ARGUMENTS, "redacted", key=KEY, tenant="acme")
    assert shape == {
        "query": "string",
        "limit": "number",
        "draft": "boolean",
        "labels": ["string", "string"],
        "filters": {"owner": "string", "since": "null", "score": "number"},
        "nested": {},
        "shipping_address": "string",
        "footprint": "number",
    }
    text = json.dumps(shape)
    for planted in [CANARY, "hunter2", "named", "12 Canary Road", *SECRETS]:
        assert planted not in text


@pytest.mark.parametrize("secret", SECRETS)
def test_a_credential_in_any_member_is_dropped_with_its_key(secret: str) -> None:
    shape = recorded_arguments(
        {"note": secret, "items": ["fine", secret], secret: 1, "ok": 1}, "redacted", key=KEY, tenant="t"
    )
    assert shape == {"items": ["string"], "ok": "number"}


@pytest.mark.parametrize(
    "name",
    ["password", "PASSWD", "apiKey", "x-api-key", "access_key_id", "githubToken", "refresh_token",
     "Authorization", "cookie", "client_secret", "sessionId", "pin", "otp", "card_number", "privateKey"],
)  # fmt: skip
def test_keys_named_like_secrets_are_recognised(name: str) -> None:
    assert secret_named(name)


@pytest.mark.parametrize(
    "name", ["query", "shipping", "footprint", "author_name", "key", "issue_key", "spinner", "limit"]
)
def test_ordinary_keys_are_kept(name: str) -> None:
    assert not secret_named(name)


@pytest.mark.parametrize("text", ["hello world", "PROJ-1234", "2026-12-01T18:00:00Z", "a" * 40, "9" * 40])
def test_ordinary_values_do_not_look_like_credentials(text: str) -> None:
    assert not looks_like_credential(text)


def test_a_redacted_shape_is_bounded_whatever_is_sent() -> None:
    deep = _deep(5000)
    sent = {"deep": deep, "wide": {f"k{i}": i for i in range(10_000)}, "long": list(range(10_000))}
    shape = recorded_arguments(sent, "redacted", key=KEY, tenant="t")
    assert len(json.dumps(shape)) < 5_000
    level = shape["deep"]
    for _ in range(MAX_DEPTH - 1):
        level = level["a"]
    assert level == {"...": "object"}
    assert shape["wide"]["..."] == "9936 more"
    assert shape["long"][-1] == "... 9992 more"
