"""HeldTokens: the one rule every grant-less kind (client_credentials, workload_jwt, the exchanges)
uses for when a held token stops being used, which config it belongs to, and how many are kept."""

from __future__ import annotations

import time

from foldgate.upstream.oauth.held import HeldTokens


def _ten_seconds(received: float, expires: float | None) -> float:
    return 10.0


def test_a_token_is_used_until_its_margin_before_expiry_and_then_forgotten() -> None:
    held: HeldTokens[str] = HeldTokens(_ten_seconds)
    now = time.time()
    held.put("a", "Bearer fresh", now + 60, received=now)
    held.put("b", "Bearer late", now + 5, received=now)  # within its 10 s margin already
    held.put("c", "Bearer forever", None, received=now)  # no expiry said: held as it is
    assert held.get("a") == "Bearer fresh"
    assert held.get("b") is None
    assert held.get("c") == "Bearer forever"
    held.put("b", "Bearer again", now + 60, received=now)
    assert held.get("b") == "Bearer again"


def test_a_token_held_for_another_config_is_not_used() -> None:
    held: HeldTokens[str] = HeldTokens(_ten_seconds)
    now = time.time()
    held.put("k", "Bearer old", now + 600, received=now, config="v1")
    assert held.get("k", "v2") is None
    assert held.get("k", "v1") is None  # dropped when the config moved on


def test_drop_forgets_only_the_refused_token_when_named() -> None:
    held: HeldTokens[str] = HeldTokens(_ten_seconds)
    now = time.time()
    held.put("k", "Bearer new", now + 600, received=now)
    held.drop("k", "Bearer refused-earlier")  # another request replaced it already
    assert held.get("k") == "Bearer new"
    held.drop("k", "Bearer new")
    assert held.get("k") is None
    held.put("k", "Bearer x", now + 600, received=now)
    held.drop("k")
    assert held.get("k") is None


def test_beyond_max_held_the_least_recently_stored_go_first() -> None:
    held: HeldTokens[int] = HeldTokens(_ten_seconds, max_held=2)
    now = time.time()
    for n in range(3):
        held.put(n, f"Bearer {n}", now + 600, received=now)
    assert [held.get(n) for n in range(3)] == [None, "Bearer 1", "Bearer 2"]
