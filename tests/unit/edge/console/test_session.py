"""The console session: a signed cookie that expires, cannot be forged or altered, dies with the operator
key, carries a session id of the issued form (so it can be signed out), and a CSRF token bound to one
session."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from foldgate.edge.console.session import SessionSigner

KEY = b"k" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_an_issued_cookie_verifies_until_it_expires() -> None:
    clock = Clock()
    signer = SessionSigner(KEY, ttl_s=60, clock=clock)
    value, session = signer.issue()
    assert signer.verify(value) == session
    clock.now += 59
    assert signer.verify(value) == session
    clock.now += 1
    assert signer.verify(value) is None


def test_a_cookie_with_a_changed_payload_or_under_another_operator_key_is_refused() -> None:
    signer = SessionSigner(KEY)
    value, _ = signer.issue()
    body, tag = value.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=="))
    payload["exp"] += 10_000  # extending one's own session
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode() + "." + tag
    assert signer.verify(forged) is None
    assert SessionSigner(b"o" * 32).verify(value) is None


def test_malformed_cookies_are_refused_without_raising() -> None:
    signer = SessionSigner(KEY)
    for junk in (None, "", ".", "a.b.c", "!!!.???", "x" * 600 + ".y", "e30.AAAA"):
        assert signer.verify(junk) is None


def test_the_csrf_token_belongs_to_one_session_only() -> None:
    signer = SessionSigner(KEY)
    _, mine = signer.issue()
    _, other = signer.issue()
    token = signer.csrf(mine)
    assert signer.check_csrf(mine, token)
    assert not signer.check_csrf(other, token)
    assert not signer.check_csrf(mine, "")
    assert not signer.check_csrf(mine, None)
    assert not signer.check_csrf(mine, token[:-1] + ("A" if token[-1] != "A" else "B"))


def _signed(payload: dict[str, object]) -> str:
    """A cookie with a valid MAC over ``payload`` (what only a holder of the operator key can make)."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    key = hmac.new(KEY, b"foldgate console session v1", hashlib.sha256).digest()
    mac = hmac.new(key, body, hashlib.sha256).digest()
    return (
        base64.urlsafe_b64encode(body).rstrip(b"=").decode()
        + "."
        + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
    )


def test_a_signed_cookie_without_a_session_id_of_ours_is_refused_so_every_session_can_be_signed_out() -> None:
    signer = SessionSigner(KEY)
    _, issued = signer.issue()
    assert signer.verify(_signed({"sid": issued.sid, "exp": issued.expires_at})) == issued
    for sid in (None, "", "x" * 32, issued.sid.upper(), issued.sid + "0", issued.sid[:-1], 7):
        payload: dict[str, object] = {"exp": issued.expires_at}
        if sid is not None:
            payload["sid"] = sid
        assert signer.verify(_signed(payload)) is None, sid
