"""Tenant config validation: clear messages for every mistake an operator can make."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldgate.config.settings import Settings
from foldgate.config.tenant import TenantConfig, load_tenant_config, parse_tenant_config
from foldgate.errors import ConfigError


def test_schema_deferred_routing_is_rejected_naming_the_right_setting() -> None:
    with pytest.raises(ConfigError) as err:
        parse_tenant_config({"routing_mode": "schema_deferred"})
    assert "direct_tool_response_mode" in err.value.message


@pytest.mark.parametrize("name", ["", "a__b", "_a", "has space", "dot.ted", "x" * 25, "ü"])
def test_server_names_that_would_break_published_tool_names_are_rejected(name: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_tenant_config({"servers": [{"name": name, "url": "http://127.0.0.1:1/mcp"}]})
    assert "servers.0.name" in err.value.message


def test_duplicate_servers_and_missing_url_are_rejected() -> None:
    with pytest.raises(ConfigError, match="used twice"):
        parse_tenant_config(
            {"servers": [{"name": "a", "url": "http://h/mcp"}, {"name": "a", "url": "http://h/"}]}
        )
    with pytest.raises(ConfigError, match="needs an http"):
        parse_tenant_config({"servers": [{"name": "a"}]})
    with pytest.raises(ConfigError, match="needs a command"):
        parse_tenant_config({"servers": [{"name": "a", "transport": "stdio"}]})


def test_unknown_keys_are_rejected() -> None:
    with pytest.raises(ConfigError, match="defer_treshold"):
        parse_tenant_config({"defer_treshold": 3})


def test_yaml_and_json_files_load(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        "direct_tool_response_mode: deferred\nservers:\n  - name: a\n    url: http://h/mcp\n"
    )
    cfg = load_tenant_config(tmp_path / "t.yaml")
    assert cfg.direct_tool_response_mode == "deferred"
    assert cfg.server("a") is not None
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="cannot parse"):
        load_tenant_config(tmp_path / "bad.json")


def test_defaults() -> None:
    cfg = TenantConfig()
    assert (cfg.direct_tool_response_mode, cfg.defer_threshold, cfg.defer_schema_chars) == ("auto", 20, 0)


def test_settings_from_env() -> None:
    s = Settings.from_env({"FOLDGATE_STORE": "dynamodb", "FOLDGATE_TABLE_NAME": "t", "OTHER": "x"})
    assert (s.store, s.table_name) == ("dynamodb", "t")
    with pytest.raises(ConfigError, match="store"):
        Settings.from_env({"FOLDGATE_STORE": "redis"})


def test_the_oauth_block_is_validated_strictly_with_loopback_only_where_allowed() -> None:
    block = {"issuer": "https://login.example.com/t1", "audience": "api://foldgate",
             "mapping": [{"claim": "groups", "value": "ops", "tier": "write"}]}  # fmt: skip
    cfg = parse_tenant_config({"oauth": block}, allow_loopback=False)
    assert cfg.oauth is not None
    assert (cfg.oauth.audience, cfg.oauth.mapping.rules[0].tier) == (["api://foldgate"], "write")
    assert parse_tenant_config({}).oauth is None
    local = {"oauth": {"issuer": "http://127.0.0.1:9000"}}
    assert parse_tenant_config(local).oauth is not None  # local files: loopback issuers are fine
    with pytest.raises(ConfigError, match=r"oauth\.issuer"):
        parse_tenant_config(local, allow_loopback=False)
    for bad in ({"issuer": "http://login.example.com"}, {"issuer": "https://u:p@login.example.com"},
                {"issuer": "https://login.example.com", "surprise": 1}, {"audience": "x"}):  # fmt: skip
        with pytest.raises(ConfigError, match="oauth"):
            parse_tenant_config({"oauth": bad})


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/", "http://[::ffff:a9fe:a9fe]/mcp", "http://metadata.google.internal/"]
)
def test_a_metadata_or_link_local_url_is_refused_when_the_config_is_read(url: str) -> None:
    """Refused at save and load alike (not only when first called), with the host and why."""
    with pytest.raises(ConfigError) as err:
        parse_tenant_config({"servers": [{"name": "meta", "url": url}]})
    assert "servers.0.url: Value error, url refused: host" in err.value.message
    assert "the cloud metadata service, which an upstream may never be" in err.value.message


def test_a_loopback_url_is_refused_only_where_private_upstreams_are_off() -> None:
    doc = {"servers": [{"name": "local", "url": "http://127.0.0.1:8000/mcp"}]}
    assert parse_tenant_config(doc).servers[0].url == "http://127.0.0.1:8000/mcp"
    with pytest.raises(ConfigError) as err:
        parse_tenant_config(doc, allow_private=False)
    assert "host '127.0.0.1' is a loopback address (allow_private_upstreams is off here)" in err.value.message
