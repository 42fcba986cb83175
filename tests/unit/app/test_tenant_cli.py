"""`foldgate tenant apply | get | list | delete` against SQLite: a config file is validated by the
cloud's rules before anything is written, stored as one document the ``table`` source serves, and
listed by the registry; an unchanged file writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldgate.app.cli import main
from foldgate.app.wiring import open_configs
from foldgate.config.settings import Settings

YAML = """\
routing_mode: direct
servers:
  - name: github
    url: https://api.example.com/mcp
    headers_secret: github
"""


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state" / "foldgate.sqlite3"
    monkeypatch.setenv("FOLDGATE_SQLITE_PATH", str(path))
    monkeypatch.setenv("FOLDGATE_CONFIG_SOURCE", "table")
    for name in ("FOLDGATE_STORE", "FOLDGATE_INDEXER_FUNCTION", "FOLDGATE_CONFIG_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    return path


def test_apply_stores_one_document_the_table_source_serves(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "acme.yaml"
    file.write_text(YAML)
    assert main(["tenant", "apply", "acme", str(file)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["written"]
    assert "reindex" not in first  # no indexer function configured: nothing to ask
    config = open_configs(Settings.from_env()).get("acme")
    assert config.routing_mode == "direct"
    server = config.server("github")
    assert server is not None
    assert server.headers_secret == "/foldgate/tenants/acme/secrets/github"

    assert main(["tenant", "apply", "acme", str(file)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert not again["written"]
    assert again["revision"] == first["revision"]

    assert main(["tenant", "list"]) == 0
    assert capsys.readouterr().out == "acme\n"
    assert main(["tenant", "get", "acme"]) == 0
    assert json.loads(capsys.readouterr().out)["servers"][0]["name"] == "github"
    assert main(["tenant", "delete", "acme"]) == 0
    capsys.readouterr()
    assert main(["tenant", "list"]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("servers:\n  - {name: x, url: 'https://x.example', headers_secret: /foldgate/secrets/k}\n",
         "must name a parameter under"),
        ("servers:\n  - {name: x, transport: stdio, command: [sh]}\n", "only in local mode"),
        ("routing_mode: schema_deferred\n", "direct_tool_response_mode"),
        ("- not a mapping\n", "expected a mapping"),
        ("servers:\n  - {name: m, url: 'http://169.254.169.254/latest/'}\n",
         "servers[0].url: url refused: host '169.254.169.254' is the cloud metadata service"),
    ],
)  # fmt: skip
def test_apply_refuses_a_hostile_or_invalid_file_before_writing(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text(text)
    assert main(["tenant", "apply", "acme", str(file)]) == 2
    assert says in capsys.readouterr().err
    assert main(["tenant", "list"]) == 0
    assert capsys.readouterr().out == ""


def test_apply_refuses_a_hostile_tenant_id(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "acme.yaml"
    file.write_text(YAML)
    assert main(["tenant", "apply", "../other", str(file)]) == 2
    assert "invalid tenant id" in capsys.readouterr().err


def test_apply_refuses_a_loopback_url_where_private_upstreams_are_off(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "acme.yaml"
    file.write_text("servers:\n  - {name: local, url: 'http://localhost:8080/mcp'}\n")
    monkeypatch.setenv("FOLDGATE_ALLOW_PRIVATE_UPSTREAMS", "false")
    assert main(["tenant", "apply", "acme", str(file)]) == 2
    assert "is a loopback address (allow_private_upstreams is off here)" in capsys.readouterr().err
    monkeypatch.setenv("FOLDGATE_ALLOW_PRIVATE_UPSTREAMS", "true")
    assert main(["tenant", "apply", "acme", str(file)]) == 0
