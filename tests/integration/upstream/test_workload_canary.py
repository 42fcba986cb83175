"""Canary: a workload assertion and the access token it buys appear in no log record, audit event,
status entry, tool error or span. A workload_jwt server is listed and called through the upstream
client (server-everything, which ignores the token it is sent) with every logger at DEBUG and spans
recorded; a second server's grant is refused. Everything foldgate said is then searched for both."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.edge.grant_status import machine_state
from foldgate.errors import UpstreamAuthorizationError
from foldgate.model.caller import calling_as
from foldgate.telemetry import tracing
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth.provider import TokenProvider
from tests.recorders import ListRecorder
from tests.token_endpoint import issuing, refusing, token_endpoint
from tests.tracing import recording_spans
from tests.upstream_oauth import grant_store, oauth_context

# base64url parts, so the assertion is accepted as a compact JWT; the canary is readable in each.
CANARY_ASSERTION = "eyJjYW5hcnkiOiJhc3NlcnRpb24ifQ.Q0FOQVJZLWFzc2VydGlvbi1wYXlsb2Fk.Q0FOQVJZLXNpZw"
CANARY_TOKEN = "CANARY-access-token-7f3a9c"


def workload_server(name: str, url: str, token_url: str, jwt: Path) -> ServerConfig:
    auth = {"kind": "workload_jwt", "token_url": token_url, "assertion": {"source": "file", "path": str(jwt)}}
    return parse_tenant_config({"servers": [{"name": name, "url": url, "auth": auth}]}).servers[0]


async def test_no_assertion_or_token_escapes(
    everything_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    jwt = tmp_path / "workload.jwt"
    jwt.write_text(CANARY_ASSERTION)
    said: list[str] = []
    with grant_store(tmp_path) as store, recording_spans() as spans:
        ctx = oauth_context(store)
        recorder = ListRecorder()
        ctx.outcomes.recorder = recorder
        client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
        try:
            with (
                token_endpoint(issuing(CANARY_TOKEN)) as good,
                token_endpoint(refusing("invalid_grant")) as bad,
            ):
                ok = workload_server("ok", everything_url, good.url, jwt)
                refused = workload_server("refused", everything_url, bad.url, jwt)
                # Inside a request's trace, as an agent's call runs (spans are recorded only there).
                with calling_as("acme"), tracing.request_trace(None):
                    listing = await client.list_tools(ok)
                    result = await client.call_tool(ok, "echo", {"message": "hello"})
                    with pytest.raises(UpstreamAuthorizationError) as info:
                        await client.list_tools(refused)
            said.append(info.value.message)
            said.append(json.dumps(info.value.details))
            said.extend(json.dumps(machine_state(ctx, None, "acme", s)) for s in (ok, refused))
        finally:
            await client.aclose()
    # It did happen: the token was obtained and sent, the refusal recorded.
    assert [f["assertion"] for f in good.forms] == [CANARY_ASSERTION]
    assert [t["name"] for t in listing.tools]
    assert "hello" in json.dumps(result)
    assert [a.outcome for a in recorder.audits] == ["ok", "refused"]
    finished = spans.get_finished_spans()
    assert finished
    said.append(caplog.text)
    said.append(recorder.text())
    said.extend(
        json.dumps({"name": s.name, "attributes": dict(s.attributes or {}),
                    "events": [(e.name, dict(e.attributes or {})) for e in s.events]}, default=str)
        for s in finished
    )  # fmt: skip
    everything = "\n".join(said)
    for canary in ("CANARY", CANARY_TOKEN, CANARY_ASSERTION, CANARY_ASSERTION.split(".")[1]):
        assert canary not in everything, canary
