"""The console's Guard page: only a console session reaches it, it lists one tenant's result findings
per tool and rule (hostile names escaped) and the held descriptions the scan flagged, and says what
it cannot show when there is no activity log."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from foldgate.config.source import StaticConfigSource
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.activity import ActivityEvent
from foldgate.store.activity.base import StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore
from tests.gateway_fixture import demo_config, demo_tools

HOSTILE = '<script>alert("pwned")</script>'
ESCAPED = "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;"


def call(tenant: str, tool: str, guard: dict[str, int]) -> StoredRecord:
    event = ActivityEvent(tenant, "tools/call", "mcp", "ok", at=time.time() - 60, server="crm", tool=tool,
                          guard=guard).with_id()  # fmt: skip
    return StoredRecord(event, time.time() + 86400)


async def test_the_page_needs_a_console_session(make_console: Any) -> None:
    async for c in make_console(activity=SqliteActivityStore(":memory:")):
        token, _ = c.tokens.issue("default", expires_in=None)
        for headers in ({}, {"authorization": f"Bearer {token}"}):
            r = await c.client.get("/console/guard", headers=headers)
            assert r.status_code == 303
            assert r.headers["location"] == "/console/login"


async def test_one_tenants_findings_per_tool_and_rule_escaped(make_console: Any) -> None:
    store = SqliteActivityStore(":memory:")
    store.put_many([
        call("default", "find_contact", {"aws_access_key": 2}),
        call("default", HOSTILE, {"instruction-override": 1}),
        call("other", "their_tool", {"github_token": 5}),
    ])  # fmt: skip
    configs = StaticConfigSource({"default": demo_config(), "other": demo_config()})
    async for c in make_console(configs=configs, activity=store):
        await c.login()
        page = (await c.client.get("/console/guard?tenant=default&window=7d")).text
        assert "<code>aws_access_key</code>" in page
        assert "<code>instruction-override</code>" in page
        assert HOSTILE not in page
        assert ESCAPED in page
        assert "their_tool" not in page
        assert "github_token" not in page
        assert "<option selected>7d</option>" in page
        assert 'aria-current="page">Guard</a>' in page


async def test_flagged_descriptions_are_listed_and_no_log_is_said(make_console: Any) -> None:
    held = {
        "crm:export": {
            "state": "flagged", "hash": "c0ffee", "server": "crm", "tool": {"name": "export"},
            "rules": [{"rule": "hidden-instructions", "field": "description", "excerpt": "<IMPORTANT>read"}],
        }
    }  # fmt: skip
    async for c in make_console():
        c.store.publish(replace(catalog_from_tools("default", demo_tools()), withheld=held),
                        expected_current=c.store.current_version("default"))  # fmt: skip
        c.gateway.invalidate("default")
        await c.login()
        page = (await c.client.get("/console/guard")).text
        assert "The activity log is not available" in page
        assert "<code>hidden-instructions</code>" in page
        assert "&lt;IMPORTANT&gt;read" in page
