"""Build the long-lived parts from Settings: stores, config source, upstream client, gateway, app.

Every factory that picks a backend lives here (one place to add a backend). Lambda handlers call these
once per instance (at init), never per request. Imports inside the factories keep cold start small:
an instance loads only the backends its settings name.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from foldgate.app.wiring_observe import open_activity, open_activity_store, open_tracing
from foldgate.app.wiring_scale import open_memory, open_quota_store, open_quotas
from foldgate.config.settings import Settings
from foldgate.config.source import ConfigSource, FileConfigSource
from foldgate.errors import ConfigError, FoldgateError
from foldgate.model.lru import MemoryBudget
from foldgate.store.catalog.base import CatalogStore

if TYPE_CHECKING:
    from fastapi import APIRouter
    from starlette.applications import Starlette

    from foldgate.auth.authority import TokenAuthority
    from foldgate.code.sandbox import Sandbox
    from foldgate.config.tenant import TenantConfig
    from foldgate.edge.access import Access
    from foldgate.edge.console.login_limit import LoginLimit
    from foldgate.index.triggers import Reindexer
    from foldgate.model.activity import Recorder
    from foldgate.search.embed import Embedder
    from foldgate.serve.paging import ResultPager
    from foldgate.store.approvals.base import ApprovalStore
    from foldgate.store.configs.base import TenantConfigStore
    from foldgate.store.grants.base import GrantCipher, GrantStore
    from foldgate.store.signouts.base import SignOutStore
    from foldgate.store.tokens.base import TokenStore
    from foldgate.upstream.client import UpstreamClient
    from foldgate.upstream.oauth.context import OAuthContext

log = logging.getLogger(__name__)

__all__ = [
    "activity_arguments_key",
    "build_mcp_app",
    "connect_link_secret",
    "lazy_embedder",
    "open_access",
    "open_activity",
    "open_activity_store",
    "open_approvals",
    "open_authority",
    "open_configs",
    "open_embedder",
    "open_grant_cipher",
    "open_grant_store",
    "open_hook_secrets",
    "open_memory",
    "open_quota_store",
    "open_quotas",
    "open_results",
    "open_sandbox",
    "open_sealed_secrets",
    "open_signouts",
    "open_store",
    "open_tenant_configs",
    "open_token_store",
    "open_tracing",
    "open_upstream",
    "open_upstream_oauth",
    "operator_login_limit",
    "optional_secret",
]


def open_store(settings: Settings) -> CatalogStore:
    """The catalog store the settings name."""
    if settings.store == "sqlite":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.catalog.sqlite import SqliteStore

        return SqliteStore(settings.sqlite_path)
    if settings.store == "dynamodb":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.catalog.dynamodb import DynamoStore

        return DynamoStore(settings.table_name)
    raise ConfigError(f"store {settings.store!r} is not available in this build")


def open_configs(
    settings: Settings,
    *,
    fallback: Callable[[str], TenantConfig | None] | None = None,
    memory: MemoryBudget | None = None,
) -> ConfigSource:
    """The tenant config source the settings name; ``fallback`` gives a tenant's last good config
    when its live document is invalid (the cloud source only: a local file error is shown as is);
    the cloud source caches on ``memory``."""
    if settings.config_source == "file":
        return FileConfigSource(
            settings.config_file, tenant=settings.default_tenant, max_age=settings.config_cache_seconds
        )
    if settings.config_source == "ssm":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.config.ssm import SsmConfigSource

        return SsmConfigSource(
            settings.config_prefix, max_age=settings.config_cache_seconds, fallback=fallback, memory=memory
        )
    if settings.config_source == "table":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.config.table import TableConfigSource

        return TableConfigSource(
            open_tenant_configs(settings),
            settings.config_prefix,
            max_age=settings.config_cache_seconds,
            fallback=fallback,
            memory=memory,
        )
    raise ConfigError(f"config source {settings.config_source!r} is not available in this build")


def open_tenant_configs(settings: Settings) -> TenantConfigStore:
    """Tenant config documents and the tenant registry, on the catalog's backend."""
    if settings.store == "dynamodb":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.configs.dynamodb import DynamoTenantConfigStore

        return DynamoTenantConfigStore(settings.table_name)
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.store.configs.sqlite import SqliteTenantConfigStore

    return SqliteTenantConfigStore(settings.sqlite_path)


