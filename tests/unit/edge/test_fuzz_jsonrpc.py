"""Hostile input at the JSON-RPC edge: whatever arrives, the app answers 4xx or a JSON-RPC message.

Each property runs against one in-process app (``gateway_client``) entered in the test's own task, so
its lifespan starts and stops in one place. Hypothesis itself is synchronous, so it runs in a worker
thread and sends every example back to the event loop with ``anyio.from_thread.run``.

The property, for every request (any method: GET, DELETE and the rest get a JSON 405; a JSON array,
a batch, gets one fixed error): no 5xx, no exception out of the app (the ASGI transport re-raises
them), no JSON-RPC "internal error" (the SDK's mask for an exception in a handler) and no tool result
saying ``internal_error`` (gateway errors carry it in their JSON text), and a body that parses: JSON
(or SSE events carrying JSON) holding a JSON-RPC result or error, any JSON body on a 4xx, or an empty
202 for messages that expect no answer. (The SDK's transport would answer a wrong Content-Type or
Accept with a plain-text or empty 4xx; the edge answers those itself, in JSON-RPC, and
``test_every_4xx_has_a_json_body`` pins it.)

``FOLDGATE_FUZZ_SCALE=10`` multiplies every example count, for a longer hunt.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.from_thread
import anyio.to_thread
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from foldgate.edge.guard import BATCH_REFUSAL
from foldgate.serve.results import error_body
from tests.gateway_fixture import demo_config, demo_tools, gateway_client
from tests.helpers import error_of

PATHS = ("/mcp/all", "/mcp/call", "/mcp")
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
METHODS = (
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    "subscriptions/listen",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
)
META_TOOLS = (
    "describe_tool",
    "retrieve_tools",
    "call_tool_read",
    "call_tool_write",
    "call_tool_destructive",
    "read_cache",
)
UPSTREAM_TOOLS = tuple(sorted({f"{t.server}__{t.name}" for t in demo_tools()}))
TOOL_NAMES = META_TOOLS + UPSTREAM_TOOLS

SCALE = float(os.environ.get("FOLDGATE_FUZZ_SCALE", "1"))
FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# ---- strategies -------------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=15,
)
ids = (
    st.integers(min_value=-(2**63), max_value=2**63)
    | st.text(max_size=20)
    | st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.lists(st.integers(), max_size=2)
)
methods = st.sampled_from(METHODS) | st.text(max_size=30)
header_text = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)

_ABSENT = object()


def _message(jsonrpc: Any, rid: Any, method: Any, params: Any, extra: dict[str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = dict(extra)
    for key, value in (("jsonrpc", jsonrpc), ("id", rid), ("method", method), ("params", params)):
        if value is not _ABSENT:
            msg[key] = value
    return msg


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.just(_ABSENT) | strategy


rpc_messages = st.builds(
    _message,
    jsonrpc=st.just("2.0") | _maybe(json_values),
    rid=_maybe(ids),
    method=_maybe(methods | json_values),
    params=_maybe(
        json_values
        | st.dictionaries(st.sampled_from(["_meta", "cursor", "name", "arguments"]), json_values, max_size=3)
    ),
    extra=st.dictionaries(st.sampled_from(["result", "error", "x"]), json_values, max_size=1),
)


def _tool_arguments(name: str) -> st.SearchStrategy[Any]:
    """Arguments shaped like the tool's (so validation goes deep), mixed with arbitrary JSON."""
    tool_ids = st.lists(st.sampled_from(TOOL_NAMES) | st.text(max_size=30) | json_values, max_size=7)
    shaped: dict[str, st.SearchStrategy[Any]] = {
        "describe_tool": st.fixed_dictionaries(
            {"tool_ids": tool_ids | json_values}, optional={"check": json_values, "extra": json_values}
        ),
        "retrieve_tools": st.fixed_dictionaries(
            {},
            optional={
                "query": st.text(max_size=60) | json_values,
                "limit": st.integers(-5, 200) | json_values,
                "detail": st.sampled_from(["compact", "full"]) | json_values,
                "read_only_only": st.booleans() | json_values,
                "exclude_destructive": st.booleans(),
                "exclude_open_world": st.booleans(),
            },
        ),
        "read_cache": st.fixed_dictionaries(
            {},
            optional={
                "key": st.text(max_size=40) | json_values,
                "offset": st.integers(-5, 10**12) | json_values,
                "limit": st.integers(-5, 10**12) | json_values,
            },
        ),
    }
    call = st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(TOOL_NAMES) | st.text(max_size=30) | json_values,
            "arguments": st.dictionaries(st.text(max_size=10), json_values, max_size=4) | json_values,
        },
    )
    for variant in ("call_tool_read", "call_tool_write", "call_tool_destructive"):
        shaped[variant] = call
    upstream_args = st.dictionaries(
        st.sampled_from(["query", "name", "email", "id", "status", "tags", "limit"]) | st.text(max_size=8),
        json_values,
        max_size=4,
    )
    return shaped.get(name, upstream_args) | json_values


