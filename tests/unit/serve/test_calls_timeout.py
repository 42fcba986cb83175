"""An upstream timeout reaches the agent as a tool error it can act on (issue 24, item 10): the
``upstream_timeout`` type, the bound that ended the wait (``timeout_s``) and what to do (``hint``),
all set by foldgate's upstream client, never taken from the upstream."""

from __future__ import annotations

from foldgate.config.source import StaticConfigSource
from foldgate.errors import UpstreamError, UpstreamTimeoutError
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import DEADLINE_HINT
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools
from tests.helpers import error_of


def gateway(upstream: RecordingUpstream) -> Gateway:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    configs = StaticConfigSource({"default": demo_config(direct_tool_response_mode="full")})
    return Gateway(store, configs, upstream, catalog_ttl=60)


async def test_a_timed_out_call_carries_the_bound_and_the_hint() -> None:
    upstream = RecordingUpstream()
    upstream.fail["find_contact"] = UpstreamTimeoutError(
        "crm: find_contact did not answer within 1.5s, the time this request had left",
        timeout_s=1.5,
        hint=DEADLINE_HINT,
    )
    gw = gateway(upstream)
    result = await gw.call("default", "crm__find_contact", {"query": "ada"}, "direct")
    err = error_of(result)
    assert err["error_type"] == "upstream_timeout"
    assert err["tool"] == "crm__find_contact"
    assert err["timeout_s"] == 1.5
    assert err["hint"] == DEADLINE_HINT
    await gw.aclose()


async def test_other_upstream_errors_carry_no_timeout_fields() -> None:
    upstream = RecordingUpstream()
    upstream.fail["find_contact"] = UpstreamError("crm: find_contact failed", timeout_s=9, hint="x")
    gw = gateway(upstream)
    err = error_of(await gw.call("default", "crm__find_contact", {"query": "ada"}, "direct"))
    assert err["error_type"] == "upstream_error"
    assert "timeout_s" not in err
    assert "hint" not in err
    await gw.aclose()
