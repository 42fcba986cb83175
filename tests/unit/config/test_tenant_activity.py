"""The tenant's ``activity`` block: arguments none | hashed | redacted and retention_days, validated
strictly (each error names the field), none / 7 days by default."""

from __future__ import annotations

import pytest

from foldgate.config.tenant import TenantConfig, parse_tenant_config
from foldgate.errors import ConfigError


def test_the_default_records_no_arguments_and_keeps_events_seven_days() -> None:
    assert TenantConfig().activity.arguments == "none"
    assert TenantConfig().activity.retention_days == 7
    assert parse_tenant_config({"activity": {}}).activity.retention_days == 7


def test_a_tenant_may_choose_hashed_or_redacted_arguments_and_its_retention() -> None:
    cfg = parse_tenant_config({"activity": {"arguments": "hashed", "retention_days": 30}})
    assert (cfg.activity.arguments, cfg.activity.retention_days) == ("hashed", 30)
    assert parse_tenant_config({"activity": {"arguments": "redacted"}}).activity.arguments == "redacted"


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ({"arguments": "plain"}, "activity.arguments"),
        ({"arguments": True}, "activity.arguments"),
        ({"retention_days": 0}, "activity.retention_days"),
        ({"retention_days": 366}, "activity.retention_days"),
        ({"retention_days": "7"}, "activity.retention_days"),
        ({"retention_days": 7.5}, "activity.retention_days"),
        ({"retention_days": True}, "activity.retention_days"),
        ({"retention": 7}, "activity.retention"),
    ],
)
def test_every_mistake_in_the_block_is_refused_naming_its_field(block: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_tenant_config({"activity": block})
    assert f"{field}:" in err.value.message


def test_the_block_must_be_an_object() -> None:
    with pytest.raises(ConfigError, match="activity: Input should be a valid dictionary"):
        parse_tenant_config({"activity": "hashed"})
