"""``foldgate bench serve``: warm request latency of the MCP endpoint and the MCP Lambda's init cost.

Every latency is reported with the bare cost of serializing the same payload measured in the same
run, so the ratio stays meaningful on a noisy machine. Upstream calls go to an in-process upstream
that answers at once, so the call figure is the gateway's own overhead (validation + dispatch).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.dev.corpus import load_catalog
from foldgate.edge.app import create_app
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.param_headers import HeaderParam
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import UpstreamClient

__all__ = ["format_serve_report", "run_serve_bench", "safe_server_names"]

_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}
_NAIVE_IMPORTS = "import " + ", ".join(
    (
        "mcp.server.lowlevel",
        "mcp.server.streamable_http_manager",
        "fastapi",
        "mangum",
        "jsonschema",
        "boto3",
        "pydantic",
    )
)


class _InstantUpstream(UpstreamClient):
    async def call_tool(
        self,
        server: ServerConfig,
        name: str,
        arguments: dict[str, Any],
        *,
        annotations: Mapping[str, Any] | None = None,
        header_params: tuple[HeaderParam, ...] = (),
    ) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "ok"}], "isError": False}


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def safe_server_names(raw_names: Iterable[str]) -> dict[str, str]:
    """Valid, unique foldgate server names for a recorded catalog's server names (in first-seen order)."""
    taken: set[str] = set()
    out: dict[str, str] = {}
    for raw in dict.fromkeys(raw_names):
        base = re.sub(r"[^A-Za-z0-9-]+", "-", raw).strip("-")[:20] or "s"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base[:17]}-{n}"
        taken.add(name)
        out[raw] = name
    return out


