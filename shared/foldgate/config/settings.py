"""Process settings: read from the environment once (Lambda) or given by the CLI.

The config package is the only one that reads the environment, and this is the module that does.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from foldgate.config.tenant import Strict, format_validation
from foldgate.errors import ConfigError

__all__ = ["Settings"]


class Settings(Strict):
    """Process-wide settings read from the environment once (Lambda) or given by the CLI."""

    table_name: str = "foldgate"
    config_prefix: str = "/foldgate"
    store: Literal["sqlite", "dynamodb"] = "sqlite"
    sqlite_path: str = ".foldgate/foldgate.sqlite3"
    config_source: Literal["file", "ssm"] = "file"
    config_file: str = "foldgate.yaml"
    default_tenant: str = "default"
    allow_tenant_header: bool = True
    config_cache_seconds: float = 30.0
    secrets_cache_seconds: float = 300.0
    result_cache_seconds: int = 3600
    # Agent tokens. The cloud stack always requires them; local serve on loopback may run without.
    auth_required: bool = False
    # HMAC key for agent-token hashes and the operator credential. Locally given here (or generated into
    # the state folder); in the cloud read from SecureString parameters under ``config_prefix``.
    token_secret: str | None = None
    operator_key: str | None = None
    rate_limit_per_minute: int = 600
    # Per source address, spent before an agent token is looked up (a strongly consistent read in the
    # cloud), so a flood of bogus tokens cannot buy one table read each; 0 turns it off. Higher than the
    # per-caller limit because many callers can share an address (NAT, one agent host).
    source_rate_limit_per_minute: int = 1200
    # Wrong operator keys the console's sign-in form and the admin API take (one budget) per client
    # address, and over all addresses (a guesser spread over many addresses), per minute with that many
    # at once; 0 turns either off.
    console_login_failures_per_minute: int = Field(default=5, ge=0)
    console_login_global_failures_per_minute: int = Field(default=60, ge=0)
    # The public Host name(s) of the cloud endpoint (FOLDGATE_PUBLIC_HOSTS, comma-separated); requests
    # naming another Host or Origin are refused. Empty: no Host check (API Gateway's own domain).
    public_hosts: list[str] = Field(default_factory=list)
    # Upstream OAuth tokens at rest (foldgate.store.grants). Locally AES-GCM under a key file (default:
    # grants.key beside the SQLite file, created on first use); in the cloud a KMS key (the stack's
    # GrantKey), which wins when both are set.
    grant_key_file: str | None = None
    grant_kms_key_id: str | None = None
    # Upstream URLs on private/loopback networks: fine locally, refused in the cloud (SSRF).
    allow_private_upstreams: bool = True
    # At most one new registration per upstream server in this many seconds, when its authorization
    # server forgot foldgate's dynamically registered client (foldgate.upstream.oauth.renewal).
    upstream_reregister_seconds: float = Field(default=300.0, ge=0.0)
    # Inbound OAuth for the default tenant (foldgate.auth.oauth): the trusted issuer, the audience its
    # tokens carry (default: public_url), and the gateway's public base URL (the resource identifier).
    oauth_issuer: str | None = None
    oauth_audience: str | None = None
    public_url: str | None = None
    # How the default tenant's issuer spells things (the tenant oauth: block's mapping, for the stack's
    # issuer): Cognito names the app in client_id (oauth_audience then lists the allowed client ids,
    # comma-separated) and prefixes scopes with its resource server identifier.
    oauth_audience_claim: Literal["aud", "client_id"] = "aud"
    oauth_scope_prefix: str | None = None
    # The client people of the default tenant sign in with at oauth_issuer before connecting their own
    # account to a per_user upstream (the tenant oauth: block's login.client_id).
    oauth_login_client_id: str | None = None
    # The access-token claim that names the caller's tenant (e.g. foldgate_tenant); None: every OAuth
    # caller is the default tenant's. Never a header: the signed token (checked by that tenant's own
    # issuer) decides.
    tenant_claim: str | None = Field(default=None, max_length=200)
    # Semantic search: "local" (the int8 MiniLM built by `make model`), "bedrock" (Titan v2) or "none".
    embedding_provider: Literal["local", "bedrock", "none"] = "local"
    model_dir: str | None = None
    bedrock_dimensions: int = 512
    hybrid_weight: float = Field(default=0.6, ge=0.0, le=1.0)
    # Whether this process runs agent code (/mcp/code). The cloud serves it from its own function.
    serve_code: bool = True
    indexer_function: str | None = None
    # The timeout of the functions that serve agents (McpFunction, CodeFunction; template.yaml sets it
    # to theirs). Server timeouts above what it leaves for a request are reported by the indexer
    # (foldgate.config.limits); None (local): no such limit. Requests read their own deadline from the
    # Lambda context, not from here.
    serve_timeout_s: float | None = Field(default=None, gt=0, le=900)
    index_concurrency: int = 8
    catalog_cache_seconds: float = 10.0
    # The estimated bytes (MiB) one instance keeps of every tenant's catalog, views, search indexes,
    # compiled validators and config and Parameter Store reads, least recently used evicted first
    # (foldgate.model.lru). 320 fits the 1,024 MB functions: ~200 MB of process (Python, the SDKs, the
    # local embedding model) plus allocator slack over the estimates leaves ~400 MB for requests.
    cache_mb: int = Field(default=320, ge=1, le=65536)
    max_body_bytes: int = 1_048_576
    log_level: str = "INFO"

    @field_validator("public_hosts", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        # The environment gives one string; the CLI and tests may give a list.
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Read ``FOLDGATE_*`` variables; unknown ones are ignored."""
        env = dict(os.environ if environ is None else environ)
        fields: dict[str, Any] = {}
        for name in cls.model_fields:
            key = f"FOLDGATE_{name.upper()}"
            if key in env:
                fields[name] = env[key]
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            raise ConfigError(f"invalid environment: {format_validation(exc)}") from exc
