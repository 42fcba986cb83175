"""``publish: bare`` in the tenant config: prefixed by default, and refused where the config itself
shows a collision (the error names both claimants) or a name that could not be published bare."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import ConfigError


def server(name: str, publish: str | None = None, tools: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    out: dict[str, Any] = {
        "name": name,
        "url": f"http://127.0.0.1:9/{name}/mcp",
        "tools": {t: {} for t in tools},
    }
    if publish is not None:
        out["publish"] = publish
    return out


def test_servers_are_prefixed_unless_configured_bare() -> None:
    config = parse_tenant_config({"servers": [server("a"), server("b", "bare")]})
    assert [s.publish for s in config.servers] == ["prefixed", "bare"]
    assert config.bare_servers == frozenset({"b"})


def test_an_unknown_publish_mode_is_refused() -> None:
    with pytest.raises(ConfigError, match="publish"):
        parse_tenant_config({"servers": [server("a", "naked")]})


@pytest.mark.parametrize(
    ("servers", "says"),
    [
        ([server("a", "bare", ["search"]), server("b", "bare", ["search"])], "'search' of bare server 'a'"),
        ([server("a", "bare", ["git__status"]), server("git")], "tool 'status' of server 'git'"),
        ([server("a", "bare", ["retrieve_tools"])], "foldgate's own tool"),
        ([server("a", "bare", ["call_tool_read"])], "foldgate's own tool"),
        ([server("a", "bare", ["has.dot"])], "not a valid MCP tool name"),
    ],
)
def test_collisions_the_config_shows_are_refused_naming_both(
    servers: list[dict[str, Any]], says: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_tenant_config({"servers": servers})
    assert says in info.value.message
    assert "(publish: bare)" in info.value.message


def test_the_same_tool_name_on_a_bare_and_a_prefixed_server_is_no_collision() -> None:
    # The prefixed one is published as b__search: nothing claims the bare "search".
    parse_tenant_config({"servers": [server("a", "bare", ["search"]), server("b", None, ["search"])]})


def test_a_declared_per_user_tool_is_checked_like_a_configured_one() -> None:
    declared = {"kind": "per_user", "tools": [{"name": "describe_tool"}]}
    doc = {
        "servers": [
            {"name": "files", "url": "https://files.example/mcp", "publish": "bare", "auth": declared}
        ]
    }
    with pytest.raises(ConfigError, match="foldgate's own tool 'describe_tool'"):
        parse_tenant_config(doc)
    declared["tools"] = [{"name": "whoami"}]
    assert parse_tenant_config(doc).bare_servers == frozenset({"files"})
