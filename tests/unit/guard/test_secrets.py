"""The credential detectors: every family is found and replaced by its typed placeholder, the value
never survives, and what real results are full of (UUIDs, git SHAs, content hashes, base64 images,
file listings, pagination tokens, placeholders in docs) is never taken for a credential."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid

import pytest

from foldgate.dev.guard_samples import CREDENTIAL_MAKERS, fake_credential, family_kind
from foldgate.guard.secret_rules import SECRET_KINDS
from foldgate.guard.secrets import find_secrets, placeholder, redact_secrets


@pytest.mark.parametrize("family", sorted(CREDENTIAL_MAKERS))
def test_each_family_is_replaced_by_its_typed_placeholder(family: str) -> None:
    for seed in range(5):
        planted, secret = fake_credential(family, seed)
        text = f"line before\n{planted}\nline after"
        redacted, counts = redact_secrets(text)
        kind = family_kind(family)
        assert secret not in redacted
        assert placeholder(kind) in redacted
        assert counts == {kind: 1}
        assert redacted.startswith("line before\n")
        assert redacted.endswith("\nline after")


def test_every_kind_a_finding_names_has_a_planted_family() -> None:
    planted_kinds = {family_kind(f) for f in CREDENTIAL_MAKERS}
    assert set(SECRET_KINDS) - planted_kinds == set()


def test_the_placeholder_is_typed_and_the_count_is_per_kind() -> None:
    one, _ = fake_credential("aws_access_key", 1)
    two, _ = fake_credential("aws_access_key", 2)
    token, _ = fake_credential("github_token", 1)
    redacted, counts = redact_secrets(f"{one} {two} {token}")
    assert redacted == "[redacted:aws_access_key] [redacted:aws_access_key] [redacted:github_token]"
    assert counts == {"aws_access_key": 2, "github_token": 1}


def test_a_private_key_inside_a_json_string_is_redacted_whole() -> None:
    planted, _ = fake_credential("private_key_openssh", 3)
    text = json.dumps({"path": "/home/u/.ssh/id_ed25519", "content": planted})
    redacted, counts = redact_secrets(text)
    assert counts == {"private_key": 1}
    assert json.loads(redacted)["content"] == "[redacted:private_key]"


def test_a_secret_named_key_needs_a_random_looking_value() -> None:
    _, counts = redact_secrets('password = "Xk9#qLm2Wv8z" and api_key=Zt7pQ2mX9kL4rB6n')
    assert counts == {"password": 1, "generic_secret": 1}
    for benign in (
        "password: ${DB_PASSWORD}",
        "api_key: <your-api-key>",
        "token = ********",
        '"password": "changeme"',
        '{"max_tokens": 4096, "token_type": "Bearer", "tokens_used": 123456789}',
        '{"next_page_token": "CiAKGjBpNDd2Nmp0dWt3MmZmbXBqb2x4", "sync_token": "aB3dE5fG7hJ9kL1m"}',
        "password_hint=Pet's name plus year",
        "'payment_context_token': '60a8e027-8b8b-4ccf-b2b9-380ed0930283',  # from the docs' example",
        "GET /api/eod?api_token=YOUR_API_TOKEN&fmt=json",
        "postgresql://user:pass@localhost:5432/db and mysql://root:password@db/app",
    ):
        assert redact_secrets(benign)[1] == {}, benign


def test_a_value_in_a_url_query_ends_at_the_next_parameter() -> None:
    redacted, counts = redact_secrets("GET /eod/AAPL?api_token=Qm7Zt2pLx9Kw4Rv8&fmt=json&period=d")
    assert redacted == "GET /eod/AAPL?api_token=[redacted:generic_secret]&fmt=json&period=d"
    assert counts == {"generic_secret": 1}


def test_an_operators_allowance_skips_only_that_kind() -> None:
    key, _ = fake_credential("aws_access_key", 4)
    token, _ = fake_credential("github_token", 4)
    redacted, counts = redact_secrets(f"{key} {token}", frozenset({"aws_access_key"}))
    assert redacted.startswith(key)
    assert counts == {"github_token": 1}


def test_overlapping_detectors_name_the_provider_not_the_generic_kind() -> None:
    token, _ = fake_credential("github_token", 5)
    assert redact_secrets(f"GITHUB_TOKEN={token}") == (
        "GITHUB_TOKEN=[redacted:github_token]",
        {"github_token": 1},
    )


def test_identifiers_hashes_images_and_listings_are_never_redacted() -> None:
    sha1 = hashlib.sha1(b"x").hexdigest()
    sha256 = hashlib.sha256(b"x").hexdigest()
    image = base64.b64encode(bytes(range(256)) * 40).decode()
    texts = [
        f"commit {sha1}\nAuthor: Ada <ada@example.com>\n\n    fix the build",
        f"sha256:{sha256}  layer.tar",
        json.dumps({"id": str(uuid.UUID(int=12345678901234567890)), "etag": f'W/"{sha256}"'}),
        f'{{"type": "image", "mimeType": "image/png", "data": "{image}"}}',
        "[FILE] secrets.yaml\n[FILE] .env.example\n[DIR] keys\n[FILE] id_rsa.pub\n[FILE] token_test.go",
        "Set OPENAI_API_KEY in your environment, e.g. export OPENAI_API_KEY=sk-...",
        "git clone https://github.com/modelcontextprotocol/servers.git && cd servers",
        "See https://user@example.com/path and postgres://localhost:5432/app",
        "sk-learn-pipeline-utilities and risk-assessment-2026-final-version",
        "Authorization: Bearer <token>",
        "The quick brown fox. Keys: 3, tokens: 17, passwords rotated: yes.",
    ]
    for text in texts:
        assert find_secrets(text) == [], text


# Per family, what must stay: placeholders, public halves, hashes, ids and code naming a secret.
LOOK_ALIKES = {
    "provider": [
        "AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY (the AWS docs' example)",
        "export GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "STRIPE_PUBLISHABLE_KEY=pk_live_51H8kDqLxYzAbCdEf0123456789",
        "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
        "-----END PUBLIC KEY-----",
        '"integrity": "sha512-' + "A" * 20 + "b9Zk3" * 13 + 'x=="',
    ],
    "url": [
        "postgresql://user:password@localhost:5432/app",
        "mysql://root:${MYSQL_ROOT_PASSWORD}@db:3306/shop",
        "redis://:<password>@cache:6379/0",
        "mongodb+srv://<username>:<password>@cluster0.mongodb.net/test",
        "amqp://guest:guest@localhost:5672/",
        "https://user:changeme@example.com/",
        "http://localhost:8080/health and ssh://git@github.com:22/org/repo.git",
    ],
    "assignment": [
        "DB_PASSWORD=${DB_PASSWORD}",
        "password: <your-password>",
        "spring.datasource.password=changeme",
        "<password>********</password>",
        "define( 'AUTH_KEY', 'put your unique phrase here' );",
        '{"key": "x-api-key", "value": "{{apiKey}}"}',
        "API_KEY=xxxxxxxxxxxxxxxxxxxxxxxx",
        '"password_hash": "$2b$12$KIXQJjQ3Zq1bTt0l8o7u0e9YyWw3VwY1Q5p9b1x2c3d4e5f6g7h8i"',
        '"password": "$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG"',
        "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk9 ada@laptop",
        '{"api_key_id": "ak_3f9c2e1d", "key_id": "k-8d7f6e5a4b3c", "request_id": "req_9Zk3Lm7Qx2"}',
        '{"max_tokens": 4096, "prompt_tokens": 1234, "completion_tokens": 567}',
        "password = os.environ['DB_PASSWORD'] and token = request.headers.get('X-Token')",
        '"request_id": "8f14e45f-ceea-467f-a0e6-1b0c3d7e3b2a", "session_token_ttl": 3600',
        "token_type=bearer&expires_in=3600",
        "password_hint=your pet's name",
    ],
    "docker": [
        '{"auths": {"ghcr.io": {"auth": "dXNlcm5hbWU6cGFzc3dvcmQ="}}}',  # username:password
        '{"auths": {"ghcr.io": {"auth": ""}}, "credsStore": "desktop"}',
    ],
}


@pytest.mark.parametrize(("family", "text"), [(f, t) for f, ts in LOOK_ALIKES.items() for t in ts])
def test_a_look_alike_of_each_family_stays(family: str, text: str) -> None:
    assert redact_secrets(text) == (text, {}), family


def test_a_credential_spelled_with_zero_width_characters_is_redacted_whole() -> None:
    """W3-04: a zero-width space inside, or full-width letters, do not hide a credential."""
    key, _ = fake_credential("aws_access_key", 9)
    token, _ = fake_credential("github_token", 9)
    hidden = key[:6] + "\u200b" + key[6:]
    wide = "".join(chr(ord(c) + 0xFEE0) for c in token)  # full-width forms of ASCII
    joined = token[:4] + "\u2060\u200d" + token[4:]
    for text in (f"key: {hidden} end", f"token {wide} end", f"GITHUB={joined}"):
        redacted, counts = redact_secrets(text)
        assert sum(counts.values()) == 1, text
        assert "[redacted:" in redacted
        for char in ("\u200b", "\u2060", "\u200d"):
            assert char not in redacted
        assert not any(0xFF01 <= ord(c) <= 0xFF5E for c in redacted)


def test_accented_and_cjk_text_around_a_credential_keeps_its_offsets() -> None:
    key, _ = fake_credential("aws_access_key", 10)
    text = f"Clé d'accès du déploiement : {key}\u200b — 鍵を共有しないでください"
    redacted, counts = redact_secrets(text)
    assert counts == {"aws_access_key": 1}
    assert (
        redacted == "Clé d'accès du déploiement : [redacted:aws_access_key]\u200b — 鍵を共有しないでください"
    )
