"""Every operator action in the console is one audit event naming its session and address: sign-ins
(refused ones too) and sign-outs, reindexes, connects, config saves, approvals and rejections, token
creation and revocation. The operator key and a created token are in no event and no log line."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest

from foldgate.config.source import FileConfigSource
from foldgate.edge.console.login_limit import LoginLimit
from foldgate.edge.operator_audit import DEPLOYMENT, operator_key_id
from foldgate.model.activity import AuditEvent
from tests.recorders import ListRecorder
from tests.unit.edge.console.conftest import OPERATOR_KEY, Console

CONFIG = "servers:\n  - name: crm\n    url: http://127.0.0.1:9/crm/mcp\n  - name: tickets\n    url: http://127.0.0.1:9/tickets/mcp\n"


def recording(c: Console) -> ListRecorder:
    recorder = ListRecorder()
    c.gateway.recorder = recorder
    return recorder


def one(recorder: ListRecorder, action: str) -> AuditEvent:
    found = [e for e in recorder.audits if e.action == action]
    assert len(found) == 1, recorder.audits
    return found[0]


async def test_sign_ins_refused_sign_ins_and_sign_outs_are_deployment_events(
    make_console: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async for c in make_console(login_limit=LoginLimit(2, 100)):
        recorder = recording(c)
        assert (await c.client.post("/console/login", data={"operator_key": "wrong"})).status_code == 401
        assert (await c.client.post("/console/login", data={"operator_key": "wrong"})).status_code == 401
        assert (await c.client.post("/console/login", data={"operator_key": "wrong"})).status_code == 429
        refused = [e for e in recorder.audits if e.action == "console.sign_in_refused"]
        # The limited attempt is not recorded (its key is not even checked): a flood writes nothing.
        assert [(e.outcome, e.detail) for e in refused] == [
            ("refused", "wrong key"),
            ("refused", "wrong key"),
        ]
        assert {(e.tenant, e.actor.via, e.actor.who, e.actor.source) for e in refused} == {
            (DEPLOYMENT, "console", "", "127.0.0.1")
        }
    async for c in make_console():
        recorder = recording(c)
        csrf = await c.login()
        signed_in = one(recorder, "console.sign_in")
        assert signed_in.tenant == DEPLOYMENT
        assert signed_in.actor.via == "console"
        assert signed_in.actor.who.startswith("session-")
        assert signed_in.detail == operator_key_id(OPERATOR_KEY.encode())
        assert (await c.client.post("/console/logout", data={"csrf": csrf})).status_code == 303
        signed_out = one(recorder, "console.sign_out")
        # One session: the sign-in and the sign-out name the same handle.
        assert signed_out.actor == signed_in.actor
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert OPERATOR_KEY not in logged
    assert OPERATOR_KEY not in recorder.text()


async def test_reindex_connect_and_token_actions_are_events_of_the_session(make_console: Any) -> None:
    async def connector(tenant: str, server: str) -> str:
        return "https://auth.example/authorize" if server == "crm" else "javascript:alert(1)"

    async for c in make_console(connector=connector):
        recorder = recording(c)
        csrf = await c.login()
        session = one(recorder, "console.sign_in").actor
        await c.client.post("/console/fleet/reindex", data={"csrf": csrf, "tenant": "default"})
        await c.client.post(
            "/console/fleet/connect", data={"csrf": csrf, "tenant": "default", "server": "crm"}
        )
        await c.client.post(
            "/console/fleet/connect", data={"csrf": csrf, "tenant": "default", "server": "tickets"}
        )
        created = await c.client.post(
            "/console/tokens", data={"csrf": csrf, "tenant": "default", "tier": "read", "expires_in": "2h"}
        )
        assert created.status_code == 303
        shown = await c.client.get(created.headers["location"])
        await c.client.post("/console/tokens", data={"csrf": csrf, "tenant": "default", "tier": "root"})
        [grant] = c.tokens.list("default")
        await c.client.post(
            "/console/tokens/revoke", data={"csrf": csrf, "tenant": "default", "token_id": grant.token_id}
        )
        await c.client.post(
            "/console/tokens/revoke", data={"csrf": csrf, "tenant": "default", "token_id": "0" * 16}
        )
        events = [e for e in recorder.audits if e.action != "console.sign_in"]
        assert [(e.action, e.target, e.outcome) for e in events] == [
            ("index.reindex", "default", "ok"),
            ("upstream.connect", "crm", "ok"),
            ("upstream.connect", "tickets", "refused"),
            ("token.create", grant.token_id, "ok"),
            ("token.create", "", "refused"),
            ("token.revoke", grant.token_id, "ok"),
            ("token.revoke", "0" * 16, "refused"),
        ]
        assert {e.actor for e in events} == {session}
        assert {e.tenant for e in events} == {"default"}
        assert "tier read" in events[3].detail
        token = shown.text.split("fgt_", 1)[1].split('"', 1)[0]
        assert token not in recorder.text()


async def test_approvals_rejections_and_config_saves_are_events(make_console: Any, tmp_path: Path) -> None:
    path = tmp_path / "foldgate.yaml"
    path.write_text(CONFIG)
    async for c in make_console(configs=FileConfigSource(path, max_age=3600.0), config_file=str(path)):
        recorder = recording(c)
        csrf = await c.login()
        catalog = c.gateway.catalog("default")
        assert catalog is not None
        tool = catalog.by_key["crm:find_contact"]
        held = {"state": "changed", "hash": "a" * 64, "approved_hash": tool.tool.content_hash,
                "server": "crm", "tool": tool.tool.to_wire(), "rules": []}  # fmt: skip
        newer = dataclasses.replace(
            catalog, version=catalog.version + "b", withheld={"crm:find_contact": held},
            approvals={"crm:find_contact": "changed"},
        )  # fmt: skip
        c.store.publish(newer, expected_current=catalog.version)
        c.gateway.invalidate("default")
        form = {"csrf": csrf, "tenant": "default", "id": "crm:find_contact"}
        await c.client.post("/console/approvals", data={**form, "hash": "b" * 64})
        await c.client.post("/console/approvals/reject", data={**form, "hash": "a" * 64})
        shown = await c.client.get("/console/budget?tenant=default&wi_direct_tool_response_mode=deferred")
        digest = shown.text.split('name="config_hash" value="', 1)[1][:64]
        save = {
            "csrf": csrf,
            "tenant": "default",
            "config_hash": digest,
            "wi_direct_tool_response_mode": "deferred",
        }
        assert (
            await c.client.post("/console/budget/save", data={**save, "wi_defer_threshold": "-3"})
        ).status_code == 400
        assert (await c.client.post("/console/budget/save", data=save)).status_code == 303
        events = [e for e in recorder.audits if e.action != "console.sign_in"]
        assert [(e.action, e.target, e.outcome) for e in events] == [
            ("approval.approve", "crm:find_contact", "refused"),
            ("approval.reject", "crm:find_contact", "ok"),
            ("config.save", "foldgate.yaml", "refused"),
            ("config.save", "foldgate.yaml", "ok"),
        ]
        assert events[1].detail == "content " + "a" * 12
        assert "direct_tool_response_mode" in events[3].detail
        assert {e.actor.via for e in events} == {"console"}
