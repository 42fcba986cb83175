"""The console as the wiring builds it reads the activity log the app records into: locally (the SQLite
file) and in the cloud's MCP app (the SQLite file and the DynamoDB table), with nothing to show when the
log is off."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from foldgate.app.local import build_local
from foldgate.app.wiring import build_mcp_app
from foldgate.config.settings import Settings
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.model.activity import ActivityEvent, Actor, AuditEvent

OPERATOR = "operator-key-for-console-tests"


async def pages(app: FastAPI) -> dict[str, str]:
    """The Activity and Audit pages of tenant ``default``, signed in with the operator key."""
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        login = await client.post("/console/login", data={"operator_key": OPERATOR})
        assert login.status_code == 303, login.text
        return {
            path: (await client.get(f"/console/{path}?tenant=default")).text for path in ("activity", "audit")
        }


def record_both(app: FastAPI) -> None:
    """A call and an operator event through the app's own recorder, written out at once."""
    recorder: Any = app.state.recorder
    recorder.record(ActivityEvent("default", "tools/call", "mcp", "ok", at=time.time(), server="crm",
                                  tool="wired_tool"))  # fmt: skip
    recorder.record(AuditEvent("default", "token.create", Actor("cli", "wired-operator"), at=time.time()))
    assert recorder.flush()


def settings_for(tmp_path: Path, **extra: Any) -> Settings:
    (tmp_path / "foldgate.json").write_text('{"servers": []}')
    return Settings(
        sqlite_path=str(tmp_path / "fg.sqlite3"),
        config_file=str(tmp_path / "foldgate.json"),
        operator_key=OPERATOR,
        token_secret="t" * 32,
        embedding_provider="none",
        **extra,
    )


async def test_the_local_consoles_pages_read_the_events_the_gateway_records(tmp_path: Path) -> None:
    configs = StaticConfigSource({"default": parse_tenant_config({})})
    local = build_local(configs, settings_for(tmp_path), interval_s=3600)
    async with local.app.router.lifespan_context(local.app):
        record_both(local.app)
        shown = await pages(local.app)
    assert "wired_tool" in shown["activity"]
    assert "wired-operator" in shown["audit"]


async def test_the_cloud_consoles_pages_read_the_sqlite_file_the_app_records_into(tmp_path: Path) -> None:
    app = build_mcp_app(settings_for(tmp_path))
    record_both(app)
    shown = await pages(app)
    assert "wired_tool" in shown["activity"]
    assert "wired-operator" in shown["audit"]
    app.state.recorder.close()


async def test_the_cloud_consoles_pages_read_the_dynamodb_table(tmp_path: Path, dynamo_table: str) -> None:
    app = build_mcp_app(settings_for(tmp_path, store="dynamodb", table_name=dynamo_table))
    record_both(app)
    shown = await pages(app)
    assert "wired_tool" in shown["activity"]
    assert "wired-operator" in shown["audit"]
    app.state.recorder.close()


@pytest.mark.parametrize("page", ["activity", "audit"])
async def test_with_the_log_off_the_pages_say_it_is_not_available(tmp_path: Path, page: str) -> None:
    app = build_mcp_app(settings_for(tmp_path, activity="off"))
    assert "The activity log is not available in this deployment." in (await pages(app))[page]
