"""A server's ``protocol`` setting: a pinned session speaks exactly that version or fails naming it; a
"legacy" session (a 2025-era client's relaying call) skips the modern probe; the pool remembers an
upstream that refuses the handshake; the setting's versions are the session's."""

from __future__ import annotations

import typing

import pytest

from foldgate.config.tenant import ProtocolSetting, ServerConfig
from foldgate.errors import UpstreamError
from foldgate.upstream.plain_session import HANDSHAKE_VERSIONS, MODERN_VERSIONS
from foldgate.upstream.pool import SessionKey, SessionPool, _Era
from foldgate.upstream.relay import Relay, handshake_relay
from tests.unit.upstream.test_plain_session import Upstream, error, ok


def test_the_setting_names_every_version_the_session_speaks() -> None:
    assert typing.get_args(ProtocolSetting) == ("auto", *HANDSHAKE_VERSIONS, *MODERN_VERSIONS)
    with pytest.raises(ValueError, match="protocol"):
        ServerConfig.model_validate({"name": "up", "url": "http://x/mcp", "protocol": "2099-01-01"})


async def test_legacy_initialises_without_probing_even_a_modern_upstream() -> None:
    up = Upstream(modern=True)
    session = up.session()
    session.pinned = "legacy"
    await session.open()
    assert up.methods() == ["POST initialize", "POST notifications/initialized"]
    assert session.negotiated() == ("legacy", None)


async def test_a_pinned_handshake_version_is_offered_and_must_come_back() -> None:
    up = Upstream(version="2025-06-18")
    session = up.session()
    session.pinned = "2025-06-18"
    await session.open()
    assert up.seen[0][1]["params"]["protocolVersion"] == "2025-06-18"  # type: ignore[index]
    other = Upstream(version="2025-11-25")
    refused = other.session()
    refused.pinned = "2025-06-18"
    with pytest.raises(UpstreamError, match=r"pinned to 2025-06-18.*'2025-11-25'"):
        await refused.open()


async def test_pinned_to_2026_never_falls_back_to_the_handshake() -> None:
    up = Upstream(modern=True)
    session = up.session()
    session.pinned = "2026-07-28"
    await session.open()
    assert session.modern
    legacy = Upstream()  # answers server/discover with "method not found"
    refused = legacy.session()
    refused.pinned = "2026-07-28"
    with pytest.raises(UpstreamError, match="pinned to 2026-07-28"):
        await refused.open()
    assert "POST initialize" not in legacy.methods()


async def test_pinned_to_2026_a_remembered_discover_is_adopted_without_a_request() -> None:
    up = Upstream(modern=True)
    up.answers["server/discover"] = lambda m, r: error(m, -32603, "not again")
    discover = {"supportedVersions": ["2026-07-28"], "capabilities": {}}
    session = up.session(("2026-07-28", discover))
    session.pinned = "2026-07-28"
    await session.open()
    assert session.modern
    assert up.methods() == []
    up.answers["server/discover"] = lambda m, r: ok(
        m, {"supportedVersions": ["2027-01-01"], "capabilities": {}}
    )
    other = up.session()
    other.pinned = "2026-07-28"
    with pytest.raises(UpstreamError, match="does not list"):
        await other.open()


def test_a_session_key_carries_the_servers_protocol_or_the_calls_choice() -> None:
    cfg = ServerConfig.model_validate({"name": "up", "url": "http://x/mcp", "protocol": "2025-06-18"})
    assert SessionKey.of(cfg, {}).protocol == "2025-06-18"
    auto = ServerConfig.model_validate({"name": "up", "url": "http://x/mcp"})
    assert SessionKey.of(auto, {}).protocol == "auto"
    assert SessionKey.of(auto, {}, protocol="legacy") != SessionKey.of(auto, {})


def test_the_pool_stops_trying_the_handshake_where_it_was_refused_or_is_already_spoken() -> None:
    pool = SessionPool(allow_private=True)
    key = SessionKey("up", "http://x/mcp", ())
    assert pool.may_speak_handshake(key)
    pool._eras[key] = _Era("legacy")  # its auto session is handshake-era already
    assert not pool.may_speak_handshake(key)
    other = SessionKey("other", "http://y/mcp", ())
    pool._eras[other] = _Era("2026-07-28", {})
    assert pool.may_speak_handshake(other)
    pool.refuses_handshake(other)
    assert not pool.may_speak_handshake(other)


async def _ask(method: str, params: dict[str, typing.Any]) -> dict[str, typing.Any]:
    return {"result": {}}


def test_only_a_2025_era_client_that_takes_input_on_its_stream_wants_the_handshake() -> None:
    assert handshake_relay(Relay(ask=_ask, asks=frozenset({"sampling/createMessage"})))
    assert not handshake_relay(None)
    assert not handshake_relay(Relay())  # no stream (the Lambda path), or nothing declared
    assert not handshake_relay(Relay(ask=_ask, asks=frozenset()))
    # A 2026-07-28 client takes input_required results itself: the upstream keeps its newest version.
    both = Relay(ask=_ask, asks=frozenset({"sampling/createMessage"}), input_required=frozenset({"x"}))
    assert not handshake_relay(both)
