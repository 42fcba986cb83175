"""``foldgate bench call``: the proxied tool-call path against a direct warm session, same run, same client.

Real processes on loopback: server-everything (Streamable HTTP, handshake era, stateful), the replay
upstream (2026-07-28, stateless) and ``foldgate serve`` as its own process, so a proxied call crosses
the same kind of HTTP hop as a direct one. Every caller is the MCP SDK's ``Client`` on a warm session:

* latency: p50/p95 of ``everything__echo`` / ``crm__find_contact`` through ``/mcp/all`` against the
  same tool on a direct session to the upstream, interleaved in blocks so machine noise hits both;
* recording: the same proxied call through a second gateway with the activity log off, interleaved
  with the first (on), so the log's cost on the call path is a difference within one run;
* edge: a ``tools/call`` the gateway answers itself (``describe_tool``), its share of the overhead;
* round trips: the gateway also knows each upstream under a second name routed through a counting
  ``WireProxy``; after warm-up, upstream HTTP requests (and handshakes, and new TCP connections) per
  proxied call are counted there (the latency figures never cross the proxy);
* concurrency: N callers, each on its own session, calling as fast as they can, gateway vs direct
  (the upstream's ``max_concurrency`` is raised to N so the gateway, not its queue, is measured);
* cold: a fresh process that imports the MCP Lambda app (``functions/mcp/app.py``), answers
  ``initialize`` and one proxied ``tools/call`` through Mangum, against a naive stack (the SDK server,
  FastAPI, Mangum, ... imported, then an SDK client opened to the upstream for that call).

``source`` runs the gateway and the cold process from another checkout's ``shared/`` (before/after).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from foldgate.dev.bench.call_procs import (
    PIDS,
    REPO,
    cpu_seconds,
    everything,
    foldgate_serve,
    index_once,
    replay_crm,
)
from foldgate.dev.bench.wire_proxy import wire_proxy

__all__ = ["format_call_report", "format_cpu", "run_call_bench"]

_HANDSHAKE = ("POST server/discover", "POST initialize", "POST notifications/initialized")
_NAIVE_IMPORTS = (
    "import mcp.server.lowlevel, mcp.server.streamable_http_manager, fastapi, mangum, jsonschema, boto3"
)


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@contextlib.asynccontextmanager
async def _session(url: str) -> Any:
    # The client stack loads only when this bench runs.
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


def _caller(client: Any, tool: str, args: dict[str, Any]) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        result = await client.call_tool(tool, args)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {str(result.content)[:200]}")

    return call


async def _latency(pairs: dict[str, tuple[Callable[[], Awaitable[None]], ...]], n: int) -> dict[str, Any]:
    """p50/p95 per side, measured in alternating blocks of 10 after a warm-up."""
    out: dict[str, Any] = {}
    for label, sides in pairs.items():
        samples: list[list[float]] = [[] for _ in sides]
        for fn in sides:
            for _ in range(10):
                await fn()
        while len(samples[0]) < n:
            for fn, into in zip(sides, samples, strict=True):
                for _ in range(10):
                    t = time.perf_counter()
                    await fn()
                    into.append((time.perf_counter() - t) * 1000)
        direct, proxied = samples
        out[label] = {
            "direct_p50_ms": round(statistics.median(direct), 2),
            "direct_p95_ms": round(_pct(direct, 0.95), 2),
            "proxied_p50_ms": round(statistics.median(proxied), 2),
            "proxied_p95_ms": round(_pct(proxied, 0.95), 2),
            "p50_overhead_ms": round(statistics.median(proxied) - statistics.median(direct), 2),
            "p95_overhead_ms": round(_pct(proxied, 0.95) - _pct(direct, 0.95), 2),
        }
    return out


async def _series(fn: Callable[[], Awaitable[None]], n: int) -> dict[str, float]:
    for _ in range(10):
        await fn()
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(statistics.median(samples), 2), "p95_ms": round(_pct(samples, 0.95), 2)}


async def _echo_pair(gateway: str, fleet: dict[str, Any], calls: int) -> dict[str, float]:
    """``everything__echo`` through ``gateway`` against ``echo`` on a direct session, interleaved."""
    echo = {"message": "bench"}
    async with _session(gateway) as gw, _session(fleet["everything"]) as ev:
        pair = (_caller(ev, "echo", echo), _caller(gw, "everything__echo", echo))
        row: dict[str, float] = (await _latency({"echo": pair}, calls))["echo"]
    return row


async def _throughput(
    url: str, tool: str, args: dict[str, Any], callers: int, calls: int, watch: dict[str, int] | None = None
) -> dict[str, Any]:
    """Calls per second of ``callers`` concurrent sessions making ``calls`` calls each; errors counted.
    With ``watch`` (name -> pid), also each watched process's CPU ms per call over the same calls, and
    the calling process's own (``client``): on a shared machine the steadier figure."""
    errors = 0
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(_session(url)) for _ in range(callers)]

        async def run(client: Any) -> None:
            nonlocal errors
            for _ in range(calls):
                try:
                    await _caller(client, tool, args)()
                except Exception:
                    errors += 1

        before = {name: cpu_seconds(pid) for name, pid in (watch or {}).items()}
        own = time.process_time()
        t = time.perf_counter()
        await asyncio.gather(*(run(c) for c in clients))
        wall = time.perf_counter() - t
        own = time.process_time() - own
    n = callers * calls
    out: dict[str, Any] = {"calls_per_s": round(n / wall, 1), "errors": errors}
    if watch:
        cpu: dict[str, float | None] = {}
        for name, pid in watch.items():
            start, end = before[name], cpu_seconds(pid)
            cpu[name] = None if start is None or end is None else round((end - start) / n * 1000, 3)
        cpu["client"] = round(own / n * 1000, 3)
        out["cpu_ms_per_call"] = cpu
    return out


