"""DNS-rebinding protection: every loopback spelling (any port) is one machine when serving on
loopback; foreign Hosts and Origins get a JSON 403; configured public hosts in the cloud."""

from __future__ import annotations

import pytest

from foldgate.config.settings import Settings
from foldgate.edge.hosts import HostPolicy, is_loopback
from tests.gateway_fixture import gateway_client

LIST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
CALL = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
# What `foldgate serve --host 127.0.0.1` passes.
LOCAL = ["localhost", "127.0.0.1"]


@pytest.mark.parametrize("name", ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "app.localhost"])
def test_loopback_names(name: str) -> None:
    assert is_loopback(name)


@pytest.mark.parametrize("name", ["localhost.evil.com", "128.0.0.1", "0.0.0.0", "::2", "example.com", ""])
def test_not_loopback_names(name: str) -> None:
    assert not is_loopback(name)


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8080", "http://localhost:8080"),  # the conformance suite's dns-rebinding case
        ("localhost:3000", "http://127.0.0.1:5173"),
        ("[::1]:8080", "https://[::1]"),
        ("127.0.0.1", None),
        ("localhost:1", "http://localhost"),
    ],
)
async def test_every_loopback_spelling_is_accepted_on_loopback(host: str, origin: str | None) -> None:
    headers = HEADERS | {"host": host} | ({"origin": origin} if origin else {})
    async with gateway_client(allowed_hosts=LOCAL) as (client, *_):
        for body in (LIST, CALL):  # the tools/list fast path and the SDK path alike
            r = await client.post("/mcp/all", content=body, headers=headers)
            assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("host", "origin", "why"),
    [
        ("evil.example", None, "Host"),
        ("localhost.evil.example:8080", None, "Host"),
        ("127.0.0.1:8080", "http://evil.example", "Origin"),
        ("127.0.0.1:8080", "http://localhost.evil.example:8080", "Origin"),
        ("127.0.0.1:8080", "null", "Origin"),
        ("127.0.0.1:8080", "file://localhost", "Origin"),
        ("user@localhost", None, "Host"),
    ],
)
async def test_foreign_hosts_and_origins_are_a_json_403(host: str, origin: str | None, why: str) -> None:
    headers = HEADERS | {"host": host} | ({"origin": origin} if origin else {})
    async with gateway_client(allowed_hosts=LOCAL) as (client, *_):
        for body in (LIST, CALL):
            r = await client.post("/mcp/all", content=body, headers=headers)
            assert r.status_code == 403
            assert r.json()["error"]["message"] == f"{why} header not allowed"


async def test_cloud_public_hosts_admit_only_themselves() -> None:
    async with gateway_client(allowed_hosts=["mcp.example.com"]) as (client, *_):
        ok = HEADERS | {"host": "mcp.example.com", "origin": "https://mcp.example.com"}
        assert (await client.post("/mcp/all", content=LIST, headers=ok)).status_code == 200
        for host in ("a1b2c3.execute-api.us-east-1.amazonaws.com", "localhost"):
            r = await client.post("/mcp/all", content=LIST, headers=HEADERS | {"host": host})
            assert r.status_code == 403


async def test_no_hosts_configured_means_no_host_check() -> None:
    async with gateway_client() as (client, *_):
        r = await client.post("/mcp/all", content=LIST, headers=HEADERS | {"host": "anything.example"})
        assert r.status_code == 200


def test_entries_with_a_port_admit_only_that_port() -> None:
    policy = HostPolicy(["mcp.example.com:8443", "::1"])
    assert policy.loopback
    assert policy.allows_authority("mcp.example.com:8443")
    assert not policy.allows_authority("mcp.example.com")
    assert not policy.allows_authority("mcp.example.com:443")
    assert policy.allows_authority("localhost:9")
    with pytest.raises(ValueError, match="not a host"):
        HostPolicy(["http://x/y"])


def test_public_hosts_setting_reads_a_comma_separated_variable() -> None:
    settings = Settings.from_env({"FOLDGATE_PUBLIC_HOSTS": " mcp.example.com, api.example.com ,"})
    assert settings.public_hosts == ["mcp.example.com", "api.example.com"]
    assert Settings.from_env({}).public_hosts == []


def test_kept_verdicts_stay_right_and_bounded() -> None:
    policy = HostPolicy(["127.0.0.1", "gw.example.com:8443"])
    for _ in range(2):  # the second round answers from the kept verdicts
        assert policy.allows_authority("localhost:9000")
        assert policy.allows_authority("gw.example.com:8443")
        assert not policy.allows_authority("gw.example.com:8444")
        assert not policy.allows_authority("evil.example")
    for i in range(1000):
        assert not policy.allows_authority(f"invented-{i}.example")
    assert len(policy._verdicts) <= 256
    assert policy.allows_authority("127.0.0.1:1")
    assert not policy.allows_authority("invented-999.example")