@st.composite
def tool_calls(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from(TOOL_NAMES) | st.text(max_size=30))
    params: dict[str, Any] = {"name": name}
    if draw(st.booleans()):
        params["arguments"] = draw(_tool_arguments(name))
    if draw(st.integers(0, 9)) == 0:
        params["_meta"] = draw(json_values)
    return {"jsonrpc": "2.0", "id": draw(st.integers(0, 1000) | st.text(max_size=8)), "method": "tools/call",
            "params": params}  # fmt: skip


def _mutations(raw: bytes) -> st.SearchStrategy[bytes]:
    """Truncations, byte flips and splices of a valid message."""
    n = len(raw)
    cut = st.integers(0, n).map(lambda i: raw[:i])
    flip = st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, 255)).map(
        lambda p: raw[: p[0]] + bytes([p[1]]) + raw[p[0] + 1 :]
    )
    splice = st.tuples(st.integers(0, n), st.binary(max_size=12)).map(
        lambda p: raw[: p[0]] + p[1] + raw[p[0] :]
    )
    return cut | flip | splice


valid_raw = st.sampled_from(
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"describe_tool",'
        b'"arguments":{"tool_ids":["crm__find_contact"]}}}',
        b'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"f","version":"1"}}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    ]
)
byte_bodies = (
    st.binary(max_size=600)
    | valid_raw.flatmap(_mutations)
    | st.sampled_from([b"", b"null", b"[]", b"{}", b"NaN", b'{"a":NaN}', b"1e999", b"\xef\xbb\xbf{}",
                       b"[" * 5000, b"[" * 50_000 + b"]" * 50_000,
                       b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + b'{"a":' * 20_000 + b"1"
                       + b"}" * 20_000 + b"}", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"' + b" " * 100])
)  # fmt: skip

header_sets = st.fixed_dictionaries(
    {},
    optional={
        "accept": st.sampled_from(
            ["application/json, text/event-stream", "application/json", "text/event-stream", "*/*",
             "", "text/html", "application/*"]
        ) | header_text,
        "content-type": st.sampled_from(
            ["application/json", "application/json; charset=utf-8", "application/json;charset=latin-1",
             "text/plain", "", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
             "application/jsonx"]
        ) | header_text,
        "mcp-protocol-version": st.sampled_from(PROTOCOL_VERSIONS) | header_text,
        "mcp-method": st.sampled_from(METHODS) | header_text,
        "mcp-session-id": header_text,
        "x-foldgate-tenant": st.sampled_from(["default", "other", ""]) | header_text,
        "last-event-id": header_text,
    },
)  # fmt: skip

# ---- the property -----------------------------------------------------------------------------------


def _is_jsonrpc_reply(value: Any) -> bool:
    if isinstance(value, list):
        return all(_is_jsonrpc_reply(v) for v in value)
    return (
        isinstance(value, dict)
        and value.get("jsonrpc") == "2.0"
        and (("result" in value) != ("error" in value))
        and (
            "result" in value
            or (
                isinstance(value["error"], dict)
                and isinstance(value["error"].get("code"), int)
                and isinstance(value["error"].get("message"), str)
            )
        )
    )


def _no_internal_error(value: Any, where: str) -> None:
    for reply in value if isinstance(value, list) else [value]:
        error = reply.get("error")
        assert not (isinstance(error, dict) and error.get("code") == -32603), where
        result = reply.get("result")
        if not isinstance(result, dict):
            continue
        structured = result.get("structuredContent")
        if isinstance(structured, dict):
            assert structured.get("error_type") != "internal_error", where
        if result.get("isError"):
            # Gateway-made errors are JSON text only (clients validate structuredContent): read it.
            gateway_error = error_body(result)
            assert gateway_error is None or gateway_error["error_type"] != "internal_error", where


def check_response(r: httpx2.Response) -> None:
    """The property every answer must satisfy."""
    where = f"{r.request.method} {r.request.url.path} -> {r.status_code} {r.content[:300]!r}"
    assert r.status_code < 500, where
    if r.status_code == 202 and not r.content:
        return  # a notification or response accepted: nothing to answer
    ctype = r.headers.get("content-type", "")
    if ctype.startswith("text/event-stream"):
        payloads = [
            line[len("data:") :].strip()
            for line in r.text.splitlines()
            if line.startswith("data:") and line[len("data:") :].strip()
        ]
        assert payloads, where
        for payload in payloads:
            reply = json.loads(payload)
            assert _is_jsonrpc_reply(reply), where
            _no_internal_error(reply, where)
        return
    assert "json" in ctype, where
    body = json.loads(r.content)
    if 200 <= r.status_code < 300:
        assert _is_jsonrpc_reply(body), where
        _no_internal_error(body, where)
    else:
        assert 400 <= r.status_code < 500, where
        assert isinstance(body, dict | list), where


Post = Callable[..., httpx2.Response]  # (path, body, headers, method="POST")


async def run_property(prop: Callable[[Post], None], **client_kw: Any) -> None:
    """Run a sync hypothesis property in a worker thread against one app, then check it still serves."""
    async with gateway_client(**client_kw) as (client, *_):
        # Exceptions escaping the app surface here: ASGITransport re-raises them by default.
        async def post_async(path: str, body: bytes, headers: dict[str, str], method: str) -> httpx2.Response:
            r = await client.request(method, path, content=body, headers=headers)
            await r.aread()
            return r

        def post(path: str, body: bytes, headers: dict[str, str], method: str = "POST") -> httpx2.Response:
            return anyio.from_thread.run(post_async, path, body, headers, method)

        await anyio.to_thread.run_sync(prop, post)
        # Still serving after everything the fuzzer threw at it.
        listing = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        r = await client.post("/mcp/all", content=listing, headers=HEADERS)
        assert r.status_code == 200
        assert r.json()["result"]["tools"]


def _fuzz(
    *strategies: st.SearchStrategy[Any], examples: int = 200
) -> Callable[[Callable[..., None]], Callable[[], Awaitable[None]]]:
    """Turn ``check(post, *drawn)`` into an async test that fuzzes one app with ``strategies``."""

    def wrap(check: Callable[..., None]) -> Callable[[], Awaitable[None]]:
        async def test() -> None:
            def prop(post: Post) -> None:
                @settings(FUZZ, max_examples=max(1, int(examples * SCALE)))
                @given(st.tuples(*strategies))
                def each(drawn: tuple[Any, ...]) -> None:
                    check(post, *drawn)

                each()

            await run_property(prop)

        test.__name__ = check.__name__
        test.__doc__ = check.__doc__
        return test

    return wrap


# ---- the tests --------------------------------------------------------------------------------------


@_fuzz(st.sampled_from(PATHS), byte_bodies, examples=300)
def test_random_and_malformed_bytes(post: Post, path: str, body: bytes) -> None:
    """Arbitrary bytes, and valid messages cut, flipped or spliced."""
    check_response(post(path, body, HEADERS))


@_fuzz(st.sampled_from(PATHS), json_values)
def test_random_json_values(post: Post, path: str, value: Any) -> None:
    """Any JSON value as the whole body."""
    check_response(post(path, json.dumps(value).encode(), HEADERS))


@_fuzz(st.sampled_from(PATHS), rpc_messages | st.lists(rpc_messages, min_size=1, max_size=3), examples=300)
def test_random_jsonrpc_messages(post: Post, path: str, message: Any) -> None:
    """Messages of the right outline with random versions, ids, methods, params (and batches)."""
    check_response(post(path, json.dumps(message).encode(), HEADERS))


@_fuzz(st.sampled_from(PATHS), tool_calls(), examples=300)
def test_random_tool_calls(post: Post, path: str, message: dict[str, Any]) -> None:
    """tools/call with meta-tool and upstream names, arguments shaped like theirs or arbitrary."""
    check_response(post(path, json.dumps(message).encode(), HEADERS))


@_fuzz(
    st.sampled_from(PATHS),
    header_sets,
    st.sampled_from([b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}']) | valid_raw | rpc_messages.map(
        lambda m: json.dumps(m).encode()
    ),
    examples=300,
)  # fmt: skip
def test_random_headers(post: Post, path: str, headers: dict[str, str], body: bytes) -> None:
    """Content types, accept lists, protocol versions, tenants and session ids of every kind."""
    check_response(post(path, body, headers))


async def test_read_cache_with_real_and_forged_keys() -> None:
    """read_cache over a real cut result: any key, offset and limit pages correctly or is refused."""
    limit = 1000
    query = "x" * 5000
    full = json.dumps({"echo": {"query": query}})  # what the recording upstream answers

    def prop(post: Post) -> None:
        # Only the search surface cuts results (its call_tool_* variants) and pages them back.
        inner = {"name": "crm__find_contact", "arguments": {"query": query}}
        params = {"name": "call_tool_read", "arguments": inner}
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        r = post("/mcp/call", json.dumps(call).encode(), HEADERS)
        check_response(r)
        found = re.search(r'key "([^"]+)"', r.json()["result"]["content"][0]["text"])
        assert found is not None, r.text
        key = found.group(1)
        forged = st.builds(
            lambda i, c: key[:i] + c + key[i + 1 :], st.integers(0, len(key) - 1), st.characters()
        )
        arguments = st.fixed_dictionaries(
            {},
            optional={
                "key": st.just(key) | forged | st.text(max_size=30) | json_values,
                "offset": st.integers(-3, len(full) + 10) | st.integers(min_value=2**62) | json_values,
                "limit": st.integers(-3, 3 * limit) | json_values,
                "extra": json_values,
            },
        )

        @settings(FUZZ, max_examples=max(1, int(200 * SCALE)))
        @given(arguments)
        def each(args: dict[str, Any]) -> None:
            msg = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "read_cache", "arguments": args}}  # fmt: skip
            r = post("/mcp/call", json.dumps(msg).encode(), HEADERS)
            check_response(r)
            offset, size = args.get("offset", 0), args.get("limit", limit)
            well_formed = (
                set(args) <= {"key", "offset", "limit"}
                and args.get("key") == key
                and type(offset) is int
                and offset >= 0
                and type(size) is int
                and size >= 1
            )
            result = r.json()["result"]
            if well_formed:
                page = result["structuredContent"]
                assert page["text"] == full[offset : offset + min(size, limit)], page
            else:
                assert error_of(result)["error_type"] in ("invalid_request", "not_found"), result

        each()

    await run_property(prop, config=demo_config(tool_response_limit=limit))


