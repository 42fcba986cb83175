"""The tenant's guard policy: secrets redacted and injections marked unless the tenant says otherwise,
only the documented values accepted, and allowances keyed by a published tool (or a whole server)
naming rule ids."""

from __future__ import annotations

import pytest
import yaml

from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import ConfigError


def test_the_defaults_redact_secrets_and_mark_injections() -> None:
    guard = parse_tenant_config({}).guard
    assert (guard.secrets, guard.injection, guard.allow) == ("redact", "mark", {})


@pytest.mark.parametrize(
    ("bad", "good"),
    [
        ({"secrets": "mask"}, {"secrets": "block"}),
        ({"injection": "warn"}, {"injection": "off"}),
        ({"secret": "off"}, {"secrets": "off"}),
        ({"allow": {"github": ["generic_secret"]}}, {"allow": {"github__*": ["generic_secret"]}}),
        ({"allow": {"github__get_file": ["Not A Rule"]}}, {"allow": {"github__get_file": ["jwt"]}}),
        (
            {"allow": {"github__get_file": "generic_secret"}},
            {"allow": {"github__get_file": ["generic_secret"]}},
        ),
    ],
)
def test_only_the_documented_values_are_accepted(bad: dict[str, object], good: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="guard"):
        parse_tenant_config({"guard": bad})
    assert parse_tenant_config({"guard": good}).guard.model_dump(exclude_defaults=True) == good


def test_allowances_apply_to_the_tool_and_to_the_whole_server() -> None:
    guard = parse_tenant_config(
        {
            "guard": {
                "secrets": "block",
                "injection": "off",
                "allow": {"github__get_file": ["generic_secret"], "docs__*": ["instruction-override"]},
            }
        }
    ).guard
    assert guard.allowed("github", "get_file") == {"generic_secret"}
    assert guard.allowed("github", "list_issues") == frozenset()
    assert guard.allowed("docs", "anything") == {"instruction-override"}


def test_a_yaml_bare_off_is_the_off_policy_but_true_is_refused() -> None:
    """YAML 1.1 reads `injection: off` as false: that is the operator's "off", never an error; `true`
    names no policy and is refused."""
    config = parse_tenant_config(yaml.safe_load("guard:\n  secrets: off\n  injection: off\n"))
    assert (config.guard.secrets, config.guard.injection) == ("off", "off")
    with pytest.raises(ConfigError, match="guard"):
        parse_tenant_config({"guard": {"secrets": True}})


def test_a_servers_own_policy_replaces_the_tenants_side_by_side() -> None:
    guard = parse_tenant_config(
        yaml.safe_load(
            "guard:\n  secrets: redact\n  injection: mark\n  servers:\n"
            "    web: {injection: spotlight}\n    vault: {secrets: block, injection: off}\n"
        )
    ).guard
    assert guard.policy("web") == ("redact", "spotlight")
    assert guard.policy("vault") == ("block", "off")
    assert guard.policy("other") == ("redact", "mark")
    with pytest.raises(ConfigError, match="guard"):
        parse_tenant_config({"guard": {"servers": {"web": {"injection": "loud"}}}})
