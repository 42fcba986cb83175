"""`foldgate token create | list | revoke` against SQLite: the token shown once, then refused once revoked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldgate.app.cli import main
from foldgate.app.wiring import open_authority
from foldgate.config.settings import Settings
from foldgate.errors import AuthError


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state" / "foldgate.sqlite3"
    monkeypatch.setenv("FOLDGATE_SQLITE_PATH", str(path))
    for name in (
        "FOLDGATE_STORE",
        "FOLDGATE_CONFIG_SOURCE",
        "FOLDGATE_TOKEN_SECRET",
        "FOLDGATE_OPERATOR_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    return path


def test_create_list_revoke_then_verify_fails(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["token", "create", "--tenant", "acme", "--servers", "github, time", "--tier", "write",
                 "--expires-in", "12h", "--label", "ci bot", "--json"]) == 0  # fmt: skip
    created = json.loads(capsys.readouterr().out)
    token = created["token"]
    assert token.startswith("fgt_")
    assert created["servers"] == ["github", "time"]
    assert created["tier"] == "write"
    assert created["expires_at"] == pytest.approx(created["created_at"] + 43200)
    assert (db.parent / "token.key").exists()  # the local HMAC key, generated beside the database

    authority = open_authority(Settings.from_env())
    assert authority.verify(token).token_id == created["token_id"]

    assert main(["token", "list", "--json"]) == 0
    out = capsys.readouterr().out
    listed = json.loads(out)
    assert [t["token_id"] for t in listed] == [created["token_id"]]
    assert listed[0]["label"] == "ci bot"
    assert not listed[0]["revoked"]
    assert token not in out
    assert "digest" not in out
    assert authority.hasher.digest(token) not in out

    assert main(["token", "revoke", created["token_id"]]) == 0
    assert created["token_id"] in capsys.readouterr().out
    with pytest.raises(AuthError, match="invalid, expired or revoked token"):
        open_authority(Settings.from_env()).verify(token)

    assert main(["token", "list"]) == 0
    line = capsys.readouterr().out
    assert created["token_id"] in line
    assert "revoked" in line


def test_create_prints_only_the_token_on_stdout(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["token", "create", "--tenant", "acme"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1
    token = captured.out.strip()
    grant = open_authority(Settings.from_env()).verify(token)
    assert grant.tier == "read"
    assert grant.servers is None
    assert grant.expires_at == pytest.approx(grant.created_at + 90 * 86400)  # the default: 90 days
    assert grant.token_id in captured.err
    assert "only time" in captured.err
    assert token not in captured.err


def test_never_expiring_tokens_and_tenant_filter(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["token", "create", "--tenant", "a", "--expires-in", "never", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["expires_at"] is None
    assert main(["token", "create", "--tenant", "b", "--json"]) == 0
    capsys.readouterr()
    assert main(["token", "list", "--tenant", "b", "--json"]) == 0
    assert [t["tenant"] for t in json.loads(capsys.readouterr().out)] == ["b"]


def test_db_flag_overrides_the_environment(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other" / "x.sqlite3"
    assert main(["token", "create", "--tenant", "acme", "--db", str(other), "--json"]) == 0
    token_id = json.loads(capsys.readouterr().out)["token_id"]
    assert main(["token", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["token", "list", "--db", str(other), "--json"]) == 0
    assert [t["token_id"] for t in json.loads(capsys.readouterr().out)] == [token_id]
    assert main(["token", "revoke", token_id, "--db", str(other)]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["token", "revoke", "ffffffffffffffff"], "no token with id"),
        (["token", "revoke", "fgt_not-an-id"], "not a token id"),
        (["token", "create", "--tenant", "acme", "--expires-in", "soon"], "duration"),
        (["token", "create", "--tenant", "acme", "--servers", ""], "servers"),
        (["token", "create", "--tenant", "a/b"], "tenant"),
    ],
)
def test_errors(db: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_tier_is_a_usage_error(db: Path) -> None:
    with pytest.raises(SystemExit):
        main(["token", "create", "--tenant", "acme", "--tier", "admin"])
