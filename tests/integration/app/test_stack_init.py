"""`foldgate stack init` on moto's Parameter Store: the two stack secrets are created as SecureStrings
of 32 random bytes when absent, never overwritten, and no value is ever printed; the secrets module
reads what it created."""

from __future__ import annotations

import uuid

import boto3
import pytest

from foldgate.app.cli import main
from foldgate.auth.secrets import load_secret
from foldgate.config.settings import Settings


def test_init_creates_both_secrets_once_and_prints_no_value(
    moto_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = f"/fg-{uuid.uuid4().hex[:10]}"
    ssm = boto3.client("ssm")
    names = [f"{prefix}/secrets/token-hmac-key", f"{prefix}/secrets/operator-key"]

    assert main(["stack", "init", "--prefix", prefix]) == 0
    out, err = capsys.readouterr()
    params = [ssm.get_parameter(Name=n, WithDecryption=True)["Parameter"] for n in names]
    assert [p["Type"] for p in params] == ["SecureString", "SecureString"]
    assert all(len(bytes.fromhex(p["Value"])) == 32 for p in params)
    assert params[0]["Value"] != params[1]["Value"]
    assert f"{names[0]}: created" in out
    assert f"{names[1]}: created" in out
    assert f"aws ssm get-parameter --name {names[1]} --with-decryption" in out
    for p in params:
        assert p["Value"] not in out + err

    settings = Settings(config_source="table", config_prefix=prefix)
    assert load_secret(settings, "operator", client=ssm) == params[1]["Value"].encode()

    assert main(["stack", "init", "--prefix", prefix]) == 0
    again = capsys.readouterr().out
    assert f"{names[0]}: exists (left as it is)" in again
    after = [ssm.get_parameter(Name=n, WithDecryption=True)["Parameter"] for n in names]
    assert [(p["Value"], p["Version"]) for p in after] == [(p["Value"], 1) for p in params]


def test_init_keeps_an_existing_secret_and_refuses_a_plain_string(
    moto_endpoint: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = f"/fg-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("FOLDGATE_CONFIG_PREFIX", prefix)
    ssm = boto3.client("ssm")
    kept = "operator-key-chosen-by-hand-0123456789"
    ssm.put_parameter(Name=f"{prefix}/secrets/operator-key", Value=kept, Type="SecureString")
    ssm.put_parameter(
        Name=f"{prefix}/secrets/token-hmac-key", Value="plain-text-key-0123456789", Type="String"
    )

    assert main(["stack", "init"]) == 1
    out, err = capsys.readouterr()
    assert f"{prefix}/secrets/operator-key: exists (left as it is)" in out
    assert f"{prefix}/secrets/token-hmac-key is not a SecureString" in err
    got = ssm.get_parameter(Name=f"{prefix}/secrets/operator-key", WithDecryption=True)["Parameter"]
    assert (got["Value"], got["Version"]) == (kept, 1)
    assert "plain-text-key" not in out + err
    assert kept not in out + err


def test_init_refuses_a_prefix_that_is_not_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stack", "init", "--prefix", "foldgate"]) == 2
    assert "must start with '/'" in capsys.readouterr().err
