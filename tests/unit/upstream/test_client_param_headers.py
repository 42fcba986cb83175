"""SEP-2243 upstream: a tool call to a 2026-07-28 upstream carries an Mcp-Param-* header for each
``x-mcp-header`` argument it sends (Base64-wrapped when not plain ASCII), beside Mcp-Method and
Mcp-Name; a handshake-era upstream, which knows no such headers, is sent none."""

from __future__ import annotations

from foldgate.model.param_headers import header_params
from foldgate.upstream.client import _send_call
from tests.unit.upstream.test_plain_session import Upstream, ok

SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "limit": {"type": "integer", "x-mcp-header": "Limit"},
        "q": {"type": "string"},
    },
}
PARAMS = header_params(SCHEMA)


async def test_a_modern_upstream_gets_the_declared_arguments_in_mcp_param_headers() -> None:
    up = Upstream(modern=True)
    up.answers["tools/call"] = lambda m, r: ok(m, {"content": [], "resultType": "complete"})
    session = up.session()
    await session.open()
    await _send_call(session, "t", {"region": "zürich", "limit": 3, "q": "x"}, PARAMS)
    _, msg, headers = up.seen[-1]
    assert msg is not None
    assert msg["params"]["arguments"] == {"region": "zürich", "limit": 3, "q": "x"}
    assert headers["mcp-param-region"] == "=?base64?esO8cmljaA==?="
    assert headers["mcp-param-limit"] == "3"
    assert headers["mcp-name"] == "t"
    await _send_call(session, "t", {"q": "x"}, PARAMS)  # absent arguments: no headers
    assert not any(k.startswith("mcp-param-") for k in up.seen[-1][2])
    await session.aclose()


async def test_a_handshake_era_upstream_gets_no_mcp_param_headers() -> None:
    up = Upstream()
    up.answers["tools/call"] = lambda m, r: ok(m, {"content": []})
    session = up.session()
    await session.open()
    await _send_call(session, "t", {"region": "eu", "limit": 3}, PARAMS)
    assert not any(k.startswith("mcp-param-") for k in up.seen[-1][2])
    await session.aclose()
