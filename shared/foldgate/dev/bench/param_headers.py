"""``foldgate bench headers``: what SEP-2243's ``Mcp-Param-*`` check costs.

Index time: reading every tool's ``x-mcp-header`` declarations from its schema (``header_params``)
over a corpus. Request path: the edge's check (:func:`foldgate.edge.param_headers.param_header_refusal`)
for a 2026-07-28 ``tools/call`` of a tool that declares no header arguments (the common case: the
tool is found by its ``Mcp-Name`` and the body is not read again) and of one that declares some (the
body read again and its arguments compared with the headers). Both calls pass; the figures are the
check alone, per call, on a warm view.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

__all__ = ["format_headers_report", "run_headers_bench"]

_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "tenant": {"type": "string", "x-mcp-header": "Tenant"},
        "query": {"type": "string"},
    },
}


def _median_us(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[len(ordered) // 2] * 1e6, 2)


def run_headers_bench(corpus: str | Path, *, calls: int = 2000) -> dict[str, Any]:
    """Index-time and per-request costs of the header check (see the module doc)."""
    # Heavy benchmark dependencies load only when this bench runs.
    from starlette.requests import Request

    from foldgate.config.source import StaticConfigSource
    from foldgate.config.tenant import parse_tenant_config
    from foldgate.dev.bench.serve import _InstantUpstream, safe_server_names
    from foldgate.dev.corpus import load_catalog
    from foldgate.edge.param_headers import param_header_refusal
    from foldgate.index.indexer import catalog_from_tools
    from foldgate.model.param_headers import header_params
    from foldgate.model.principal import Principal
    from foldgate.model.rpc_body import RpcBody
    from foldgate.model.tool import tool_from_wire
    from foldgate.serve.gateway import Gateway
    from foldgate.store.catalog.sqlite import SqliteStore

    tools = load_catalog(corpus)
    started = time.perf_counter()
    declaring = sum(1 for t in tools if header_params(t.input_schema))
    index_ms = (time.perf_counter() - started) * 1000

    names = safe_server_names(t.server for t in tools)
    renamed = [dataclasses.replace(t, server=names[t.server]) for t in tools]
    first = renamed[0].server
    renamed.append(tool_from_wire(first, {"name": "route_bench", "description": "", "inputSchema": _SCHEMA}))
    servers = [{"name": s, "url": "http://127.0.0.1:9/mcp", "tool_loading": "eager"} for s in names.values()]
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", renamed), expected_current=None)
    config = parse_tenant_config({"servers": servers})
    gateway = Gateway(store, StaticConfigSource({"default": config}), _InstantUpstream(), catalog_ttl=60)
    principal = Principal("default")
    view = gateway.view(principal)
    plain = next(t for t in view.visible if not t.header_params and t.published.isascii())
    declared = next(t for t in view.visible if t.header_params)
    figures: dict[str, float] = {}
    for label, tool, arguments, sent in (
        ("no_header_args_us", plain, {"q": "x" * 200}, {}),
        ("header_args_us", declared, {"region": "eu-west", "tenant": "acme", "query": "x" * 200},
         {"mcp-param-region": "eu-west", "mcp-param-tenant": "=?base64?YWNtZQ==?="}),
    ):  # fmt: skip
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": tool.published, "arguments": arguments}}).encode()  # fmt: skip
        headers = {"mcp-method": "tools/call", "mcp-protocol-version": "2026-07-28",
                   "mcp-name": tool.published, **sent}  # fmt: skip
        scope = {
            "type": "http",
            "method": "POST",
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        }
        samples = []
        for i in range(calls + calls // 10):
            request = Request(scope)
            t = time.perf_counter()
            # A fresh body each time: its parse (shared with the request's other readers) is counted.
            refused = param_header_refusal(request, RpcBody(body), gateway, principal, "direct")
            if i >= calls // 10:  # the first tenth warms the view
                samples.append(time.perf_counter() - t)
            assert refused is None, f"{label}: the bench's own call was refused"
        figures[label] = _median_us(samples)
    return {
        "corpus": str(corpus),
        "tools": len(tools),
        "tools_declaring_headers": declaring,
        "index_header_params_ms": round(index_ms, 2),
        "calls": calls,
        **figures,
    }


def format_headers_report(report: dict[str, Any]) -> str:
    """The report as a few lines of text."""
    return "\n".join(
        [
            f"corpus {report['corpus']}: {report['tools']} tools, "
            f"{report['tools_declaring_headers']} declaring x-mcp-header arguments",
            f"index time: header_params over every schema {report['index_header_params_ms']} ms",
            f"request path (median of {report['calls']} checks): a tool without header arguments "
            f"{report['no_header_args_us']} µs, a tool with two {report['header_args_us']} µs",
        ]
    )
