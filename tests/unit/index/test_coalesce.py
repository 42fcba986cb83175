"""Coalesced change triggers: a burst is one run, a signal during a run is exactly one more run, keys
are independent and a failing run does not stop later ones."""

from __future__ import annotations

import asyncio

from foldgate.index.coalesce import Coalescer


async def test_a_burst_before_the_run_starts_is_one_run() -> None:
    runs: list[tuple[str, str]] = []

    async def run(tenant: str, server: str) -> None:
        runs.append((tenant, server))

    c = Coalescer(run, delay_s=0.05)
    for _ in range(100):
        c.request("t", "crm")
    c.request("t", "mail")
    await asyncio.sleep(0.2)
    assert sorted(runs) == [("t", "crm"), ("t", "mail")]
    assert c.pending() == 0


async def test_signals_during_a_run_cause_exactly_one_more_run() -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    runs = 0

    async def run(tenant: str, server: str) -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            started.set()
            await release.wait()

    c = Coalescer(run, delay_s=0)
    c.request("t", "crm")
    await started.wait()
    for _ in range(10):
        c.request("t", "crm")  # the upstream changed again after it was listed
    release.set()
    await asyncio.sleep(0.05)
    assert runs == 2
    assert c.runs == 2


async def test_a_failing_run_is_logged_and_later_signals_still_run() -> None:
    runs = 0

    async def run(tenant: str, server: str) -> None:
        nonlocal runs
        runs += 1
        raise RuntimeError("upstream down")

    c = Coalescer(run, delay_s=0)
    c.request("t", "crm")
    await asyncio.sleep(0.02)
    c.request("t", "crm")
    await asyncio.sleep(0.02)
    assert runs == 2


async def test_aclose_cancels_scheduled_runs() -> None:
    runs = 0

    async def run(tenant: str, server: str) -> None:
        nonlocal runs
        runs += 1

    c = Coalescer(run, delay_s=10)
    await c.signal("t", "crm")
    await c.aclose()
    assert runs == 0
    assert c.pending() == 0
