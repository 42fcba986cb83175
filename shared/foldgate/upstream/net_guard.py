"""Refuse upstream URLs that point into the gateway's own network (SSRF guard).

Upstream URLs come from tenant configuration, so in a multi-tenant deployment they are hostile input:
a tenant could aim the indexer or the call path at the cloud metadata service (EC2/ECS credentials at
169.254.169.254 / 169.254.170.2 / fd00:ec2::254), at the VPC, or at the gateway's own loopback.
``check_upstream_url`` resolves the host with ``socket.getaddrinfo`` (so every spelling the resolver
accepts, from ``2130706433`` to ``0x7f.1`` to ``[::ffff:a9fe:a9fe]``, is judged by the address it
really names) and refuses the URL when ANY resolved address is forbidden:

* always: unspecified/"this network" (0.0.0.0/8, ::), link-local (169.254.0.0/16, fe80::/10, which
  covers the metadata endpoints), the AWS IPv6 metadata address fd00:ec2::254, multicast, reserved
  (240.0.0.0/4, broadcast, fec0::/10 and other never-routable blocks);
* unless ``allow_private``: loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), shared/CGNAT
  100.64/10, and every other special-purpose block that is not globally routable.

IPv6 addresses that embed an IPv4 address (IPv4-mapped, IPv4-compatible, 6to4, NAT64) are also judged
by the IPv4 address inside, because a dual-stack socket or a NAT64 gateway would reach it.

Verdicts are cached per (host, port) for ``CACHE_SECONDS`` so calling the guard per connection costs a
dictionary look-up, not a DNS query.

DNS rebinding: a check at resolution time alone cannot stop a name whose next answer differs (TTL 0).
``guarded_http_client`` therefore pins connections: its transport's network backend re-runs the guard
for the host and port it is asked to connect to and dials the checked addresses themselves, never the
name, so every TCP connection (redirects included) goes to an address that passed. TLS still verifies
the certificate against the URL's host name. Residual risk, documented rather than closed: when the
process environment configures an HTTP(S) proxy, connections are left to that proxy (as httpx would
do), which resolves the name itself; only the resolution-time check applies then.

Messages name the host and the kind of address refused, never the resolved address (which would tell
a tenant what is inside the network) nor the URL's path, query or credentials (which may carry secrets).
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldgate.errors import UpstreamError
from foldgate.model.address_rule import forbidden_reason
from foldgate.upstream.one_write import one_write_stream

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "CACHE_SECONDS",
    "check_upstream_url",
    "check_upstream_url_async",
    "checked_addresses",
    "clear_cache",
    "client_timeout",
    "forbidden_reason",
    "guarded_http_client",
    "proxied_by_environment",
]

log = logging.getLogger(__name__)

CACHE_SECONDS = 60.0
# A failed lookup is retried sooner: an upstream that is briefly unresolvable should come back quickly.
FAILURE_CACHE_SECONDS = 5.0
_MAX_CACHE_ENTRIES = 4096
# The cache's clock, a module attribute so tests can move time without touching the event loop's.
_now = time.monotonic

# The address rule itself (which blocks are refused, and why) is shared with the save-time config check.


@dataclass(frozen=True, slots=True)
class _Resolution:
    expires: float
    addresses: tuple[str, ...]
    failure: str | None


_cache: OrderedDict[tuple[str, int], _Resolution] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every cached resolution (tests; or after changing resolver configuration)."""
    with _cache_lock:
        _cache.clear()


def _cached(host: str, port: int) -> _Resolution | None:
    with _cache_lock:
        entry = _cache.get((host, port))
        if entry is None or entry.expires <= _now():
            return None
        return entry