async def _time(fn: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    for _ in range(max(3, n // 10)):
        await fn()  # warm: views, validators, the SDK import
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _bare(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _row(request_ms: list[float], bare_ms: list[float]) -> dict[str, float]:
    p50, bare50 = statistics.median(request_ms), statistics.median(bare_ms)
    return {
        "p50_ms": round(p50, 3),
        "p95_ms": round(_pct(request_ms, 0.95), 3),
        "bare_serialize_ms": round(bare50, 3),
        "ratio": round(p50 / bare50, 2) if bare50 else 0.0,
    }


async def _latency(corpus: Path, n: int) -> dict[str, Any]:
    # Heavy benchmark dependencies load only when this bench runs.
    import httpx2

    tools = load_catalog(corpus)
    names = safe_server_names(t.server for t in tools)
    renamed = [dataclasses.replace(t, server=names[t.server]) for t in tools]
    servers = [{"name": n, "url": "http://127.0.0.1:9/mcp"} for n in names.values()]
    config = parse_tenant_config({"direct_tool_response_mode": "deferred", "servers": servers})
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", renamed), expected_current=None)
    gateway = Gateway(store, StaticConfigSource({"default": config}), _InstantUpstream(), catalog_ttl=60)
    app = create_app(gateway)
    view = gateway.view("default")
    flat = next(t for t in view.visible if not t.lossy and t.tool.input_schema.get("required"))
    describe_ids = [t.published for t in view.visible[:5]]
    args = dict.fromkeys(flat.tool.input_schema["required"], "x")
    if gateway.caller.check_arguments(flat, args) is not None:  # pick any tool whose string args validate
        flat = next(t for t in view.visible if not t.tool.input_schema.get("required"))
        args = {}
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://bench") as client:

        async def post(method: str, params: Any = None) -> Any:
            msg: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
            if params is not None:
                msg["params"] = params
            r = await client.post("/mcp/all", content=json.dumps(msg), headers=_HEADERS)
            return r.json()

        listing = await post("tools/list")
        described = await post(
            "tools/call", {"name": "describe_tool", "arguments": {"tool_ids": describe_ids}}
        )
        called = await post("tools/call", {"name": flat.published, "arguments": args})
        for reply in (listing, described, called):
            assert "result" in reply, reply
        list_ms = await _time(lambda: post("tools/list"), n)
        describe_ms = await _time(
            lambda: post("tools/call", {"name": "describe_tool", "arguments": {"tool_ids": describe_ids}}), n
        )
        call_ms = await _time(lambda: post("tools/call", {"name": flat.published, "arguments": args}), n)
    # The auth rows need PyJWT and cryptography: loaded only for this bench.
    from foldgate.dev.bench.auth import run_auth_bench

    return {
        "auth": await run_auth_bench(gateway, n),
        "tools": len(view.visible),
        "listing_bytes": len(json.dumps(listing)),
        "tools_list": _row(list_ms, _bare(lambda: json.dumps(listing), n)),
        "describe_tool": _row(describe_ms, _bare(lambda: json.dumps(described), n)),
        "validated_call": _row(call_ms, _bare(lambda: json.dumps(called), n)),
    }


def _import_ms(code: str, env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, "-c", f"import time; t=time.perf_counter(); {code}; print(time.perf_counter()-t)"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1]) * 1000


def _cold_start(app_py: Path, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "cfg.json").write_text('{"servers": []}')
        env = {
            **os.environ,
            "FOLDGATE_SQLITE_PATH": f"{tmp}/s.sqlite3",
            "FOLDGATE_CONFIG_FILE": f"{tmp}/cfg.json",
        }
        ours, naive = [], []
        for _ in range(rounds):  # interleaved, so machine noise hits both alike
            ours.append(_import_ms(f"import runpy; runpy.run_path({str(app_py)!r})", env))
            naive.append(_import_ms(_NAIVE_IMPORTS, env))
        sdk = [
            _import_ms("import mcp.server.streamable_http_manager, foldgate.edge.mcp_server", env)
            for _ in range(rounds)
        ]
    o, v = statistics.median(ours), statistics.median(naive)
    return {
        "app_init_ms": round(o, 1),
        "naive_stack_ms": round(v, 1),
        "ratio": round(o / v, 2),
        "sdk_on_first_sdk_request_ms": round(statistics.median(sdk), 1),
    }


def run_serve_bench(corpus: str | Path, *, requests: int = 200, app_py: Path | None = None) -> dict[str, Any]:
    """Measure warm in-process latency on a corpus and the MCP Lambda's init time."""
    report: dict[str, Any] = {"corpus": str(corpus), "requests": requests}
    report.update(asyncio.run(_latency(Path(corpus), requests)))
    if app_py is not None and app_py.exists():
        report["cold_start"] = _cold_start(app_py, 5)
    return report


def format_serve_report(r: dict[str, Any]) -> str:
    """A human-readable table of the report."""
    lines = [f"corpus {r['corpus']}: {r['tools']} tools, deferred listing {r['listing_bytes']:,} bytes",
             f"{'request':<16}{'p50 ms':>9}{'p95 ms':>9}{'bare ms':>9}{'ratio':>7}"]  # fmt: skip
    for key in ("tools_list", "describe_tool", "validated_call"):
        row = r[key]
        lines.append(
            f"{key:<16}{row['p50_ms']:>9.3f}{row['p95_ms']:>9.3f}{row['bare_serialize_ms']:>9.3f}{row['ratio']:>7.2f}"
        )
    auth = r.get("auth")
    if auth:
        for key in ("fgt_token", "jwt_es256", "jwt_rs256"):
            row = auth[key]
            ratio = f"  x{row['vs_fgt']} vs fgt_" if "vs_fgt" in row else ""
            lines.append(f"auth {key:<11}{row['p50_ms']:>9.3f}{row['p95_ms']:>9.3f}{ratio}")
        lines.append(
            f"auth: first JWT on a cold instance {auth['jwt_cold_first_ms']} ms (discovery + JWKS, "
            f"in-process issuer; {auth['issuer_fetches']} issuer reads in the whole run)"
        )
    cold = r.get("cold_start")
    if cold:
        lines.append(
            f"init: functions/mcp/app.py {cold['app_init_ms']} ms vs naive stack {cold['naive_stack_ms']} ms "
            f"(ratio {cold['ratio']}); the SDK loads on the first request that needs it "
            f"(+{cold['sdk_on_first_sdk_request_ms']} ms)"
        )
    return "\n".join(lines)
