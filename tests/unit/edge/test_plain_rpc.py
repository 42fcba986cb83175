"""The plain JSON-RPC path answers exactly as the SDK would, and without loading the SDK.

Differential: every request is sent twice to the same app, once on the plain path and once with the
plain path switched off (``plain_request`` patched to decline, so the SDK answers), and the two answers
(status, content type, JSON body) must be equal. A spy checks that the plain path really answered the
first one, so a request silently left to the SDK cannot pass for a match.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx2
import pytest

from foldgate.edge import endpoint
from foldgate.errors import UpstreamError
from foldgate.model.rpc_body import RpcBody
from tests.gateway_fixture import RecordingUpstream, gateway_client

H = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
CLIENT = {"name": "c", "version": "1"}
REPO = Path(__file__).resolve().parents[3]


def _legacy(version: str | None = "2025-11-25") -> dict[str, str]:
    return {**H, "mcp-protocol-version": version} if version else dict(H)


def _modern(method: str, name: str | None = None) -> dict[str, str]:
    headers = {**H, "mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers


def _init(version: str, **extra: Any) -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT, **extra}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


def _call(
    name: str, arguments: Any = None, rid: Any = 5, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def _both(
    client: httpx2.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    body: dict[str, Any],
    headers: dict[str, str],
    path: str = "/mcp/all",
) -> tuple[httpx2.Response, httpx2.Response]:
    """(plain answer, SDK answer) to the same request; fails when the plain path declined it."""
    taken: list[Any] = []
    real = endpoint.plain_request

    def spy(raw: RpcBody, request: Any) -> Any:
        taken.append(real(raw, request))
        return taken[-1]

    monkeypatch.setattr(endpoint, "plain_request", spy)
    plain = await client.post(path, json=body, headers=headers)
    assert taken, "the request never reached the edge"
    assert taken[-1] is not None, "the plain path declined the request"
    monkeypatch.setattr(endpoint, "plain_request", lambda raw, request: None)
    sdk = await client.post(path, json=body, headers=headers)
    monkeypatch.setattr(endpoint, "plain_request", real)
    return plain, sdk


def _same(plain: httpx2.Response, sdk: httpx2.Response) -> None:
    assert plain.status_code == sdk.status_code
    assert plain.headers["content-type"] == sdk.headers["content-type"]
    if sdk.content:
        assert plain.json() == sdk.json()
        # Clients don't care about key order, but keep it the SDK's (alphabetical, _meta last).
        assert list(plain.json().get("result", {})) == list(sdk.json().get("result", {}))
    else:
        assert plain.content == b""


CASES: list[tuple[str, dict[str, Any], dict[str, str]]] = [
    ("initialize 2025-06-18", _init("2025-06-18"), _legacy(None)),
    ("initialize 2024-11-05", _init("2024-11-05"), _legacy("2024-11-05")),
    ("initialize unknown version negotiates the latest", _init("1999-01-01"), _legacy(None)),
    (
        "initialize with client capabilities and a title",
        _init("2025-11-25", capabilities={"roots": {"listChanged": True}, "sampling": {}}),
        _legacy(None),
    ),
    ("initialized notification", {"jsonrpc": "2.0", "method": "notifications/initialized"}, _legacy()),
    ("ping", {"jsonrpc": "2.0", "id": "p", "method": "ping"}, _legacy()),
    (
        "ping with meta",
        {"jsonrpc": "2.0", "id": 0, "method": "ping", "params": {"_meta": {"progressToken": 3}}},
        _legacy(),
    ),
    ("describe_tool", _call("describe_tool", {"tool_ids": ["crm__create_contact"]}), _legacy()),
    (
        "describe_tool, no header",
        _call("describe_tool", {"tool_ids": ["crm__create_contact"]}),
        _legacy(None),
    ),
    (
        "describe_tool 2024",
        _call("describe_tool", {"tool_ids": ["crm__create_contact"]}),
        _legacy("2024-11-05"),
    ),
    ("bad describe arguments", _call("describe_tool", {"tool_ids": 3}), _legacy()),
    ("proxied call", _call("crm__create_contact", {"name": "Ä", "email": "a@b.c"}), _legacy()),
    ("proxied call, invalid arguments", _call("crm__create_contact", {"name": 1}), _legacy()),
    ("proxied call, no arguments", _call("crm__create_contact"), _legacy()),
    ("unknown tool", _call("nope__nothing", {}, rid="x"), _legacy()),
    (
        "call with progress token",
        _call("describe_tool", {"tool_ids": []}, meta={"progressToken": "t"}),
        _legacy(),
    ),
    (
        "modern discover",
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": ENVELOPE}},
        _modern("server/discover"),
    ),
    (
        "modern describe_tool",
        _call("describe_tool", {"tool_ids": ["crm__create_contact"]}, meta=ENVELOPE),
        _modern("tools/call", "describe_tool"),
    ),
    (
        "modern proxied call",
        _call(
            "crm__create_contact",
            {"name": "a", "email": "a@b.c"},
            meta={**ENVELOPE, "io.modelcontextprotocol/clientInfo": CLIENT},
        ),
        _modern("tools/call", "crm__create_contact"),
    ),
]


@pytest.mark.parametrize(("label", "body", "headers"), CASES, ids=[c[0] for c in CASES])
async def test_plain_answer_equals_the_sdk_answer(
    label: str, body: dict[str, Any], headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with gateway_client() as (client, *_):
        _same(*await _both(client, monkeypatch, body, headers))


@pytest.mark.parametrize("path", ["/mcp", "/mcp/all", "/mcp/call", "/mcp/code"])
async def test_every_surface_answers_calls_like_the_sdk(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with gateway_client() as (client, *_):
        for body in (_init("2025-11-25"), _call("describe_tool", {"tool_ids": ["crm__create_contact"]})):
            _same(*await _both(client, monkeypatch, body, _legacy(), path))


UNUSUAL_RESULTS: list[Any] = [
    {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}], "isError": False},
    {"content": [{"type": "text", "text": "x", "annotations": {"priority": 0.5}}], "isError": False},
    {"content": [{"type": "text", "text": "x"}]},  # isError left to its default
    # As a 2026-07-28 upstream answers: resultType and its serverInfo stamp in _meta.
    {
        "content": [{"type": "text", "text": "x"}],
        "isError": False,
        "resultType": "complete",
        "structuredContent": {"a": 1},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "crm", "version": "1"}},
    },
    {"content": [{"type": "text", "text": "x"}], "_meta": {"k": {"nested": None}}},
    {"content": [{"type": "text", "text": "x"}], "_meta": {"k": None}},  # dropped at 2026 only
    {"content": [{"type": "text", "text": "x"}], "_meta": [1]},  # malformed
    {"content": [{"type": "text", "text": "x"}], "resultType": "input_required"},
    {"content": [{"type": "text", "text": "x"}], "isError": False, "_meta": {"k": 1}, "extra": True},
    {"content": "not a list"},  # malformed: becomes an error result
    {"content": [{"type": "text"}], "isError": False},  # malformed item
    {"content": [], "structuredContent": [1, 2]},  # malformed for the wire model only
]


@pytest.mark.parametrize("result", UNUSUAL_RESULTS, ids=[str(i) for i in range(len(UNUSUAL_RESULTS))])
@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
async def test_unusual_upstream_results_are_judged_like_the_sdk(
    result: Any, modern: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def call_tool(self: RecordingUpstream, *args: Any, **kwargs: Any) -> Any:
        return json.loads(json.dumps(result))

    monkeypatch.setattr(RecordingUpstream, "call_tool", call_tool)
    name = "crm__create_contact"
    arguments = {"name": "a", "email": "a@b.c"}
    if modern:
        body, headers = _call(name, arguments, meta=ENVELOPE), _modern("tools/call", name)
    else:
        body, headers = _call(name, arguments), _legacy()
    async with gateway_client() as (client, *_):
        plain, sdk = await _both(client, monkeypatch, body, headers)
    if isinstance(result.get("structuredContent"), list) and not modern:
        # Deliberate divergence: the handshake-era SDK answers this with a JSON-RPC internal error; the
        # plain path with an error result, like every other malformed upstream result.
        assert sdk.json()["error"]["code"] == -32603
        assert plain.json()["result"]["isError"] is True
        assert "malformed result" in plain.json()["result"]["content"][0]["text"]
        return
    _same(plain, sdk)
    if result.get("content") == "not a list":
        assert plain.json()["result"]["isError"] is True


async def test_upstream_failure_is_the_same_error_result(monkeypatch: pytest.MonkeyPatch) -> None:
    async with gateway_client() as (client, _, upstream, _):
        upstream.fail["create_contact"] = UpstreamError("crm is down")
        body = _call("crm__create_contact", {"name": "a", "email": "a@b.c"})
        plain, sdk = await _both(client, monkeypatch, body, _legacy())
        _same(plain, sdk)
        assert plain.json()["result"]["isError"] is True


def _raw(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


_NO_CAPS = {"io.modelcontextprotocol/protocolVersion": MODERN}
_MODERN_PING = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": ENVELOPE}}
_INIT_NO_CLIENT = {**_init("2025-11-25"), "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
DECLINED: list[tuple[str, bytes, dict[str, str]]] = [
    ("ping in the modern era (not served)", _raw(_MODERN_PING), _modern("ping")),
    ("bool id", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', _legacy()),
    ("notification with an id", b'{"jsonrpc":"2.0","id":1,"method":"notifications/initialized"}', _legacy()),
    ("arguments not an object", _raw(_call("describe_tool", [1])), _legacy()),
    ("extra params key", _raw({**_call("x"), "params": {"name": "x", "y": 1}}), _legacy()),
    ("initialize without clientInfo", _raw(_INIT_NO_CLIENT), _legacy()),
    ("unsupported version header", _raw(_call("describe_tool", {})), _legacy("2000-01-01")),
    ("mismatched Mcp-Name", _raw(_call("describe_tool", {}, meta=ENVELOPE)), _modern("tools/call", "other")),
    (
        "modern call without client capabilities",
        _raw(_call("describe_tool", {}, meta=_NO_CAPS)),
        _modern("tools/call", "describe_tool"),
    ),
    (
        "mismatched Mcp-Method",
        _raw(_call("describe_tool", {}, meta=ENVELOPE)),
        _modern("ping", "describe_tool"),
    ),
    ("unknown method", b'{"jsonrpc":"2.0","id":1,"method":"resources/list"}', _legacy()),
    ("parse error", b'{"jsonrpc":', _legacy()),
]


@pytest.mark.parametrize(("label", "raw", "headers"), DECLINED, ids=[c[0] for c in DECLINED])
async def test_requests_the_sdk_must_judge_are_left_to_it(
    label: str, raw: bytes, headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[Any] = []
    real = endpoint.plain_request

    def spy(body: bytes, request: Any) -> Any:
        answered.append(real(body, request))
        return answered[-1]

    monkeypatch.setattr(endpoint, "plain_request", spy)
    async with gateway_client() as (client, *_):
        r = await client.post("/mcp/all", content=raw, headers=headers)
    assert answered == [None]
    assert r.status_code < 500


async def test_local_serve_host_check_refuses_before_the_plain_path() -> None:
    """The Host/Origin policy (edge/hosts.py) runs before any answer, plain or SDK."""
    async with gateway_client(allowed_hosts=["127.0.0.1"]) as (client, *_):
        ok = await client.post(
            "/mcp/all", json=_init("2025-11-25"), headers={**_legacy(), "host": "127.0.0.1:9"}
        )
        assert ok.status_code == 200
        assert ok.json()["result"]["protocolVersion"] == "2025-11-25"
        bad = await client.post(
            "/mcp/all", json=_init("2025-11-25"), headers={**_legacy(), "host": "evil.example"}
        )
        assert bad.status_code == 403
        origin = {**_legacy(), "host": "127.0.0.1:9", "origin": "http://evil.example"}
        assert (
            await client.post("/mcp/all", json=_call("describe_tool", {}), headers=origin)
        ).status_code == 403


def test_handshake_ping_and_calls_load_no_sdk() -> None:
    """A fresh process serving initialize, initialized, ping and tools/call never imports the SDK."""
    script = textwrap.dedent(
        """
        import anyio, sys
        from tests.gateway_fixture import gateway_client
        H = {"accept": "application/json", "content-type": "application/json"}
        client_info = {"name": "c", "version": "1"}
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}
        async def main():
            async with gateway_client() as (client, *_):
                for body in (
                    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "crm__create_contact", "arguments": {"name": "a", "email": "a@b.c"}}},
                ):
                    r = await client.post("/mcp/all", json=body, headers=H)
                    assert r.status_code in (200, 202), r.text
        anyio.run(main)
        print(sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "mcp_types"))))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
