"""The console's fleet edits over HTTP (an in-process console on a YAML file, then on the tenant config
table with the cloud's rules): each write lands only on the version its page showed (409 and the fresh
state otherwise), is validated with an error naming the field, is one audit event saying what changed
without secrets, makes the gateway read the config at once and starts a reindex; a source the console
cannot write (fixed configs, Parameter Store) is refused with the way to change it; a literal header
value never reaches a page; and an agent token opens none of the write routes."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import yaml

from foldgate.config.fleet_write import NOT_EDITABLE
from foldgate.config.source import FileConfigSource
from foldgate.config.table import TableConfigSource
from foldgate.store.configs.sqlite import SqliteTenantConfigStore
from tests.recorders import ListRecorder
from tests.unit.edge.console.conftest import Console

CONFIG = """# the operator's fleet
servers:
  - name: crm
    url: http://127.0.0.1:9/crm/mcp
    headers:
      X-Api-Key: sk-literal-crm-0001
  - name: tickets   # the helpdesk
    url: http://127.0.0.1:9/tickets/mcp
"""


def version_of(html: str) -> str:
    found = re.search(r'name="version" value="([^"]*)"', html)
    assert found is not None, html[:800]
    return found.group(1)


async def page(c: Console, server: str = "") -> tuple[str, str]:
    """The server page's HTML and the version its forms carry."""
    r = await c.client.get(f"/console/fleet/server?tenant=default&server={server}")
    assert r.status_code == 200, r.text[:500]
    return r.text, version_of(r.text)


def file_console(make_console: Any, tmp_path: Path) -> tuple[Any, Path]:
    path = tmp_path / "foldgate.yaml"
    path.write_text(CONFIG)
    return make_console(configs=FileConfigSource(path, max_age=3600.0)), path


async def test_a_switch_is_written_audited_reloaded_and_reindexed(make_console: Any, tmp_path: Path) -> None:
    opened, path = file_console(make_console, tmp_path)
    async for c in opened:
        recorder = ListRecorder()
        c.gateway.recorder = recorder
        csrf = await c.login()
        html, version = await page(c, "tickets")
        assert "Quarantine tickets" in html
        form = {"csrf": csrf, "tenant": "default", "version": version, "server": "tickets"}
        r = await c.client.post(
            "/console/fleet/server/switch", data={**form, "flag": "quarantined", "value": "true"}
        )
        assert r.status_code == 303
        assert r.headers["location"] == "/console/fleet/server?tenant=default&server=tickets&saved=1"
        doc = yaml.safe_load(path.read_text())
        assert doc["servers"][1] == {
            "name": "tickets",
            "url": "http://127.0.0.1:9/tickets/mcp",
            "quarantined": True,
        }
        assert doc["servers"][0]["headers"] == {"X-Api-Key": "sk-literal-crm-0001"}
        # The gateway reads it at once (its cache would otherwise hold the old config for an hour).
        tickets = c.gateway.config("default").server("tickets")
        assert tickets is not None
        assert tickets.quarantined
        assert c.reindexed == ["default"]
        saved = [e for e in recorder.audits if e.action == "config.save"]
        assert [(e.target, e.outcome, e.detail) for e in saved] == [
            ("server tickets", "ok", "servers[tickets].quarantined absent (default false) -> true")
        ]
        assert saved[0].actor.via == "console"
        after = await c.client.get(r.headers["location"])
        assert "Saved to foldgate.yaml" in after.text
        assert "Unquarantine tickets" in after.text


async def test_a_stale_page_is_refused_with_the_fresh_state_and_nothing_written(
    make_console: Any, tmp_path: Path
) -> None:
    opened, path = file_console(make_console, tmp_path)
    async for c in opened:
        recorder = ListRecorder()
        c.gateway.recorder = recorder
        csrf = await c.login()
        _, version = await page(c, "crm")
        form = {"csrf": csrf, "tenant": "default", "version": version, "server": "crm"}
        first = await c.client.post(
            "/console/fleet/server/switch", data={**form, "flag": "enabled", "value": "false"}
        )
        assert first.status_code == 303
        written = path.read_text()
        # A second page rendered from the same version: refused, and shown the current state.
        second = await c.client.post(
            "/console/fleet/server/switch", data={**form, "flag": "trusted", "value": "false"}
        )
        assert second.status_code == 409
        assert "changed since this page was shown" in second.text
        assert "Enable crm" in second.text  # the fresh state: crm is disabled now
        assert version_of(second.text) != version
        assert path.read_text() == written
        refused = [e for e in recorder.audits if e.outcome == "refused"]
        assert [(e.action, e.target) for e in refused] == [("config.save", "server crm")]


