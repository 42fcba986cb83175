"""The activity log as the wiring builds it: one buffered recorder per process on the catalog's backend
(the SQLite file locally, the table in the cloud, each event kept for its tenant's retention), read by
the admin API of the same app, written out when the local app shuts down, and nothing at all with
FOLDGATE_ACTIVITY=off or when its store cannot open."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import boto3
import httpx2
import pytest

from foldgate.app.local import build_local
from foldgate.app.wiring import activity_arguments_key, build_mcp_app, open_activity, open_activity_store
from foldgate.config.settings import Settings
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.model.activity import ActivityEvent, NullRecorder
from foldgate.serve.activity_arguments import arguments_key
from foldgate.serve.activity_recorder import DAY, SQLITE_BATCH, BufferedRecorder
from foldgate.store.activity.base import ActivityQuery
from foldgate.store.activity.dynamodb import DynamoActivityStore
from foldgate.store.activity.sqlite import SqliteActivityStore

OPERATOR = "operator-key-for-tests"


def configs() -> StaticConfigSource:
    return StaticConfigSource({
        "acme": parse_tenant_config({"activity": {"retention_days": 30}}),
        "globex": parse_tenant_config({}),
    })  # fmt: skip


def event(tenant: str) -> ActivityEvent:
    return ActivityEvent(tenant, "tools/call", "mcp", "ok", at=time.time(), server="crm", tool="find")


def test_locally_events_reach_the_sqlite_file_kept_for_their_tenants_retention(tmp_path: Path) -> None:
    settings = Settings(sqlite_path=str(tmp_path / "fg.sqlite3"))
    recorder = open_activity(settings, configs())
    assert isinstance(recorder, BufferedRecorder)
    assert isinstance(recorder.store, SqliteActivityStore)
    assert recorder.max_age_s == 1.0
    assert recorder.batch_size == SQLITE_BATCH  # a second's events per transaction
    recorder.record(event("acme"))
    recorder.record(event("globex"))
    recorder.close()
    with sqlite3.connect(tmp_path / "fg.sqlite3") as db:
        rows = dict(db.execute("SELECT tenant, expires_at - at FROM activity").fetchall())
    assert rows == {"acme": pytest.approx(30 * DAY), "globex": pytest.approx(7 * DAY)}


def test_in_the_cloud_events_reach_the_table_in_fuller_batches(dynamo_table: str) -> None:
    settings = Settings(store="dynamodb", table_name=dynamo_table)
    recorder = open_activity(settings, configs())
    assert isinstance(recorder, BufferedRecorder)
    assert isinstance(recorder.store, DynamoActivityStore)
    assert recorder.max_age_s == 10.0
    assert recorder.batch_size == 25  # one BatchWriteItem
    recorder.record(event("acme"))
    recorder.close()
    [item] = boto3.client("dynamodb").scan(TableName=dynamo_table)["Items"]
    assert item["pk"] == {"S": "ACT#call#acme"}
    assert int(item["expires_at"]["N"]) == pytest.approx(time.time() + 30 * DAY, abs=5)


def test_a_local_batch_never_exceeds_a_small_buffer(tmp_path: Path) -> None:
    settings = Settings(sqlite_path=str(tmp_path / "fg.sqlite3"), activity_buffer=100)
    recorder = open_activity(settings, configs())
    assert isinstance(recorder, BufferedRecorder)
    assert (recorder.batch_size, recorder.capacity) == (100, 100)
    recorder.close()


def test_activity_off_records_nothing_and_opens_no_store(tmp_path: Path) -> None:
    settings = Settings(sqlite_path=str(tmp_path / "fg.sqlite3"), activity="off")
    assert open_activity_store(settings) is None
    assert isinstance(open_activity(settings, configs()), NullRecorder)
    assert not (tmp_path / "fg.sqlite3").exists()


def test_a_store_that_cannot_open_records_nothing_but_never_stops_the_gateway(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    settings = Settings(sqlite_path=str(tmp_path / "file" / "fg.sqlite3"))
    assert open_activity_store(settings) is None
    assert isinstance(open_activity(settings, configs()), NullRecorder)


def test_the_setting_is_read_from_the_environment() -> None:
    settings = Settings.from_env({"FOLDGATE_ACTIVITY": "off", "FOLDGATE_ACTIVITY_FLUSH_SECONDS": "3"})
    assert (settings.activity, settings.activity_flush_seconds) == ("off", 3.0)
    assert Settings.from_env({}).activity == "on"


def test_the_arguments_key_is_derived_from_the_token_secret(tmp_path: Path) -> None:
    settings = Settings(sqlite_path=str(tmp_path / "fg.sqlite3"), token_secret="t" * 32)
    assert activity_arguments_key(settings) == arguments_key(b"t" * 32)
    assert activity_arguments_key(settings) != b"t" * 32


async def test_the_mcp_app_records_into_the_store_its_admin_api_reads(tmp_path: Path) -> None:
    (tmp_path / "foldgate.json").write_text("{}")
    settings = Settings(
        sqlite_path=str(tmp_path / "fg.sqlite3"),
        config_file=str(tmp_path / "foldgate.json"),
        operator_key=OPERATOR,
        token_secret="t" * 32,
        embedding_provider="none",
    )
    app = build_mcp_app(settings)
    recorder: Any = app.state.recorder
    assert isinstance(recorder, BufferedRecorder)
    recorder.record(event("default"))
    assert recorder.flush()
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
        r = await client.get(
            "/api/v1/activity?tenant=default", headers={"authorization": f"Bearer {OPERATOR}"}
        )
    assert [e["tool"] for e in r.json()["events"]] == ["find"]
    recorder.close()


async def test_the_local_app_writes_what_is_buffered_when_it_shuts_down(tmp_path: Path) -> None:
    settings = Settings(
        sqlite_path=str(tmp_path / "fg.sqlite3"), activity_flush_seconds=300, embedding_provider="none"
    )
    local = build_local(configs(), settings, interval_s=3600)
    async with local.app.router.lifespan_context(local.app):
        local.app.state.recorder.record(event("acme"))
    store = SqliteActivityStore(tmp_path / "fg.sqlite3")
    try:
        assert [r.tenant for r in store.query(ActivityQuery("acme")).records] == ["acme"]
    finally:
        store.close()
