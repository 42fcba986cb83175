"""Endpoints an authorization server's metadata names are held to the upstream rule: https, or http on
loopback only where private upstreams are allowed; no credentials in the URL, nothing that is not a URL."""

from __future__ import annotations

import pytest

from foldgate.errors import UpstreamError
from foldgate.upstream.oauth.http import checked_endpoint


def test_https_passes() -> None:
    assert checked_endpoint("https://as.example.com/token", "token_endpoint", allow_loopback=False)


def test_loopback_http_only_when_allowed() -> None:
    url = "http://127.0.0.1:9000/token"
    assert checked_endpoint(url, "token_endpoint", allow_loopback=True) == url
    with pytest.raises(UpstreamError, match="not an https URL"):
        checked_endpoint(url, "token_endpoint", allow_loopback=False)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("http://as.example.com/token", "not an https URL"),
        ("https://user:pw@as.example.com/token", "not a plain URL"),
        ("javascript:alert(1)", "not a plain URL"),
        ("", "no usable"),
        (None, "no usable"),
        (["https://as.example.com"], "no usable"),
        ("https://" + "a" * 3000, "no usable"),
    ],
)
def test_everything_else_is_refused(value: object, why: str) -> None:
    with pytest.raises(UpstreamError, match=why):
        checked_endpoint(value, "token_endpoint", allow_loopback=True)
