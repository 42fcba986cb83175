"""The sign-in limit: wrong keys spend an address's budget and the global one, a success gives its token
back, budgets refill with time, one address's guesses do not lock out another, and a refusal spends
nothing."""

from __future__ import annotations

from foldgate.edge.console.login_limit import LoginLimit


class Clock:
    """A hand-moved monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_address_gets_its_per_minute_attempts_then_a_wait_in_whole_seconds() -> None:
    limit = LoginLimit(3, 100, clock=Clock())
    assert [limit.attempt("10.0.0.1") for _ in range(3)] == [0, 0, 0]
    # 3 per minute: the next token is 20 s away.
    assert limit.attempt("10.0.0.1") == 20


def test_successful_sign_ins_do_not_use_up_the_budget() -> None:
    limit = LoginLimit(2, 2, clock=Clock())
    for _ in range(10):
        assert limit.attempt("10.0.0.1") == 0
        limit.succeeded("10.0.0.1")
    # Both budgets are still whole: two wrong keys pass, the third waits.
    assert [limit.attempt("10.0.0.1") for _ in range(3)][:2] == [0, 0]


def test_the_budget_refills_with_time() -> None:
    clock = Clock()
    limit = LoginLimit(2, 100, clock=clock)
    assert limit.attempt("a") == limit.attempt("a") == 0
    assert limit.attempt("a") == 30
    clock.now += 29.0
    assert limit.attempt("a") == 1
    clock.now += 1.0
    assert limit.attempt("a") == 0
    assert limit.attempt("a") > 0


def test_addresses_are_limited_apart_but_the_global_cap_slows_them_all() -> None:
    limit = LoginLimit(2, 5, clock=Clock())
    assert limit.attempt("a") == limit.attempt("a") == 0
    assert limit.attempt("a") > 0
    # Another address is untouched by a's guesses...
    assert limit.attempt("b") == limit.attempt("b") == 0
    assert limit.attempt("c") == 0
    # ...until the guesses over all addresses reach the global cap (5 a minute: 12 s per token).
    assert limit.attempt("d") == 12


def test_a_refusal_by_the_global_cap_costs_the_address_nothing() -> None:
    clock = Clock()
    # One attempt a minute per address, two over all addresses.
    limit = LoginLimit(1, 2, clock=clock)
    assert limit.attempt("a") == limit.attempt("c") == 0
    assert limit.attempt("b") == 30
    clock.now += 30.0
    # The global bucket has one token again; b's own (had the refusal spent it) would hold only half.
    assert limit.attempt("b") == 0
    assert limit.attempt("b") == 60


def test_a_zero_rate_turns_that_half_off() -> None:
    per_address_only = LoginLimit(1, 0, clock=Clock())
    assert per_address_only.attempt("a") == 0
    assert per_address_only.attempt("a") > 0
    assert per_address_only.attempt("b") == 0
    assert all(LoginLimit(0, 0).attempt("a") == 0 for _ in range(100))
