"""``foldgate bench telemetry``: what call metrics and traces cost, and the MCP function's init.

* **Recorders.** Microseconds per event for the Prometheus recorder (local) and the EMF recorder
  (Lambda; its per-invocation flush too, printing to /dev/null); what tracing adds to a request with
  no backend (its trace id, no-op spans, the upstream's traceparent).
* **Tracing.** Warm validated ``tools/call`` latency through the in-process app with tracing off and on
  (the OpenTelemetry backend with a batch processor and an exporter that discards), interleaved in
  rounds so machine noise hits both alike. The upstream is in-process, so the spans measured are the
  request's, auth's, view's, call's and validation's; the upstream span costs as one more.
* **Init.** ``functions/mcp/app.py`` imported in fresh processes with tracing off, tracing on (an OTLP
  endpoint set), and, with ``--before``, another checkout's (e.g. main's) with tracing off.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from foldgate.model.activity import ActivityEvent

__all__ = ["format_telemetry_report", "run_telemetry_bench"]

_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


def _pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _recorders(n: int) -> dict[str, float]:
    # Loaded only for this bench: prometheus_client is a local extra.
    from foldgate.telemetry.emf import EmfRecorder
    from foldgate.telemetry.prometheus import PrometheusRecorder

    events = [
        ActivityEvent(
            tenant="acme", method="tools/call", surface="mcp", outcome="ok", server=f"s{i % 8}",
            gateway_ms=3.2, upstream_ms=2.1, request_bytes=120, response_bytes=800,
        )
        for i in range(n)
    ]  # fmt: skip
    out: dict[str, float] = {}
    prometheus = PrometheusRecorder()
    t = time.perf_counter()
    for e in events:
        prometheus.record(e)
    out["prometheus_record_us"] = round((time.perf_counter() - t) / n * 1e6, 2)
    emf = EmfRecorder(namespace="bench", service="bench")
    t = time.perf_counter()
    for e in events:
        emf.record(e)
    out["emf_record_us"] = round((time.perf_counter() - t) / n * 1e6, 2)
    flushes = []
    with contextlib.redirect_stdout(io.StringIO()):
        emf.flush()  # the first flush imports Powertools Metrics
        for _ in range(20):
            emf.record(events[0])
            t = time.perf_counter()
            emf.flush()
            flushes.append((time.perf_counter() - t) * 1000)
    out["emf_flush_one_group_ms"] = round(statistics.median(flushes), 3)
    out["tracing_off_request_us"] = _tracing_off_us(n)
    return out


def _tracing_off_us(n: int) -> float:
    """Microseconds per request of what tracing adds with no backend: the trace of a request without a
    client traceparent (a new id), five no-op spans and the traceparent one upstream request gets."""
    # Loaded only for this bench.
    from foldgate.model.rpc_body import RpcBody
    from foldgate.telemetry import tracing
    from foldgate.telemetry.traceparent import incoming_traceparent

    body = RpcBody(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}')
    previous = tracing.install(None)
    try:
        t = time.perf_counter()
        for _ in range(n):
            with tracing.request_trace(incoming_traceparent(None, body), surface="direct") as traced:
                traced.set(tenant="default")
                for name in ("foldgate.auth", "foldgate.view", "foldgate.call", "foldgate.validation"):
                    with tracing.span(name, tenant="default") as child:
                        child.set(outcome="ok")
                with tracing.span("foldgate.upstream", "client", server="s", tool="t"):
                    tracing.outgoing_traceparent()
        return round((time.perf_counter() - t) / n * 1e6, 2)
    finally:
        tracing.install(previous)


async def _tracing(corpus: Path, n: int, rounds: int) -> dict[str, Any]:
    # Heavy benchmark dependencies load only when this bench runs.
    import dataclasses

    import httpx2
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from foldgate.config.source import StaticConfigSource
    from foldgate.config.tenant import parse_tenant_config
    from foldgate.dev.bench.serve import _InstantUpstream, safe_server_names
    from foldgate.dev.corpus import load_catalog
    from foldgate.edge.app import create_app
    from foldgate.index.indexer import catalog_from_tools
    from foldgate.serve.gateway import Gateway
    from foldgate.store.catalog.sqlite import SqliteStore
    from foldgate.telemetry import tracing
    from foldgate.telemetry.otel import OtelBackend, tracer_provider

    class _Discard(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tools = load_catalog(corpus)
    names = safe_server_names(t.server for t in tools)
    renamed = [dataclasses.replace(t, server=names[t.server]) for t in tools]
    servers = [{"name": s, "url": "http://127.0.0.1:9/mcp"} for s in names.values()]
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", renamed), expected_current=None)
    config = parse_tenant_config({"servers": servers})
    gateway = Gateway(store, StaticConfigSource({"default": config}), _InstantUpstream(), catalog_ttl=60)
    view = gateway.view("default")
    tool = next(t for t in view.visible if not t.tool.input_schema.get("required"))
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": tool.published, "arguments": {}}})  # fmt: skip
    provider = tracer_provider(BatchSpanProcessor(_Discard()), service="bench")
    backend = OtelBackend(provider)
    samples: dict[str, list[float]] = {"off": [], "on": []}
    transport = httpx2.ASGITransport(app=create_app(gateway))
    async with httpx2.AsyncClient(transport=transport, base_url="http://bench") as client:
        for _ in range(rounds):
            for mode in ("off", "on"):
                previous = tracing.install(backend if mode == "on" else None)
                try:
                    for i in range(n + 10):
                        t = time.perf_counter()
                        r = await client.post("/mcp/all", content=body, headers=_HEADERS)
                        elapsed = (time.perf_counter() - t) * 1000
                        assert r.status_code == 200, r.text
                        if i >= 10:  # the first calls of a round warm up
                            samples[mode].append(elapsed)
                finally:
                    tracing.install(previous)
    provider.shutdown()
    off, on = samples["off"], samples["on"]
    return {
        "calls_per_mode": len(off),
        "off_p50_ms": round(statistics.median(off), 3),
        "off_p95_ms": round(_pct(off, 0.95), 3),
        "on_p50_ms": round(statistics.median(on), 3),
        "on_p95_ms": round(_pct(on, 0.95), 3),
        "added_p50_ms": round(statistics.median(on) - statistics.median(off), 3),
    }


def _init_ms(app_py: Path, shared: Path, env: dict[str, str]) -> float:
    run = f"runpy.run_path({str(app_py)!r})"
    code = f"import runpy, time; t=time.perf_counter(); {run}; print(time.perf_counter()-t)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={**env, "PYTHONPATH": str(shared)},
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1]) * 1000


def _init(repo: Path, before: Path | None, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "cfg.json").write_text('{"servers": []}')
        base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "FOLDGATE_"))}
        base.update(FOLDGATE_SQLITE_PATH=f"{tmp}/s.sqlite3", FOLDGATE_CONFIG_FILE=f"{tmp}/cfg.json")
        traced = {**base, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
        app = repo / "functions" / "mcp" / "app.py"
        runs: dict[str, list[float]] = {"off": [], "on": []}
        if before is not None:
            runs["before_off"] = []
        for _ in range(rounds):  # interleaved, so machine noise hits every variant alike
            runs["off"].append(_init_ms(app, repo / "shared", base))
            runs["on"].append(_init_ms(app, repo / "shared", traced))
            if before is not None:
                runs["before_off"].append(
                    _init_ms(before / "functions" / "mcp" / "app.py", before / "shared", base)
                )
    return {f"{k}_ms": round(statistics.median(v), 1) for k, v in runs.items()} | {"rounds": rounds}


def run_telemetry_bench(
    corpus: str | Path, *, calls: int = 200, rounds: int = 5, init_rounds: int = 5, before: Path | None = None
) -> dict[str, Any]:
    """Measure the recorders, tracing's per-call cost and the MCP function's init (see the module doc)."""
    repo = Path(__file__).resolve().parents[4]
    report: dict[str, Any] = {"recorders": _recorders(20_000)}
    report["tracing"] = asyncio.run(_tracing(Path(corpus), calls // rounds or 1, rounds))
    if init_rounds > 0:
        report["init"] = _init(repo, before, init_rounds)
    return report


def format_telemetry_report(r: dict[str, Any]) -> str:
    """A human-readable summary of the report."""
    rec, tr = r["recorders"], r["tracing"]
    lines = [
        f"metrics: prometheus record {rec['prometheus_record_us']} us/call, emf record "
        f"{rec['emf_record_us']} us/call, emf flush {rec['emf_flush_one_group_ms']} ms/group",
        f"tracing off: {rec['tracing_off_request_us']} us/request (trace id, no-op spans, upstream header)",
        f"tracing: tools/call p50 {tr['off_p50_ms']} ms off, {tr['on_p50_ms']} ms on "
        f"(+{tr['added_p50_ms']} ms); p95 {tr['off_p95_ms']} / {tr['on_p95_ms']} ms "
        f"({tr['calls_per_mode']} calls each)",
    ]
    init = r.get("init")
    if init:
        before = f", before {init['before_off_ms']} ms (tracing off)" if "before_off_ms" in init else ""
        lines.append(
            f"init functions/mcp/app.py: tracing off {init['off_ms']} ms, on {init['on_ms']} ms{before} "
            f"(median of {init['rounds']})"
        )
    return "\n".join(lines)
