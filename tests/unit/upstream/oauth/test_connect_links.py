"""Per-user connect links: only a link the gateway signed, unexpired and unaltered, names a subject;
every other link gets the same refusal (no oracle on which part was wrong). Each link has its own
nonce (its single use is the store's, see the grant store contract) and lives ten minutes; the
confirmation form's token is bound to one browser cookie and one link."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from foldgate.errors import AuthError
from foldgate.upstream.oauth.connect_links import (
    LINK_SECONDS,
    browser_hash,
    form_token,
    new_browser_cookie,
    sign_connect_link,
    valid_browser_cookie,
    verify_connect_link,
    verify_form_token,
)

SECRET = b"k" * 32
NOW = 1_800_000_000.0


def params(link: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(link).query))


def test_a_signed_link_names_its_tenant_server_and_subject() -> None:
    link = sign_connect_link(SECRET, "https://gw.example.com/", "acme", "github", "oauth-sub-1", now=NOW)
    assert link.startswith("https://gw.example.com/oauth/connect?")
    found = verify_connect_link(SECRET, params(link), now=NOW + 1)
    assert (found.tenant, found.server, found.subject) == ("acme", "github", "oauth-sub-1")
    assert found.expires_at == NOW + LINK_SECONDS
    assert found.nonce == params(link)["nonce"]


@pytest.mark.parametrize("field", ["tenant", "server", "subject", "exp", "nonce"])
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


def test_a_link_lives_ten_minutes() -> None:
    """Short-lived: a link lifted from a transcript is soon useless (it used to live 15 minutes)."""
    signed = params(sign_connect_link(SECRET, "https://gw", "acme", "github", "alice", now=NOW))
    assert LINK_SECONDS == 600
    assert verify_connect_link(SECRET, signed, now=NOW + 599).subject == "alice"
    with pytest.raises(AuthError):
        verify_connect_link(SECRET, signed, now=NOW + 601)


def test_every_link_has_its_own_nonce() -> None:
    one, two = (params(sign_connect_link(SECRET, "https://gw", "acme", "github", "alice", now=NOW))
                for _ in range(2))  # fmt: skip
    assert one["nonce"] != two["nonce"]
    assert len(one["nonce"]) >= 22


def test_a_link_without_its_nonce_is_refused() -> None:
    signed = params(sign_connect_link(SECRET, "https://gw", "acme", "github", "alice", now=NOW))
    del signed["nonce"]
    with pytest.raises(AuthError, match="invalid or expired"):
        verify_connect_link(SECRET, signed, now=NOW)


def test_the_form_token_is_bound_to_one_browser_and_one_link() -> None:
    cookie, other = new_browser_cookie(), new_browser_cookie()
    assert valid_browser_cookie(cookie)
    token = form_token(SECRET, cookie, "nonce-1")
    assert verify_form_token(SECRET, cookie, "nonce-1", token)
    assert not verify_form_token(SECRET, other, "nonce-1", token)  # another browser
    assert not verify_form_token(SECRET, cookie, "nonce-2", token)  # another link
    assert not verify_form_token(SECRET, None, "nonce-1", token)  # no cookie
    assert not verify_form_token(b"x" * 32, cookie, "nonce-1", token)


@pytest.mark.parametrize("value", [None, "", "short", "x" * 43 + ";", "é" * 43, "a" * 65])
def test_a_malformed_browser_cookie_is_ignored(value: str | None) -> None:
    assert not valid_browser_cookie(value)


def test_the_store_keeps_a_digest_of_the_cookie_never_the_cookie() -> None:
    cookie = new_browser_cookie()
    assert browser_hash(cookie) != cookie
    assert len(browser_hash(cookie)) == 64


@pytest.mark.parametrize("sig", ["é" * 64, "\udcff", "\x00"])
def test_a_non_ascii_signature_is_refused_not_an_error(sig: str) -> None:
    """A query string carries any characters: a signature compare_digest cannot take as str (non-ASCII)
    must be the usual refusal, not a TypeError (a 500 from the link route)."""
    signed = params(sign_connect_link(SECRET, "https://gw", "acme", "github", "alice", now=NOW))
    with pytest.raises(AuthError, match="invalid or expired"):
        verify_connect_link(SECRET, {**signed, "sig": sig}, now=NOW)


def test_a_non_ascii_form_token_is_refused_not_an_error() -> None:
    cookie = new_browser_cookie()
    assert not verify_form_token(SECRET, cookie, "nonce-1", "é" * 64)
