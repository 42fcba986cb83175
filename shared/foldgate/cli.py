"""The ``foldgate`` command line: thin argument parsing over the package's functions."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from foldgate.errors import FoldgateError

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
