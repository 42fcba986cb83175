"""Local and explicit secrets: settings win, the key file is created 0600 once and reused; operator check."""

from __future__ import annotations

import logging
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from foldgate.auth.secrets import load_secret, secret_file, secret_parameter, verify_operator
from foldgate.config.settings import Settings
from foldgate.errors import ConfigError


def local(tmp_path: Path, **kw: str) -> Settings:
    return Settings(sqlite_path=str(tmp_path / "state" / "foldgate.sqlite3"), **kw)  # type: ignore[arg-type]


def test_settings_win(tmp_path: Path) -> None:
    settings = local(tmp_path, token_secret=" a-token-secret-of-32-characters \n", operator_key="op" * 10)
    assert load_secret(settings, "token") == b"a-token-secret-of-32-characters"
    assert load_secret(settings, "operator") == b"op" * 10
    assert not (tmp_path / "state").exists()  # nothing generated when configured


def test_a_short_configured_secret_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="FOLDGATE_TOKEN_SECRET"):
        load_secret(local(tmp_path, token_secret="short"), "token")


def test_key_file_is_created_0600_beside_the_database_and_reused(tmp_path: Path) -> None:
    settings = local(tmp_path)
    token_key = load_secret(settings, "token")
    path = tmp_path / "state" / "token.key"
    assert secret_file(settings, "token") == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(token_key) == 64
    int(token_key, 16)  # hex
    assert load_secret(settings, "token") == token_key
    operator = load_secret(settings, "operator")
    assert operator != token_key
    assert stat.S_IMODE((tmp_path / "state" / "operator.key").stat().st_mode) == 0o600
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == ["operator.key", "token.key"]  # no temps


def test_concurrent_first_use_shares_one_key(tmp_path: Path) -> None:
    settings = local(tmp_path)
    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: load_secret(settings, "token"), range(16)))
    assert len(keys) == 1


def test_an_existing_key_file_is_used_and_loose_modes_are_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = local(tmp_path)
    path = secret_file(settings, "operator")
    path.parent.mkdir(parents=True)
    path.write_text("my-operator-key-from-a-file\n")
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING):
        assert load_secret(settings, "operator") == b"my-operator-key-from-a-file"
    assert "chmod 600" in caplog.text
    assert "my-operator-key" not in caplog.text


def test_an_empty_key_file_is_an_error(tmp_path: Path) -> None:
    settings = local(tmp_path)
    path = secret_file(settings, "token")
    path.parent.mkdir(parents=True)
    path.write_text("")
    with pytest.raises(ConfigError, match=r"token\.key"):
        load_secret(settings, "token")


def test_parameter_names() -> None:
    settings = Settings(config_prefix="/fg/")
    assert secret_parameter(settings, "token") == "/fg/secrets/token-hmac-key"
    assert secret_parameter(settings, "operator") == "/fg/secrets/operator-key"


def test_verify_operator() -> None:
    key = b"the-operator-key-0123456789"
    assert verify_operator(key, "the-operator-key-0123456789")
    assert not verify_operator(key, "the-operator-key-012345678")
    assert not verify_operator(key, "the-operator-key-0123456789x")
    assert not verify_operator(key, "")
    assert not verify_operator(b"", "")
    assert not verify_operator(key, None)  # type: ignore[arg-type]
    assert not verify_operator(key, "\udcff")  # a lone surrogate from a lenient header decoder


def test_the_operator_keys_location_is_named_as_this_instance_reads_it(tmp_path: Path) -> None:
    from foldgate.auth.secrets import operator_key_location

    key_file = (tmp_path / "state" / "operator.key").resolve()
    assert operator_key_location(local(tmp_path)) == f"the file {key_file}"
    assert "FOLDGATE_OPERATOR_KEY" in operator_key_location(local(tmp_path, operator_key="op" * 10))
    cloud = Settings(config_source="ssm", config_prefix="/acme-prod/")
    assert operator_key_location(cloud) == (
        "the SecureString parameter /acme-prod/secrets/operator-key in Parameter Store"
    )
