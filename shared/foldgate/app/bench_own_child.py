"""The measuring process of ``foldgate bench call --own-cpu`` (:mod:`foldgate.dev.bench.call_own`).

Run as a script with another checkout's ``shared/`` (or this one's) first on ``PYTHONPATH``: it wires a
gateway as ``foldgate serve`` does (``build_local``), indexes the upstream given, has the upstream
client answer at once and times raw ASGI ``tools/call`` requests in thread CPU; prints p50/p95 (ms) as
JSON. Its imports are stdlib at the top, so it runs against either checkout's package.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import MutableMapping
from typing import Any

__all__: list[str] = []

_BODY = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "everything__echo", "arguments": {"message": "bench"}},
}
_WARM = 200


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _child(upstream: str, requests: int) -> dict[str, float]:
    """In the measuring process: wire, index, answer at once upstream, time raw ASGI requests."""
    # This checkout's or another's package, whichever PYTHONPATH names first (the point of the child).
    from foldgate.app.local import build_local
    from foldgate.config.settings import Settings
    from foldgate.config.source import StaticConfigSource
    from foldgate.config.tenant import parse_tenant_config

    configs = StaticConfigSource(
        {"default": parse_tenant_config({"servers": [{"name": "everything", "url": upstream}]})}
    )
    local = build_local(configs, Settings.from_env(), allowed_hosts=["localhost", "127.0.0.1"])
    await local.index_all()

    async def instant(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "Echo: bench"}]}

    local.gateway.caller.upstream.call_tool = instant  # type: ignore[method-assign]
    # What `foldgate serve` runs (a checkout from before LocalGateway.asgi runs its app).
    app = getattr(local, "asgi", local.app)
    body = json.dumps(_BODY).encode()
    headers = [
        (b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"), (b"mcp-protocol-version", b"2025-11-25"),
        (b"content-length", str(len(body)).encode()),
    ]  # fmt: skip
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/mcp/all", "raw_path": b"/mcp/all", "query_string": b"",
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000),
    }  # fmt: skip

    async def one() -> list[dict[str, Any]]:
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # no disconnect while the answer is written
            return {"type": "http.disconnect"}

        out: list[dict[str, Any]] = []

        async def send(message: MutableMapping[str, Any]) -> None:
            out.append(dict(message))

        await app(dict(scope), receive, send)
        return out

    answer = await one()
    if answer[0].get("status") != 200 or b"Echo: bench" not in answer[-1].get("body", b""):
        raise RuntimeError(f"the in-process call failed: {str(answer)[:300]}")
    for _ in range(_WARM):
        await one()
    samples = []
    for _ in range(requests):
        started = time.thread_time()
        await one()
        samples.append((time.thread_time() - started) * 1000)
    return {"p50_ms": statistics.median(samples), "p95_ms": _pct(samples, 0.95)}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_child(sys.argv[1], int(sys.argv[2])))))
