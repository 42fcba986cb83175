"""Every channel an upstream speaks through passes the result guard before the client, a task's status,
a log line or an activity event sees it (issue 36, audit findings W3-01..W3-04): progress messages,
log notifications and requests for input relayed during a call, every string field of content items
(resource links' names and URIs, embedded resources' URIs), ``_meta``, structured content's keys,
``inputRequests``, completions; and ``guard.injection: spotlight`` delivering every text inside the
provenance note. Each test plants canaries in one channel of a real gateway's call path."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, TenantConfig, parse_tenant_config
from foldgate.dev.guard_samples import fake_credential
from foldgate.errors import UpstreamError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.tool import Tool
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.relay import Progress, Relay, current_relay, relaying
from tests.gateway_fixture import RecordingUpstream
from tests.recorders import ListRecorder

CANARY, _ = fake_credential("aws_access_key", 3636)
TOKEN, _ = fake_credential("github_token", 3636)
READ = {"readOnlyHint": True}
TOOLS = [
    Tool("crm", name, "Reads.", annotations=READ) for name in ("chatty", "keyed", "linked", "ask", "wide")
]


class ChannelUpstream(RecordingUpstream):
    """Plants canaries in one channel per tool: ``chatty`` in its progress, logs and an elicitation sent
    through the call's relay; ``keyed`` in a structured content key; ``linked`` in a resource link, an
    embedded resource's URI and ``_meta``; ``ask`` in an ``input_required`` result's requests;
    ``wide`` spelled with a zero-width space and in full-width letters; every call in its error when
    ``broken``."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[dict[str, Any]] = []
        self.broken = False  # every call fails with the canary in its error

    async def call_tool(
        self,
        server: ServerConfig,
        name: str,
        arguments: dict[str, Any],
        *,
        annotations: Mapping[str, Any] | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        self.calls.append((server.name, name, arguments))
        relay = current_relay()
        if name == "chatty":
            assert relay is not None
            said = f"using {CANARY}"
            progress = {"progressToken": relay.upstream_token, "progress": 1, "message": said}
            await relay.notification(server.name, {"method": "notifications/progress", "params": progress})
            log = {"level": "info", "data": {"env": said, TOKEN: 1}}
            await relay.notification(server.name, {"method": "notifications/message", "params": log})
            asked = {"message": said, "requestedSchema": {}}
            reply = await relay.request(server.name, {"method": "elicitation/create", "params": asked})
            self.asked.append(reply)
            return {"content": [{"type": "text", "text": "done"}]}
        if name == "keyed":
            body = {"files": {f"backup-{CANARY}.tar": 1024, "notes.txt": 12}}
            return {"content": [{"type": "text", "text": "2 files"}], "structuredContent": body}
        if name == "linked":
            return {
                "content": [
                    {"type": "resource_link", "uri": f"https://files.example/{CANARY}",
                     "name": f"key {TOKEN}", "description": "a file", "_meta": {"owner": CANARY}},
                    {"type": "resource", "resource": {"uri": f"s3://bucket/{CANARY}", "text": "body",
                                                      "mimeType": "text/plain"}},
                ],
                "_meta": {"trace": f"{TOKEN}"},
            }  # fmt: skip
        if name == "ask":
            request = {
                "method": "elicitation/create",
                "params": {"message": f"confirm {CANARY}", "requestedSchema": {}},
            }
            return {
                "resultType": "input_required",
                "inputRequests": {"confirm": request},
                "requestState": "s",
            }
        if self.broken:
            raise UpstreamError(f"crm: {name} failed: upstream said 'bad key {CANARY}'")
        hidden = CANARY[:5] + "\u200b" + CANARY[5:]
        wide = "".join(chr(ord(c) + 0xFEE0) for c in TOKEN)
        return {"content": [{"type": "text", "text": f"key {hidden}\ntoken {wide}"}]}


def tenant(**guard: Any) -> TenantConfig:
    return parse_tenant_config(
        {
            "routing_mode": "direct",
            "servers": [{"name": "crm", "url": "http://127.0.0.1:9/crm/mcp"}],
            "guard": guard,
        }
    )


def gateway(config: TenantConfig) -> tuple[Gateway, ChannelUpstream, ListRecorder]:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", TOOLS), expected_current=None)
    upstream, recorder = ChannelUpstream(), ListRecorder()
    gw = Gateway(store, StaticConfigSource({"default": config}), upstream, catalog_ttl=60, recorder=recorder)
    return gw, upstream, recorder


class Client:
    """What the caller's relay hears: notifications, a task's status messages, requests for input."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.status: list[str | None] = []
        self.asked: list[dict[str, Any]] = []

    def relay(self) -> Relay:
        async def notify(message: dict[str, Any]) -> None:
            self.sent.append(message)

        async def heard(progress: Progress) -> None:
            self.status.append(progress.message)

        async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
            self.asked.append(params)
            return {"result": {"action": "decline"}}

        return Relay(notify=notify, progress_token="t", on_progress=heard, ask=ask,
                     asks=frozenset({"elicitation/create"}))  # fmt: skip

    def everything(self) -> str:
        return json.dumps([self.sent, self.status, self.asked])


async def call(gw: Gateway, name: str, client: Client | None = None) -> dict[str, Any]:
    with relaying(client.relay() if client is not None else None):
        result: dict[str, Any] = await gw.call("default", f"crm__{name}", {}, "direct")
    return result


async def test_w3_01_progress_logs_and_requests_for_input_are_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    gw, _, recorder = gateway(tenant())
    client = Client()
    await call(gw, "chatty", client)
    heard = client.everything()
    assert CANARY not in heard
    assert TOKEN not in heard
    assert "[redacted:aws_access_key]" in heard
    assert client.status == ["using [redacted:aws_access_key]"]  # a task's statusMessage
    assert client.asked == [{"message": "using [redacted:aws_access_key]", "requestedSchema": {}}]
    assert CANARY not in caplog.text
    events = json.dumps([e.__dict__ for e in recorder.events], default=str)
    assert CANARY not in events
    await gw.aclose()


async def test_w3_01_under_block_what_fired_is_withheld_on_every_relayed_channel() -> None:
    gw, upstream, _ = gateway(tenant(secrets="block"))
    client = Client()
    await call(gw, "chatty", client)
    assert CANARY not in client.everything()
    assert TOKEN not in client.everything()
    # The progress is relayed without its message; the log is dropped; the request refused.
    assert [m["method"] for m in client.sent] == ["notifications/progress"]
    assert "message" not in client.sent[0]["params"]
    assert client.status == [None]
    assert client.asked == []
    assert "error" in upstream.asked[0]
    await gw.aclose()


async def test_w3_02_a_structured_content_key_holding_a_credential_withholds_the_answer() -> None:
    gw, _, _ = gateway(tenant())
    result = await call(gw, "keyed")
    assert result["isError"] is True
    assert CANARY not in json.dumps(result)
    assert "result_blocked" in json.dumps(result)
    await gw.aclose()


async def test_w3_03_resource_links_embedded_uris_and_meta_are_guarded() -> None:
    gw, _, _ = gateway(tenant())
    result = await call(gw, "linked")
    text = json.dumps(result)
    assert CANARY not in text
    assert TOKEN not in text
    link, embedded = result["content"]
    assert link["uri"] == "https://files.example/[redacted:aws_access_key]"
    assert link["name"] == "key [redacted:github_token]"
    assert link["_meta"] == {"owner": "[redacted:aws_access_key]"}
    assert embedded["resource"]["uri"] == "s3://bucket/[redacted:aws_access_key]"
    await gw.aclose()


async def test_w3_04_zero_width_and_full_width_credentials_are_blocked_and_redacted() -> None:
    gw, _, _ = gateway(tenant(secrets="block"))
    blocked = await call(gw, "wide")
    assert blocked["isError"] is True
    assert "aws_access_key" in json.dumps(blocked)
    gw.configs.configs["default"] = tenant()  # type: ignore[attr-defined]
    redacted = (await call(gw, "wide"))["content"][0]["text"]
    assert redacted == "key [redacted:aws_access_key]\ntoken [redacted:github_token]"
    await gw.aclose()


async def test_an_upstreams_input_requests_are_guarded_before_they_are_relayed_or_kept() -> None:
    gw, _, _ = gateway(tenant())
    result = await call(gw, "ask")
    assert result["inputRequests"]["confirm"]["params"]["message"] == "confirm [redacted:aws_access_key]"
    await gw.aclose()


async def test_spotlight_delivers_every_text_inside_the_provenance_note_per_server() -> None:
    gw, _, _ = gateway(tenant(servers={"crm": {"injection": "spotlight"}}))
    text = (await call(gw, "chatty"))["content"][0]["text"]
    assert text.startswith("[foldgate: the text below came from the tool crm__chatty.")
    assert text.endswith("[foldgate: end of the text from the tool crm__chatty]")
    assert "\ndone\n" in text
    gw.configs.configs["default"] = tenant()  # type: ignore[attr-defined]
    assert (await call(gw, "chatty"))["content"][0]["text"] == "done"
    await gw.aclose()


async def test_an_upstreams_error_message_is_guarded_before_a_log_an_event_or_the_agent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    gw, upstream, recorder = gateway(tenant())
    upstream.broken = True
    result = await call(gw, "wide")
    assert result["isError"] is True
    assert "bad key [redacted:aws_access_key]" in json.dumps(result)
    events = json.dumps([e.__dict__ for e in recorder.events], default=str)
    for seen in (json.dumps(result), caplog.text, events):
        assert CANARY not in seen
    gw.configs.configs["default"] = tenant(secrets="block")  # type: ignore[attr-defined]
    blocked = json.dumps(await call(gw, "wide"))
    assert "withheld by the gateway's guard" in blocked
    assert CANARY not in blocked
    await gw.aclose()
