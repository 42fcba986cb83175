"""The upstream address rule judged without DNS (model/address_rule.py): metadata, link-local,
unspecified, multicast and reserved hosts are refused in every literal spelling the resolver accepts and
by the metadata names; loopback and private ones only without ``allow_private``; any other name is left
to the connect-time check. The connect-time guard (upstream/net_guard.py) applies the same rule."""

from __future__ import annotations

import pytest

from foldgate.model.address_rule import forbidden_reason, literal_host_refusal
from foldgate.upstream import net_guard

ALWAYS = [
    ("http://169.254.169.254/latest/meta-data/", "the cloud metadata service"),
    ("http://169.254.170.2/v2/credentials", "the cloud metadata service"),
    ("http://[fd00:ec2::254]/", "the cloud metadata service"),
    ("http://2852039166/", "the cloud metadata service"),  # 169.254.169.254 as one number
    ("http://0xa9.0xfe.0xa9.0xfe/", "the cloud metadata service"),
    ("http://0251.0376.0251.0376/", "the cloud metadata service"),  # octal
    ("http://[::ffff:a9fe:a9fe]/", "the cloud metadata service"),  # IPv4-mapped
    ("http://[::ffff:169.254.169.254]:80/", "the cloud metadata service"),
    ("http://metadata.google.internal/computeMetadata/v1/", "the cloud metadata service"),
    ("http://METADATA.google.internal./", "the cloud metadata service"),
    ("http://instance-data/", "the cloud metadata service"),
    ("http://169.254.1.2:8080/mcp", "a link-local address"),
    ("http://[fe80::1]/", "a link-local address"),
    ("http://0.0.0.0:8000/mcp", "an unspecified address"),
    ("http://[::]/", "an unspecified address"),
    ("http://224.0.0.1/", "a multicast address"),
    ("http://255.255.255.255/", "a reserved address"),
    ("http://user:pw@169.254.169.254/", "the cloud metadata service"),
]
PRIVATE = [
    ("http://127.0.0.1:8000/mcp", "a loopback address"),
    ("http://127.1/", "a loopback address"),
    ("http://2130706433/", "a loopback address"),
    ("http://[::1]:9/", "a loopback address"),
    ("http://localhost:3000/mcp", "a loopback address"),
    ("http://api.localhost/mcp", "a loopback address"),
    ("http://10.1.2.3/", "a private address"),
    ("http://192.168.0.10/", "a private address"),
    ("http://100.64.0.1/", "a shared (CGNAT) address"),
]
ALLOWED = [
    "https://mcp.example.com/mcp",
    "https://93.184.216.34/mcp",
    "http://metadata.example.com/",  # a name: judged when resolved
    "https://169-254-169-254.example/",
    "https://[2606:4700::1111]/",
    "https://deadbeef.example/",  # hex-looking label of a name
    "not a url",
]


@pytest.mark.parametrize(("url", "why"), ALWAYS)
@pytest.mark.parametrize("allow_private", [True, False])
def test_always_forbidden_hosts_are_refused_in_every_spelling(
    url: str, why: str, allow_private: bool
) -> None:
    refusal = literal_host_refusal(url, allow_private=allow_private)
    assert refusal is not None
    assert refusal.endswith(f"is {why}")
    assert "pw" not in refusal  # credentials in the URL never reach the message


@pytest.mark.parametrize(("url", "why"), PRIVATE)
def test_loopback_and_private_hosts_are_refused_only_without_allow_private(url: str, why: str) -> None:
    assert literal_host_refusal(url, allow_private=True) is None
    refusal = literal_host_refusal(url, allow_private=False)
    assert refusal is not None
    assert refusal.endswith(f"is {why}")


@pytest.mark.parametrize("url", ALLOWED)
def test_public_literals_and_names_are_left_to_the_connect_time_check(url: str) -> None:
    assert literal_host_refusal(url, allow_private=False) is None


def test_the_connect_time_guard_applies_the_same_rule() -> None:
    assert net_guard.forbidden_reason is forbidden_reason
    for address in ("169.254.169.254", "127.0.0.1", "10.0.0.1", "::ffff:a9fe:a9fe", "8.8.8.8"):
        for allow in (True, False):
            url = f"http://[{address}]/" if ":" in address else f"http://{address}/"
            saved = literal_host_refusal(url, allow_private=allow)
            connected = forbidden_reason(address, allow_private=allow)
            assert (saved is None) == (connected is None), (address, allow)
