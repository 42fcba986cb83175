"""The wire proxy's request labels: what `foldgate bench call` counts as handshakes and calls."""

from __future__ import annotations

import json

import pytest

from foldgate.dev.bench.wire_proxy import _label


@pytest.mark.parametrize(
    ("verb", "body", "label"),
    [
        ("POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, "POST tools/call"),
        ("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, "POST notifications/initialized"),
        ("POST", {"jsonrpc": "2.0", "id": 1, "result": {}}, "POST response"),
        ("POST", [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], "POST batch"),
        ("POST", {"jsonrpc": "2.0", "id": 1, "method": 7}, "POST response"),
    ],
)
def test_requests_are_labelled_by_verb_and_json_rpc_method(verb: str, body: object, label: str) -> None:
    assert _label(verb, json.dumps(body).encode()) == label


def test_bodiless_and_unparseable_requests_keep_their_verb() -> None:
    assert _label("GET", b"") == "GET"
    assert _label("DELETE", b"") == "DELETE"
    assert _label("POST", b"{not json") == "POST ?"
