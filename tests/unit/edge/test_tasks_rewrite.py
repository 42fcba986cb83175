"""The task edge's answer rewrite (issue 28): only a 200 JSON-RPC result is ever replaced, with its
Content-Length recomputed; anything else (an HTTP error, an event stream, a JSON-RPC error, a body
that is not JSON) goes out byte for byte; and an answer nothing will rewrite is never buffered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.types import Message

from foldgate.edge.tasks import answer_handles, capabilities_rewrite


class Sink:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def __call__(self, message: Message) -> None:
        self.messages.append(message)

    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")

    def header(self, name: bytes) -> bytes | None:
        return dict(self.messages[0]["headers"]).get(name)


async def answer(send: Any, status: int, kind: bytes, body: bytes, *, chunks: int = 1) -> None:
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    step = max(1, len(body) // chunks)
    parts = [body[i : i + step] for i in range(0, len(body), step)] or [b""]
    for i, part in enumerate(parts):
        await send({"type": "http.response.body", "body": part, "more_body": i < len(parts) - 1})


INIT = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}}


async def test_a_result_is_rewritten_with_its_length() -> None:
    sink = Sink()
    body = json.dumps(INIT).encode()
    await answer(
        answer_handles(sink, capabilities_rewrite("initialize")), 200, b"application/json", body, chunks=3
    )
    rewritten = json.loads(sink.body())
    assert rewritten["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert sink.header(b"content-length") == str(len(sink.body())).encode()


@pytest.mark.parametrize(
    ("status", "kind", "body"),
    [
        (400, b"application/json", json.dumps(INIT).encode()),
        (200, b"text/event-stream", b"event: message\ndata: {}\n\n"),
        (200, b"application/json", b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}'),
        (200, b"application/json", b"not json"),
        (
            200,
            b"application/json",
            json.dumps({**INIT, "result": {"protocolVersion": "2025-06-18"}}).encode(),
        ),
    ],
)
async def test_anything_else_passes_unchanged(status: int, kind: bytes, body: bytes) -> None:
    sink = Sink()
    await answer(answer_handles(sink, capabilities_rewrite("initialize")), status, kind, body)
    assert sink.body() == body
    assert sink.messages[0]["status"] == status


async def test_an_answer_nothing_will_rewrite_streams_through_unbuffered() -> None:
    sink = Sink()
    send = answer_handles(sink, capabilities_rewrite("initialize"), wanted=lambda: False)
    await answer(send, 200, b"application/json", json.dumps(INIT).encode(), chunks=3)
    assert len([m for m in sink.messages if m["type"] == "http.response.body"]) > 1  # as sent, not joined
    assert "tasks" not in json.loads(sink.body())["result"]["capabilities"]
