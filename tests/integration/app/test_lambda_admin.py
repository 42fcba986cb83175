"""AdminFunction's handler (functions/admin/app.py under Mangum) driven by API Gateway v2 events: the
recorded events in events/ reach the admin API and the console, no MCP path is served there and no
admin or console path on McpFunction, and a fleet edit made through the Lambda lands in the tenant
config table (``ConfigSource=table``, here on the SQLite backend) on the revision the page showed."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from foldgate.config.cloud import parse_cloud_config
from foldgate.index.indexer import Indexer
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.configs.sqlite import SqliteTenantConfigStore
from foldgate.upstream.client import UpstreamClient
from tests.lambda_http import Handler, v2_event
from tests.lambdas import LambdaContext, event, load_function
from tests.procs import replay

KEY = "admin-operator-key-" + "a" * 25
HOST = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
FORM = ("Content-Type", "application/x-www-form-urlencoded")
ORIGIN = ("Origin", f"https://{HOST}")


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str | None], Path]]:
    """One SQLite file holding the catalog and the tenant config table, as the functions share them."""
    tmp = tmp_path_factory.mktemp("lambda-admin")
    db = tmp / "store.sqlite3"
    with replay() as rp:
        doc = {
            "servers": [
                {"name": "crm", "url": rp.urls["crm"]},
                {"name": "tickets", "url": rp.urls["tickets"]},
            ]
        }
        configs = SqliteTenantConfigStore(db)
        configs.put("default", doc)
        configs.close()
        store = SqliteStore(db)
        config = parse_cloud_config(doc, "/foldgate/tenants/default")
        asyncio.run(Indexer(store, UpstreamClient()).index_tenant("default", config))
        store.close()
        env: dict[str, str | None] = {
            "FOLDGATE_STORE": "sqlite",
            "FOLDGATE_SQLITE_PATH": str(db),
            "FOLDGATE_CONFIG_SOURCE": "table",
            "FOLDGATE_CONFIG_PREFIX": "/foldgate",
            "FOLDGATE_OPERATOR_KEY": KEY,
            "FOLDGATE_INDEXER_FUNCTION": None,
            # Upstream client secrets would be read from Parameter Store (none is, here).
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        yield env, db


@pytest.fixture(scope="module")
def admin(state: tuple[dict[str, str | None], Path]) -> Handler:
    handler: Handler = load_function("admin", "admin_function_app", state[0]).handler
    return handler


def call(
    handler: Handler, method: str, target: str, headers: list[tuple[str, str]], body: bytes = b""
) -> Any:
    return handler(v2_event(method, target, [("Host", HOST), *headers], body), LambdaContext())


def test_the_recorded_admin_and_console_events_reach_admin_function(admin: Handler) -> None:
    login = admin(event("console_login.json"), LambdaContext())
    assert login["statusCode"] == 200
    assert "Operator key" in login["body"]
    status = event("admin_status.json")
    assert admin(status, LambdaContext())["statusCode"] == 401  # the recorded placeholder key
    status["headers"]["authorization"] = f"Bearer {KEY}"
    answer = admin(status, LambdaContext())
    assert answer["statusCode"] == 200
    assert '"crm"' in answer["body"]


def test_admin_function_serves_no_mcp_path_and_mcp_function_no_admin_or_console_path(
    admin: Handler, state: tuple[dict[str, str | None], Path]
) -> None:
    assert admin(event("mcp_tools_list.json"), LambdaContext())["statusCode"] == 404
    mcp: Handler = load_function("mcp", "mcp_function_app_agents_only", state[0]).handler
    assert mcp(event("console_login.json"), LambdaContext())["statusCode"] == 404
    status = event("admin_status.json")
    status["headers"]["authorization"] = f"Bearer {KEY}"
    assert mcp(status, LambdaContext())["statusCode"] == 404


def test_a_fleet_edit_through_the_lambda_lands_in_the_table_on_the_pages_revision(
    admin: Handler, state: tuple[dict[str, str | None], Path]
) -> None:
    ok = call(admin, "POST", "/console/login", [FORM, ORIGIN], f"operator_key={KEY}".encode())
    assert ok["statusCode"] == 303
    session = ("Cookie", ok["cookies"][0].split(";")[0])
    page = call(admin, "GET", "/console/fleet/server?tenant=default&server=tickets", [session])
    assert page["statusCode"] == 200
    assert "Saves go to the tenant config table" in page["body"]
    csrf = re.search(r'name="csrf" value="([^"]+)"', page["body"])
    version = re.search(r'name="version" value="([^"]+)"', page["body"])
    assert csrf is not None
    assert version is not None
    form = {"csrf": csrf[1], "tenant": "default", "version": version[1], "server": "tickets"}
    body = urlencode({**form, "flag": "quarantined", "value": "true"}).encode()
    saved = call(admin, "POST", "/console/fleet/server/switch", [FORM, ORIGIN, session], body)
    assert saved["statusCode"] == 303
    configs = SqliteTenantConfigStore(state[1])
    stored = configs.get("default", consistent=True)
    configs.close()
    assert stored is not None
    assert stored.doc["servers"][1] == {
        "name": "tickets",
        "url": stored.doc["servers"][1]["url"],
        "quarantined": True,
    }
    # The same page again: its revision is gone, so the write is refused with the current state.
    again = call(admin, "POST", "/console/fleet/server/switch", [FORM, ORIGIN, session], body)
    assert again["statusCode"] == 409
    assert "Unquarantine tickets" in again["body"]
