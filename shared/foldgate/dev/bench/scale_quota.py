"""``foldgate bench scale-quota``: one tenant quota shared by several serving processes on one DynamoDB
table (moto_server on loopback), as warm McpFunction instances share it in the cloud.

Each process builds the MCP function's app (``build_mcp_app``, store ``dynamodb``) and serves its own
stream of requests one at a time, as a Lambda instance does, counting every DynamoDB call its process
makes. Two phases, each on a tenant of its own (so on a fresh bucket):

* **overload**: every process sends as fast as it can for ``--seconds``; printed: the requests
  admitted by all processes together against the quota over the run, and against the documented
  bound (quota x (run + 3 s of bucket + 2 s of slice lifetime + 1 s of catch-up) / 60, see
  :mod:`foldgate.store.quotas.base`); with runs of a minute or more, the most admitted in any 60 s;
* **steady**: the processes together send ``--steady-load`` x the quota, evenly paced; printed:
  DynamoDB writes (UpdateItem calls, refused conditions included) per admitted request.

Loopback figures: moto answers in about a millisecond, DynamoDB in a few, which only makes a lease's
wait longer, not its count.
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from foldgate.config.settings import Settings

__all__ = ["format_scale_quota_report", "run_scale_quota_bench"]

_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
_PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


class _Opened(logging.Handler):
    """Counts the quota's fail-open warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


# The MCP function's app for the settings (foldgate.app.wiring.build_mcp_app, handed in by the CLI:
# dev tooling sits below the app that runs it). A module-level function, so it pickles to each process.
class BuildApp(Protocol):
    def __call__(self, settings: Settings, *, admin_api: bool = ...) -> Any: ...


def _worker(
    build_app: BuildApp,
    table: str,
    config: str,
    tenant: str,
    seconds: float,
    rate: float | None,
    ready: Any,
    go: Any,
    out: Any,
) -> None:
    """One serving process: the MCP function's app on the table; says ``ready`` when built, then serves
    requests from the start time ``go`` gives for ``seconds`` (``rate`` per second, or as fast as
    answered); its figures go to ``out``."""
    try:
        out.put(asyncio.run(_serve(build_app, table, config, tenant, seconds, rate, ready, go)))
    except Exception as exc:  # the parent reports it rather than waiting forever
        ready.put("failed")
        out.put({"error": f"{type(exc).__name__}: {exc}"})


async def _serve(
    build_app: BuildApp,
    table: str,
    config: str,
    tenant: str,
    seconds: float,
    rate: float | None,
    ready: Any,
    go: Any,
) -> dict[str, Any]:
    # Heavy benchmark dependencies load only when this bench runs (in each serving process).
    import httpx2

    from foldgate.config.settings import Settings
    from foldgate.store.connections import dynamodb_client

    settings = Settings(
        store="dynamodb", table_name=table, config_source="file", config_file=config,
        default_tenant=tenant, rate_limit_per_minute=0, source_rate_limit_per_minute=0,
    )  # fmt: skip
    calls: Counter[str] = Counter()
    # Each time the quota failed open (a store error or a lease slower than its timeout) is logged once.
    opened = _Opened()
    logging.getLogger("foldgate.edge.quota").addHandler(opened)
    dynamodb_client().meta.events.register(
        "before-call.dynamodb.*", lambda event_name, **_: calls.update([event_name.rsplit(".", 1)[-1]])
    )
    app = build_app(settings, admin_api=False)
    admitted: list[float] = []
    statuses: Counter[int] = Counter()
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://bench") as client:
        await client.get("/healthz")  # warm: lazy imports happen before the clock starts
        ready.put("ready")
        start_at: float = await asyncio.to_thread(go.get)
        await asyncio.sleep(max(0.0, start_at - time.time()))
        end = start_at + seconds
        sent = 0
        while (now := time.time()) < end:
            if rate is not None:
                due = start_at + sent / rate
                if due > now:
                    await asyncio.sleep(due - now)
                    continue
            r = await client.post("/mcp/all", content=_PING, headers=_HEADERS)
            sent += 1
            statuses[r.status_code] += 1
            if r.status_code == 200:
                admitted.append(time.time())
    return {
        "admitted": admitted, "statuses": dict(statuses), "dynamodb_calls": dict(calls),
        "failed_open": opened.count,
    }  # fmt: skip


