"""Reading answers off the wire: SSE framing as the spec defines it, and hostile streams bounded."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from foldgate.upstream import wire
from foldgate.upstream.wire import WireError, parse_message, sse_messages


async def chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def messages(*parts: bytes) -> list[dict[str, object]]:
    return [m async for m in sse_messages(chunks(*parts))]


async def test_events_split_anywhere_across_chunks_and_line_endings_are_read_whole() -> None:
    stream = b'event: message\r\nid: 7\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: {"b": 2}\r\r: comment\n\n'
    for cut in range(1, len(stream)):
        assert await messages(stream[:cut], stream[cut:]) == [{"a": 1}, {"b": 2}], cut


@pytest.mark.parametrize("seed", range(30))
async def test_any_line_endings_cut_into_any_chunks_read_the_same(seed: int) -> None:
    rng = random.Random(seed)
    sent, stream = [], b""
    for i in range(rng.randrange(1, 6)):
        end = rng.choice([b"\n", b"\r", b"\r\n"])
        lines = [b": note", b"event: message", b"id: %d" % i] if rng.random() < 0.5 else []
        text = "x" * rng.randrange(0, 50)
        lines += [b'data: {"n": %d,' % i, b'data: "s": "%s"}' % text.encode()]
        sent.append({"n": i, "s": text})
        stream += b"".join(line + end for line in lines) + end
    # A lone \r at the very end may be half of a \r\n that never came: the stream is held to end on \n.
    stream += b"\n" if stream.endswith(b"\r") else b""
    cuts = sorted(rng.sample(range(1, len(stream)), min(len(stream) - 1, rng.randrange(1, 12))))
    parts = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert await messages(*parts) == await messages(stream) == sent
    assert await messages(*(stream[i : i + 1] for i in range(len(stream)))) == sent


async def test_priming_events_comments_and_other_event_types_are_skipped() -> None:
    stream = b'id: 1\ndata:\n\n: keep-alive\n\nevent: ping\ndata: {"x": 1}\n\ndata: {"ok": true}\n\n'
    assert await messages(stream) == [{"ok": True}]


async def test_an_event_the_stream_ends_inside_is_dropped() -> None:
    assert await messages(b'data: {"a": 1}\n\ndata: {"b": 2}\n') == [{"a": 1}]


@pytest.mark.parametrize("data", [b"not json", b"[1, 2]", b'"text"'])
async def test_an_event_that_is_not_a_json_object_is_a_wire_error(data: bytes) -> None:
    with pytest.raises(WireError):
        await messages(b"data: " + data + b"\n\n")


async def test_an_endless_line_is_refused_at_the_message_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "MAX_MESSAGE_BYTES", 1000)
    with pytest.raises(WireError, match="longer than 1000"):
        await messages(*([b"x" * 300] * 10))


async def test_an_oversized_event_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "MAX_MESSAGE_BYTES", 1000)
    with pytest.raises(WireError, match="larger than 1000"):
        await messages(b"data: " + b"1" * 400 + b"\n" * 1 + (b"data: " + b"1" * 400 + b"\n") * 2 + b"\n")


async def test_a_stream_past_its_bounds_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "MAX_STREAM_BYTES", 10_000)
    with pytest.raises(WireError, match="longer than 10000"):
        await messages(*([b'data: {"method": "notifications/progress"}\n\n'] * 1000))
    monkeypatch.setattr(wire, "MAX_STREAM_BYTES", 10**9)
    monkeypatch.setattr(wire, "MAX_EVENTS", 5)
    with pytest.raises(WireError, match="more than 5 events"):
        await messages(*([b'data: {"method": "notifications/progress"}\n\n'] * 6))


def test_a_message_must_be_a_json_object() -> None:
    assert parse_message(b'{"id": 1}', "here") == {"id": 1}
    with pytest.raises(WireError, match="here: not a JSON-RPC message object"):
        parse_message(b"[]", "here")
    with pytest.raises(WireError, match="here: not JSON"):
        parse_message(b"[" * 100_000, "here")
