"""foldgate.app.mcp_stream reads the invocation's deadline from the Lambda Web Adapter's
x-amzn-lambda-context header, so a request behind the adapter keeps its deadline (and is known to
run on Lambda: no requests for input on its stream)."""

from __future__ import annotations

import json
import time

from foldgate.app.mcp_stream import InvocationContext, _deadline_ms


def _scope(value: bytes | None) -> dict[str, object]:
    headers = [(b"host", b"x")] + ([(b"x-amzn-lambda-context", value)] if value is not None else [])
    return {"type": "http", "headers": headers}


def test_the_adapters_deadline_is_read() -> None:
    deadline = time.time() * 1000 + 12_000
    assert _deadline_ms(_scope(json.dumps({"deadline": deadline}).encode())) == deadline
    left = InvocationContext(deadline, 29).get_remaining_time_in_millis()
    assert 10_000 < left <= 12_000


def test_without_a_readable_deadline_the_functions_timeout_bounds_the_request() -> None:
    for value in (None, b"not json", b'{"deadline": "soon"}', b'{"deadline": true}', b"[1]"):
        assert _deadline_ms(_scope(value)) is None
    left = InvocationContext(None, 29).get_remaining_time_in_millis()
    assert 28_000 < left <= 29_000
