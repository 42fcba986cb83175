"""DNS-rebinding protection for the MCP endpoints: which ``Host`` and ``Origin`` values a request may
carry.

A browser page on a foreign site can reach a server on the user's loopback interface (DNS rebinding, or
a plain cross-origin POST); the ``Host`` and ``Origin`` it sends then name the foreign site. So:

* Serving on loopback, every loopback spelling is accepted, on any port (``localhost``,
  ``127.0.0.1`` and the rest of 127/8, ``[::1]``): a client that says ``Origin: http://localhost:8080``
  to a server bound to 127.0.0.1 is the same machine, and the SDK's exact-string list refused it.
* In the cloud, the operator names the public host(s) (``FOLDGATE_PUBLIC_HOSTS``); none named means no
  check (API Gateway's own domain, and callers authenticate by token).
* Anything else is refused with a JSON 403. A request without ``Origin`` (every non-browser client) is
  judged by its ``Host`` alone.

This replaces the SDK's ``TransportSecuritySettings`` check: one small parse per request, no SDK import.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = ["HostPolicy", "is_loopback"]

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})
# Host values whose verdict a policy keeps (its hosts are fixed once built).
_MAX_VERDICTS = 256


def is_loopback(host: str) -> bool:
    """Whether a host name (no port, IPv6 without brackets) names this machine's loopback interface."""
    name = host.strip().lower()
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _split(authority: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (IPv6 in brackets) as (lower-case host without brackets, port); None if malformed."""
    try:
        parts = urlsplit(f"//{authority.strip()}")
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number, or out of range
        return None
    if not host or parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    return host.lower(), port


class HostPolicy:
    """Accepted hosts: every loopback spelling (when loopback is among them) plus the named ones.

    An entry ``name`` accepts that name on any port; ``name:port`` only on that port.
    """

    def __init__(self, hosts: Iterable[str]) -> None:
        self.loopback = False
        self._verdicts: dict[str, bool] = {}
        self._any_port: set[str] = set()
        self._exact: set[tuple[str, int]] = set()
        for entry in hosts:
            # A bare IPv6 address (a bind address such as ::1) has no port: bracket it to parse.
            bare_v6 = entry.count(":") > 1 and not entry.startswith("[")
            parsed = _split(f"[{entry}]" if bare_v6 else entry)
            if parsed is None:
                raise ValueError(f"not a host or host:port: {entry!r}")
            host, port = parsed
            if is_loopback(host):
                self.loopback = True
            elif port is None:
                self._any_port.add(host)
            else:
                self._exact.add((host, port))

    def allows_authority(self, authority: str) -> bool:
        """Whether a ``Host`` header value (``host[:port]``) is accepted (the verdict on each value
        is kept: a client sends the same Host on every request, and parsing it costs more than the
        rest of the check)."""
        known = self._verdicts.get(authority)
        if known is not None:
            return known
        verdict = self._allows(authority)
        if len(self._verdicts) < _MAX_VERDICTS:  # bounded: a flood of invented Hosts is judged each
            self._verdicts[authority] = verdict
        return verdict

    def _allows(self, authority: str) -> bool:
        parsed = _split(authority)
        if parsed is None:
            return False
        host, port = parsed
        if self.loopback and is_loopback(host):
            return True
        return host in self._any_port or (port is not None and (host, port) in self._exact)

    def allows_origin(self, origin: str) -> bool:
        """Whether an ``Origin`` header value (``scheme://host[:port]``) is accepted."""
        try:
            parts = urlsplit(origin.strip())
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or parts.path not in ("", "/"):
            return False
        return self.allows_authority(parts.netloc)

    def refusal(self, host: str | None, origin: str | None) -> str | None:
        """Why a request with these headers is refused, or None when it may proceed."""
        if host is None or not self.allows_authority(host):
            return "Host header not allowed"
        if origin is not None and not self.allows_origin(origin):
            return "Origin header not allowed"
        return None