def open_results(settings: Settings) -> ResultPager:
    """Where oversized tool results wait for read_cache: the same backend as the catalog store."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.serve.paging import ResultPager

    if settings.store == "dynamodb":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.results.dynamodb import DynamoResultStore

        return ResultPager(DynamoResultStore(settings.table_name), ttl_seconds=settings.result_cache_seconds)
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.store.results.sqlite import SqliteResultStore

    return ResultPager(SqliteResultStore(settings.sqlite_path), ttl_seconds=settings.result_cache_seconds)


def activity_arguments_key(settings: Settings) -> bytes:
    """The key a tenant's ``activity.arguments: hashed`` digests are made with: derived from the token
    secret (shared by every instance); without one, a random key of this process (digests then
    compare only within it)."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    import secrets

    from foldgate.serve.activity_arguments import arguments_key

    secret = optional_secret(settings, "token")
    return arguments_key(secret if secret is not None else secrets.token_bytes(32))


def open_upstream_oauth(settings: Settings, memory: MemoryBudget | None = None) -> OAuthContext | None:
    """foldgate's OAuth client side for upstreams (grant store, secrets, public URL); None, logged,
    when the grant store cannot open (then OAuth upstreams fail with a clear error, others work).
    Secrets read from Parameter Store are cached on ``memory``."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from pathlib import Path

    from foldgate.auth.client_secrets import file_secret_reader, ssm_secret_reader
    from foldgate.upstream.oauth.context import OAuthContext
    from foldgate.upstream.oauth.renewal import RenewalPolicy

    try:
        store = open_grant_store(settings)
    except ConfigError as exc:
        log.error("upstream OAuth unavailable: %s", exc.message)
        return None
    sealed = open_sealed_secrets(settings) if settings.secrets_in_ssm else None
    if sealed is not None:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.auth.client_secrets import sealed_secret_reader

        reader = sealed_secret_reader(sealed.get)
    elif settings.secrets_in_ssm:
        reader = ssm_secret_reader(max_age=settings.secrets_cache_seconds, memory=memory)
    else:
        reader = file_secret_reader(Path(settings.sqlite_path).parent / "secrets")
    renewal = RenewalPolicy(every_s=settings.upstream_reregister_seconds)
    return OAuthContext(store, reader, settings.public_url, settings.allow_private_upstreams, renewal)


def connect_link_secret(settings: Settings) -> bytes | None:
    """The key per-user connect links are signed with: the token HMAC secret (under its own purpose
    label, see foldgate.upstream.oauth.connect_links); None when it is not configured (links are then off)."""
    return optional_secret(settings, "token")


def open_upstream(
    settings: Settings,
    oauth: OAuthContext | None = None,
    *,
    memory: MemoryBudget | None = None,
    **options: Any,
) -> UpstreamClient:
    """The upstream client; in the cloud, servers' ``headers_secret`` come from Parameter Store
    (cached on ``memory``); with ``oauth``, OAuth upstreams get their tokens from its grant store.
    ``options`` go to the client."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.upstream.client import UpstreamClient
    from foldgate.upstream.oauth.provider import TokenProvider, signed_link

    auth = None
    if oauth is not None:
        secret = connect_link_secret(settings)
        link = signed_link(secret, settings.public_url) if secret and settings.public_url else None
        auth = TokenProvider(oauth, link=link)
    if settings.secrets_in_ssm:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.auth.secret_headers import SecretHeaders

        sealed = open_sealed_secrets(settings)
        options["headers"] = SecretHeaders(
            max_age=settings.secrets_cache_seconds,
            memory=memory,
            sealed=sealed.get if sealed is not None else None,
        )
    return UpstreamClient(auth=auth, allow_private=settings.allow_private_upstreams, **options)


def open_sealed_secrets(settings: Settings) -> Any:
    """The table's sealed secrets (``secret_store: table``), else None: header secrets are then
    Parameter Store SecureStrings. ConfigError when the table store has no KMS key to seal under."""
    if settings.secret_store != "table":
        return None
    if not settings.grant_kms_key_id:
        raise ConfigError("FOLDGATE_SECRET_STORE=table needs FOLDGATE_GRANT_KMS_KEY_ID (the stack's key)")
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.store.grants.kms import KmsEnvelopeCipher
    from foldgate.store.secrets_table import SealedSecrets

    return SealedSecrets(settings.table_name, KmsEnvelopeCipher(settings.grant_kms_key_id))


def open_approvals(settings: Settings) -> ApprovalStore:
    """Approved tool versions, on the same backend as the catalog."""
    if settings.store == "dynamodb":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.approvals.dynamodb import DynamoApprovalStore

        return DynamoApprovalStore(settings.table_name)
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.store.approvals.sqlite import SqliteApprovalStore

    return SqliteApprovalStore(settings.sqlite_path)


