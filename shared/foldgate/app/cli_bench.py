"""``foldgate bench ...``: the benchmark subcommands of the CLI (each loads its bench module only when
it runs; the benches live in :mod:`foldgate.dev.bench`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["add_bench_commands"]


def _cmd_bench_tokens(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.tokens import format_token_report, run_token_bench

    report = run_token_bench(
        args.corpus,
        tokenizer=args.tokenizer,
        mcpproxy_rendering=args.mcpproxy_rendering,
        budget=args.budget,
    )
    print(json.dumps(report, ensure_ascii=False) if args.json else format_token_report(report))
    return 0


def _cmd_bench_cloud(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.app.wiring import build_mcp_app
    from foldgate.dev.bench.cloud import format_cloud_report, run_cloud_bench

    report = run_cloud_bench(build_mcp_app, args.corpus, requests=args.requests)
    print(json.dumps(report) if args.json else format_cloud_report(report))
    return 0


def _cmd_bench_scale_storage(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.scale_storage import (
        assumptions_from,
        format_scale_storage_report,
        run_scale_storage_bench,
    )

    corpora = args.corpora or Path(__file__).resolve().parents[4] / "shared" / "corpora"
    embedder = None
    if args.embedding == "local":
        # The search stack loads only when this option asks for it.
        from foldgate.search.embed import open_provider

        embedder = open_provider("local", model_dir=args.model_dir)
    report = run_scale_storage_bench(
        Path(corpora),
        registry_sizes=tuple(args.registry_tenants),
        ssm_parameters=args.ssm_parameters,
        assumptions=assumptions_from(args),
        embedder=embedder,
    )
    print(json.dumps(report) if args.json else format_scale_storage_report(report))
    return 0


def _cmd_bench_scale_indexing(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.app.indexer_lambda import build_indexer_handler
    from foldgate.app.schedule_lambda import build_schedule_handler
    from foldgate.dev.bench.scale_indexing import format_scale_indexing_report, run_scale_indexing_bench

    try:
        report = run_scale_indexing_bench(
            args.corpus, build_schedule_handler=build_schedule_handler,
            build_indexer_handler=build_indexer_handler, tenants=args.tenants, sample=args.sample,
            batch=args.batch,
            concurrency=args.concurrency, replays=args.replays, embedding=args.embedding,
            upstream_wait_s=args.upstream_wait, sqs_call_ms=args.sqs_call_ms,
        )  # fmt: skip
    except FileNotFoundError as exc:
        print(f"skipped: {exc}")
        return 0
    print(json.dumps(report) if args.json else format_scale_indexing_report(report))
    return 0


def _cmd_bench_serve(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.serve import format_serve_report, run_serve_bench

    app_py = Path(__file__).resolve().parents[3] / "functions" / "mcp" / "app.py"
    report = run_serve_bench(args.corpus, requests=args.requests, app_py=app_py)
    print(json.dumps(report) if args.json else format_serve_report(report))
    return 0


def _cmd_bench_coldstart(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.coldstart import format_coldstart_report, run_coldstart_bench

    handlers = tuple(h.strip() for h in args.handlers.split(",") if h.strip())
    modes = ("cold", "shipped") if args.bytecode == "both" else (args.bytecode,)
    report = run_coldstart_bench(
        rounds=args.rounds, handlers=handlers, before=args.before, modes=modes, store=args.store
    )
    print(json.dumps(report) if args.json else format_coldstart_report(report))
    return 0


def _cmd_bench_call(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.call import format_call_report, run_call_bench

    if args.own_cpu:
        # Loaded only when asked: the in-process measurement of the gateway's own CPU per call.
        from foldgate.dev.bench.call_own import format_own_cpu, run_own_cpu

        own = run_own_cpu(args.versus, requests=args.calls * 20)
        print(json.dumps(own) if args.json else format_own_cpu(own))
        return 0
    if args.versus:
        # Loaded only when asked: the two-gateway comparison.
        from foldgate.dev.bench.call_versus import format_versus, run_versus

        versus = run_versus(
            args.versus, calls=args.calls, callers=min(args.callers, 16), per_caller=args.per_caller
        )
        print(json.dumps(versus) if args.json else format_versus(versus))
        return 0
    report = run_call_bench(
        calls=args.calls, callers=args.callers, per_caller=args.per_caller,
        cold_rounds=args.cold_rounds, source=args.source,
        breakdown=args.breakdown, breakdown_only=args.breakdown_only,
    )  # fmt: skip
    print(json.dumps(report) if args.json else format_call_report(report))
    return 0


def _cmd_bench_console(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.console import format_console_report, run_console_bench

    reports = run_console_bench(args.corpus, requests=args.requests, events=args.events)
    print(json.dumps(reports) if args.json else format_console_report(reports))
    return 0


def _cmd_bench_code(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.code import format_code_report, run_code_bench

    report = run_code_bench(runs=args.runs)
    print(json.dumps(report) if args.json else format_code_report(report))
    return 0


def _cmd_bench_search(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.search import format_search_report, run_search_bench
    from foldgate.search import DEFAULT, PLAIN

    config = PLAIN if args.plain else DEFAULT
    if args.enrich_weights is not None:
        from foldgate.search.fields import Field  # only this option needs the field numbers

        weights = list(config.weights)
        weights[Field.HINT], weights[Field.QUERIES] = args.enrich_weights
        config = config.replace(weights=tuple(weights))
    dense: dict[str, Any] = {"engine": args.engine, "model_dir": args.model_dir}
    dense["dense_cache"] = args.dense_cache
    if args.weight is not None:
        dense["weight"] = args.weight
    dense["multi_intent"] = not args.single_intent
    if args.enrich:
        return _bench_search_enriched(args, config=config, **dense)
    report = run_search_bench(
        args.tools, args.queries, limit=args.limit, config=config, breakdown=args.breakdown, **dense
    )
    print(json.dumps(report) if args.json else format_search_report(report))
    return 0


def _two_weights(text: str) -> tuple[float, float]:
    try:
        hint, queries = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("expected two numbers: HINT,QUERIES (e.g. 1,0.5)") from None
    if hint < 0 or queries < 0:
        raise argparse.ArgumentTypeError("weights are never negative")
    return hint, queries


def _bench_search_enriched(args: argparse.Namespace, **options: Any) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.search import format_search_report
    from foldgate.dev.bench.search_enrich import (
        EnrichmentCache,
        format_enriched_report,
        open_bench_provider,
        run_enriched_search_bench,
    )

    cache = EnrichmentCache(args.enrich_cache)
    provider = open_bench_provider(args.enrich, cache, args.enrich_model)
    report = run_enriched_search_bench(
        args.tools, args.queries, provider, cache_path=args.enrich_cache, limit=args.limit, **options
    )
    print(json.dumps(report) if args.json else format_enriched_report(report, format_search_report))
    return 0


def _cmd_bench_context(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.context import DEFAULT_LIMITS, format_context_report, run_context_bench

    report = run_context_bench(
        args.tools, args.queries, limits=args.limit or DEFAULT_LIMITS, engine=args.engine,
        model_dir=args.model_dir, dense_cache=args.dense_cache,
    )  # fmt: skip
    print(json.dumps(report) if args.json else format_context_report(report))
    return 0


def _cmd_bench_guard(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.guard import CORPORA, DATA, format_guard_report, run_guard_bench

    data, corpora = Path(args.data) if args.data else DATA, Path(args.corpora) if args.corpora else CORPORA
    report = run_guard_bench(data, repeats=args.repeats, corpora=corpora)
    # Loaded per command: the injection evaluation reads the corpora and the models.
    from foldgate.dev.bench.guard_injection import format_injection_report, run_injection_bench

    report["injection_eval"] = run_injection_bench(corpora, data, runs=args.repeats // 2)
    text = f"{format_guard_report(report)}\n{format_injection_report(report['injection_eval'])}"
    print(json.dumps(report, ensure_ascii=False) if args.json else text)
    return 0


def _cmd_bench_scan(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.scan import format_scan_report, run_scan_bench

    if args.tools is None:
        # Loaded per command: the evaluation reads the corpora and the model.
        from foldgate.dev.bench.scan_eval import format_scan_eval, run_scan_eval

        repo = Path(__file__).resolve().parents[3]
        corpora = Path(args.corpora) if args.corpora else repo.parent / "shared" / "corpora"
        evaluation = run_scan_eval(
            corpora, Path(args.data) if args.data else repo / "tests" / "data" / "guard"
        )
        # Loaded per command: the scan as the indexer runs it (with the search encoder when present).
        from foldgate.dev.bench.scan_semantic import format_semantic_scan, run_semantic_scan

        data = Path(args.data) if args.data else repo / "tests" / "data" / "guard"
        evaluation["semantic"] = run_semantic_scan(corpora, data)
        text = f"{format_scan_eval(evaluation)}\n{format_semantic_scan(evaluation['semantic'])}"
        print(json.dumps(evaluation, ensure_ascii=False) if args.json else text)
        return 0
    report = run_scan_bench(args.tools, args.labels)
    print(json.dumps(report, ensure_ascii=False) if args.json else format_scan_report(report))
    return 0


def _cmd_bench_activity(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.activity import format_activity_report, run_activity_bench

    report = run_activity_bench(records=args.records, rate=args.rate, seconds=args.seconds)
    print(json.dumps(report) if args.json else format_activity_report(report))
    return 0


def _cmd_bench_scale_quota(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.app.wiring import build_mcp_app
    from foldgate.dev.bench.scale_quota import format_scale_quota_report, run_scale_quota_bench

    report = run_scale_quota_bench(
        build_mcp_app,
        processes=args.processes,
        seconds=args.seconds,
        per_minute=args.quota,
        steady_load=args.steady_load,
    )
    print(json.dumps(report) if args.json else format_scale_quota_report(report))
    return 0


def _cmd_bench_headers(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.param_headers import format_headers_report, run_headers_bench

    report = run_headers_bench(args.corpus, calls=args.calls)
    print(json.dumps(report) if args.json else format_headers_report(report))
    return 0


def _cmd_bench_telemetry(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.telemetry import format_telemetry_report, run_telemetry_bench

    report = run_telemetry_bench(
        args.corpus, calls=args.calls, rounds=args.rounds, init_rounds=args.init_rounds, before=args.before
    )
    print(json.dumps(report) if args.json else format_telemetry_report(report))
    return 0


def _cmd_bench_scale_serving(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.bench.scale_serving import CORPORA, format_scale_serving_report, run_scale_serving_bench

    report = run_scale_serving_bench(
        tenants=args.tenants, requests=args.requests, cache_mb=args.cache_mb, store=args.store,
        corpora=args.corpora or CORPORA,
    )  # fmt: skip
    print(json.dumps(report) if args.json else format_scale_serving_report(report))
    return 0


def add_bench_commands(sub: Any) -> None:
    """The ``foldgate bench ...`` subcommands (every benchmark prints figures; none asserts timings)."""
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
    con = bench_sub.add_parser("console", help="operator console: server-side render time per page")
    con.add_argument("--corpus", action="append", required=True, help="catalog to load (repeat)")
    con.add_argument("--requests", type=int, default=30, help="warm requests per page (default 30)")
    con.add_argument(
        "--events", type=int, default=10_000, help="calls in the activity log over 24 h (default 10,000)"
    )
    con.add_argument("--json", action="store_true", help="print a JSON array")
    con.set_defaults(func=_cmd_bench_console)
    cloud = bench_sub.add_parser(
        "cloud", help="indexer throughput and MCP Lambda latency on DynamoDB (moto) vs SQLite"
    )
    cloud.add_argument(
        "--corpus", action="append", required=True, help="catalog to index (repeat; latency on the first)"
    )
    cloud.add_argument("--requests", type=int, default=100)
    cloud.add_argument("--json", action="store_true")
    cloud.set_defaults(func=_cmd_bench_cloud)
    scs = bench_sub.add_parser(
        "scale-storage",
        help="bytes per tenant and tool in DynamoDB, tenant listing calls, cost per tenant-month",
    )
    scs.add_argument("--corpora", help="the corpora folder (default: ../shared/corpora beside the checkout)")
    scs.add_argument("--registry-tenants", type=int, nargs="+", default=[71, 10_000],
                     help="registry sizes to list (71 10000: 1,420 and 200,000 parameters)")  # fmt: skip
    scs.add_argument("--ssm-parameters", type=int, default=1_420, help="Parameter Store tree size (1,420)")
    scs.add_argument("--embedding", choices=["none", "local"], default="none",
                     help="index with the local dense model, as the cloud does")  # fmt: skip
    scs.add_argument("--model-dir", help="local model dir (default: .model/all-MiniLM-L6-v2-int8)")
    for flag, kind, text in (
        ("--requests-per-tenant", int, "MCP requests per tenant per month (10,000)"),
        ("--tools-per-tenant", int, "tools per tenant (100)"),
        ("--servers-per-tenant", int, "servers per tenant (20)"),
        ("--reindex-minutes", float, "schedule interval (60)"),
        ("--freshness-minutes", float, "freshness interval (5)"),
        ("--warm-instances", int, "McpFunction instances serving one tenant at once (2)"),
        ("--request-ms", float, "billed ms of a warm MCP request (30)"),
        ("--index-s-per-tenant", float, "seconds of one tenant's schedule run (3)"),
        ("--changes-per-month", int, "catalog versions published per tenant per month (8)"),
        ("--secrets-per-tenant", int, "SecureString secrets per tenant (5)"),
        ("--tenants", int, "tenants sharing the account's 10,000 standard parameters (10,000)"),
    ):
        scs.add_argument(flag, type=kind, help=text)
    scs.add_argument("--json", action="store_true")
    scs.set_defaults(func=_cmd_bench_scale_storage)
    scale = bench_sub.add_parser(
        "scale-indexing",
        help="fan-out indexing: enqueue time, tenants per invocation, 10,000-tenant projection",
    )
    scale.add_argument(
        "--corpus", help="catalog the tenants' servers come from (default: ../shared livemcpbench)"
    )
    scale.add_argument("--tenants", type=int, default=2000, help="tenants configured and enqueued")
    scale.add_argument("--sample", type=int, default=48, help="tenants indexed through the consumer")
    scale.add_argument("--batch", type=int, default=4, help="messages per invocation (IndexBatchSize)")
    scale.add_argument(
        "--concurrency", type=int, default=30, help="instances at once (IndexQueueConcurrency)"
    )
    scale.add_argument("--replays", type=int, default=3, help="replay processes shared by the tenants")
    scale.add_argument("--embedding", choices=["local", "none"], default="local")
    scale.add_argument(
        "--upstream-wait", type=float, default=2.0,
        help="seconds a batch waits on real upstreams in the Lambda projection (replays answer at once)",
    )  # fmt: skip
    scale.add_argument(
        "--sqs-call-ms", type=float, default=25.0, help="SendMessageBatch latency on SQS (the projection's)"
    )
    scale.add_argument("--json", action="store_true")
    scale.set_defaults(func=_cmd_bench_scale_indexing)
    call = bench_sub.add_parser("call", help="proxied tool call vs a direct session")
    call.add_argument("--calls", type=int, default=100, help="sequential calls per side")
    call.add_argument("--callers", type=int, default=32, help="concurrent callers")
    call.add_argument("--per-caller", type=int, default=10, help="calls per concurrent caller")
    call.add_argument("--cold-rounds", type=int, default=2, help="fresh processes per side (0: skip)")
    call.add_argument("--source", type=Path, help="run the gateway from this shared/ folder (before/after)")
    call.add_argument(
        "--breakdown", action="store_true", help="also time each stage of a proxied call (p50/p95)"
    )
    call.add_argument("--breakdown-only", action="store_true", help="only the stage breakdown")
    call.add_argument(
        "--versus", help="PYTHONPATH of another gateway (e.g. ../main/shared): both side by side, one run"
    )
    call.add_argument(
        "--own-cpu",
        action="store_true",
        help="only the gateway's own CPU per call, in process (20 x --calls requests; with --versus both)",
    )
    call.add_argument("--json", action="store_true")
    call.set_defaults(func=_cmd_bench_call)
    cold = bench_sub.add_parser("coldstart", help="each Lambda handler's init vs a bare interpreter")
    cold.add_argument("--rounds", type=int, default=7, help="fresh processes per variant (default 7)")
    cold.add_argument("--handlers", default="mcp,code,admin,indexer", help="functions/<name>/app.py to time")
    cold.add_argument(
        "--before",
        action="append",
        help="also time this checkout's handlers: a directory or a git revision (repeatable)",
    )
    cold.add_argument(
        "--bytecode",
        choices=["cold", "shipped", "both"],
        default="both",
        help="cold: deps and foldgate compiled at init; shipped: with the layer's .pyc (default both)",
    )
    cold.add_argument(
        "--store",
        choices=["sqlite", "dynamodb"],
        default="sqlite",
        help="dynamodb: each init against a moto_server stack as deployed (boto3, SSM, KMS)",
    )
    cold.add_argument("--json", action="store_true", help="print one JSON object")
    cold.set_defaults(func=_cmd_bench_coldstart)
    code = bench_sub.add_parser("code", help="code sandbox overhead: per run, per tool call, per respawn")
    code.add_argument("--runs", type=int, default=200, help="runs per measured row (default 200)")
    code.add_argument("--json", action="store_true", help="print one JSON object")
    code.set_defaults(func=_cmd_bench_code)
    srch = bench_sub.add_parser("search", help="tool search quality (recall, MRR, nDCG) and query latency")
    srch.add_argument("--tools", required=True, help="tools.jsonl, a corpus folder, or an mcpproxy file")
    srch.add_argument("--queries", required=True, help='golden JSON or {"query","expected"} jsonl')
    srch.add_argument("--limit", type=int, default=10, help="hits per query (default 10)")
    srch.add_argument("--plain", action="store_true", help="plain BM25 baseline (one field, no extras)")
    srch.add_argument("--engine", choices=["lexical", "dense", "hybrid"], default="lexical")
    srch.add_argument("--model-dir", help="local model dir (default: .model/all-MiniLM-L6-v2-int8)")
    srch.add_argument("--weight", type=float, help="hybrid: dense weight in [0, 1] (default 0.6)")
    srch.add_argument("--dense-cache", help="JSON file keeping tool vectors between runs (reused by hash)")
    srch.add_argument("--single-intent", action="store_true", help="search each query whole (no splitting)")
    srch.add_argument(
        "--breakdown",
        action="store_true",
        help="also time each stage (encode, lexical, dense, rest) per query",
    )
    srch.add_argument(
        "--enrich",
        choices=["cache", "local", "openai", "bedrock"],
        help="also search with index-time enrichment by this provider (FOLDGATE_ENRICHMENT_* configure it; "
        "cache: only the answers --enrich-cache holds) and print both runs",
    )
    srch.add_argument("--enrich-cache", help="JSON file of enrichments by content hash, reused between runs")
    srch.add_argument("--enrich-model", help="the enrichment model (cache: the source to use)")
    srch.add_argument(
        "--enrich-weights",
        type=_two_weights,
        metavar="HINT,QUERIES",
        help="BM25F weights of the hint and queries fields (tuning; default: the shipped ones)",
    )
    srch.add_argument("--json", action="store_true", help="print one JSON object")
    srch.set_defaults(func=_cmd_bench_search)
    scan = bench_sub.add_parser(
        "scan",
        help="tool-poisoning scan: rules, model and both on the evaluation split and every real catalog "
        "(or, with --tools, flagged tools per rule on one catalog)",
    )
    scan.add_argument("--tools", help="tools.jsonl, a corpus folder, or an mcpproxy file")
    scan.add_argument("--corpora", help="the real catalogs (default ../shared/corpora beside the checkout)")
    scan.add_argument("--data", help="the labelled attacks (default tests/data/guard of the checkout)")
    scan.add_argument("--labels", help="labelled descriptions shaped like security_corpus_v1.json")
    scan.add_argument("--json", action="store_true", help="print one JSON object")
    scan.set_defaults(func=_cmd_bench_scan)

    guard = bench_sub.add_parser(
        "guard", help="result guard: secrets recall, false redactions on real results, injections, latency"
    )
    guard.add_argument("--data", help="folder of planted.jsonl, fleet_results.jsonl, injections.jsonl")
    guard.add_argument("--corpora", help="folder of real catalogs (*/tools.jsonl); default ../shared/corpora")
    guard.add_argument("--repeats", type=int, default=400, help="timed runs at 1 KB (fewer for larger)")
    guard.add_argument("--json", action="store_true", help="print one JSON object")
    guard.set_defaults(func=_cmd_bench_guard)

    act = bench_sub.add_parser("activity", help="activity recording: enqueue cost, batched writes per call")
    act.add_argument("--records", type=int, default=100_000, help="events timed for the enqueue cost")
    act.add_argument("--rate", type=float, default=50.0, help="steady calls per second (default 50)")
    act.add_argument("--seconds", type=float, default=4.0, help="length of the steady load (default 4)")
    act.add_argument("--json", action="store_true", help="print one JSON object")
    act.set_defaults(func=_cmd_bench_activity)

    ctx = bench_sub.add_parser("context", help="context tokens to reach a task's tools, per surface")
    ctx.add_argument("--tools", required=True, help="tools.jsonl, a corpus folder, or an mcpproxy file")
    ctx.add_argument("--queries", required=True, help='tasks: {"query","expected"} jsonl or golden JSON')
    ctx.add_argument(
        "--limit", type=int, action="append", help="retrieve_tools limit (repeat; default 5 to 60)"
    )
    ctx.add_argument("--engine", choices=["lexical", "dense", "hybrid"], default="hybrid")
    ctx.add_argument("--model-dir", help="local model dir (default: .model/all-MiniLM-L6-v2-int8)")
    ctx.add_argument("--dense-cache", help="JSON file keeping tool vectors between runs (reused by hash)")
    ctx.add_argument("--json", action="store_true", help="print one JSON object")
    ctx.set_defaults(func=_cmd_bench_context)
    sq = bench_sub.add_parser(
        "scale-quota", help="one tenant quota across serving processes on one DynamoDB table (moto)"
    )
    sq.add_argument("--processes", type=int, default=3, help="serving processes (default 3)")
    sq.add_argument("--seconds", type=float, default=60.0, help="length of each phase (default 60)")
    sq.add_argument("--quota", type=int, default=12_000, help="requests_per_minute (default 12,000)")
    sq.add_argument("--steady-load", type=float, default=0.8, help="steady phase load / quota (default 0.8)")
    sq.add_argument("--json", action="store_true", help="print one JSON object")
    sq.set_defaults(func=_cmd_bench_scale_quota)

    hdr = bench_sub.add_parser("headers", help="SEP-2243 Mcp-Param-* check: index-time and per-call cost")
    hdr.add_argument("--corpus", default="demo/catalog.jsonl", help="catalog served (default: the demo's)")
    hdr.add_argument("--calls", type=int, default=2000, help="checks timed per case (default 2,000)")
    hdr.add_argument("--json", action="store_true", help="print one JSON object")
    hdr.set_defaults(func=_cmd_bench_headers)

    tel = bench_sub.add_parser("telemetry", help="call metrics and tracing: per-call cost, function init")
    tel.add_argument("--corpus", default="demo/catalog.jsonl", help="catalog served (default: the demo's)")
    tel.add_argument("--calls", type=int, default=400, help="warm calls per mode (default 400)")
    tel.add_argument("--rounds", type=int, default=8, help="off/on rounds the calls are split into")
    tel.add_argument("--init-rounds", type=int, default=5, help="fresh processes per variant (0: skip)")
    tel.add_argument("--before", type=Path, help="also time this checkout's functions/mcp/app.py init")
    tel.add_argument("--json", action="store_true", help="print one JSON object")
    tel.set_defaults(func=_cmd_bench_telemetry)

    scale = bench_sub.add_parser(
        "scale-serving", help="one serving process over many tenants: RSS, hot p95, cold cost, hit rate"
    )
    scale.add_argument("--tenants", type=int, default=2000, help="tenants seeded (default 2,000)")
    scale.add_argument("--requests", type=int, default=20_000, help="requests in the Zipf mix")
    scale.add_argument("--cache-mb", type=int, help="the cache budget (default: FOLDGATE_CACHE_MB's)")
    scale.add_argument(
        "--store", choices=["dynamodb", "sqlite"], default="sqlite",
        help="sqlite (default: moto_server cannot hold 2,000 seeded tenants) or dynamodb on moto_server",
    )  # fmt: skip
    scale.add_argument("--corpora", type=Path, help="the corpora folder (default: ../shared/corpora)")
    scale.add_argument("--json", action="store_true", help="print one JSON object")
    scale.set_defaults(func=_cmd_bench_scale_serving)

    every = bench_sub.add_parser(
        "scale", help="every scale benchmark in turn: indexing, serving, quota, storage (docs/scale.md)"
    )
    every.add_argument(
        "--parts", default=",".join(_SCALE_PARTS), help="comma-separated parts (default: all four)"
    )
    every.add_argument("--quick", action="store_true", help="small sizes: a check in minutes, not figures")

    def _cmd_bench_scale(args: argparse.Namespace) -> int:
        parts = [p.strip() for p in args.parts.split(",") if p.strip()]
        unknown = sorted(set(parts) - set(_SCALE_PARTS))
        if unknown:
            every.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(_SCALE_PARTS)}")
        status = 0
        for part in parts:
            print(f"== foldgate bench scale-{part}", flush=True)
            sub_args = bench.parse_args([f"scale-{part}", *(_SCALE_QUICK[part] if args.quick else [])])
            status = max(status, int(sub_args.func(sub_args)))
        return status

    every.set_defaults(func=_cmd_bench_scale)


# The parts of ``bench scale``, each its own command, and the sizes ``--quick`` runs them at.
_SCALE_PARTS = ("indexing", "serving", "quota", "storage")
_SCALE_QUICK: dict[str, list[str]] = {
    "indexing": ["--tenants", "100", "--sample", "8"],
    "serving": ["--tenants", "100", "--requests", "1000", "--store", "sqlite"],
    "quota": ["--processes", "2", "--seconds", "5", "--quota", "1200"],
    "storage": ["--registry-tenants", "71"],
}
