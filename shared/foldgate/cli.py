"""The ``foldgate`` command line: thin argument parsing over the package's functions."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from foldgate.errors import ConfigError, FoldgateError

__all__ = ["main"]


def _cmd_signature(args: argparse.Namespace) -> int:
    from foldgate.corpus import load_catalog
    from foldgate.signature import compile_signature

    if args.catalog:
        for tool in load_catalog(args.catalog):
            sig = tool.signature
            row = {"id": f"{tool.server}__{tool.name}", "signature": sig.params, "lossy": sig.lossy}
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        return 0
    text = Path(args.schema).read_text(encoding="utf-8") if args.schema else sys.stdin.read()
    sig = compile_signature(text)
    if args.json:
        print(json.dumps({"signature": sig.params, "lossy": sig.lossy}, ensure_ascii=False))
    else:
        print(sig.params)
    return 0


def _cmd_bench_tokens(args: argparse.Namespace) -> int:
    from foldgate.bench.tokens import format_token_report, run_token_bench

    report = run_token_bench(
        args.corpus,
        tokenizer=args.tokenizer,
        mcpproxy_rendering=args.mcpproxy_rendering,
        budget=args.budget,
    )
    print(json.dumps(report, ensure_ascii=False) if args.json else format_token_report(report))
    return 0


def _cmd_bench_cloud(args: argparse.Namespace) -> int:
    from foldgate.bench.cloud import format_cloud_report, run_cloud_bench

    report = run_cloud_bench(args.corpus, requests=args.requests)
    print(json.dumps(report) if args.json else format_cloud_report(report))
    return 0


def _cmd_bench_serve(args: argparse.Namespace) -> int:
    from foldgate.bench.serve import format_serve_report, run_serve_bench

    app_py = Path(__file__).resolve().parents[2] / "functions" / "mcp" / "app.py"
    report = run_serve_bench(args.corpus, requests=args.requests, app_py=app_py)
    print(json.dumps(report) if args.json else format_serve_report(report))
    return 0


def _cmd_bench_search(args: argparse.Namespace) -> int:
    from foldgate.bench.search import format_search_report, run_search_bench
    from foldgate.search import DEFAULT, PLAIN

    config = PLAIN if args.plain else DEFAULT
    report = run_search_bench(args.tools, args.queries, limit=args.limit, config=config)
    print(json.dumps(report) if args.json else format_search_report(report))
    return 0


def _configs(args: argparse.Namespace) -> Any:
    from foldgate.config import parse_tenant_config
    from foldgate.config_source import FileConfigSource, StaticConfigSource

    if args.config:
        return FileConfigSource(args.config, tenant=args.tenant)
    if not args.upstream:
        raise ConfigError("give --config FILE or at least one --upstream NAME=URL")
    servers = []
    for spec in args.upstream:
        name, sep, url = spec.partition("=")
        if not sep:
            raise ConfigError(f"--upstream {spec!r}: expected NAME=URL")
        servers.append({"name": name, "url": url})
    doc: dict[str, Any] = {"servers": servers}
    if args.response_mode:
        doc["direct_tool_response_mode"] = args.response_mode
    return StaticConfigSource({args.tenant: parse_tenant_config(doc, source="--upstream")})


def _settings(args: argparse.Namespace) -> Any:
    from foldgate.config import Settings

    settings = Settings.from_env()
    return settings.model_copy(
        update={"sqlite_path": args.db or settings.sqlite_path, "default_tenant": args.tenant}
    )


def _cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from foldgate.local import build_local

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpx2", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    hosts = [f"{args.host}:{args.port}", f"localhost:{args.port}", f"127.0.0.1:{args.port}"]
    local = build_local(_configs(args), _settings(args), interval_s=args.interval, allowed_hosts=hosts)
    base = f"http://{args.host}:{args.port}"
    print(f"foldgate {base}/mcp (routed) · {base}/mcp/all (direct) · {base}/healthz", flush=True)
    uvicorn.run(local.app, host=args.host, port=args.port, log_level="warning")
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    import asyncio
    import dataclasses

    from foldgate.local import build_local

    local = build_local(_configs(args), _settings(args))

    async def run() -> list[Any]:
        try:
            return await local.index_all()
        finally:
            await local.indexer.upstream.aclose()

    reports = asyncio.run(run())
    for report in reports:
        print(json.dumps(dataclasses.asdict(report), ensure_ascii=False))
    return 0 if all(r.error is None for r in reports) else 1


def _cmd_replay(args: argparse.Namespace) -> int:
    from foldgate.replay import run_replay

    run_replay(args.catalog, host=args.host, port=args.port, server=args.server)
    return 0


def _add_tenant_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="tenant config file (YAML or JSON)")
    p.add_argument("--upstream", action="append", metavar="NAME=URL", help="quick start: an upstream server")
    p.add_argument("--response-mode", choices=["full", "deferred", "auto"], help="with --upstream")
    p.add_argument("--tenant", default="default", help="tenant id (default: default)")
    p.add_argument("--db", help="SQLite file (default: .foldgate/foldgate.sqlite3)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="foldgate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sig = sub.add_parser("signature", help="compile a JSON Schema into a compact signature")
    sig.add_argument("schema", nargs="?", help="schema file (default: stdin)")
    sig.add_argument("--json", action="store_true", help='print {"signature", "lossy"}')
    sig.add_argument("--catalog", help="a tools.jsonl catalog: one JSON line per tool")
    sig.set_defaults(func=_cmd_signature)

    bench = sub.add_parser("bench", help="benchmarks that print figures")
    bench_sub = bench.add_subparsers(dest="bench", required=True)
    tok = bench_sub.add_parser("tokens", help="listing tokens per mode on a recorded catalog")
    tok.add_argument("--corpus", required=True, help="tools.jsonl, a corpus folder, or an mcpproxy file")
    tok.add_argument("--tokenizer", choices=["cl100k", "o200k"], default="cl100k")
    tok.add_argument("--json", action="store_true", help="print one JSON object")
    tok.add_argument(
        "--mcpproxy-rendering",
        action="store_true",
        help="render entries as mcpproxy does (default annotations, schema cut to properties/required)",
    )
    tok.add_argument(
        "--budget",
        type=int,
        help="listing token budget for the budget row (default: halfway between deferred and full)",
    )
    tok.set_defaults(func=_cmd_bench_tokens)
    srv = bench_sub.add_parser("serve", help="warm MCP request latency and Lambda init time")
    srv.add_argument("--corpus", required=True, help="catalog to serve deferred (e.g. the 527-tool snapshot)")
    srv.add_argument("--requests", type=int, default=200)
    srv.add_argument("--json", action="store_true")
    srv.set_defaults(func=_cmd_bench_serve)
    cloud = bench_sub.add_parser(
        "cloud", help="indexer throughput and MCP Lambda latency on DynamoDB (moto) vs SQLite"
    )
    cloud.add_argument(
        "--corpus", action="append", required=True, help="catalog to index (repeat; latency on the first)"
    )
    cloud.add_argument("--requests", type=int, default=100)
    cloud.add_argument("--json", action="store_true")
    cloud.set_defaults(func=_cmd_bench_cloud)
    srch = bench_sub.add_parser("search", help="tool search quality (recall, MRR, nDCG) and query latency")
    srch.add_argument("--tools", required=True, help="tools.jsonl, a corpus folder, or an mcpproxy file")
    srch.add_argument("--queries", required=True, help='golden JSON or {"query","expected"} jsonl')
    srch.add_argument("--limit", type=int, default=10, help="hits per query (default 10)")
    srch.add_argument("--plain", action="store_true", help="plain BM25 baseline (one field, no extras)")
    srch.add_argument("--json", action="store_true", help="print one JSON object")
    srch.set_defaults(func=_cmd_bench_search)

    serve = sub.add_parser("serve", help="serve the gateway locally (embedded store, indexer on a timer)")
    _add_tenant_args(serve)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--interval", type=float, default=300.0, help="seconds between index runs")
    serve.set_defaults(func=_cmd_serve)

    index = sub.add_parser("index", help="index the configured upstreams once and print a report")
    _add_tenant_args(index)
    index.set_defaults(func=_cmd_index)

    replay = sub.add_parser("replay", help="serve a recorded catalog as real MCP servers on loopback")
    replay.add_argument("catalog", help="tools.jsonl or an mcpproxy corpus file")
    replay.add_argument("--host", default="127.0.0.1")
    replay.add_argument("--port", type=int, default=8765)
    replay.add_argument("--server", help="serve only this server of the catalog")
    replay.set_defaults(func=_cmd_replay)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    args: Any = _parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except FoldgateError as exc:
        print(f"foldgate: {exc.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