async def test_an_invalid_edit_names_the_field_and_leaves_the_file_alone(
    make_console: Any, tmp_path: Path
) -> None:
    opened, path = file_console(make_console, tmp_path)
    async for c in opened:
        csrf = await c.login()
        _, version = await page(c, "crm")
        form = {"csrf": csrf, "tenant": "default", "version": version, "server": "crm", "enabled": "on"}
        bad_url = await c.client.post("/console/fleet/server/edit", data={**form, "url": "ftp://crm.example"})
        assert bad_url.status_code == 400
        assert "servers[crm]" in bad_url.text
        assert "streamable_http needs an http(s) url" in bad_url.text
        bad_number = await c.client.post("/console/fleet/server/edit", data={**form, "timeout_s": "-1"})
        assert bad_number.status_code == 400
        assert "servers[crm].timeout_s" in bad_number.text
        taken = await c.client.post(
            "/console/fleet/server/add",
            data={
                "csrf": csrf,
                "tenant": "default",
                "version": version,
                "name": "crm",
                "url": "http://x.example",
            },
        )
        assert taken.status_code == 400
        assert "a server named &#39;crm&#39; already exists" in taken.text
        assert path.read_text() == CONFIG
        assert c.reindexed == []


async def test_a_metadata_url_is_refused_at_save_naming_the_field(make_console: Any, tmp_path: Path) -> None:
    """Refused when the server is added, not first when it is called; loopback too when the
    deployment's allow_private_upstreams is off."""
    path = tmp_path / "foldgate.yaml"
    path.write_text(CONFIG)
    configs = FileConfigSource(path, max_age=3600.0)
    for private, url, why in (
        (True, "http://169.254.169.254/latest/", "is the cloud metadata service"),
        (False, "http://localhost:8080/mcp", "is a loopback address (allow_private_upstreams is off here)"),
    ):
        async for c in make_console(configs=configs, allow_private_upstreams=private):
            csrf = await c.login()
            _, version = await page(c)
            form = {"csrf": csrf, "tenant": "default", "version": version, "name": "meta", "enabled": "on"}
            refused = await c.client.post("/console/fleet/server/add", data={**form, "url": url})
            assert refused.status_code == 400
            said = html.unescape(refused.text)
            assert "servers[meta].url" in said
            assert why in said
            assert path.read_text() == CONFIG
            assert c.reindexed == []


async def test_adding_a_server_and_pinning_a_tool_land_in_the_file(make_console: Any, tmp_path: Path) -> None:
    opened, path = file_console(make_console, tmp_path)
    async for c in opened:
        csrf = await c.login()
        html, version = await page(c)
        assert "Add server" in html
        assert "comments and layout are not kept" in html
        added = await c.client.post(
            "/console/fleet/server/add",
            data={"csrf": csrf, "tenant": "default", "version": version, "name": "docs",
                  "url": "http://127.0.0.1:9/docs/mcp", "tool_loading": "deferred", "enabled": "on"},
        )  # fmt: skip
        assert added.status_code == 303
        assert "server=docs" in added.headers["location"]
        _, version = await page(c, "docs")
        pinned = await c.client.post(
            "/console/fleet/server/pin",
            data={"csrf": csrf, "tenant": "default", "version": version, "server": "docs", "tool": "search",
                  "tier": "read", "defer_loading": "false"},
        )  # fmt: skip
        assert pinned.status_code == 303
        docs = yaml.safe_load(path.read_text())["servers"][2]
        assert docs == {
            "name": "docs", "url": "http://127.0.0.1:9/docs/mcp", "tool_loading": "deferred",
            "trusted": False, "tools": {"search": {"tier": "read", "defer_loading": False}},
        }  # fmt: skip
        config = c.gateway.config("default").server("docs")
        assert config is not None
        assert config.tools["search"].tier == "read"
        assert c.reindexed == ["default", "default"]


async def test_no_page_shows_a_literal_header_value(make_console: Any, tmp_path: Path) -> None:
    opened, _ = file_console(make_console, tmp_path)
    async for c in opened:
        await c.login()
        html, _ = await page(c, "crm")
        assert "X-Api-Key: ********" in html
        assert "sk-literal" not in html


