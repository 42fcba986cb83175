"""`foldgate signature`: schema on stdin or file → signature; a catalog → one JSON line per tool."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from foldgate.app.cli import main

SCHEMA = {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}},
          "required": ["owner", "repo"]}  # fmt: skip


def test_signature_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(SCHEMA)))
    assert main(["signature"]) == 0
    assert capsys.readouterr().out == "(owner*:str, repo*:str)\n"


def test_signature_json_from_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.json"
    f.write_text("{not json")
    assert main(["signature", str(f), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"signature": "(~)", "lossy": True}


def test_signature_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "tools.jsonl"
    f.write_text(json.dumps({"server": "gh", "name": "get_repo", "inputSchema": SCHEMA}) + "\n")
    assert main(["signature", "--catalog", str(f)]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "id": "gh__get_repo",
        "signature": "(owner*:str, repo*:str)",
        "lossy": False,
    }


def test_missing_catalog_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["signature", "--catalog", str(tmp_path / "nope.jsonl")]) == 2
    assert "cannot read catalog" in capsys.readouterr().err


def test_signature_grammar_v1_beside_v2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = {
        "type": "object",
        "properties": {"o": {"type": "object", "properties": {"id": {"type": "string"}}}},
    }
    for grammar, expected in (("2", "(o:{id:str})\n"), ("1", "(o~:obj)\n")):
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(schema)))
        assert main(["signature", "--grammar", grammar]) == 0
        assert capsys.readouterr().out == expected


def test_serve_collects_the_young_generation_less_often_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The young threshold is raised before uvicorn serves (foldgate.app.heap), not after."""
    import uvicorn

    order: list[str] = []
    monkeypatch.setattr("foldgate.app.heap.collect_young_less_often", lambda: order.append("young"))
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: order.append("run"))
    monkeypatch.setenv("FOLDGATE_SQLITE_PATH", str(tmp_path / "db.sqlite3"))
    config = tmp_path / "serve.json"
    config.write_text(json.dumps({"servers": []}))
    assert main(["serve", "--config", str(config), "--port", "0"]) == 0
    assert order == ["young", "run"]
    assert "/mcp/all" in capsys.readouterr().out
