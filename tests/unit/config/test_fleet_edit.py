"""The console's fleet edits as document -> document functions: each changes only what it names, keeps
every other key as the operator wrote it, never adds a default that was absent, refuses what it cannot
do with an error naming the field, and its audit summary never carries a URL, header or secret name."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from foldgate.config.fleet_edit import (
    MASK,
    add_server,
    edit_server,
    name_fields,
    parse_server_form,
    server_for_form,
    set_server_flag,
    set_settings,
    set_tool_override,
    summarize,
)
from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import ConfigError

DOC: dict[str, Any] = {
    "routing_mode": "direct",
    "servers": [
        {
            "name": "gh",
            "url": "https://gh.example/mcp?key=sk-live-123",
            "headers": {"Authorization": "Bearer sk-literal-456"},
            "auth": {"kind": "static"},
            "tools": {"delete_repo": {"tier": "destructive"}},
        },
        {"name": "local", "transport": "stdio", "command": ["python", "-m", "srv"], "trusted": False},
    ],
}


def test_adding_a_server_appends_it_with_only_the_non_default_fields() -> None:
    fields = parse_server_form(
        {
            "name": "crm",
            "url": "https://crm.example/mcp",
            "tool_loading": "auto",
            "enabled": "on",
            "trusted": "on",
        },
        adding=True,
    )
    new = add_server(DOC, fields)
    assert new["servers"][:2] == DOC["servers"]
    assert new["servers"][2] == {"name": "crm", "url": "https://crm.example/mcp"}
    parse_tenant_config(new)  # a valid config
    assert DOC["servers"][2:] == []  # the input is not mutated


def test_adding_a_server_whose_name_exists_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match="name: a server named 'gh' already exists"):
        add_server(DOC, {"name": "gh", "url": "https://x.example"})
    with pytest.raises(ConfigError, match="name: a new server needs a name"):
        parse_server_form({"url": "https://x.example"}, adding=True)


def test_editing_a_server_keeps_its_auth_headers_and_tool_pins_untouched() -> None:
    form = {
        "url": "https://gh2.example/mcp",
        "tool_loading": "deferred",
        "timeout_s": "12.5",
        "enabled": "on",
    }
    new = edit_server(DOC, "gh", parse_server_form(form, adding=False))
    gh = new["servers"][0]
    assert gh["url"] == "https://gh2.example/mcp"
    assert gh["tool_loading"] == "deferred"
    assert gh["timeout_s"] == 12.5
    # An unchecked box is off: trusted was the default (true), so it is now written false.
    assert gh["trusted"] is False
    assert gh["headers"] == DOC["servers"][0]["headers"]
    assert gh["auth"] == {"kind": "static"}
    assert gh["tools"] == {"delete_repo": {"tier": "destructive"}}
    assert "enabled" not in gh  # true is the default and it was absent
    assert new["servers"][1] == DOC["servers"][1]


def test_a_stdio_server_keeps_its_command_and_gets_no_url() -> None:
    new = edit_server(DOC, "local", {"url": "https://x.example", "trusted": True})
    assert new["servers"][1] == {
        "name": "local",
        "transport": "stdio",
        "command": ["python", "-m", "srv"],
        "trusted": True,
    }


@pytest.mark.parametrize(("flag", "value"), [("enabled", False), ("trusted", False), ("quarantined", True)])
def test_each_switch_sets_only_its_own_key(flag: str, value: bool) -> None:
    new = set_server_flag(DOC, "gh", flag, value)  # type: ignore[arg-type]
    assert new["servers"][0] == {**DOC["servers"][0], flag: value}
    back = set_server_flag(new, "gh", flag, not value)  # type: ignore[arg-type]
    assert back["servers"][0][flag] is (not value)


def test_a_switch_of_an_unknown_server_or_flag_is_refused() -> None:
    with pytest.raises(ConfigError, match="servers: no server named 'nope'"):
        set_server_flag(DOC, "nope", "enabled", False)
    with pytest.raises(ConfigError, match="not a server switch"):
        set_server_flag(DOC, "gh", "url", False)  # type: ignore[arg-type]


def test_pinning_a_tool_adds_then_unpinning_removes_the_override_and_the_empty_map() -> None:
    pinned = set_tool_override(DOC, "local", "search", tier="read", defer_loading=True)
    assert pinned["servers"][1]["tools"] == {"search": {"tier": "read", "defer_loading": True}}
    parse_tenant_config(pinned)
    unpinned = set_tool_override(pinned, "local", "search", tier=None, defer_loading=None)
    assert unpinned["servers"][1] == DOC["servers"][1]
    kept = set_tool_override(DOC, "gh", "delete_repo", tier="destructive", defer_loading=False)
    assert kept["servers"][0]["tools"] == {"delete_repo": {"tier": "destructive", "defer_loading": False}}
    with pytest.raises(ConfigError, match="tier: must be one of"):
        set_tool_override(DOC, "gh", "x", tier="admin", defer_loading=None)


def test_settings_set_and_none_removes_the_key() -> None:
    new = set_settings(
        {**DOC, "listing_token_budget": 900}, {"defer_threshold": 5, "listing_token_budget": None}
    )
    assert new["defer_threshold"] == 5
    assert "listing_token_budget" not in new


def test_the_form_shows_header_names_with_masked_values_and_never_a_secret() -> None:
    shown = server_for_form(DOC, "gh")
    assert shown["headers"] == {"Authorization": MASK}
    assert "sk-literal" not in repr(shown)
    assert shown["trusted"] is True  # the default filled in
    assert shown["tools"] == {"delete_repo": {"tier": "destructive"}}


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"tool_loading": "lazy"}, "tool_loading: must be one of"),
        ({"timeout_s": "soon"}, "timeout_s: 'soon' is not a float"),
        ({"max_concurrency": "1.5"}, "max_concurrency: '1.5' is not a int"),
        ({"url": "x" * 3000}, "url: longer than"),
    ],
)
def test_a_malformed_form_value_is_refused_naming_its_field(form: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_server_form(form, adding=False)


def test_validation_messages_name_servers_by_name() -> None:
    doc = add_server(DOC, {"name": "bad", "url": "ftp://x"})
    with pytest.raises(ConfigError) as caught:
        parse_tenant_config(doc)
    assert "servers[bad]" in name_fields(caught.value.message, doc)


def test_the_audit_summary_says_switches_and_numbers_but_no_url_header_or_secret() -> None:
    before = copy.deepcopy(DOC)
    after = edit_server(
        before, "gh", {"url": "https://new.example/?token=sk-new", "enabled": False, "timeout_s": 9.0}
    )
    after = set_tool_override(after, "gh", "delete_repo", tier="write", defer_loading=None)
    after["servers"][0]["headers"] = {"Authorization": "Bearer sk-other"}
    after = add_server(
        after, {"name": "crm", "url": "https://crm.example/?k=sk-crm", "headers_secret": "crm"}
    )
    text = summarize(before, after)
    assert "servers[gh].url changed" in text  # a text is said to have changed, never its value
    # A key absent before reads as absent -> value, with the default it stood for (an enable and a
    # disable are told apart without the previous document).
    assert "servers[gh].enabled absent (default true) -> false" in text
    assert "servers[gh].timeout_s absent (default 30.0) -> 9.0" in text
    assert "servers[gh].tools.delete_repo.tier destructive -> write" in text
    assert "servers[gh].headers changed" in text
    assert "servers[crm] added" in text
    for secret in ("sk-", "new.example", "crm.example", "Bearer"):
        assert secret not in text
    assert summarize(DOC, DOC) == "no change"
    # And the way back: value -> absent (a text's value still unsaid).
    back = summarize(after, before)
    assert "servers[gh].enabled false -> absent (default true)" in back
    assert "servers[gh].tools.delete_repo.tier write -> destructive" in back
    assert "servers[crm] removed" in back
    unpinned = set_tool_override(before, "gh", "delete_repo", tier=None, defer_loading=None)
    assert "servers[gh].tools.delete_repo.tier destructive -> absent" in summarize(before, unpinned)
