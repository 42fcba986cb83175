"""``foldgate tenant ...``: tenant configs in the table (the ``table`` config source), written with the
operator's own credentials. ``apply`` validates a file by the cloud's rules before anything is written
and asks the IndexerFunction to reindex the tenant; ``migrate`` copies an existing stack's Parameter
Store documents into the table. The store and prefix come from the environment as for the functions
(``FOLDGATE_STORE``, ``FOLDGATE_TABLE_NAME``, ``FOLDGATE_CONFIG_PREFIX``, ``FOLDGATE_INDEXER_FUNCTION``);
locally, ``--db`` names the SQLite file."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

__all__ = ["add_tenant_commands"]


def _settings(args: argparse.Namespace) -> Any:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.settings import Settings

    settings = Settings.from_env()
    return settings.model_copy(update={"sqlite_path": args.db or settings.sqlite_path})


def _store(settings: Any) -> Any:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.app.wiring import open_tenant_configs

    return open_tenant_configs(settings)


def _cmd_apply(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.cloud import parse_cloud_config, tenant_path
    from foldgate.config.tenant import read_config_document
    from foldgate.errors import ConfigError
    from foldgate.store.configs.base import check_tenant

    settings = _settings(args)
    tenant = check_tenant(args.tenant)
    doc = read_config_document(args.file)
    if not isinstance(doc, dict):
        raise ConfigError(f"invalid tenant config in {args.file}: expected a mapping")
    # The cloud's rules (own secrets only, no stdio, no loopback issuer), before anything is written.
    parse_cloud_config(doc, tenant_path(settings.config_prefix, tenant))
    store = _store(settings)
    try:
        stored, wrote = store.put(tenant, doc)
    finally:
        store.close()
    out: dict[str, Any] = {"tenant": tenant, "revision": stored.revision, "written": wrote}
    if wrote and settings.indexer_function and not args.no_reindex:
        # Loaded per command: boto3's Lambda client only when there is an indexer to ask.
        from foldgate.index.triggers import lambda_reindexer

        reindex = lambda_reindexer(settings.indexer_function)

        async def ask() -> dict[str, Any]:
            return await reindex(tenant)

        out.update(asyncio.run(ask()))
    print(json.dumps(out))
    return 0


def _cmd_get(args: argparse.Namespace) -> int:
    store = _store(_settings(args))
    try:
        stored = store.get(args.tenant, consistent=True)
    finally:
        store.close()
    if stored is None:
        print(f"foldgate: no config for tenant {args.tenant!r}", file=sys.stderr)
        return 1
    print(json.dumps(stored.doc, indent=2, ensure_ascii=False))
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    store = _store(_settings(args))
    try:
        names = store.tenants()
    finally:
        store.close()
    sys.stdout.write("".join(f"{t}\n" for t in names))
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    store = _store(_settings(args))
    try:
        existed = store.delete(args.tenant)
    finally:
        store.close()
    print(json.dumps({"tenant": args.tenant, "deleted": existed}))
    return 0 if existed else 1


def _cmd_migrate(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.migrate import migrate_from_ssm

    settings = _settings(args)
    store = _store(settings)
    try:
        report = migrate_from_ssm(
            store, settings.config_prefix, tenants=args.tenant or None, dry_run=args.dry_run
        )
    finally:
        store.close()
    print(json.dumps({"tenants": report.outcomes, "failed": report.failed}, indent=2))
    return 1 if report.failed else 0


def add_tenant_commands(sub: Any) -> None:
    """Register ``foldgate tenant apply|get|list|delete|migrate``."""
    tenant = sub.add_parser("tenant", help="tenant configs in the table: apply, get, list, delete, migrate")
    tsub = tenant.add_subparsers(dest="tenant_command", required=True)
    db_help = "SQLite file when FOLDGATE_STORE=sqlite (default: .foldgate/foldgate.sqlite3)"

    apply = tsub.add_parser("apply", help="validate a YAML/JSON config and store it as the tenant's")
    apply.add_argument("tenant", help="tenant id")
    apply.add_argument("file", help="tenant config file (YAML or JSON, servers inline)")
    apply.add_argument("--no-reindex", action="store_true", help="do not ask the IndexerFunction to reindex")
    apply.add_argument("--db", help=db_help)
    apply.set_defaults(func=_cmd_apply)

    get = tsub.add_parser("get", help="print a tenant's stored config document")
    get.add_argument("tenant", help="tenant id")
    get.add_argument("--db", help=db_help)
    get.set_defaults(func=_cmd_get)

    lst = tsub.add_parser("list", help="list every tenant (the registry)")
    lst.add_argument("--db", help=db_help)
    lst.set_defaults(func=_cmd_list)

    delete = tsub.add_parser("delete", help="remove a tenant's config and registry entry")
    delete.add_argument("tenant", help="tenant id")
    delete.add_argument("--db", help=db_help)
    delete.set_defaults(func=_cmd_delete)

    migrate = tsub.add_parser(
        "migrate", help="copy tenant configs from Parameter Store (FOLDGATE_CONFIG_PREFIX) into the table"
    )
    migrate.add_argument("--tenant", action="append", help="only this tenant (repeatable)")
    migrate.add_argument("--dry-run", action="store_true", help="validate and report, write nothing")
    migrate.add_argument("--db", help=db_help)
    migrate.set_defaults(func=_cmd_migrate)
