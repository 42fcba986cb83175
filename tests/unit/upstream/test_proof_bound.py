"""A ProofBound value is the header string everywhere a string is expected (compared, pooled, sent),
and its flow is what the session's HTTP clients run per request: the pool hands it each request."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import httpx2

from foldgate.upstream.pool import _current_authorization
from foldgate.upstream.proof_bound import ProofBound


class Counting(ProofBound):
    """Stamps each request with a number: a proof made per request, not per session."""

    def flow(self, request: Any) -> Generator[Any, Any, None]:
        seen.append(request.method)
        request.headers["authorization"] = str(self)
        request.headers["x-proof"] = str(len(seen))
        yield request


seen: list[str] = []


def test_it_is_the_header_string() -> None:
    value = Counting("DPoP tok")
    assert value == "DPoP tok"
    assert value.partition(" ")[2] == "tok"


def test_the_pooled_sessions_auth_runs_the_flow_for_every_request() -> None:
    class Pooled:
        authorization: str | None = Counting("DPoP tok")

    got: list[tuple[str, str | None, str | None]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        got.append((request.method, request.headers.get("authorization"), request.headers.get("x-proof")))
        return httpx2.Response(200)

    async def run() -> None:
        transport = httpx2.MockTransport(answer)
        async with httpx2.AsyncClient(transport=transport, auth=_current_authorization(Pooled())) as http:  # type: ignore[arg-type]
            await http.post("http://upstream.test/mcp", content=b"{}")
            await http.get("http://upstream.test/mcp")
            await http.delete("http://upstream.test/mcp")

    seen.clear()
    asyncio.run(run())
    assert got == [("POST", "DPoP tok", "1"), ("GET", "DPoP tok", "2"), ("DELETE", "DPoP tok", "3")]
