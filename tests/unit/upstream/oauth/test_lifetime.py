"""The refresh margin scales with the token's lifetime (a quarter, at most 60 s, from its issue), and a
step-up is judged by comparing the challenged scope with the held one, bounded, on hostile input."""

from __future__ import annotations

import pytest

from foldgate.store.grants.base import UpstreamGrant
from foldgate.upstream.oauth.provider import SKEW_SECONDS, refresh_margin
from foldgate.upstream.oauth.step_up import MAX_TRACKED, STEP_UP_LIMIT, StepUps, scope_tokens

T0 = 1_800_000_000.0


def grant(
    *, issued: float | None = T0, lifetime: float | None = 45, scope: str = "a b", step_up: str | None = None
) -> UpstreamGrant:
    expires = None if lifetime is None else T0 + lifetime
    return UpstreamGrant("acme", "files", "*", "at", expires_at=expires, issued_at=issued, updated_at=T0 + 5,
                         scope=scope, step_up=step_up)  # fmt: skip


@pytest.mark.parametrize(
    ("lifetime", "margin"),
    [(45, 11.25), (10, 2.5), (240, 60), (3600, 60), (None, SKEW_SECONDS)],
)
def test_the_margin_is_a_quarter_of_the_lifetime_at_most_60_seconds(
    lifetime: float | None, margin: float
) -> None:
    assert refresh_margin(grant(lifetime=lifetime)) == margin


def test_a_grant_stored_before_issue_times_were_kept_measures_from_its_last_write() -> None:
    assert refresh_margin(grant(issued=None)) == (45 - 5) / 4  # updated_at is T0 + 5
    assert refresh_margin(grant(issued=None, lifetime=2)) == SKEW_SECONDS  # written after expiry: the cap


def test_a_share_of_one_and_a_long_skew_refresh_on_every_use() -> None:
    assert refresh_margin(grant(), skew_s=10_000, share=1) == 45


def test_only_well_formed_scope_tokens_are_kept_bounded() -> None:
    assert scope_tokens('files:read  files:write files:read "x" ok\\no') == ["files:read", "files:write"]
    assert scope_tokens(None) == []
    assert len(scope_tokens(" ".join(f"s{i}" for i in range(500)))) == 32
    assert scope_tokens("a" * 129) == []


def test_a_challenge_for_held_scope_is_held_and_a_missing_one_a_step_up_marked_once() -> None:
    judge = StepUps()
    assert judge.judge(grant(), "b a").kind == "held"
    assert judge.judge(grant(), None).kind == "held"  # nothing named: nothing a consent could add
    first = judge.judge(grant(), "a c")
    assert (first.kind, first.missing, first.wanted) == ("step_up", ("c",), "a b c")
    assert judge.judge(grant(step_up="a b c"), "c").kind == "pending"


def test_identical_step_ups_stop_after_the_limit() -> None:
    judge = StepUps()
    kinds = [judge.judge(grant(), "c").kind for _ in range(STEP_UP_LIMIT + 2)]
    assert kinds == ["step_up"] * STEP_UP_LIMIT + ["exhausted"] * 2
    # Another grant, or another scope, counts on its own.
    assert judge.judge(grant(), "d").kind == "step_up"
    other = UpstreamGrant("acme", "files", "user-1", "at", scope="a b")
    assert judge.judge(other, "c").kind == "step_up"


def test_an_upstream_naming_a_new_scope_every_time_cannot_grow_the_counts_without_end() -> None:
    judge = StepUps()
    for i in range(MAX_TRACKED + 100):
        assert judge.judge(grant(), f"s{i}").kind == "step_up"
    assert len(judge._marked) == MAX_TRACKED
    # The newest counts are the ones kept: the limit still holds for a scope asked for again now.
    kinds = [judge.judge(grant(), f"s{MAX_TRACKED + 99}").kind for _ in range(STEP_UP_LIMIT)]
    assert kinds == ["step_up"] * (STEP_UP_LIMIT - 1) + ["exhausted"]
