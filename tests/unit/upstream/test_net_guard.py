"""The upstream URL guard: every spelling of a forbidden address is refused, public ones pass."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import httpcore2
import pytest

from foldgate.errors import UpstreamError
from foldgate.upstream import net_guard
from foldgate.upstream.net_guard import check_upstream_url, check_upstream_url_async, forbidden_reason

META = int(ipaddress.IPv4Address("169.254.169.254"))

# Every spelling below names an EC2/ECS metadata endpoint; none is allowed even with allow_private.
METADATA_URLS = [
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "https://169.254.169.254:443/",
    "http://169.254.169.254:8080/x",
    "http://169.254.170.2/v2/credentials/abc",
    f"http://{META}/",  # decimal
    f"http://{META:#x}/",  # hex, one part
    "http://0xa9.0xfe.0xa9.0xfe/",  # hex, dotted
    "http://0251.0376.0251.0376/",  # octal, dotted (the client refuses to parse it: also an error)
    "http://169.254.43518/",  # a.b.c form
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://[FD00:EC2:0:0:0:0:0:254]/",
    "http://[::ffff:169.254.169.254]/",  # IPv4-mapped
    "http://[::ffff:a9fe:a9fe]/",
    "http://[::169.254.169.254]/",  # IPv4-compatible
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64
    "http://[2002:a9fe:a9fe::1]/",  # 6to4
    "http://169.254.1.1/",  # the rest of link-local
]

ALWAYS_FORBIDDEN = [
    "http://0.0.0.0/",
    "http://0/",
    "http://0.1.2.3/",
    "http://[::]/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    "http://[febf:ffff::1]/",
    "http://224.0.0.1/",
    "http://239.255.255.250/",
    "http://[ff02::1]/",
    "http://240.0.0.1/",
    "http://255.255.255.255/",
    "http://[fec0::1]/",
    "http://[::ffff:0.0.0.0]/",
]

PRIVATE = [
    "http://127.0.0.1:8080/mcp",
    "http://127.1/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://127.255.255.254/",
    "http://localhost/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://10.0.0.1/",
    "http://10.255.255.255/",
    "http://172.16.0.1/",
    "http://172.31.255.255/",
    "http://192.168.1.1/",
    "http://[::ffff:192.168.1.1]/",
    "http://[fc00::1]/",
    "http://[fd12:3456::1]/",
    "http://100.64.0.1/",
    "http://100.127.255.254/",
    "http://[64:ff9b::a00:1]/",  # NAT64 of 10.0.0.1
    "http://198.18.0.1/",
]

PUBLIC = [
    "http://8.8.8.8/mcp",
    "https://1.1.1.1:8443/mcp",
    "http://172.32.0.1/",
    "http://172.15.255.255/",
    "http://100.128.0.1/",
    "http://192.169.0.1/",
    "http://[2606:4700:4700::1111]/",
    "http://[::ffff:8.8.8.8]/",
    "http://[64:ff9b::808:808]/",
]

FAKE_DNS: dict[str, list[str]] = {
    "public.example.test": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "meta.evil.test": ["169.254.169.254"],
    "meta6.evil.test": ["fd00:ec2::254"],
    "mapped.evil.test": ["::ffff:169.254.170.2"],
    "internal.evil.test": ["10.1.2.3"],
    "mixed.evil.test": ["93.184.216.34", "10.0.0.5"],
    "mixed-meta.evil.test": ["93.184.216.34", "2606:4700::1", "169.254.169.254"],
    "empty.test": [],
}


def _infos(addresses: list[str], port: int) -> list[Any]:
    out: list[Any] = []
    for a in addresses:
        if ":" in a:
            out.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0)))
        else:
            out.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)))
    return out


class FakeResolver:
    """getaddrinfo answering FAKE_DNS names, failing *.invalid, delegating literals; counts lookups."""

    def __init__(self) -> None:
        self.real = socket.getaddrinfo
        self.lookups: list[str] = []
        self.answers: dict[str, list[list[str]]] = {}  # host -> successive answers (rebinding)

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        self.lookups.append(host)
        if host in self.answers:
            queue = self.answers[host]
            return _infos(queue.pop(0) if len(queue) > 1 else queue[0], port)
        if host in FAKE_DNS:
            return _infos(FAKE_DNS[host], port)
        if str(host).endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known (dns 10.9.8.7)")
        # Literal addresses and localhost: the system resolver answers without the network.
        return self.real(host, port, *args, **kwargs)


@pytest.fixture(autouse=True)
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeResolver]:
    fake = FakeResolver()
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    net_guard.clear_cache()
    yield fake
    net_guard.clear_cache()


def _refused(url: str, *, allow_private: bool) -> str:
    with pytest.raises(UpstreamError) as info:
        check_upstream_url(url, allow_private=allow_private)
    return info.value.message


@pytest.mark.parametrize("url", METADATA_URLS)
@pytest.mark.parametrize("allow_private", [False, True])
def test_metadata_endpoints_are_refused_in_every_spelling(url: str, allow_private: bool) -> None:
    message = _refused(url, allow_private=allow_private)
    if "169.254.169.254" not in url:  # the resolved address is not disclosed, only the host as given
        assert "169.254.169.254" not in message
    # Never the path (which may name credentials) in the message.
    assert "security-credentials" not in message
    assert "meta-data" not in message


def test_metadata_messages_say_why() -> None:
    assert "cloud metadata" in _refused("http://169.254.169.254/", allow_private=True)
    assert "cloud metadata" in _refused("http://[fd00:ec2::254]/", allow_private=True)
    message = _refused("http://169.254.170.2/", allow_private=False)
    assert "cloud metadata" in message
    assert "private upstreams" not in message  # not a matter of the setting
    assert "link-local" in _refused("http://[fe80::1]/", allow_private=True)


@pytest.mark.parametrize("url", ALWAYS_FORBIDDEN)
@pytest.mark.parametrize("allow_private", [False, True])
def test_unspecified_link_local_multicast_reserved_are_always_refused(url: str, allow_private: bool) -> None:
    _refused(url, allow_private=allow_private)


@pytest.mark.parametrize("url", PRIVATE)
def test_private_loopback_and_cgnat_depend_on_allow_private(url: str) -> None:
    message = _refused(url, allow_private=False)
    assert "private upstreams are not allowed" in message
    check_upstream_url(url, allow_private=True)


@pytest.mark.parametrize("url", PUBLIC)
@pytest.mark.parametrize("allow_private", [False, True])
def test_public_addresses_pass(url: str, allow_private: bool) -> None:
    check_upstream_url(url, allow_private=allow_private)


def test_reasons_name_the_kind_of_address() -> None:
    assert forbidden_reason("127.0.0.1", allow_private=False) == "a loopback address"
    assert forbidden_reason("10.0.0.1", allow_private=False) == "a private address"
    assert forbidden_reason("100.64.0.1", allow_private=False) == "a shared (CGNAT) address"
    assert forbidden_reason("fe80::1%eth0", allow_private=True) == "a link-local address"
    assert forbidden_reason("::", allow_private=True) == "an unspecified address"
    assert forbidden_reason("ff02::1", allow_private=True) == "a multicast address"
    assert forbidden_reason("240.0.0.1", allow_private=True) == "a reserved address"
    assert forbidden_reason("not-an-ip", allow_private=True) == "an unparseable address"
    assert forbidden_reason("127.0.0.1", allow_private=True) is None
    assert forbidden_reason("93.184.216.34", allow_private=False) is None


def test_names_resolving_to_forbidden_addresses_are_refused() -> None:
    for host in ("meta.evil.test", "meta6.evil.test", "mapped.evil.test"):
        message = _refused(f"https://{host}/mcp", allow_private=True)
        assert host in message
        assert "cloud metadata" in message
        # The resolved address is not disclosed to whoever configured the name.
        assert "169.254" not in message
        assert "fd00" not in message
    message = _refused("http://internal.evil.test/mcp", allow_private=False)
    assert "a private address" in message
    assert "10.1.2.3" not in message
    check_upstream_url("http://internal.evil.test/mcp", allow_private=True)
    check_upstream_url("http://public.example.test/mcp", allow_private=False)


def test_any_forbidden_address_among_several_refuses() -> None:
    _refused("http://mixed.evil.test/", allow_private=False)
    check_upstream_url("http://mixed.evil.test/", allow_private=True)
    _refused("http://mixed-meta.evil.test/", allow_private=True)


def test_unresolvable_hosts_are_refused_without_resolver_details() -> None:
    message = _refused("http://nowhere.invalid/mcp", allow_private=True)
    assert "cannot be resolved" in message
    assert "10.9.8.7" not in message
    assert "resolves to no address" in _refused("http://empty.test/", allow_private=True)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "dict://127.0.0.1:11211/",
        "ws://example.com/mcp",
        "javascript:alert(1)",
        "//example.com/mcp",
        "example.com/mcp",
        "http:///mcp",
        "http://",
        "",
        "http://exa mple.com/",
        "http://[::1/",
    ],
)
def test_non_http_schemes_and_hostless_urls_are_refused(url: str) -> None:
    _refused(url, allow_private=True)


def test_messages_never_carry_credentials_or_query() -> None:
    url = "http://user:hunter2@meta.evil.test/mcp?token=s3cret#frag"
    message = _refused(url, allow_private=True)
    assert "hunter2" not in message
    assert "s3cret" not in message


def test_verdicts_are_cached_per_host_and_port(
    resolver: FakeResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(net_guard, "_now", lambda: clock[0])
    for _ in range(50):
        check_upstream_url("http://public.example.test/a", allow_private=False)
        check_upstream_url("http://public.example.test/b?x=1", allow_private=True)
    assert resolver.lookups == ["public.example.test"]
    check_upstream_url("http://public.example.test:8080/", allow_private=False)
    assert resolver.lookups.count("public.example.test") == 2  # another port, another entry
    clock[0] += net_guard.CACHE_SECONDS + 1
    check_upstream_url("http://public.example.test/a", allow_private=False)
    assert resolver.lookups.count("public.example.test") == 3
    # A refusal is cached too: a hostile config cannot make every request cost a DNS query.
    for _ in range(5):
        _refused("http://meta.evil.test/", allow_private=True)
    assert resolver.lookups.count("meta.evil.test") == 1


def test_resolution_failures_are_retried_sooner(
    resolver: FakeResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [0.0]
    monkeypatch.setattr(net_guard, "_now", lambda: clock[0])
    _refused("http://nowhere.invalid/", allow_private=True)
    _refused("http://nowhere.invalid/", allow_private=True)
    assert resolver.lookups.count("nowhere.invalid") == 1
    clock[0] += net_guard.FAILURE_CACHE_SECONDS + 0.1
    _refused("http://nowhere.invalid/", allow_private=True)
    assert resolver.lookups.count("nowhere.invalid") == 2


def test_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(net_guard, "_MAX_CACHE_ENTRIES", 10)
    for port in range(1, 40):
        check_upstream_url(f"http://public.example.test:{port}/", allow_private=False)
    assert len(net_guard._cache) == 10


async def test_async_check_resolves_off_the_loop(resolver: FakeResolver) -> None:
    await check_upstream_url_async("http://public.example.test/mcp", allow_private=False)
    with pytest.raises(UpstreamError, match="cloud metadata"):
        await check_upstream_url_async("http://meta.evil.test/mcp", allow_private=True)
    with pytest.raises(UpstreamError, match="scheme"):
        await check_upstream_url_async("file:///etc/passwd", allow_private=True)
    assert resolver.lookups == ["public.example.test", "meta.evil.test"]


class RecordingBackend(httpcore2.AsyncNetworkBackend):
    """Stands in for the socket layer: records where it was asked to connect; can refuse some."""

    def __init__(self, refuse: set[str] | None = None) -> None:
        self.dialed: list[tuple[str, int]] = []
        self.refuse = refuse or set()

    async def connect_tcp(self, host: str, port: int, **kwargs: Any) -> httpcore2.AsyncNetworkStream:  # type: ignore[override]
        self.dialed.append((host, port))
        if host in self.refuse:
            raise httpcore2.ConnectError("connection refused")
        return httpcore2.AsyncNetworkStream()

    async def sleep(self, seconds: float) -> None:
        pass


async def test_connections_are_pinned_to_the_checked_addresses(resolver: FakeResolver) -> None:
    inner = RecordingBackend()
    backend = net_guard.guarded_backend(inner, allow_private=False)
    await backend.connect_tcp("public.example.test", 443, timeout=5)
    # The name is never handed to the socket layer, only an address the guard accepted.
    assert inner.dialed == [("93.184.216.34", 443)]
    with pytest.raises(httpcore2.ConnectError, match="cloud metadata"):
        await backend.connect_tcp("meta.evil.test", 80)
    with pytest.raises(httpcore2.ConnectError, match="private"):
        await backend.connect_tcp("127.0.0.1", 80)
    assert inner.dialed == [("93.184.216.34", 443)]


async def test_pinned_dial_falls_through_checked_addresses(resolver: FakeResolver) -> None:
    inner = RecordingBackend(refuse={"93.184.216.34"})
    backend = net_guard.guarded_backend(inner, allow_private=False)
    await backend.connect_tcp("public.example.test", 443)
    assert [h for h, _ in inner.dialed] == ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]
    inner.refuse = {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"}
    with pytest.raises(httpcore2.ConnectError, match="refused"):
        await backend.connect_tcp("public.example.test", 443)


async def test_dns_rebinding_never_reaches_the_rebound_address(
    resolver: FakeResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [0.0]
    monkeypatch.setattr(net_guard, "_now", lambda: clock[0])
    # TTL-0 rebinding: a public answer for the check, the metadata address for every later query.
    resolver.answers["rebind.evil.test"] = [["93.184.216.34"], ["169.254.169.254"]]
    await check_upstream_url_async("http://rebind.evil.test/mcp", allow_private=False)
    inner = RecordingBackend()
    backend = net_guard.guarded_backend(inner, allow_private=False)
    await backend.connect_tcp("rebind.evil.test", 80)
    assert inner.dialed == [("93.184.216.34", 80)]
    clock[0] += net_guard.CACHE_SECONDS + 1  # the next query returns the rebound answer
    with pytest.raises(httpcore2.ConnectError, match="cloud metadata"):
        await backend.connect_tcp("rebind.evil.test", 80)
    assert all(host != "169.254.169.254" for host, _ in inner.dialed)


async def test_guarded_client_pins_unless_a_proxy_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    async with net_guard.guarded_http_client({"x-a": "1"}, allow_private=False) as client:
        assert client.headers["x-a"] == "1"
        pool = client._transport._pool  # type: ignore[attr-defined]
        assert type(pool._network_backend).__name__ == "GuardedBackend"
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.test:3128")
    async with net_guard.guarded_http_client({}, allow_private=False) as client:
        pool = client._transport._pool  # type: ignore[attr-defined]
        assert type(pool._network_backend).__name__ != "GuardedBackend"
