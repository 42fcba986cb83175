"""Authorization-server documents are fetched through the SSRF guard: private and metadata-service
addresses are refused unless the deployment allows private upstreams (and metadata never is)."""

from __future__ import annotations

import pytest

from foldgate.errors import UpstreamError
from foldgate.upstream.oauth.fetch import fetch_json


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:1/keys", "http://10.0.0.1/.well-known/openid-configuration", "http://[::1]:1/keys"],
)
async def test_private_addresses_are_refused_in_the_cloud(url: str) -> None:
    with pytest.raises(UpstreamError, match="refused"):
        await fetch_json(url, allow_private=False)


async def test_the_metadata_service_is_refused_even_locally() -> None:
    with pytest.raises(UpstreamError, match="metadata service"):
        await fetch_json("http://169.254.169.254/latest/meta-data", allow_private=True)


async def test_an_unreachable_allowed_host_is_an_upstream_error() -> None:
    with pytest.raises(UpstreamError, match="unreachable"):
        await fetch_json("http://127.0.0.1:1/keys", allow_private=True)
