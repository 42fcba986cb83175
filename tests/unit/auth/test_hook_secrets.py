"""Per-server webhook secrets: issued once and reused locally, never created by a lookup, never read
for malformed names, and a missing cloud parameter reads as "no secret" (the ping is refused)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from foldgate.auth.hook_secrets import (
    hook_parameter,
    hook_secret_file,
    issue_hook_secret,
    load_hook_secret,
    valid_names,
)
from foldgate.config.settings import Settings
from foldgate.errors import ConfigError


def local(tmp_path: Path) -> Settings:
    return Settings(sqlite_path=str(tmp_path / "foldgate.sqlite3"))


def test_a_lookup_never_creates_a_secret(tmp_path: Path) -> None:
    settings = local(tmp_path)
    assert load_hook_secret(settings, "acme", "crm") is None
    assert not hook_secret_file(settings, "acme", "crm").exists()


def test_an_issued_secret_is_private_reused_and_what_the_lookup_returns(tmp_path: Path) -> None:
    settings = local(tmp_path)
    first = issue_hook_secret(settings, "acme", "crm")
    assert issue_hook_secret(settings, "acme", "crm") == first
    assert len(first) == 64
    path = hook_secret_file(settings, "acme", "crm")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_hook_secret(settings, "acme", "crm") == first.encode()
    assert issue_hook_secret(settings, "acme", "mail") != first  # one secret per server


@pytest.mark.parametrize(("tenant", "server"), [("..", "crm"), ("acme", "../x"), ("a/b", "crm"), ("", "crm")])
def test_malformed_names_never_reach_a_path(tmp_path: Path, tenant: str, server: str) -> None:
    settings = local(tmp_path)
    assert not valid_names(tenant, server)
    assert load_hook_secret(settings, tenant, server) is None
    with pytest.raises(ConfigError):
        issue_hook_secret(settings, tenant, server)


class Ssm:
    def __init__(self, params: dict[str, dict[str, str]]) -> None:
        self.params = params

    def get_parameter(self, Name: str, WithDecryption: bool) -> dict[str, Any]:
        if Name not in self.params:
            raise ClientError({"Error": {"Code": "ParameterNotFound"}}, "GetParameter")
        return {"Parameter": self.params[Name]}


def test_in_the_cloud_the_secret_is_the_tenants_securestring_and_missing_means_none() -> None:
    settings = Settings(config_source="ssm", config_prefix="/fg")
    name = hook_parameter(settings, "acme", "crm")
    assert name == "/fg/tenants/acme/hooks/crm"
    client = Ssm({name: {"Type": "SecureString", "Value": "k" * 32}})
    assert load_hook_secret(settings, "acme", "crm", client=client) == b"k" * 32
    assert load_hook_secret(settings, "acme", "mail", client=client) is None


def test_a_plain_string_parameter_is_refused() -> None:
    settings = Settings(config_source="ssm", config_prefix="/fg")
    client = Ssm({hook_parameter(settings, "acme", "crm"): {"Type": "String", "Value": "k" * 32}})
    with pytest.raises(ConfigError):
        load_hook_secret(settings, "acme", "crm", client=client)
