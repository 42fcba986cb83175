"""serve/calls.py: an upstream error's text is logged bounded (the 5 MB message of a hostile upstream
was logged whole, twice, on main)."""

from __future__ import annotations

import logging

import pytest

from foldgate.errors import UpstreamError
from foldgate.model.bounded import MESSAGE_BYTES
from tests.gateway_fixture import RecordingUpstream
from tests.unit.serve.test_calls_timeout import gateway


async def test_a_huge_upstream_error_is_logged_bounded(caplog: pytest.LogCaptureFixture) -> None:
    upstream = RecordingUpstream()
    upstream.fail["find_contact"] = UpstreamError("crm: find_contact failed upstream: " + "E" * 5_000_000)
    gw = gateway(upstream)
    with caplog.at_level(logging.WARNING, logger="foldgate.serve.calls"):
        await gw.call("default", "crm__find_contact", {"query": "ada"}, "direct")
    [line] = [r.getMessage() for r in caplog.records if r.name == "foldgate.serve.calls"]
    assert len(line.encode()) < MESSAGE_BYTES + 100
    assert line.endswith("bytes cut)")
    await gw.aclose()
