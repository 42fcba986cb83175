"""The console session: a signed cookie that expires, cannot be forged or altered, dies with the operator
key, and a CSRF token bound to one session."""

from __future__ import annotations

import base64
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