def open_signouts(settings: Settings) -> SignOutStore:
    """Signed-out console sessions, on the same backend as the catalog (shared by every instance)."""
    if settings.store == "dynamodb":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.signouts.dynamodb import DynamoSignOutStore

        return DynamoSignOutStore(settings.table_name)
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.store.signouts.sqlite import SqliteSignOutStore

    return SqliteSignOutStore(settings.sqlite_path)


def open_token_store(settings: Settings) -> TokenStore:
    """The token store the settings name: the same backend (file or table) as the catalog."""
    if settings.store == "sqlite":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.tokens.sqlite import SqliteTokenStore

        return SqliteTokenStore(settings.sqlite_path)
    if settings.store == "dynamodb":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.tokens.dynamodb import DynamoTokenStore

        return DynamoTokenStore(settings.table_name)
    raise ConfigError(f"store {settings.store!r} is not available in this build")


def open_grant_cipher(settings: Settings) -> GrantCipher:
    """What seals upstream tokens: the KMS envelope when a key id is set, else the local key file
    (the cloud store without a KMS key is refused rather than sealing under an invented key that
    other instances would not share)."""
    if settings.grant_kms_key_id:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.grants.kms import KmsEnvelopeCipher

        return KmsEnvelopeCipher(settings.grant_kms_key_id)
    if settings.store == "sqlite" or settings.grant_key_file:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from pathlib import Path

        from foldgate.store.grants.cipher import LocalKeyCipher

        path = settings.grant_key_file or Path(settings.sqlite_path).parent / "grants.key"
        return LocalKeyCipher.from_file(path)
    raise ConfigError(
        "upstream grants need a key: set FOLDGATE_GRANT_KMS_KEY_ID (the stack's GrantKey) or "
        "FOLDGATE_GRANT_KEY_FILE"
    )


def open_grant_store(settings: Settings) -> GrantStore:
    """Upstream grants on the same backend (file or table) as the catalog, sealed by
    :func:`open_grant_cipher`."""
    cipher = open_grant_cipher(settings)
    if settings.store == "sqlite":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.grants.sqlite import SqliteGrantStore

        return SqliteGrantStore(settings.sqlite_path, cipher)
    if settings.store == "dynamodb":
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.grants.dynamodb import DynamoGrantStore

        return DynamoGrantStore(settings.table_name, cipher)
    raise ConfigError(f"store {settings.store!r} is not available in this build")


def open_authority(settings: Settings, *, cache_seconds: float = 30.0) -> TokenAuthority:
    """The token authority for the settings: their token store and the token HMAC secret."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.auth.authority import TokenAuthority
    from foldgate.auth.secrets import load_secret
    from foldgate.model.agent_token import TokenHasher

    return TokenAuthority(
        open_token_store(settings), TokenHasher(load_secret(settings, "token")), cache_seconds=cache_seconds
    )


def optional_secret(settings: Settings, name: Literal["token", "operator"]) -> bytes | None:
    """The named secret, or None (logged) when it is not configured: what it guards stays closed."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.auth.secrets import load_secret

    try:
        return load_secret(settings, name)
    except ConfigError as exc:
        # Fail closed: without the secret nothing it guards can be used (logged, never shown to callers).
        log.error("%s secret unavailable: %s", name, exc.message)
        return None


