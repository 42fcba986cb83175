"""Validation before a tenant document is written: the readers' models and rules, every problem at
once, each named by its field as a reader writes it (servers[2].url)."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldgate.config.doc_check import field_path, validate_document
from foldgate.config.secret_refs import SecretSource, read_tenant_file, secret_value
from foldgate.errors import ConfigError

BASE = "/foldgate/tenants/acme"


def problems(doc: object, cloud: bool) -> str:
    with pytest.raises(ConfigError) as info:
        validate_document(doc, source="t.yaml", cloud_base=BASE if cloud else None)
    return info.value.message


def test_field_paths_read_like_the_document() -> None:
    assert field_path(("servers", 2, "url")) == "servers[2].url"
    assert field_path(("servers", 0, "auth", "oauth", "client_id")) == "servers[0].auth.oauth.client_id"
    assert field_path(()) == "config"


def test_every_problem_is_listed_by_its_field() -> None:
    doc = {
        "tools_limit": 0,
        "servers": [
            {"name": "ok", "url": "https://ok.example"},
            {"name": "a__b", "url": "https://x.example"},
            {"name": "web", "url": "ftp://web.example"},
        ],
    }
    said = problems(doc, cloud=False)
    assert said.startswith("invalid tenant config in t.yaml (3 problems):\n")
    assert "\n  tools_limit: Input should be greater than or equal to 1" in said
    assert "\n  servers[1].name: server name 'a__b' must be" in said
    assert "\n  servers[2].url: server 'web': streamable_http needs an http(s) url" in said


def test_the_cloud_rules_name_their_fields_and_the_local_rules_allow_stdio() -> None:
    doc = {
        "servers": [
            {"name": "sh", "transport": "stdio", "command": ["sh"]},
            {"name": "gh", "url": "https://gh.example", "headers_secret": "/foldgate/secrets/operator-key"},
            {
                "name": "cc",
                "url": "https://cc.example",
                "auth": {"kind": "client_credentials", "token_url": "https://cc.example/t", "client_id": "x",
                         "client_secret_secret": "/foldgate/tenants/other/secrets/k"},
            },
        ]
    }  # fmt: skip
    said = problems(doc, cloud=True)
    assert "servers[0].transport: 'stdio' runs a program" in said
    assert "servers[1].headers_secret: must name a parameter under /foldgate/tenants/acme/secrets/" in said
    assert "servers[2].auth.client_secret_secret: must name a parameter under" in said
    local = {"servers": [doc["servers"][0]]}
    assert validate_document(local, source="t.yaml", cloud_base=None).servers[0].transport == "stdio"


def test_a_loopback_issuer_is_refused_in_the_cloud_only() -> None:
    doc = {"oauth": {"issuer": "http://127.0.0.1:9/"}}
    assert problems(doc, cloud=True).endswith(
        "oauth.issuer: issuer on loopback is only allowed where private upstreams are allowed"
    )
    assert validate_document(doc, source="t.yaml", cloud_base=None).oauth is not None


def test_a_secrets_map_is_checked_by_field_and_its_values_are_never_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "t.yaml"
    file.write_text(
        "secrets: {a: {from_env: A, from_file: b}, '../x': {from_env: A}, c: {from_env: 'not a var'},"
        " d: {from_env: AWS_SECRET_ACCESS_KEY}}\n"
    )
    tf = read_tenant_file(file)
    assert tf.problems[0] == "secrets.a: give exactly one of from_env and from_file"
    assert tf.problems[1].startswith("secrets.../x: a secret name is")
    assert tf.problems[2].startswith("secrets.c.from_env: String should match pattern")
    # The operator's own credentials are never a tenant's secret (a file from someone else could ask).
    assert (
        tf.problems[3]
        == "secrets.d: from_env AWS_SECRET_ACCESS_KEY: AWS_* and FOLDGATE_* variables are never a tenant's"
    )

    monkeypatch.setenv("EMPTY", " ")
    with pytest.raises(ConfigError, match=r"secrets\.k: environment variable EMPTY is not set or empty"):
        secret_value("k", SecretSource(from_env="EMPTY"), tmp_path)
    (tmp_path / "k.txt").write_text("file-canary\n")
    assert (
        secret_value("k", SecretSource(from_file="k.txt"), tmp_path) == "file-canary"
    )  # relative to the file
    with pytest.raises(ConfigError) as info:
        secret_value("k", SecretSource(from_file="missing.txt"), tmp_path)
    assert info.value.message.startswith("secrets.k: cannot read ")


@pytest.mark.parametrize("cloud", [False, True])
def test_a_metadata_url_is_refused_before_writing_naming_its_field(cloud: bool) -> None:
    doc = {
        "servers": [
            {"name": "ok", "url": "https://ok.example/mcp"},
            {"name": "m", "url": "http://169.254.169.254/"},
        ]
    }
    said = problems(doc, cloud)
    assert "servers[1].url: url refused: host '169.254.169.254' is the cloud metadata service" in said


def test_a_private_url_is_refused_before_writing_when_private_upstreams_are_off() -> None:
    doc = {"servers": [{"name": "lan", "url": "http://10.0.0.5/mcp"}]}
    assert validate_document(doc, source="t.yaml", cloud_base=BASE).servers[0].url == "http://10.0.0.5/mcp"
    with pytest.raises(ConfigError) as info:
        validate_document(doc, source="t.yaml", cloud_base=BASE, allow_private=False)
    assert "servers[0].url:" in info.value.message
    assert "is a private address (allow_private_upstreams is off here)" in info.value.message
