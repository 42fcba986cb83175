"""The ``foldgate`` command line: thin argument parsing over the package's functions."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from foldgate import __version__
from foldgate.app.cli_audit import cli_audit as _audit
from foldgate.app.cli_bench import add_bench_commands
from foldgate.app.cli_stack import add_stack_commands
from foldgate.app.cli_tenant import add_tenant_commands
from foldgate.errors import ConfigError, FoldgateError

__all__ = ["main"]


def _cmd_signature(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.corpus import load_catalog
    from foldgate.model.signature import compile_signature

    inline = args.grammar == 2
    if args.catalog:
        for tool in load_catalog(args.catalog):
            sig = compile_signature(tool.input_schema, inline=inline)
            row = {"id": f"{tool.server}__{tool.name}", "signature": sig.params, "lossy": sig.lossy}
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        return 0
    text = Path(args.schema).read_text(encoding="utf-8") if args.schema else sys.stdin.read()
    sig = compile_signature(text, inline=inline)
    if args.json:
        print(json.dumps({"signature": sig.params, "lossy": sig.lossy}, ensure_ascii=False))
    else:
        print(sig.params)
    return 0


def _configs(args: argparse.Namespace) -> Any:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.source import FileConfigSource, StaticConfigSource
    from foldgate.config.tenant import parse_tenant_config

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
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.settings import Settings

    settings = Settings.from_env()
    return settings.model_copy(
        update={"sqlite_path": args.db or settings.sqlite_path, "default_tenant": args.tenant}
    )


def _cmd_serve(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    import uvicorn

    from foldgate.app.local import build_local

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpx2", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    settings = _settings(args)
    if args.host not in ("127.0.0.1", "localhost", "::1") and not settings.auth_required:
        # Without tokens anyone who can reach the port can use every upstream: loopback only.
        print(
            f"refusing to serve on {args.host} without agent tokens: set FOLDGATE_AUTH_REQUIRED=true "
            "(create tokens with `foldgate token create`) or bind 127.0.0.1",
            file=sys.stderr,
        )
        return 2
    # Every loopback spelling on any port (foldgate.edge.hosts), the bound name, and any public names.
    hosts = ["localhost", args.host, *settings.public_hosts]
    base = f"http://{args.host}:{args.port}"
    if args.oauth_issuer:
        oauth = {"oauth_issuer": args.oauth_issuer, "oauth_audience": args.oauth_audience}
        if args.oauth_login_client_id:
            oauth["oauth_login_client_id"] = args.oauth_login_client_id
        settings = settings.model_copy(update=oauth)
    if not settings.public_url:
        # The process is its own public URL unless the environment names another (e.g. a tunnel); set
        # even without --oauth-issuer, so a tenant config's own oauth: block works locally too.
        settings = settings.model_copy(update={"public_url": base})
    local = build_local(_configs(args), settings, interval_s=args.interval, allowed_hosts=hosts)
    print(f"foldgate {base}/mcp (routed) · {base}/mcp/all (direct) · {base}/mcp/call (search)", flush=True)
    auth = "agent tokens required" if settings.auth_required else "no agent token needed on loopback"
    if settings.oauth_issuer:
        auth = f"OAuth access tokens of {settings.oauth_issuer} (or agent tokens) required"
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.auth.secrets import secret_file

    key = "FOLDGATE_OPERATOR_KEY" if settings.operator_key else secret_file(settings, "operator")
    print(f"{auth}; admin API {base}/api/v1/docs with the operator key in {key}", flush=True)
    print(f"operator console {base}/console (sign in with the operator key in {key})", flush=True)
    if settings.embedding_provider == "local":
        # Loaded per command: the CLI starts fast and each command pays only for what it uses.
        from foldgate.config.model_home import install_hint, model_dirs

        if not any((d / "model.onnx").is_file() for d in model_dirs(settings.model_dir)):
            print(
                f"semantic search is off (lexical only) until the model is there: {install_hint()}",
                flush=True,
            )
    # Loaded per command: the local server's HTTP protocol (a response head written with its body).
    from foldgate.app.heap import collect_young_less_often, settle_heap
    from foldgate.app.http_protocol import http_protocol

    # What the server keeps (wiring, the indexed catalogs) leaves the collector's full collections.
    local.after_first_index = functools.partial(settle_heap, collect=True)
    collect_young_less_often()  # the calls in flight are not promoted every few calls
    uvicorn.run(local.asgi, host=args.host, port=args.port, log_level="warning", http=http_protocol())
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    import asyncio
    import dataclasses

    from foldgate.app.local import build_local

    settings = _settings(args)
    local = build_local(_configs(args), settings)

    async def run() -> list[Any]:
        try:
            return await local.index_all()
        finally:
            await local.indexer.upstream.aclose()

    reports = asyncio.run(run())
    for report in reports:
        print(json.dumps(dataclasses.asdict(report), ensure_ascii=False))
    # Loaded per command, with the rest of the indexer.
    from foldgate.index.triggers import failed_servers

    for report in reports:
        for failed in failed_servers(report):
            print(f"{report.tenant}: {failed['server']} could not be listed ({failed['error']}): "
                  f"{failed['serving']}", file=sys.stderr)  # fmt: skip
        done = f"version {report.version}, {report.tools} tools" if report.error is None else report.error
        _audit(settings, report.tenant, "index.reindex", target=report.tenant, detail=done)
    return 0 if all(r.error is None for r in reports) else 1


def _cmd_replay(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.dev.replay import run_replay

    run_replay(args.catalog, host=args.host, port=args.port, server=args.server)
    return 0


def _token_settings(args: argparse.Namespace) -> Any:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.settings import Settings

    settings = Settings.from_env()
    return settings.model_copy(update={"sqlite_path": args.db}) if args.db else settings


def _cmd_hook_secret(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.auth.hook_secrets import hook_secret_file, issue_hook_secret

    settings = _token_settings(args)
    print(issue_hook_secret(settings, args.tenant, args.server))
    print(f"(stored in {hook_secret_file(settings, args.tenant, args.server)})", file=sys.stderr)
    return 0


def _cmd_connect(args: argparse.Namespace) -> int:
    """Connect an OAuth upstream through a running gateway's admin API: print the URL, wait for it."""
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    import time

    import httpx2

    from foldgate.auth.secrets import load_secret

    key = load_secret(_token_settings(args), "operator").decode()
    base, query = args.url.rstrip("/"), {"tenant": args.tenant}
    with httpx2.Client(base_url=base, headers={"authorization": f"Bearer {key}"}, timeout=30) as api:
        started = api.post(f"/api/v1/servers/{args.server}/connect", params=query)
        if started.status_code != 200:
            print(
                f"cannot connect {args.server}: {started.json().get('detail', started.text)}", file=sys.stderr
            )
            return 1
        print("Open this URL in a browser, sign in and approve:", file=sys.stderr)
        print(started.json()["authorization_url"], flush=True)
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            time.sleep(2.0)
            state = api.get("/api/v1/status", params=query).json().get("auth", {}).get(args.server, {})
            if state.get("state") == "connected":
                print(f"{args.server} connected for tenant {args.tenant}", file=sys.stderr)
                return 0
    print(f"{args.server}: not connected within {args.timeout:g}s", file=sys.stderr)
    return 1


