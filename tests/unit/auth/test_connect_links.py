"""Per-user connect links: only a link the gateway signed, unexpired and unaltered, names a subject;
every other link gets the same refusal (no oracle on which part was wrong)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from foldgate.auth.connect_links import LINK_SECONDS, sign_connect_link, verify_connect_link
from foldgate.errors import AuthError

SECRET = b"k" * 32
NOW = 1_800_000_000.0


def params(link: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(link).query))


def test_a_signed_link_names_its_tenant_server_and_subject() -> None:
    link = sign_connect_link(SECRET, "https://gw.example.com/", "acme", "github", "oauth-sub-1", now=NOW)
    assert link.startswith("https://gw.example.com/oauth/connect?")
    assert verify_connect_link(SECRET, params(link), now=NOW + 1) == ("acme", "github", "oauth-sub-1")


@pytest.mark.parametrize("field", ["tenant", "server", "subject", "exp"])
def test_changing_any_field_breaks_the_signature(field: str) -> None:
    signed = params(sign_connect_link(SECRET, "https://gw", "acme", "github", "alice", now=NOW))
    signed[field] = signed[field] + "9" if field == "exp" else "other"
    with pytest.raises(AuthError, match="invalid or expired"):
        verify_connect_link(SECRET, signed, now=NOW)


def test_an_expired_link_is_refused() -> None:
    signed = params(sign_connect_link(SECRET, "https://gw", "acme", "github", "alice", now=NOW))
    with pytest.raises(AuthError, match="invalid or expired"):
        verify_connect_link(SECRET, signed, now=NOW + LINK_SECONDS + 1)


def test_another_secret_does_not_verify() -> None:
    signed = params(sign_connect_link(SECRET, "https://gw", "acme", "github", "alice", now=NOW))
    with pytest.raises(AuthError):
        verify_connect_link(b"x" * 32, signed, now=NOW)


def test_missing_fields_are_refused() -> None:
    with pytest.raises(AuthError):
        verify_connect_link(SECRET, {"tenant": "acme", "sig": "00"}, now=NOW)
