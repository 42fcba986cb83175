"""The grant interface's records keep their secrets out of repr (log lines, tracebacks, test output)."""

from __future__ import annotations

from foldgate.store.grants.base import ClientRegistration, PendingConsent, UpstreamGrant


def test_no_secret_shows_in_a_repr() -> None:
    records = [
        UpstreamGrant("acme", "github", "bob", access_token="AT-SECRET", refresh_token="RT-SECRET"),
        ClientRegistration("acme", "github", "https://a.example", "cid", client_secret="CS-SECRET",
                           registration={"registration_access_token": "RAT-SECRET"}),
        PendingConsent("st", "acme", "github", "bob", "VERIFIER-SECRET", "https://gw/cb", "https://a.example",
                       None, None, 1.0),
    ]  # fmt: skip
    shown = " ".join(repr(r) for r in records)
    assert "acme" in shown  # the records are described ...
    assert "SECRET" not in shown  # ... without their secrets


def test_secrets_still_count_for_equality() -> None:
    one = UpstreamGrant("acme", "github", "bob", access_token="a", refresh_token="r1")
    assert one != UpstreamGrant("acme", "github", "bob", access_token="a", refresh_token="r2")
    assert one == UpstreamGrant("acme", "github", "bob", access_token="a", refresh_token="r1")