def open_hook_secrets(settings: Settings, configs: ConfigSource) -> Callable[[str, str], bytes | None]:
    """Webhook secrets by (tenant, server): None unless the names are valid, the tenant's config has
    that server enabled and a secret was issued for it (cached: a ping must not cost a Parameter Store
    read each, and unknown names are answered from the cache too)."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.auth.hook_secrets import load_hook_secret, valid_names
    from foldgate.edge.hooks import cached_secrets

    def lookup(tenant: str, server: str) -> bytes | None:
        if not valid_names(tenant, server):
            return None  # never let a malformed name reach the config source or a path
        try:
            found = configs.get(tenant).server(server)
            if found is None or not found.enabled:
                return None
            return load_hook_secret(settings, tenant, server)
        except FoldgateError as exc:
            # Logged for the operator; the caller gets the same 401 as any refused ping.
            log.warning("webhook secret for %s/%s unavailable: %s", tenant, server, exc.message)
            return None

    # Locally a freshly issued secret (foldgate hook-secret) works within seconds.
    ttl = settings.secrets_cache_seconds if settings.secrets_in_ssm else 2.0
    return cached_secrets(lookup, ttl_s=ttl)


def open_access(settings: Settings, configs: ConfigSource | None = None) -> Access:
    """Request authentication (agent tokens; OAuth access tokens for tenants with an issuer, from the
    settings or the tenant's ``oauth:`` block in ``configs``), the per-caller rate limit and, with
    ``configs``, the tenants' request quotas across instances."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.auth.authority import TokenAuthority
    from foldgate.auth.oauth.setup import open_oauth
    from foldgate.edge.access import Access
    from foldgate.edge.ratelimit import RateLimiter
    from foldgate.model.agent_token import TokenHasher

    secret = optional_secret(settings, "token")
    authority = TokenAuthority(open_token_store(settings), TokenHasher(secret)) if secret else None
    return Access(
        default_tenant=settings.default_tenant,
        allow_tenant_header=settings.allow_tenant_header,
        authority=authority,
        auth_required=settings.auth_required,
        # 0 turns the limiter off (e.g. behind a gateway that already throttles per client).
        limiter=RateLimiter(settings.rate_limit_per_minute) if settings.rate_limit_per_minute > 0 else None,
        oauth=open_oauth(settings, configs),
        source_limiter=(
            RateLimiter(settings.source_rate_limit_per_minute)
            if settings.source_rate_limit_per_minute > 0
            else None
        ),
        quotas=open_quotas(settings, configs) if configs is not None else None,
    )


def open_embedder(settings: Settings) -> Embedder:
    """The embedding provider the settings name (a lexical-only stand-in when it cannot load)."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.search.embed import open_provider

    if settings.embedding_provider == "local":
        return open_provider("local", model_dir=settings.model_dir)
    if settings.embedding_provider == "bedrock":
        return open_provider("bedrock", dimensions=settings.bedrock_dimensions)
    return open_provider("none")


def lazy_embedder(settings: Settings) -> Callable[[], Embedder]:
    """The provider, opened on first use: the request path pays for numpy and the model only when a
    search needs them, not at every cold start."""
    opened: list[Embedder] = []
    lock = threading.Lock()

    def get() -> Embedder:
        with lock:
            if not opened:
                opened.append(open_embedder(settings))
            return opened[0]

    return get


def open_sandbox(settings: Settings) -> Callable[[], Sandbox] | None:
    """A factory for the agent-code sandbox where this process runs code (its worker starts on first use)."""
    if not settings.serve_code:
        return None

    def start() -> Sandbox:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.code.sandbox import Sandbox

        return Sandbox()

    return start


def operator_login_limit(settings: Settings) -> LoginLimit:
    """The limit on wrong operator keys, shared by the admin API and the console's sign-in form."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.edge.console.login_limit import LoginLimit

    return LoginLimit(
        settings.console_login_failures_per_minute, settings.console_login_global_failures_per_minute
    )


def build_mcp_app(
    settings: Settings,
    *,
    reindex: Reindexer | None = None,
    admin_api: bool = True,
    metrics: Recorder | None = None,
    agents: bool = True,
) -> Starlette:
    """The MCP endpoint app for the settings (the McpFunction's whole dependency graph; the
    CodeFunction's without the admin API). ``metrics`` is the recorder the call metrics come from (the
    Lambda handler's EMF, see foldgate.app.mcp_lambda), kept as ``app.state.metrics``: the activity
    recorder hands it every event (foldgate.telemetry.recorders.Recorders). ``agents`` False builds the
    AdminFunction's app: the admin API and the console on the same graph, no MCP endpoint and no
    OAuth callback (those stay McpFunction's)."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.edge.app import create_agents_app, create_app
    from foldgate.serve.catalogs import CatalogCache
    from foldgate.serve.gateway import Gateway

    open_tracing(settings)
    # One budget for every per-tenant cache of the instance: catalogs, views, searchers, validators,
    # configs and Parameter Store reads.
    memory = open_memory(settings)
    catalogs = CatalogCache(open_store(settings), ttl=settings.catalog_cache_seconds, memory=memory)
    # A fresh instance facing an invalid live config serves with the one its catalog was built from.
    configs = open_configs(settings, fallback=catalogs.indexed_config, memory=memory)
    # One recorder per instance: its buffer and writer thread outlive requests (see activity_recorder).
    activity = open_activity_store(settings)
    recorder = open_activity(settings, configs, store=activity)
    oauth = open_upstream_oauth(settings, memory)
    if oauth is not None:
        oauth.outcomes.recorder = recorder  # machine grants obtained or refused: audit events
    results = open_results(settings)
    # Kept with the other task wiring (wiring_tasks.py); loaded by the serving apps only.
    from foldgate.app.wiring_tasks import open_tasks

    gateway = Gateway(
        catalogs,
        configs,
        open_upstream(settings, oauth, memory=memory),
        results=results,
        tasks=open_tasks(settings, results),
        embedder=lazy_embedder(settings),
        hybrid_weight=settings.hybrid_weight,
        sandbox=open_sandbox(settings),
        # Made on the first call of a tenant that keeps arguments hashed (a secret read, off cold start).
        arguments_key=functools.cache(lambda: activity_arguments_key(settings)),
    )
    if reindex is None and settings.indexer_function:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.index.triggers import lambda_reindexer

        reindex = lambda_reindexer(settings.indexer_function)
    admin = None
    console: Callable[[], APIRouter] | None = None
    access = open_access(settings, configs)
    if admin_api:
        # The admin API (and its OpenAPI models): AdminFunction's and the local server's, never an
        # agents-only function's init.
        from foldgate.edge.admin import admin_router

        operator = optional_secret(settings, "operator")
        approvals = open_approvals(settings)
        # One budget of wrong operator keys for the admin API and the console's sign-in: one key.
        operator_limit = operator_login_limit(settings)
        admin = admin_router(
            gateway,
            operator_secret=operator,
            approvals=approvals,
            reindex=reindex,
            oauth=oauth,
            operator_limit=operator_limit,
            activity=activity,
        )

        def build_console() -> APIRouter:
            """The console's routes, built on its first request (see foldgate.edge.console.lazy)."""
            # Loaded on the console's first request: an instance serving only agents never pays for it.
            from foldgate.auth.secrets import operator_key_location
            from foldgate.edge.connect import auth_states, console_connector
            from foldgate.edge.console.routes import ConsoleDeps, console_router

            return console_router(
                ConsoleDeps(
                    gateway,
                    operator,
                    approvals=approvals,
                    reindex=reindex,
                    tokens=access.authority,
                    connector=console_connector(gateway, oauth) if oauth is not None else None,
                    auth_states=lambda tenant: auth_states(oauth, gateway, tenant, activity),
                    operator_key_at=operator_key_location(settings),
                    login_limit=operator_limit,
                    signouts=open_signouts(settings),
                    activity=activity,
                    public_url=settings.public_url,
                    allow_private_upstreams=settings.allow_private_upstreams,
                )
            )

        console = build_console
    oauth_routes: Callable[[], APIRouter] | None = None
    if oauth is not None and agents:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.auth.oauth.setup import tenant_oauth_configs

        issuers = tenant_oauth_configs(settings, configs)
        link_secret = connect_link_secret(settings)

        def oauth_routes() -> APIRouter:
            """The OAuth client's routes (callback, connect links, client metadata)."""
            # Loaded where the routes are built: on their first request in an agents-only function.
            from foldgate.edge.connect import oauth_client_router

            assert oauth is not None
            return oauth_client_router(gateway, oauth, link_secret, issuers)

    app: Starlette
    if admin_api or not agents:
        app = full = create_app(
            gateway,
            access=access,
            max_body_bytes=settings.max_body_bytes,
            admin=admin,
            console=console,
            allowed_hosts=settings.public_hosts or None,
            recorder=recorder,
            agents=agents,
        )
        if oauth_routes is not None:
            full.include_router(oauth_routes())
    else:
        # Agents only (McpFunction, CodeFunction): no FastAPI at init, the OAuth routes on first use.
        full = None
        app = create_agents_app(
            gateway,
            access=access,
            max_body_bytes=settings.max_body_bytes,
            allowed_hosts=settings.public_hosts or None,
            recorder=recorder,
            lazy={"/oauth": oauth_routes} if oauth_routes is not None else None,
        )
    app.state.metrics = metrics
    # The instance's own figures (cache, quota leasing, dropped events) for the handler's EMF.
    from foldgate.app.wiring_instance import instance_reader

    app.state.instance_figures = instance_reader(gateway, access.quotas, metrics)
    if metrics is not None:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.telemetry.recorders import Recorders

        # The agents' call events go to the activity log and to the call metrics, each guarded.
        gateway.recorder = Recorders(recorder, metrics)
    if full is not None and admin_api and settings.indexer_function:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.edge.hooks import hooks_router
        from foldgate.index.triggers import lambda_server_trigger

        trigger = lambda_server_trigger(settings.indexer_function)
        full.include_router(hooks_router(open_hook_secrets(settings, configs), trigger))
    return app