def _resolve(host: str, port: int) -> _Resolution:
    """Look the host up (blocking) and cache the answer."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
        failure = None if addresses else "resolves to no address"
    except (OSError, UnicodeError, ValueError):
        # The resolver's own text may name internal DNS servers or search domains: keep it out.
        addresses, failure = (), "cannot be resolved"
    ttl = CACHE_SECONDS if failure is None else FAILURE_CACHE_SECONDS
    entry = _Resolution(_now() + ttl, addresses, failure)
    with _cache_lock:
        _cache[(host, port)] = entry
        _cache.move_to_end((host, port))
        while len(_cache) > _MAX_CACHE_ENTRIES:
            _cache.popitem(last=False)
    return entry


def _verdict(host: str, entry: _Resolution, allow_private: bool) -> tuple[str, ...]:
    """The addresses to dial, or UpstreamError naming the host and the kind of address refused."""
    if entry.failure is not None:
        raise UpstreamError(f"upstream host {host!r} {entry.failure}")
    for address in entry.addresses:
        why = _forbidden(address, allow_private)
        if why is not None:
            # Say when the deployment's setting is the reason, so an operator knows what to change.
            by_setting = not allow_private and forbidden_reason(address, allow_private=True) is None
            raise UpstreamError(
                f"upstream host {host!r} is refused: it resolves to {why}"
                + (" (private upstreams are not allowed here)" if by_setting else "")
            )
    return entry.addresses


@functools.lru_cache(maxsize=1024)
def _forbidden(address: str, allow_private: bool) -> str | None:
    # The rule is a pure function of the address: judged once per address, not on every call.
    return forbidden_reason(address, allow_private=allow_private)


@functools.lru_cache(maxsize=1024)
def _target(url: str) -> tuple[str, int]:
    """(host, port) of an upstream URL, parsed the way the HTTP client will parse it (kept per URL:
    the call path checks its upstream's URL on every call; a URL that fails is parsed again)."""
    import httpx2  # the same parser as the client, so no parser-differential bypass

    try:
        parsed = httpx2.URL(url)
    except Exception as exc:  # httpx2.InvalidURL and friends; the URL itself may hold secrets
        raise UpstreamError("upstream URL is not a valid URL") from exc
    if parsed.scheme not in ("http", "https"):
        raise UpstreamError(f"upstream URL scheme {parsed.scheme!r} is not allowed (use http or https)")
    # The ASCII (IDNA) form is what the connection pool hands the network backend: same cache key,
    # and no second IDNA codec (Python's IDNA 2003 in getaddrinfo) to disagree with httpx2's.
    host = parsed.raw_host.decode("ascii", "replace")
    if not host:
        raise UpstreamError("upstream URL has no host")
    port = parsed.port if parsed.port is not None else (443 if parsed.scheme == "https" else 80)
    return host, port


def check_upstream_url(url: str, *, allow_private: bool) -> None:
    """Raise UpstreamError unless ``url`` is an http(s) URL whose host resolves only to allowed addresses.

    Blocking on a cache miss (one getaddrinfo); see ``check_upstream_url_async`` for event loops.
    """
    host, port = _target(url)
    entry = _cached(host, port) or _resolve(host, port)
    _verdict(host, entry, allow_private)


async def checked_addresses(host: str, port: int, allow_private: bool) -> tuple[str, ...]:
    """The addresses a new connection to ``host``:``port`` may dial (UpstreamError when refused)."""
    # Loaded on first use: the request path's cold start does not pay for it.
    import anyio.to_thread

    entry = _cached(host, port)
    if entry is None:
        # getaddrinfo blocks; off the loop, and abandoned (not awaited) if the caller's deadline hits.
        entry = await anyio.to_thread.run_sync(_resolve, host, port, abandon_on_cancel=True)
    return _verdict(host, entry, allow_private)


async def check_upstream_url_async(url: str, *, allow_private: bool) -> None:
    """``check_upstream_url`` for async code: a cache miss resolves in a worker thread."""
    host, port = _target(url)
    await checked_addresses(host, port, allow_private)


def proxied_by_environment() -> bool:
    """Whether httpx (trust_env) would send upstream traffic through a proxy from the environment."""
    import urllib.request  # heavy (http.client, email); only needed once an upstream is dialed

    proxies = urllib.request.getproxies()
    return any(proxies.get(scheme) for scheme in ("http", "https", "all"))


@functools.cache
def _backend_class() -> type[Any]:
    """The pinning network backend (built lazily: httpcore2 is only needed once an upstream is dialed)."""
    # Loaded on first use: the request path's cold start does not pay for it.
    import httpcore2

    class GuardedBackend(httpcore2.AsyncNetworkBackend):
        """Dials only addresses the guard accepted for the host being connected to (no rebinding)."""

        def __init__(self, inner: httpcore2.AsyncNetworkBackend, allow_private: bool) -> None:
            self.inner = inner
            self.allow_private = allow_private

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> httpcore2.AsyncNetworkStream:
            try:
                addresses = await checked_addresses(host, port, self.allow_private)
            except UpstreamError as exc:
                raise httpcore2.ConnectError(exc.message) from None
            failure: Exception | None = None
            for address in addresses:
                try:
                    stream = await self.inner.connect_tcp(
                        address, port, timeout=timeout, local_address=local_address,
                        socket_options=socket_options,
                    )  # fmt: skip
                    # Each request's head goes out with its body, one write (foldgate.upstream.one_write).
                    return one_write_stream(stream)
                except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                    failure = exc  # try the next checked address, as a resolver-driven dial would
            assert failure is not None  # the verdict never returns an empty tuple
            raise failure

        async def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
        ) -> httpcore2.AsyncNetworkStream:
            return await self.inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)

        async def sleep(self, seconds: float) -> None:
            await self.inner.sleep(seconds)

    return GuardedBackend


