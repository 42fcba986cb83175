"""`foldgate hook-secret <tenant> <server>`: prints the server's local webhook secret, creating it once
(the same secret every time after), and refuses names that are not a tenant or a server name."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldgate.app.cli import main
from foldgate.auth.hook_secrets import load_hook_secret
from foldgate.config.settings import Settings


def test_prints_the_same_secret_each_time_and_the_gateway_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "state" / "foldgate.sqlite3")
    assert main(["hook-secret", "acme", "crm", "--db", db]) == 0
    first = capsys.readouterr().out.strip()
    assert main(["hook-secret", "acme", "crm", "--db", db]) == 0
    assert capsys.readouterr().out.strip() == first
    assert load_hook_secret(Settings(sqlite_path=db), "acme", "crm") == first.encode()


def test_a_malformed_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hook-secret", "..", "crm", "--db", str(tmp_path / "f.sqlite3")]) == 2
    assert "invalid tenant or server name" in capsys.readouterr().err
    assert not (tmp_path / "hooks").exists()
