"""A property run over the MCP endpoints, on the local path (ASGI, as under `foldgate serve`) and the
Lambda path (the same app under Mangum with a Lambda context, as McpFunction runs it): whatever JSON-ish
body a client sends (deep nesting, lone UTF-16 surrogates in ids and params, garbage) and whatever an
upstream answers a call with (lone surrogates, deep nesting, wrong shapes, huge error text), the answer
is never a 5xx and is a valid JSON-RPC message (or an empty 202 for a notification)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import anyio.from_thread
import anyio.to_thread
import httpx2
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mangum import Mangum

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig
from foldgate.edge.app import create_app
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.param_headers import HeaderParam
from foldgate.serve.gateway import Gateway
from foldgate.serve.paging import ResultPager
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.store.results.sqlite import SqliteResultStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools
from tests.lambda_http import v2_event
from tests.lambdas import LambdaContext

SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
texts = st.text(alphabet=st.characters() | SURROGATES, max_size=30)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=16,
)
METHODS = ["tools/list", "tools/call", "initialize", "ping", "resources/read", "prompts/get",
           "notifications/initialized", "server/discover", "resources/list", "nope"]  # fmt: skip
CALL = {"name": "crm__find_contact", "arguments": {"query": "ada"}}


def deep(depth: int, rid: Any = 1, method: str = "tools/list") -> bytes:
    """A request whose params nest ``depth`` levels (10,000 made RecursionError a 500 on main)."""
    head = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method})[:-1].encode()
    return head + b',"params":{"_meta":' + b"[" * depth + b"]" * depth + b"}}"


messages = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]), "method": st.sampled_from(METHODS) | texts},
    optional={
        "id": st.integers() | texts | st.none() | json_values,
        "params": st.just(CALL)
        | json_values
        | st.fixed_dictionaries({"name": texts, "arguments": json_values}),
    },
)
bodies = st.one_of(
    messages.map(lambda m: json.dumps(m).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.integers(min_value=1, max_value=20_000).map(deep),
    st.binary(max_size=200),
)
results = st.one_of(
    st.fixed_dictionaries(
        {"content": st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": texts}), max_size=3)},
        optional={
            "structuredContent": st.dictionaries(texts, json_values, max_size=4),
            "isError": st.booleans(),
            "_meta": json_values,
        },
    ),
    json_values,
    st.integers(min_value=1, max_value=3000).map(lambda n: Deep(n)),
)


class Deep:
    """A result whose structuredContent nests ``depth`` levels, built when answered (so a failing
    example prints as ``Deep(n)``)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def __repr__(self) -> str:
        return f"Deep({self.depth})"

    def build(self) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for _ in range(self.depth):
            value = {"a": value}
        return {"content": [], "structuredContent": value}