async def test_the_table_source_is_edited_by_the_cloud_rules_on_its_revision(
    make_console: Any, tmp_path: Path
) -> None:
    store = SqliteTenantConfigStore(tmp_path / "configs.sqlite3")
    store.put(
        "default", yaml.safe_load(CONFIG.replace("    headers:\n      X-Api-Key: sk-literal-crm-0001\n", ""))
    )
    source = TableConfigSource(store, "/foldgate", max_age=3600.0)
    async for c in make_console(configs=source):
        csrf = await c.login()
        html, version = await page(c, "crm")
        assert "Saves go to the tenant config table" in html
        assert "comments and layout are not kept" not in html
        form = {"csrf": csrf, "tenant": "default", "version": version, "server": "crm", "enabled": "on"}
        # Another tenant's secret is refused by the cloud's rules, naming the field.
        foreign = await c.client.post(
            "/console/fleet/server/edit",
            data={
                **form,
                "url": "https://crm.example/mcp",
                "headers_secret": "/foldgate/tenants/other/secrets/x",
            },
        )
        assert foreign.status_code == 400
        assert "server &#39;crm&#39;: headers_secret must name a parameter under" in foreign.text
        ok = await c.client.post(
            "/console/fleet/server/edit",
            data={**form, "url": "https://crm.example/mcp", "headers_secret": "crm"},
        )
        assert ok.status_code == 303
        stored = store.get("default", consistent=True)
        assert stored is not None
        assert stored.revision != version
        assert stored.doc["servers"][0] == {
            "name": "crm", "url": "https://crm.example/mcp", "headers_secret": "crm", "trusted": False,
        }  # fmt: skip
        server = c.gateway.config("default").server("crm")
        assert server is not None
        assert server.headers_secret == "/foldgate/tenants/default/secrets/crm"
        # The old page's revision no longer matches.
        stale = await c.client.post(
            "/console/fleet/server/switch", data={**form, "flag": "enabled", "value": "false"}
        )
        assert stale.status_code == 409
        # The context budget's what-if is saved to the table too.
        shown = await c.client.get("/console/budget?tenant=default&wi_direct_tool_response_mode=deferred")
        found = re.search(r'name="config_hash" value="([0-9a-f]+)"', shown.text)
        assert found is not None
        assert "Save to the tenant config table" in shown.text
        saved = await c.client.post(
            "/console/budget/save",
            data={"csrf": csrf, "tenant": "default", "config_hash": found.group(1),
                  "wi_direct_tool_response_mode": "deferred", "wi_defer_threshold": "20",
                  "wi_listing_token_budget": ""},
        )  # fmt: skip
        assert saved.status_code == 303
        after = store.get("default", consistent=True)
        assert after is not None
        assert after.doc["direct_tool_response_mode"] == "deferred"
        assert c.reindexed == ["default", "default"]


async def test_a_source_the_console_cannot_write_is_refused_with_the_way_to_change_it(
    make_console: Any,
) -> None:
    async for c in make_console():
        csrf = await c.login()
        shown = await c.client.get("/console/fleet/server?tenant=default&server=crm")
        assert "foldgate tenant apply" in shown.text
        assert 'name="version"' not in shown.text
        r = await c.client.post(
            "/console/fleet/server/switch",
            data={
                "csrf": csrf,
                "tenant": "default",
                "version": "x",
                "server": "crm",
                "flag": "enabled",
                "value": "false",
            },
        )
        assert r.status_code == 409
        assert html.unescape(r.text).count(NOT_EDITABLE) == 1


async def test_an_agent_token_reaches_no_write_route(make_console: Any, tmp_path: Path) -> None:
    opened, path = file_console(make_console, tmp_path)
    async for c in opened:
        token, _ = c.tokens.issue("default", expires_in=None)
        headers = {"authorization": f"Bearer {token}", "origin": "http://127.0.0.1:8080"}
        for route in ("server/switch", "server/edit", "server/add", "server/pin"):
            r = await c.client.post(
                f"/console/fleet/{route}",
                data={"tenant": "default", "server": "crm", "flag": "enabled", "value": "false", "name": "x"},
                headers=headers,
            )
            assert r.status_code == 403, route
        assert path.read_text() == CONFIG