def _phase(
    build_app: BuildApp, table: str, config: Path, processes: int, seconds: float, rate: float | None
) -> list[dict[str, Any]]:
    """Run ``processes`` serving processes on a tenant of their own; their figures."""
    ctx = multiprocessing.get_context("spawn")
    ready, go, out = ctx.Queue(), ctx.Queue(), ctx.Queue()
    tenant = f"t{uuid.uuid4().hex[:8]}"
    procs = [
        ctx.Process(
            target=_worker, args=(build_app, table, str(config), tenant, seconds, rate, ready, go, out)
        )
        for _ in range(processes)
    ]
    for proc in procs:
        proc.start()
    try:
        # Every process built and warm before any request: they start together.
        states = [ready.get(timeout=180) for _ in procs]
        start_at = time.time() + 0.5
        for _ in procs:
            go.put(start_at)
        results = [out.get(timeout=seconds + 120) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
    errors = [r["error"] for r in results if "error" in r]
    if errors or "failed" in states:
        raise RuntimeError(f"a serving process failed: {errors[0] if errors else 'while starting'}")
    return results


def _summary(results: list[dict[str, Any]], seconds: float, per_minute: int) -> dict[str, Any]:
    stamps = sorted(t for r in results for t in r["admitted"])
    statuses: Counter[int] = Counter()
    calls: Counter[str] = Counter()
    for r in results:
        statuses.update({int(k): v for k, v in r["statuses"].items()})
        calls.update(r["dynamodb_calls"])
    admitted = len(stamps)
    writes = calls.get("UpdateItem", 0)
    row: dict[str, Any] = {
        "requests": sum(statuses.values()),
        "admitted": admitted,
        "refused_429": statuses.get(429, 0),
        "other_statuses": {k: v for k, v in statuses.items() if k not in (200, 429)},
        "admitted_per_process": [len(r["admitted"]) for r in results],
        "quota_over_run": round(per_minute * seconds / 60),
        "bound_over_run": round(per_minute * (seconds + 6) / 60),
        "dynamodb_calls": dict(calls),
        "dynamodb_writes": writes,
        "writes_per_admitted": round(writes / admitted, 4) if admitted else None,
        "admitted_per_write": round(admitted / writes, 1) if writes else None,
        "failed_open": sum(r["failed_open"] for r in results),
    }
    if seconds >= 60:
        # The most admitted in any 60 s: slide a window over the admission times.
        most, lo = 0, 0
        for hi, t in enumerate(stamps):
            while t - stamps[lo] >= 60:
                lo += 1
            most = max(most, hi - lo + 1)
        row["max_in_any_60s"] = most
        row["max_in_any_60s_over_quota"] = round(most / per_minute, 3)
    return row


def run_scale_quota_bench(
    build_app: BuildApp,
    *,
    processes: int = 3,
    seconds: float = 60.0,
    per_minute: int = 12_000,
    steady_load: float = 0.8,
) -> dict[str, Any]:
    """Overload, then steady load, of one tenant quota across ``processes`` serving processes."""
    # Heavy benchmark dependencies load only when this bench runs.
    import boto3

    from foldgate.dev.bench.moto import create_table_from_template, moto_server

    report: dict[str, Any] = {
        "processes": processes, "seconds": seconds, "requests_per_minute": per_minute,
        "steady_load": steady_load,
    }  # fmt: skip
    with moto_server(), tempfile.TemporaryDirectory() as tmp:
        table = f"foldgate-bench-{uuid.uuid4().hex[:8]}"
        create_table_from_template(boto3.client("dynamodb"), table)
        config = Path(tmp) / "tenant.json"
        config.write_text(json.dumps({"servers": [], "limits": {"requests_per_minute": per_minute}}))
        overload = _phase(build_app, table, config, processes, seconds, None)
        report["overload"] = _summary(overload, seconds, per_minute)
        rate = steady_load * per_minute / 60 / processes
        steady = _phase(build_app, table, config, processes, seconds, rate)
        report["steady"] = _summary(steady, seconds, per_minute)
    return report


def format_scale_quota_report(r: dict[str, Any]) -> str:
    """A human-readable summary of the report."""
    q, s = r["requests_per_minute"], r["seconds"]
    over, steady = r["overload"], r["steady"]
    lines = [
        f"one tenant quota of {q:,}/min shared by {r['processes']} serving processes on one DynamoDB "
        f"table (moto_server), {s:g} s per phase",
        f"overload (each process as fast as answered): {over['requests']:,} requests, "
        f"{over['admitted']:,} admitted, {over['refused_429']:,} refused (429)",
        f"  admitted / quota over the run   {over['admitted'] / over['quota_over_run']:.3f} "
        f"(quota x {s:g}/60 = {over['quota_over_run']:,})",
        f"  admitted / bound over the run   {over['admitted'] / over['bound_over_run']:.3f} "
        f"(quota x ({s:g} + 6)/60 = {over['bound_over_run']:,})",
    ]
    if "max_in_any_60s" in over:
        lines.append(
            f"  most admitted in any 60 s       {over['max_in_any_60s']:,} = "
            f"{over['max_in_any_60s_over_quota']} x quota (target <= 1.1)"
        )
    lines.append(f"  admitted per process            {over['admitted_per_process']}")
    lines.append(
        f"  DynamoDB writes                 {over['dynamodb_writes']:,} "
        f"({over['admitted_per_write']} admitted per write)"
    )
    lines += [
        f"steady ({r['steady_load']:g} x quota, paced): {steady['requests']:,} requests, "
        f"{steady['admitted']:,} admitted, {steady['refused_429']:,} refused (429)",
        f"  DynamoDB writes                 {steady['dynamodb_writes']:,} = "
        f"{steady['writes_per_admitted']} per admitted request, one per {steady['admitted_per_write']} "
        "(target <= 1 per 50)",
        f"  admitted per process            {steady['admitted_per_process']}",
    ]
    for label, row in (("overload", over), ("steady", steady)):
        if row["other_statuses"]:
            lines.append(f"  {label}: other statuses {row['other_statuses']}")
        if row["failed_open"]:
            lines.append(
                f"  {label}: the quota failed open {row['failed_open']} time(s) (the store errored or took "
                "longer than the lease timeout; admitted meanwhile on the per-instance limit)"
            )
    return "\n".join(lines)