class HostileUpstream(RecordingUpstream):
    """Answers every call with whatever ``result`` the example gives."""

    result: Any = None

    async def call_tool(
        self,
        server: ServerConfig,
        name: str,
        arguments: dict[str, Any],
        *,
        annotations: Mapping[str, Any] | None = None,
        header_params: tuple[HeaderParam, ...] = (),
    ) -> dict[str, Any]:
        return self._answer()

    async def request(self, server: ServerConfig, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self._answer()

    def _answer(self) -> dict[str, Any]:  # whatever the example holds: a dict by contract, not here
        return self.result.build() if isinstance(self.result, Deep) else self.result


def _gateway() -> tuple[Gateway, HostileUpstream]:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    upstream = HostileUpstream()
    results_ = ResultPager(SqliteResultStore(":memory:"))
    gateway = Gateway(store, StaticConfigSource({"default": demo_config()}), upstream, catalog_ttl=0.0,
                      results=results_)  # fmt: skip
    return gateway, upstream


def assert_json_rpc(status: int, ctype: str, body: bytes, where: str) -> None:
    """Not a 5xx; a JSON-RPC answer (the last event of a stream), or an empty 202."""
    assert status < 500, where
    if status == 202:
        assert body == b"", where
        return
    if ctype.startswith("text/event-stream"):
        data = [line[5:].strip() for line in body.decode("utf-8").splitlines() if line.startswith("data:")]
        assert data, where
        body = data[-1].encode()
    else:
        assert ctype.startswith("application/json"), where
    body.decode("utf-8")  # strict: valid UTF-8
    message = json.loads(body)
    assert message.get("jsonrpc") == "2.0", where
    assert ("result" in message) != ("error" in message), where
    if "error" in message:
        assert isinstance(message["error"].get("code"), int), where
        assert isinstance(message["error"].get("message"), str), where


HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
VERSIONS = st.sampled_from([None, "2025-11-25", "2025-06-18"])
PATHS = st.sampled_from(["/mcp", "/mcp/all", "/mcp/call"])


def _headers(version: str | None) -> dict[str, str]:
    return {**HEADERS, "mcp-protocol-version": version} if version else dict(HEADERS)


CASES = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
EXAMPLES = [
    (deep(10_000), {"content": []}),
    (deep(10_000, method="resources/list"), {"content": []}),
    (json.dumps({"jsonrpc": "2.0", "id": "\ud800", "method": "resources/list"}).encode(), {}),
    (
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": "x"}}).encode(),
        {"messages": [{"role": "user", "content": {"type": "text", "text": "\udc00"}}]},
    ),
    (json.dumps({"jsonrpc": "2.0", "id": "\ud800", "method": "ping"}).encode(), {"content": []}),
    (json.dumps({"jsonrpc": "2.0", "id": "\ud800", "method": "tools/call", "params": CALL}).encode(), {}),
    (
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": CALL}).encode(),
        {"content": [{"type": "text", "text": "a\udfffb"}], "structuredContent": {"k\ud800": "v"}},
    ),
]


async def test_the_local_path_never_answers_5xx_to_any_body_or_upstream_result() -> None:
    gateway, upstream = _gateway()
    app = create_app(gateway)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:

            async def post(path: str, body: bytes, headers: dict[str, str]) -> httpx2.Response:
                r = await client.post(path, content=body, headers=headers)
                await r.aread()
                return r

            def prop() -> None:
                @CASES
                @given(path=PATHS, body=bodies, result=results, version=VERSIONS)
                def each(path: str, body: bytes, result: Any, version: str | None) -> None:
                    upstream.result = result
                    r = anyio.from_thread.run(post, path, body, _headers(version))
                    where = (
                        f"{path} {body[:200]!r} {str(result)[:200]} -> {r.status_code} {r.content[:300]!r}"
                    )
                    assert_json_rpc(r.status_code, r.headers.get("content-type", ""), r.content, where)

                for body, result in EXAMPLES:
                    each = example(path="/mcp/all", body=body, result=result, version=None)(each)
                each()

            await anyio.to_thread.run_sync(prop)


def test_the_lambda_path_never_answers_5xx_to_any_body_or_upstream_result() -> None:
    gateway, upstream = _gateway()
    handler = Mangum(create_app(gateway), lifespan="off")

    @CASES
    @given(path=PATHS, body=bodies, result=results, version=VERSIONS)
    def each(path: str, body: bytes, result: Any, version: str | None) -> None:
        upstream.result = result
        event = v2_event("POST", path, list(_headers(version).items()), body)
        answer = handler(event, LambdaContext())  # type: ignore[arg-type]  # the parts Mangum reads
        raw = answer.get("body") or ""
        content = base64.b64decode(raw) if answer.get("isBase64Encoded") else raw.encode("utf-8")
        headers = {k.lower(): v for k, v in (answer.get("headers") or {}).items()}
        where = (
            f"{path} {body[:200]!r} upstream={str(result)[:200]} -> {answer['statusCode']} {content[:300]!r}"
        )
        assert_json_rpc(answer["statusCode"], headers.get("content-type", ""), content, where)

    for body, result in EXAMPLES:
        each = example(path="/mcp/all", body=body, result=result, version=None)(each)
    each()


async def test_a_body_nested_10000_deep_is_a_parse_error_on_every_method() -> None:
    """The fast path's decode raised RecursionError (a 500) on main; now the body is a -32700."""
    gateway, _ = _gateway()
    app = create_app(gateway)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        for method in ("tools/list", "tools/call", "ping", "resources/list"):
            r = await client.post("/mcp/all", content=deep(10_000, method=method), headers=HEADERS)
            assert r.status_code == 400, method
            assert r.json()["error"]["code"] == -32700, method