NON_POST = st.sampled_from(["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
ALL_PATHS = st.sampled_from((*PATHS, "/mcp/code"))


@_fuzz(NON_POST, ALL_PATHS, header_sets, byte_bodies | valid_raw, examples=150)
def test_every_other_method_is_a_json_405(
    post: Post, method: str, path: str, headers: dict[str, str], body: bytes
) -> None:
    """GET (the SSE stream clients open), DELETE and the rest, with any headers and body: a JSON 405."""
    r = post(path, body, headers, method)
    check_response(r)
    assert r.status_code == 405, r.text
    assert r.headers["allow"] == "POST"


batches = st.lists(rpc_messages | tool_calls() | json_values, max_size=4).map(
    lambda items: json.dumps(items).encode()
) | valid_raw.filter(lambda raw: raw.startswith(b"[")).flatmap(_mutations).filter(
    lambda raw: raw.lstrip().startswith(b"[")
)


@_fuzz(ALL_PATHS, batches, examples=150)
def test_batches_get_one_fixed_error(post: Post, path: str, body: bytes) -> None:
    """JSON arrays (well-formed batches and broken ones): one fixed JSON-RPC error, nothing echoed."""
    r = post(path, b" \n" + body if len(body) % 2 else body, HEADERS)
    check_response(r)
    assert r.status_code == 400, r.text
    assert r.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": BATCH_REFUSAL}}


@pytest.mark.parametrize(
    "headers",
    [
        {**HEADERS, "content-type": "text/plain"},
        {**HEADERS, "accept": "text/html", "mcp-protocol-version": "1999-01-01"},
    ],
    ids=["content-type", "accept"],
)
async def test_every_4xx_has_a_json_body(headers: dict[str, str]) -> None:
    """The SDK's transport would answer these with a plain-text or empty 4xx; the edge answers in JSON."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    async with gateway_client() as (client, *_):
        r = await client.post("/mcp/all", content=body, headers=headers)
        assert 400 <= r.status_code < 500
        check_response(r)
