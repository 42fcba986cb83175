"""The per-key token bucket: burst, continuous refill, retry_after, refunds, bounded memory, thread safety."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from foldgate.edge.ratelimit import RateLimiter


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_burst_then_denied_with_retry_after() -> None:
    clock = FakeClock()
    rl = RateLimiter(60, burst=5, clock=clock)  # one token per second
    assert [rl.allow("a") for _ in range(5)] == [(True, 0.0)] * 5
    allowed, retry = rl.allow("a")
    assert not allowed
    assert retry == pytest.approx(1.0)
    clock.now += 0.25
    allowed, retry = rl.allow("a")
    assert not allowed
    assert retry == pytest.approx(0.75)  # denied requests do not spend anything


def test_burst_defaults_to_per_minute() -> None:
    rl = RateLimiter(10, clock=FakeClock())
    assert sum(rl.allow("a")[0] for _ in range(20)) == 10


def test_refill_is_continuous_and_capped_at_burst() -> None:
    clock = FakeClock()
    rl = RateLimiter(120, burst=3, clock=clock)  # two tokens per second
    for _ in range(3):
        assert rl.allow("k")[0]
    assert not rl.allow("k")[0]
    clock.now += 0.5
    assert rl.allow("k") == (True, 0.0)
    assert not rl.allow("k")[0]
    clock.now += 3600  # a long rest refills to the burst, not beyond
    assert sum(rl.allow("k")[0] for _ in range(10)) == 3


def test_sustained_rate_matches_per_minute() -> None:
    clock = FakeClock()
    rl = RateLimiter(600, burst=1, clock=clock)
    allowed = 0
    for _ in range(6000):  # one attempt every 10 ms for a minute
        allowed += rl.allow("k")[0]
        clock.now += 0.01
    assert allowed == pytest.approx(600, abs=1)


def test_retry_after_is_exact_for_the_next_token() -> None:
    clock = FakeClock()
    rl = RateLimiter(30, burst=1, clock=clock)  # one token per 2 s
    assert rl.allow("k")[0]
    allowed, retry = rl.allow("k")
    assert not allowed
    assert retry == pytest.approx(2.0)
    clock.now += retry
    assert rl.allow("k")[0]


def test_keys_are_independent() -> None:
    rl = RateLimiter(60, burst=1, clock=FakeClock())
    assert rl.allow("tenant-a")[0]
    assert not rl.allow("tenant-a")[0]
    assert rl.allow("tenant-b")[0]


def test_a_clock_stepping_back_does_not_drain_or_crash() -> None:
    clock = FakeClock()
    rl = RateLimiter(60, burst=2, clock=clock)
    assert rl.allow("k")[0]
    clock.now -= 100
    assert rl.allow("k")[0]
    allowed, retry = rl.allow("k")
    assert not allowed
    assert retry > 0


def test_idle_buckets_are_evicted() -> None:
    clock = FakeClock()
    rl = RateLimiter(60, burst=10, clock=clock)  # full again after 10 s idle
    for i in range(100):
        rl.allow(f"k{i}")
    assert len(rl) == 100
    clock.now += 5
    rl.allow("fresh")
    assert len(rl) == 101  # nothing has refilled yet
    clock.now += 5.5
    rl.allow("fresh")
    assert len(rl) == 1  # the 100 old buckets are full again: dropping them changes nothing


def test_key_count_is_capped_least_recently_used_first() -> None:
    clock = FakeClock()
    rl = RateLimiter(60, burst=1, clock=clock, max_keys=100)
    for i in range(1000):
        rl.allow(f"k{i}")
    assert len(rl) == 100
    # k999 is still tracked (denied); k0 was evicted and so starts with a full bucket.
    assert not rl.allow("k999")[0]
    assert rl.allow("k0")[0]
    assert len(rl) == 100


def test_recent_use_protects_a_key_from_eviction() -> None:
    rl = RateLimiter(60, burst=1, clock=FakeClock(), max_keys=3)
    rl.allow("hot")
    rl.allow("a")
    rl.allow("b")
    rl.allow("hot")  # touched: now most recent
    rl.allow("c")  # evicts "a", the least recently used
    assert not rl.allow("hot")[0]
    assert rl.allow("a")[0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"per_minute": 0}, "per_minute"),
        ({"per_minute": -5}, "per_minute"),
        ({"per_minute": 10, "burst": 0}, "burst"),
        ({"per_minute": 10, "max_keys": 0}, "max_keys"),
    ],
)
def test_invalid_settings_are_rejected(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        RateLimiter(**kwargs)


def test_thread_safe_under_contention() -> None:
    clock = FakeClock()
    rl = RateLimiter(60, burst=500, clock=clock)
    results: list[bool] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = [rl.allow("shared")[0] for _ in range(200)]
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 500  # exactly the burst, never more, with 1600 attempts racing


def test_refund_gives_back_one_token_and_never_beyond_the_burst() -> None:
    limiter = RateLimiter(60, burst=2, clock=FakeClock())
    assert limiter.allow("k")[0]
    assert limiter.allow("k")[0]
    assert not limiter.allow("k")[0]
    limiter.refund("k")
    assert limiter.allow("k")[0]
    assert not limiter.allow("k")[0]
    for _ in range(5):
        limiter.refund("k")
    assert [limiter.allow("k")[0] for _ in range(3)] == [True, True, False]
    # A key with no bucket is already full: refunding it adds nothing.
    limiter.refund("fresh")
    assert [limiter.allow("fresh")[0] for _ in range(3)] == [True, True, False]
