"""The tenant config's ``limits:`` block: unset means no quota (unlimited beyond the per-instance rate
limit); values are whole positive numbers, strictly (no strings, booleans or fractions read as
numbers); every refusal names the field."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import ConfigError


def test_no_limits_block_means_no_quota() -> None:
    limits = parse_tenant_config({}).limits
    assert limits.requests_per_minute is None
    assert limits.per_token_requests_per_minute is None


def test_both_quotas_are_read() -> None:
    config = parse_tenant_config(
        {"limits": {"requests_per_minute": 6000, "per_token_requests_per_minute": 600}}
    )
    assert (config.limits.requests_per_minute, config.limits.per_token_requests_per_minute) == (6000, 600)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("requests_per_minute", 0),
        ("requests_per_minute", -5),
        ("requests_per_minute", "100"),
        ("requests_per_minute", True),
        ("requests_per_minute", 1.5),
        ("requests_per_minute", 10_000_000),
        ("per_token_requests_per_minute", 0),
        ("per_token_requests_per_minute", "10"),
        ("per_token_requests_per_minute", [10]),
    ],
)
def test_a_bad_quota_is_refused_naming_its_field(field: str, value: Any) -> None:
    with pytest.raises(ConfigError) as err:
        parse_tenant_config({"limits": {field: value}})
    assert f"limits.{field}" in err.value.message


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"requests_per_min": 10}, "limits.requests_per_min: Extra inputs are not permitted"),
        ({"burst": 5}, "limits.burst: Extra inputs are not permitted"),
        ([], "limits: Input should be a valid dictionary"),
        ("600", "limits: Input should be a valid dictionary"),
    ],
)
def test_unknown_keys_and_non_objects_are_refused_naming_where(block: Any, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_tenant_config({"limits": block})
    assert expected in err.value.message