def _token_time(ts: float | None) -> str:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    import datetime

    if ts is None:
        return "never"
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _token_summary(grant: Any) -> str:
    servers = "all servers" if grant.servers is None else ",".join(grant.servers)
    label = f", label {grant.label!r}" if grant.label else ""
    expires = _token_time(grant.expires_at)
    return f"tenant {grant.tenant}, {servers}, tier {grant.tier}, expires {expires}{label}"


def _cmd_token_create(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.app.wiring import open_authority
    from foldgate.model.agent_token import parse_duration

    expires_in = None if args.expires_in == "never" else parse_duration(args.expires_in)
    servers = None if args.servers is None else [s.strip() for s in args.servers.split(",") if s.strip()]
    settings = _token_settings(args)
    authority = open_authority(settings)
    try:
        token, grant = authority.issue(
            args.tenant, servers=servers, tier=args.tier, expires_in=expires_in, label=args.label
        )
    finally:
        authority.store.close()
    _audit(settings, grant.tenant, "token.create", target=grant.token_id, detail=_token_summary(grant))
    if args.json:
        print(json.dumps({"token": token, **grant.to_public()}, ensure_ascii=False))
    else:
        # The token alone on stdout (pipe it into a secret store); what it grants on stderr.
        print(token)
        print(f"token {grant.token_id}: {_token_summary(grant)}", file=sys.stderr)
        print("this is the only time the token is shown; store it now", file=sys.stderr)
    return 0


def _cmd_token_list(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    import time

    from foldgate.app.wiring import open_token_store

    store = open_token_store(_token_settings(args))
    try:
        grants = store.list(args.tenant)
    finally:
        store.close()
    if args.json:
        print(json.dumps([g.to_public() for g in grants], ensure_ascii=False))
        return 0
    now = time.time()
    for g in grants:
        state = "revoked" if g.revoked else "expired" if g.is_expired(now) else "active"
        print(f"{g.token_id}  {state:<7}  {_token_summary(g)}")
    return 0


def _cmd_token_revoke(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.app.wiring import open_token_store
    from foldgate.errors import InvalidRequestError, NotFoundError
    from foldgate.model.agent_token import is_token_id

    if not is_token_id(args.token_id):
        raise InvalidRequestError(f"{args.token_id!r} is not a token id (16 hex characters; see token list)")
    settings = _token_settings(args)
    store = open_token_store(settings)
    try:
        known = store.get(args.token_id)
        found = store.revoke(args.token_id)
    finally:
        store.close()
    if not found or known is None:
        raise NotFoundError(f"no token with id {args.token_id}")
    _audit(settings, known[0].tenant, "token.revoke", target=args.token_id)
    # Gateways cache good verifications briefly (TokenAuthority.cache_seconds, 30 s by default).
    print(f"revoked {args.token_id}; running gateways refuse it within their token cache time (30 s)")
    return 0


def _cmd_model_install(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.model_home import model_dirs, user_model_dir
    from foldgate.dev.model_install import install, plan

    out = Path(args.out) if args.out else user_model_dir()
    texts = [Path(t) for t in args.texts]
    if args.dry_run:
        print(plan(out, texts).describe())
        return 0
    code = install(out, texts, force=args.force)
    if code == 0 and not args.out and out not in model_dirs(_settings_model_dir()):
        print(f"note: FOLDGATE_MODEL_DIR is set, so foldgate reads the model from there, not {out}")
    return code


def _settings_model_dir() -> str | None:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.settings import Settings

    return Settings.from_env().model_dir


def _add_tenant_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="tenant config file (YAML or JSON)")
    p.add_argument("--upstream", action="append", metavar="NAME=URL", help="quick start: an upstream server")
    p.add_argument("--response-mode", choices=["full", "deferred", "auto"], help="with --upstream")
    p.add_argument("--tenant", default="default", help="tenant id (default: default)")
    p.add_argument("--db", help="SQLite file (default: .foldgate/foldgate.sqlite3)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="foldgate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"foldgate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sig = sub.add_parser("signature", help="compile a JSON Schema into a compact signature")
    sig.add_argument("schema", nargs="?", help="schema file (default: stdin)")
    sig.add_argument("--json", action="store_true", help='print {"signature", "lossy"}')
    sig.add_argument("--catalog", help="a tools.jsonl catalog: one JSON line per tool")
    sig.add_argument(
        "--grammar",
        type=int,
        choices=[1, 2],
        default=2,
        help="2 (default): small objects inline where that makes the signature flat; 1: objects as ~:obj",
    )
    sig.set_defaults(func=_cmd_signature)

    add_bench_commands(sub)
    add_tenant_commands(sub)
    add_stack_commands(sub)

    serve = sub.add_parser("serve", help="serve the gateway locally (embedded store, indexer on a timer)")
    _add_tenant_args(serve)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--interval", type=float, default=300.0, help="seconds between index runs")
    serve.add_argument("--oauth-issuer", metavar="URL", help="accept this issuer's OAuth access tokens")
    serve.add_argument("--oauth-audience", metavar="AUD", help="their audience (default: this server's URL)")
    serve.add_argument("--oauth-login-client-id", metavar="ID",
                       help="the issuer's client people sign in with before a per-user connect")  # fmt: skip
    serve.set_defaults(func=_cmd_serve)

    model = sub.add_parser("model", help="the local search model: install (build it where foldgate looks)")
    model_sub = model.add_subparsers(dest="model_command", required=True)
    minstall = model_sub.add_parser(
        "install", help="build the search model (pinned inputs, checked) into the per-user data directory"
    )
    minstall.add_argument("--out", help="build into this directory instead (make model: .model/<name>)")
    minstall.add_argument("--texts", action="append", default=[], metavar="FILE",
                          help="corpus file whose descriptions check int8 against fp32 (repeat)")  # fmt: skip
    minstall.add_argument("--force", action="store_true", help="rebuild even when the output verifies")
    minstall.add_argument("--dry-run", action="store_true", help="print the plan and its cost, run nothing")
    minstall.set_defaults(func=_cmd_model_install)

    index = sub.add_parser("index", help="index the configured upstreams once and print a report")
    _add_tenant_args(index)
    index.set_defaults(func=_cmd_index)

    replay = sub.add_parser("replay", help="serve a recorded catalog as real MCP servers on loopback")
    replay.add_argument("catalog", help="tools.jsonl or an mcpproxy corpus file")
    replay.add_argument("--host", default="127.0.0.1")
    replay.add_argument("--port", type=int, default=8765)
    replay.add_argument("--server", help="serve only this server of the catalog")
    replay.set_defaults(func=_cmd_replay)

    token = sub.add_parser("token", help="agent tokens: create (shown once), list, revoke")
    token_sub = token.add_subparsers(dest="token_command", required=True)
    db_help = "SQLite file (default: FOLDGATE_SQLITE_PATH or .foldgate/foldgate.sqlite3)"
    tcreate = token_sub.add_parser("create", help="issue a token for a tenant; prints it once on stdout")
    tcreate.add_argument("--tenant", required=True, help="the tenant the token acts for")
    tcreate.add_argument("--servers", help="comma-separated server names (default: every server)")
    tcreate.add_argument("--tier", choices=["read", "write", "destructive"], default="read")
    tcreate.add_argument(
        "--expires-in", default="90d", help="30d, 12h, 45m, 3600 (seconds) or never (default: 90d)"
    )
    tcreate.add_argument("--label", help="a note for humans (who or what uses the token)")
    tcreate.add_argument("--json", action="store_true", help="print the token and its grant as one object")
    tcreate.add_argument("--db", help=db_help)
    tcreate.set_defaults(func=_cmd_token_create)
    tlist = token_sub.add_parser("list", help="list tokens (never the tokens or their hashes)")
    tlist.add_argument("--tenant", help="only this tenant's tokens")
    tlist.add_argument("--json", action="store_true", help="print a JSON array")
    tlist.add_argument("--db", help=db_help)
    tlist.set_defaults(func=_cmd_token_list)
    trevoke = token_sub.add_parser("revoke", help="revoke a token by its id")
    trevoke.add_argument("token_id", help="the id shown by create and list")
    trevoke.add_argument("--db", help=db_help)
    trevoke.set_defaults(func=_cmd_token_revoke)
    connect = sub.add_parser("connect", help="connect an OAuth upstream (prints the URL, waits for consent)")
    connect.add_argument("server", help="server name in the tenant's config (auth: oauth or per_user)")
    connect.add_argument("--tenant", default="default", help="tenant id (default: default)")
    connect.add_argument("--url", default="http://127.0.0.1:8080", help="the running gateway's base URL")
    connect.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the consent")
    connect.add_argument("--db", help=db_help + "; the operator key lives beside it")
    connect.set_defaults(func=_cmd_connect)
    hook = sub.add_parser(
        "hook-secret", help="print (creating it on first use) a server's local webhook signing secret"
    )
    hook.add_argument("tenant", help="tenant id")
    hook.add_argument("server", help="server name in the tenant's config")
    hook.add_argument("--db", help=db_help + "; the secret lives in hooks/ beside it")
    hook.set_defaults(func=_cmd_hook_secret)
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
