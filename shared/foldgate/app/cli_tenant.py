"""``foldgate tenant ...``: tenant configs as code, written with the operator's own credentials.

``diff`` / ``apply`` / ``export`` work against the stack's config source (the table, or Parameter
Store's one-parameter-per-server layout with ``FOLDGATE_CONFIG_SOURCE=ssm``) or, with ``--config``,
the local config file: ``apply`` validates a file by its readers' rules before anything is written
(every problem named by its field), puts the secrets its ``secrets:`` map names (never printing them),
writes the document and asks the IndexerFunction to reindex the tenant; ``diff`` shows what that would
change (exit 0 nothing, 1 changes, 2 trouble, like diff(1)); ``export`` prints the stored document so
that applying it changes nothing. ``migrate`` copies an existing stack's Parameter Store documents into
the table. The store and prefix come from the environment as for the functions
(``FOLDGATE_STORE``, ``FOLDGATE_TABLE_NAME``, ``FOLDGATE_CONFIG_PREFIX``, ``FOLDGATE_INDEXER_FUNCTION``);
locally, ``--db`` names the SQLite file."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

__all__ = ["add_tenant_commands"]

_FILE_HELP = """A tenant file is a tenant config (see the README's "Configuring a tenant") plus an optional
top-level secrets: map saying where each secret's value is read when the file is applied, e.g.
  secrets:
    github: {from_env: GITHUB_HEADERS}      # a JSON object of headers, for headers_secret: github
    crm-client: {from_file: ./crm.secret}   # relative to the tenant file
Values go to SecureString parameters {prefix}/tenants/<T>/secrets/<name> (locally, with --config,
to the state folder's secrets/), only when they changed; they are never printed. The document goes
to the stack's config source: the table, or Parameter Store with FOLDGATE_CONFIG_SOURCE=ssm."""


def _settings(args: argparse.Namespace) -> Any:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.settings import Settings

    settings = Settings.from_env()
    return settings.model_copy(update={"sqlite_path": args.db or settings.sqlite_path})


def _store(settings: Any) -> Any:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.app.wiring import open_tenant_configs

    return open_tenant_configs(settings)


def _target(args: argparse.Namespace, settings: Any) -> tuple[Any, Any]:
    """Where the tenant's document and secrets go: the local file (``--config``), Parameter Store
    (``FOLDGATE_CONFIG_SOURCE=ssm``) or the table (the default)."""
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from pathlib import Path

    from foldgate.config.secret_store import LocalSecretStore, SsmSecretStore
    from foldgate.config.targets import FileTarget, SsmTarget, TableTarget

    if getattr(args, "config", None):
        secrets_dir = Path(settings.sqlite_path).parent / "secrets"
        return FileTarget(args.config, settings.config_prefix), LocalSecretStore(secrets_dir)
    if settings.config_source == "ssm":
        # Loaded per command: boto3 only for the Parameter Store layout.
        import boto3

        client = boto3.client("ssm")
        secrets = SsmSecretStore(client, settings.config_prefix)
        return SsmTarget(client, settings.config_prefix), (
            secrets if settings.secret_store == "ssm" else _cloud_secrets(settings)
        )
    where = (
        f"table {settings.table_name}" if settings.store == "dynamodb" else f"table in {settings.sqlite_path}"
    )
    target = TableTarget(_store(settings), settings.config_prefix, where)
    return target, _cloud_secrets(settings)


def _cloud_secrets(settings: Any) -> Any:
    """The cloud's secret store: Parameter Store, or sealed in the table (``FOLDGATE_SECRET_STORE``)."""
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.app.wiring import open_sealed_secrets
    from foldgate.config.secret_store import SsmSecretStore

    sealed = open_sealed_secrets(settings)
    if sealed is None:
        return SsmSecretStore(None, settings.config_prefix)
    # Loaded per command: only the table option pays for it.
    from foldgate.config.secret_store_table import TableSecretStore

    return TableSecretStore(sealed, settings.config_prefix)


def _tenant_and_file(args: argparse.Namespace, settings: Any, *, need_file: bool) -> tuple[str, str | None]:
    """The tenant (``--tenant`` or the positional one; a local file's default tenant) and the file."""
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.errors import ConfigError
    from foldgate.store.configs.base import check_tenant

    given = [t for t in (getattr(args, "tenant_opt", None), getattr(args, "tenant", None)) if t]
    files = [f for f in (getattr(args, "file_opt", None), getattr(args, "file", None)) if f]
    if len(set(given)) > 1 or len(set(files)) > 1:
        raise ConfigError("give the tenant and the file once each (positionally or with --tenant and -f)")
    if not given and getattr(args, "config", None):
        given = [settings.default_tenant]  # the tenant a local serve gives its one file
    if not given:
        raise ConfigError("give the tenant: --tenant T")
    if need_file and not files:
        raise ConfigError("give the tenant file: -f tenant.yaml")
    return check_tenant(given[0]), (files[0] if files else None)


def _plan(args: argparse.Namespace) -> tuple[Any, Any]:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.secret_refs import read_tenant_file
    from foldgate.config.tenant_plan import plan_tenant

    settings = _settings(args)
    tenant, file = _tenant_and_file(args, settings, need_file=True)
    assert file is not None  # need_file
    tenant_file = read_tenant_file(file)
    target, secrets = _target(args, settings)
    try:
        private = settings.allow_private_upstreams  # the rule the deployment connects by
        return settings, plan_tenant(target, secrets, tenant, tenant_file, file, allow_private=private)
    except BaseException:
        target.close()
        raise


def _cmd_diff(args: argparse.Namespace) -> int:
    _, plan = _plan(args)
    plan.target.close()
    for note in plan.notes():
        print(f"foldgate: {note}", file=sys.stderr)
    sys.stdout.write("".join(plan.diff_lines()))
    return 1 if plan.changes else 0


def _apply_detail(done: dict[str, Any]) -> str:
    """What ``apply`` changed, for the audit trail: the document and secret names with their verdicts,
    never a value."""
    parts = ["document written" if done["written"] else "document unchanged"]
    secrets = done.get("secrets") or {}
    if isinstance(secrets, dict):
        parts += [f"secret {name}: {verdict}" for name, verdict in sorted(secrets.items())]
    return "; ".join(parts)


def _cmd_apply(args: argparse.Namespace) -> int:
    settings, plan = _plan(args)
    try:
        done = plan.apply()
    finally:
        plan.target.close()
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.store.configs.base import revision_of

    tenant = plan.tenant
    out: dict[str, Any] = {
        "tenant": tenant,
        "target": plan.target.describe(tenant),
        "revision": revision_of(plan.desired),
        **done,
    }
    for note in plan.notes():
        print(f"foldgate: {note}", file=sys.stderr)
    if done["written"] or any(v != "unchanged" for v in (done.get("secrets") or {}).values()):
        # Loaded per command: the audit trail opens the activity log only when something changed.
        from foldgate.app.cli_audit import cli_audit

        cli_audit(settings, tenant, "config.save", target=out["target"], detail=_apply_detail(done))
    if done["written"] and plan.target.cloud and settings.indexer_function and not args.no_reindex:
        # Loaded per command: boto3's Lambda client only when there is an indexer to ask.
        from foldgate.index.triggers import lambda_reindexer

        reindex = lambda_reindexer(settings.indexer_function)

        async def ask() -> dict[str, Any]:
            return await reindex(tenant)

        out.update(asyncio.run(ask()))
    print(json.dumps(out))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.config.targets import dump_document

    settings = _settings(args)
    tenant, _ = _tenant_and_file(args, settings, need_file=False)
    target, _secrets = _target(args, settings)
    try:
        doc = target.read(tenant)
    finally:
        target.close()
    if doc is None:
        print(f"foldgate: no config for tenant {tenant!r} in {target.describe(tenant)}", file=sys.stderr)
        return 1
    sys.stdout.write(dump_document(doc, args.format))
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
    settings = _settings(args)
    store = _store(settings)
    try:
        existed = store.delete(args.tenant)
    finally:
        store.close()
    if existed:
        # Loaded per command: the audit trail opens the activity log only when something changed.
        from foldgate.app.cli_audit import cli_audit

        cli_audit(settings, args.tenant, "config.save", target=args.tenant, detail="tenant deleted")
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


def _cmd_migrate_secrets(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    import boto3

    from foldgate.app.wiring import open_sealed_secrets
    from foldgate.store.secrets_table import migrate_secrets

    settings = _settings(args)
    sealed = open_sealed_secrets(settings.model_copy(update={"secret_store": "table"}))
    moved = migrate_secrets(
        boto3.client("ssm"), sealed, settings.config_prefix, tenants=args.tenant or None,
        dry_run=args.dry_run, delete=args.delete,
    )  # fmt: skip
    print(json.dumps({"secrets": moved, "table": settings.table_name}, indent=2))
    return 0


def add_tenant_commands(sub: Any) -> None:
    """Register ``foldgate tenant diff|apply|export|get|list|delete|migrate|migrate-secrets``."""
    tenant = sub.add_parser(
        "tenant", help="tenant configs as code: diff, apply, export; get, list, delete, migrate"
    )
    tsub = tenant.add_subparsers(dest="tenant_command", required=True)
    db_help = "SQLite file when FOLDGATE_STORE=sqlite (default: .foldgate/foldgate.sqlite3)"
    config_help = "the local config file (foldgate serve --config) instead of the stack's config source"

    for name, func, what in (
        ("diff", _cmd_diff, "show what apply would change (exit 0: nothing, 1: changes, 2: trouble)"),
        ("apply", _cmd_apply, "validate a tenant file, write its secrets and document, ask for a reindex"),
    ):
        p = tsub.add_parser(
            name, help=what, description=_FILE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        p.add_argument("tenant", nargs="?", help="tenant id (or --tenant)")
        p.add_argument("file", nargs="?", help="tenant file (or -f)")
        p.add_argument("--tenant", dest="tenant_opt", metavar="T", help="tenant id")
        p.add_argument("-f", "--file", dest="file_opt", metavar="FILE", help="tenant file (YAML or JSON)")
        p.add_argument("--config", help=config_help)
        p.add_argument("--db", help=db_help)
        if name == "apply":
            p.add_argument(
                "--no-reindex", action="store_true", help="do not ask the IndexerFunction to reindex"
            )
        p.set_defaults(func=func)

    export = tsub.add_parser("export", help="print a tenant's stored document (secrets as references)")
    export.add_argument("tenant", nargs="?", help="tenant id (or --tenant)")
    export.add_argument("--tenant", dest="tenant_opt", metavar="T", help="tenant id")
    export.add_argument("--format", choices=["yaml", "json"], default="yaml")
    export.add_argument("--config", help=config_help)
    export.add_argument("--db", help=db_help)
    export.set_defaults(func=_cmd_export)

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

    secrets = tsub.add_parser(
        "migrate-secrets",
        help="move the tenants' SecureString secrets into the table, sealed under FOLDGATE_GRANT_KMS_KEY_ID "
        "(for SecretStore: table)",
    )
    secrets.add_argument("--tenant", action="append", help="only this tenant (repeatable)")
    secrets.add_argument("--dry-run", action="store_true", help="report what would move, write nothing")
    secrets.add_argument(
        "--delete", action="store_true", help="delete each parameter once it is in the table"
    )
    secrets.add_argument("--db", help=db_help)
    secrets.set_defaults(func=_cmd_migrate_secrets)
