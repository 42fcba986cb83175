"""Which addresses an upstream may have: the one rule the connect-time guard (upstream/net_guard.py)
and the save-time config check (config/tenant.py) both apply.

* always refused: the cloud metadata service (169.254.169.254, 169.254.170.2, fd00:ec2::254, and the
  names that reach it), unspecified/"this network", link-local, multicast and reserved blocks;
* refused unless ``allow_private``: loopback (``localhost`` too), private, shared/CGNAT and every other
  special-purpose block that is not globally routable.

IPv6 addresses that embed an IPv4 address (IPv4-mapped, IPv4-compatible, 6to4, NAT64) are judged by the
IPv4 address inside. :func:`literal_host_refusal` judges a URL without DNS: its host as an IP literal in
every spelling the resolver accepts (``2130706433``, ``0x7f.1``, ``[::ffff:a9fe:a9fe]``), and the names
that never need a lookup to be known bad. Any other name is judged when it is resolved, at connect time.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from typing import Final
from urllib.parse import urlsplit

__all__ = ["address_reason", "forbidden_reason", "literal_host_refusal"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_Net = ipaddress.IPv4Network | ipaddress.IPv6Network


def _nets(*specs: tuple[str, str]) -> tuple[tuple[_Net, str], ...]:
    return tuple((ipaddress.ip_network(net), why) for net, why in specs)


_METADATA: Final = "the cloud metadata service"

# Forbidden whatever allow_private says. Order matters only for the message: specific before general.
_ALWAYS = _nets(
    ("169.254.169.254/32", _METADATA),
    ("169.254.170.2/32", _METADATA),
    ("fd00:ec2::254/128", _METADATA),
    ("0.0.0.0/8", "an unspecified address"),  # Linux connects 0.0.0.0 to the local host
    ("::/128", "an unspecified address"),
    ("169.254.0.0/16", "a link-local address"),
    ("fe80::/10", "a link-local address"),
    ("224.0.0.0/4", "a multicast address"),
    ("ff00::/8", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),  # includes 255.255.255.255
    ("fec0::/10", "a reserved address"),  # deprecated site-local
    ("100::/64", "a reserved address"),  # discard-only
)

# Forbidden unless allow_private (fine for a local fleet, never from a shared cloud deployment).
_PRIVATE = _nets(
    ("127.0.0.0/8", "a loopback address"),
    ("::1/128", "a loopback address"),
    ("10.0.0.0/8", "a private address"),
    ("172.16.0.0/12", "a private address"),
    ("192.168.0.0/16", "a private address"),
    ("fc00::/7", "a private address"),
    ("100.64.0.0/10", "a shared (CGNAT) address"),
    ("192.0.0.0/24", "a special-purpose address"),
    ("198.18.0.0/15", "a special-purpose address"),
    ("192.0.2.0/24", "a special-purpose address"),
    ("198.51.100.0/24", "a special-purpose address"),
    ("203.0.113.0/24", "a special-purpose address"),
    ("2001:db8::/32", "a special-purpose address"),
)

# Names that reach a metadata service without any public DNS (GCP, AWS, Azure, Oracle, Alibaba).
_METADATA_NAMES: Final = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
    }
)

_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, when a socket or gateway would reach it."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in net for net in _NAT64) or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


@functools.lru_cache(maxsize=4096)
def address_reason(ip: IPAddress, allow_private: bool) -> str | None:
    """Why ``ip`` may not be an upstream's address; None if it may."""
    for net, why in _ALWAYS:
        if ip.version == net.version and ip in net:
            return why
    if not allow_private:
        for net, why in _PRIVATE:
            if ip.version == net.version and ip in net:
                return why
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            return address_reason(inner, allow_private)
    if not allow_private and not ip.is_global:
        # Defence in depth: whatever else the IANA special-purpose registry marks non-global.
        return "a non-public address"
    return None


def forbidden_reason(address: str, *, allow_private: bool) -> str | None:
    """Why an IP address (text, as getaddrinfo returns it) may not be an upstream; None if it may."""
    text = address.split("%", 1)[0]  # an IPv6 zone id says which interface, not which address
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return "an unparseable address"
    return address_reason(ip, allow_private)


def _literal(host: str) -> IPAddress | None:
    """The address an IP-literal host names, in any spelling the resolver accepts; None for a name."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if not host or not all(c in "0123456789abcdefxABCDEFX." for c in host):
        return None
    try:
        # inet_aton reads the legacy spellings getaddrinfo also accepts (decimal, hex, octal, 127.1).
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def literal_host_refusal(url: str, *, allow_private: bool) -> str | None:
    """Why an upstream URL is refused before any lookup (its host is a forbidden IP literal, a
    metadata name, or ``localhost`` without ``allow_private``); None when its host is a name left to
    the connect-time check, or an allowed address. The message names the host and the kind of address."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return None  # the transport check reports a malformed URL
    if not host:
        return None
    if host in _METADATA_NAMES:
        return f"host {host!r} is {_METADATA}"
    if host == "localhost" or host.endswith(".localhost"):
        return None if allow_private else f"host {host!r} is a loopback address"
    ip = _literal(host)
    why = address_reason(ip, allow_private) if ip is not None else None
    return f"host {host!r} is {why}" if why is not None else None
