"""The IndexerFunction's answer to a real reindex event names what a tenant config asks that the
serving functions cannot honour (issue 24, item 10): with the serving timeout the template passes
(FOLDGATE_SERVE_TIMEOUT_S), a server timeout_s above the cloud path's ceiling is a config finding."""

from __future__ import annotations

import json
from pathlib import Path

from foldgate.app.indexer_lambda import build_indexer_handler
from foldgate.config.settings import Settings
from tests.lambdas import LambdaContext, event


def settings(tmp_path: Path, serve_timeout_s: str | None) -> Settings:
    doc = {"servers": [{"name": "crm", "url": "http://127.0.0.1:9/mcp", "timeout_s": 45}]}
    (tmp_path / "foldgate.json").write_text(json.dumps(doc))
    env = {
        "FOLDGATE_STORE": "sqlite",
        "FOLDGATE_SQLITE_PATH": str(tmp_path / "store.sqlite3"),
        "FOLDGATE_CONFIG_FILE": str(tmp_path / "foldgate.json"),
        "FOLDGATE_DEFAULT_TENANT": "acme",
        "FOLDGATE_EMBEDDING_PROVIDER": "none",
    }
    if serve_timeout_s is not None:
        env["FOLDGATE_SERVE_TIMEOUT_S"] = serve_timeout_s
    return Settings.from_env(env)


def test_a_reindex_reports_a_timeout_the_serving_functions_cannot_honour(tmp_path: Path) -> None:
    handler = build_indexer_handler(settings(tmp_path, "29"))
    doc = handler(event("reindex_invoke.json"), LambdaContext())
    [finding] = doc["config_findings"]["acme"]
    assert "server 'crm': timeout_s 45" in finding
    assert "27s" in finding
    assert "acme" in doc["tenants"]  # indexed all the same
    assert doc["errors"] == {}


def test_without_the_serving_timeout_nothing_is_reported(tmp_path: Path) -> None:
    handler = build_indexer_handler(settings(tmp_path, None))
    doc = handler(event("reindex_invoke.json"), LambdaContext())
    assert doc["config_findings"] == {}
    assert "acme" in doc["tenants"]