# mcp.shared._httpx_utils.MCP_DEFAULT_TIMEOUT / MCP_DEFAULT_SSE_READ_TIMEOUT (a unit test keeps them equal).
_DEFAULT_TIMEOUT = 30.0
_READ_TIMEOUT = 300.0


def client_timeout() -> httpx2.Timeout:
    """The SDK's defaults: 30 s to connect, write and wait for a pooled connection; 5 min to read."""
    import httpx2  # loaded with the first upstream client, not at init

    return httpx2.Timeout(_DEFAULT_TIMEOUT, read=_READ_TIMEOUT)


def guarded_backend(inner: Any, *, allow_private: bool) -> Any:
    """An httpcore2 network backend that connects only to guard-checked addresses of the host."""
    return _backend_class()(inner, allow_private)


def guarded_http_client(
    headers: Mapping[str, str],
    *,
    allow_private: bool,
    wrap: Callable[[httpx2.AsyncBaseTransport], httpx2.AsyncBaseTransport] | None = None,
) -> httpx2.AsyncClient:
    """The HTTP client for an upstream, with connections pinned to checked addresses.

    Same timeouts and redirect behaviour as the MCP SDK's ``create_mcp_http_client`` (spelled out so
    the call path never imports the SDK). When the environment configures a proxy a plain client is
    returned (see the module doc). ``wrap`` wraps the pinned transport (the session pool adds
    keep-alive care there).
    """
    # Loaded on first use: the request path's cold start does not pay for it.
    import httpcore2
    import httpx2

    timeout = client_timeout()
    if proxied_by_environment():
        return httpx2.AsyncClient(headers=dict(headers), timeout=timeout)
    transport = httpx2.AsyncHTTPTransport()
    pool = getattr(transport, "_pool", None)
    # httpx2 has no public knob for the network backend; its pool reads this attribute per new
    # connection. If a future httpx2 changes that layout, fall back to the resolution-time check.
    if not isinstance(pool, httpcore2.AsyncConnectionPool) or not hasattr(pool, "_network_backend"):
        log.warning("cannot pin upstream connections with this httpx2; DNS rebinding is not prevented")
        return httpx2.AsyncClient(headers=dict(headers), timeout=timeout)
    pool._network_backend = guarded_backend(pool._network_backend, allow_private=allow_private)
    wrapped = wrap(transport) if wrap is not None else transport
    return httpx2.AsyncClient(headers=dict(headers), timeout=timeout, transport=wrapped)
