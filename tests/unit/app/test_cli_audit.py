"""`foldgate token create | revoke` and `foldgate index` are audit events of the CLI (the local account
and host, never the token), handed to the deployment's recorder and closed before the command ends."""

from __future__ import annotations

import json
import os
import pwd
import socket
from pathlib import Path
from typing import Any

import pytest

import foldgate.app.cli_audit as cli_audit
from foldgate.app.cli import main
from tests.recorders import ListRecorder


class ClosingRecorder(ListRecorder):
    """A list recorder that notes being closed (a buffered one flushes then)."""

    closed = 0

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ClosingRecorder:
    monkeypatch.setenv("FOLDGATE_SQLITE_PATH", str(tmp_path / "state" / "foldgate.sqlite3"))
    for name in (
        "FOLDGATE_STORE",
        "FOLDGATE_CONFIG_SOURCE",
        "FOLDGATE_TOKEN_SECRET",
        "FOLDGATE_OPERATOR_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    kept = ClosingRecorder()

    def opened(settings: Any) -> ClosingRecorder:
        return kept

    monkeypatch.setattr(cli_audit, "_recorder", opened)
    return kept


def test_token_create_and_revoke_are_cli_events_without_the_token(
    recorder: ClosingRecorder, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token", "create", "--tenant", "acme", "--tier", "read", "--json"]) == 0
    created = json.loads(capsys.readouterr().out)
    assert main(["token", "revoke", created["token_id"]]) == 0
    assert main(["token", "revoke", "0" * 16]) == 2  # unknown: nothing was done, nothing recorded
    made, revoked = recorder.audits
    assert (made.action, made.tenant, made.target) == ("token.create", "acme", created["token_id"])
    assert (revoked.action, revoked.tenant, revoked.target) == ("token.revoke", "acme", created["token_id"])
    me = pwd.getpwuid(os.getuid()).pw_name
    assert {(e.actor.via, e.actor.who, e.actor.source) for e in recorder.audits} == {
        ("cli", me, socket.gethostname())
    }
    assert "tier read" in made.detail
    assert created["token"] not in recorder.text()
    assert recorder.closed == 2


def test_an_index_run_is_a_reindex_event_per_tenant(recorder: ClosingRecorder, tmp_path: Path) -> None:
    config = tmp_path / "foldgate.yaml"
    config.write_text("servers: []\n")
    main(["index", "--config", str(config), "--tenant", "acme", "--db", str(tmp_path / "i.sqlite3")])
    [event] = recorder.audits
    assert (event.action, event.tenant, event.target, event.actor.via) == (
        "index.reindex",
        "acme",
        "acme",
        "cli",
    )


def test_an_index_run_names_each_server_that_failed_to_list(
    recorder: ClosingRecorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "foldgate.yaml"
    # Nothing listens on port 9: the server fails to list; the run still publishes.
    config.write_text("servers:\n  - {name: gone, url: 'http://127.0.0.1:9/mcp', timeout_s: 2}\n")
    main(["index", "--config", str(config), "--tenant", "acme", "--db", str(tmp_path / "i.sqlite3")])
    err = capsys.readouterr().err
    assert "acme: gone could not be listed (gone: " in err
    assert "it has no earlier tools to serve" in err
