"""The console's reindex jobs after a config write: a run already going may have read the config before
the write, so ``after_change`` queues one more run after it (a plain reindex click joins the run)."""

from __future__ import annotations

import asyncio
from typing import Any

from foldgate.edge.console.fleet import ReindexJobs


async def test_a_write_during_a_run_gets_a_run_of_its_own_after_it() -> None:
    release = asyncio.Event()
    runs: list[str] = []

    async def reindex(tenant: str) -> dict[str, Any]:
        runs.append(tenant)
        await release.wait()
        return {"reindex": "done", "run": len(runs)}

    jobs = ReindexJobs(reindex)
    assert (await jobs.start("acme"))["state"] == "running"
    # A second click joins the run going.
    assert (await jobs.start("acme"))["state"] == "running"
    assert runs == ["acme"]
    # A config write does not: its run starts once the first is over.
    assert (await jobs.start("acme", after_change=True))["state"] == "running"
    assert runs == ["acme"]
    release.set()
    while jobs.status("acme")["state"] == "running":
        await asyncio.sleep(0)
    assert runs == ["acme", "acme"]
    assert jobs.status("acme")["result"] == {"reindex": "done", "run": 2}