def _watch(urls: dict[str, str]) -> dict[str, int]:
    """The pids behind a gateway URL (``.../mcp/...``) or an upstream URL, by name, where known."""
    pids = {name: PIDS.get(url.split("/mcp", 1)[0]) or PIDS.get(url) for name, url in urls.items()}
    return {name: pid for name, pid in pids.items() if pid is not None}


def _rounds(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Throughput rounds of one side as one: mean calls/s, errors summed, mean CPU ms per call."""
    out: dict[str, Any] = {
        "calls_per_s": round(statistics.mean(r["calls_per_s"] for r in rows), 1),
        "errors": sum(r["errors"] for r in rows),
    }
    cpu = [r["cpu_ms_per_call"] for r in rows if "cpu_ms_per_call" in r]
    if cpu:
        names = cpu[0].keys()
        out["cpu_ms_per_call"] = {
            name: None
            if any(c[name] is None for c in cpu)
            else round(statistics.mean(c[name] for c in cpu), 3)
            for name in names
        }
    return out


def format_cpu(label: str, cpu: dict[str, float | None] | None) -> str:
    """``label: gateway x, upstream y, client z CPU ms per call`` (what was measured)."""
    if not cpu:
        return f"{label}: CPU per call not measured here (needs /proc)"
    parts = ", ".join(f"{name} {'-' if ms is None else ms}" for name, ms in cpu.items())
    return f"{label}: {parts} CPU ms per call"


async def _round_trips(gateway: str, proxies: dict[str, Any], calls: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with _session(gateway) as client:
        for name, (proxy, tool, args) in proxies.items():
            call = _caller(client, tool, args)
            for _ in range(3):
                await call()  # warm: the gateway's pooled session exists
            proxy.reset()
            for _ in range(calls):
                await call()
            out[name] = {
                "upstream_requests_per_call": round(proxy.count() / calls, 2),
                "handshakes": sum(proxy.count(h) for h in _HANDSHAKE),
                "new_connections": proxy.connections,
            }
    return out


def _child_ms(code: str, env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, "-c", f"import time; t=time.perf_counter()\n{code}\nprint(time.perf_counter()-t)"],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"cold-start child failed: {out.stderr.strip()[-500:]}")
    return float(out.stdout.strip().splitlines()[-1]) * 1000


def _event(name: str, body: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((REPO / "events" / name).read_text())
    event["body"] = json.dumps(body)
    event["headers"]["content-length"] = str(len(event["body"]))
    return event


_OURS = """
import json, runpy, sys
handler = runpy.run_path({app!r})["handler"]
for event in json.load(open({events!r})):
    reply = handler(event, None)
    assert reply["statusCode"] == 200, reply
assert "Echo: cold" in reply["body"], reply["body"][:300]
"""

_NAIVE = """
{imports}
import asyncio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
async def first_call():
    async with Client(streamable_http_client({url!r}), cache=None) as client:
        result = await client.call_tool("echo", {{"message": "cold"}})
        assert "Echo: cold" in str(result.content)
asyncio.run(first_call())
"""


def _cold(upstream: str, tmp: Path, env: dict[str, str], rounds: int) -> dict[str, Any]:
    """Fresh process: import + initialize + first proxied call, ours vs the naive stack, interleaved."""
    config = tmp / "cold.json"
    config.write_text(json.dumps({"servers": [{"name": "everything", "url": upstream}]}))
    db = tmp / "cold.sqlite3"
    index_once(config, db, env)
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "everything__echo", "arguments": {"message": "cold"}}}  # fmt: skip
    events = tmp / "events.json"
    events.write_text(json.dumps([_event("mcp_initialize.json", init), _event("mcp_tools_call.json", call)]))
    child_env = {**env, "FOLDGATE_CONFIG_FILE": str(config), "FOLDGATE_SQLITE_PATH": str(db)}
    app = REPO / "functions" / "mcp" / "app.py"
    ours, naive = [], []
    for _ in range(rounds):
        ours.append(_child_ms(_OURS.format(app=str(app), events=str(events)), child_env))
        naive.append(_child_ms(_NAIVE.format(imports=_NAIVE_IMPORTS, url=upstream), child_env))
    o, v = statistics.median(ours), statistics.median(naive)
    return {"first_call_ms": round(o, 1), "naive_first_call_ms": round(v, 1), "ratio": round(o / v, 2)}


def _env(source: Path | None) -> dict[str, str]:
    env = {**os.environ, "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "true"}
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    return env


@contextlib.contextmanager
def _fleet(env: dict[str, str], tmp: Path, slots: dict[str, int]) -> Iterator[dict[str, Any]]:
    with everything() as ev_url, replay_crm() as crm_url, contextlib.ExitStack() as stack:
        proxies = {}
        for name, url in (("everything", ev_url), ("crm", crm_url)):
            parts = urlsplit(url)
            proxy = stack.enter_context(wire_proxy(parts.hostname or "127.0.0.1", parts.port or 80))
            proxies[name] = (proxy, proxy.url(parts.path))
        servers = [
            {"name": "everything", "url": ev_url, **slots},
            {"name": "crm", "url": crm_url},
            {"name": "evcount", "url": proxies["everything"][1]},
            {"name": "crmcount", "url": proxies["crm"][1]},
        ]
        base = stack.enter_context(foldgate_serve({"servers": servers}, tmp, env))
        # The same gateway with the activity log off: recording's cost, measured in the same run.
        (tmp / "off").mkdir(exist_ok=True)
        quiet = stack.enter_context(
            foldgate_serve({"servers": servers}, tmp / "off", {**env, "FOLDGATE_ACTIVITY": "off"})
        )
        yield {
            "everything": ev_url, "crm": crm_url, "gateway": base + "/mcp/all",
            "gateway_off": quiet + "/mcp/all", "proxies": proxies, "servers": servers,
        }  # fmt: skip


async def _warm(fleet: dict[str, Any], calls: int, callers: int, per_caller: int) -> dict[str, Any]:
    echo, find = {"message": "bench"}, {"query": "ada"}
    report: dict[str, Any] = {}
    async with (
        _session(fleet["gateway"]) as gw,
        _session(fleet["everything"]) as ev,
        _session(fleet["crm"]) as crm,
    ):
        report["latency"] = await _latency(
            {
                "everything_echo": (_caller(ev, "echo", echo), _caller(gw, "everything__echo", echo)),
                "replay_find_contact": (
                    _caller(crm, "find_contact", find),
                    _caller(gw, "crm__find_contact", find),
                ),
            },
            calls,
        )
        async with _session(fleet["gateway_off"]) as quiet:
            sides = (_caller(quiet, "crm__find_contact", find), _caller(gw, "crm__find_contact", find))
            on_off = await _latency({"recording": sides}, calls)
        row = on_off["recording"]
        report["recording"] = {
            "off_p50_ms": row["direct_p50_ms"], "off_p95_ms": row["direct_p95_ms"],
            "on_p50_ms": row["proxied_p50_ms"], "on_p95_ms": row["proxied_p95_ms"],
            "p50_added_ms": row["p50_overhead_ms"], "p95_added_ms": row["p95_overhead_ms"],
        }  # fmt: skip
        # The gateway's own share: a tools/call it answers without any upstream (describe_tool).
        describe = _caller(gw, "describe_tool", {"tool_ids": ["everything__echo"]})
        report["edge_only"] = await _series(describe, calls)
    ev_proxy, crm_proxy = fleet["proxies"]["everything"][0], fleet["proxies"]["crm"][0]
    report["round_trips"] = await _round_trips(
        fleet["gateway"],
        {
            "everything": (ev_proxy, "evcount__echo", echo),
            "replay": (crm_proxy, "crmcount__find_contact", find),
        },
        20,
    )
    watch = _watch({"gateway": fleet["gateway"], "upstream": fleet["everything"]})
    rounds: dict[str, list[dict[str, Any]]] = {"direct": [], "proxied": []}
    for _ in range(2):  # interleaved, so machine noise hits both alike
        rounds["direct"].append(
            await _throughput(fleet["everything"], "echo", echo, callers, per_caller, watch)
        )
        rounds["proxied"].append(
            await _throughput(fleet["gateway"], "everything__echo", echo, callers, per_caller, watch)
        )
    direct, proxied = (_rounds(rows) for rows in rounds.values())
    report["concurrency"] = {
        "callers": callers,
        "direct": direct,
        "proxied": proxied,
        "ratio": round(proxied["calls_per_s"] / direct["calls_per_s"], 2) if direct["calls_per_s"] else 0.0,
    }
    return report


def run_call_bench(
    *,
    calls: int = 100,
    callers: int = 32,
    per_caller: int = 10,
    cold_rounds: int = 2,
    source: Path | None = None,
    breakdown: bool = False,
    breakdown_only: bool = False,
) -> dict[str, Any]:
    """Start the fleet and the gateway, measure warm latency, round trips, concurrency and cold start;
    with ``breakdown`` also each stage of a proxied call (``breakdown_only``: that alone)."""
    env = _env(source)
    # As many slots as callers, so the figure is the gateway's, not its queue's (an older source
    # checkout has no such setting, and no limit).
    slots = {"max_concurrency": max(16, callers)} if source is None else {}
    with tempfile.TemporaryDirectory() as tmp_name, _fleet(env, Path(tmp_name), slots) as fleet:
        report: dict[str, Any] = {"source": str(source or "this checkout"), "calls": calls}
        if breakdown or breakdown_only:
            # Loaded only when asked: the stage-timing gateway and its report.
            from foldgate.dev.bench.call_stages import run_breakdown

            report["breakdown"] = run_breakdown(
                fleet["servers"], Path(tmp_name), env, lambda url: asyncio.run(_echo_pair(url, fleet, calls))
            )
            if breakdown_only:
                return report
        report.update(asyncio.run(_warm(fleet, calls, callers, per_caller)))
        if cold_rounds > 0:
            report["cold"] = _cold(fleet["everything"], Path(tmp_name), env, cold_rounds)
    return report


def format_call_report(r: dict[str, Any]) -> str:
    """A human-readable summary of the report."""
    if "breakdown" in r:
        # Loaded only when the report has one.
        from foldgate.dev.bench.call_stages import format_breakdown

        stages = format_breakdown(r["breakdown"])
        return stages if "latency" not in r else stages + "\n" + _format_warm(r)
    return _format_warm(r)


def _format_warm(r: dict[str, Any]) -> str:
    head = f"{'upstream tool':<22}{'direct p50':>11}{'p95':>8}{'proxied p50':>13}{'p95':>8}"
    head += f"{'+p50':>8}{'+p95':>8}"
    lines = [f"gateway from {r['source']}; warm latency over {r['calls']} calls per side (ms)", head]
    for label, row in r["latency"].items():
        lines.append(
            f"{label:<22}{row['direct_p50_ms']:>11.2f}{row['direct_p95_ms']:>8.2f}{row['proxied_p50_ms']:>13.2f}"
            f"{row['proxied_p95_ms']:>8.2f}{row['p50_overhead_ms']:>8.2f}{row['p95_overhead_ms']:>8.2f}"
        )
    rec = r.get("recording")
    if rec:
        lines.append(
            f"activity log on vs off (crm__find_contact, same run): p50 {rec['on_p50_ms']} vs "
            f"{rec['off_p50_ms']} ({rec['p50_added_ms']:+.2f}), p95 {rec['on_p95_ms']} vs "
            f"{rec['off_p95_ms']} ({rec['p95_added_ms']:+.2f})"
        )
    edge = r["edge_only"]
    lines.append(f"gateway alone (describe_tool, no upstream): p50 {edge['p50_ms']} p95 {edge['p95_ms']}")
    for label, row in r["round_trips"].items():
        lines.append(
            f"warm {label}: {row['upstream_requests_per_call']} upstream HTTP requests per call, "
            f"{row['handshakes']} handshakes, {row['new_connections']} new connections"
        )
    c = r["concurrency"]
    lines.append(
        f"{c['callers']} concurrent callers: proxied {c['proxied']['calls_per_s']} calls/s "
        f"({c['proxied']['errors']} errors) vs direct {c['direct']['calls_per_s']} "
        f"({c['direct']['errors']} errors): ratio {c['ratio']}"
    )
    lines.append("  " + format_cpu("direct", c["direct"].get("cpu_ms_per_call")))
    lines.append("  " + format_cpu("proxied", c["proxied"].get("cpu_ms_per_call")))
    cold = r.get("cold")
    if cold:
        lines.append(
            f"cold import + initialize + first call: {cold['first_call_ms']} ms vs naive stack "
            f"{cold['naive_first_call_ms']} ms (ratio {cold['ratio']})"
        )
    return "\n".join(lines)
