"""Process settings: read from the environment once (Lambda) or given by the CLI.

The config package is the only one that reads the environment, and this is the module that does.
"""

from __future__ import annotations

import os
import urllib.parse
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
    # Where tenant configs live: a local file, Parameter Store documents, or one document per tenant in
    # the table (the store's backend) with a tenant registry. The cloud sources (ssm, table) read
    # upstream, stack and webhook secrets from Parameter Store.
    config_source: Literal["file", "ssm", "table"] = "file"
    config_file: str = "foldgate.yaml"
    default_tenant: str = "default"
    allow_tenant_header: bool = True
    config_cache_seconds: float = 30.0
    secrets_cache_seconds: float = 300.0
    result_cache_seconds: int = 3600
    # The activity log (foldgate.serve.activity_recorder): "off" records nothing and the admin API's
    # /activity routes answer 503. Events wait in a buffer of at most activity_buffer events (more are
    # dropped and counted) until a batch is full (25 on DynamoDB, 500 in SQLite) or the oldest has waited
    # activity_flush_seconds (None: 1 s locally, 10 s on DynamoDB, where fewer, fuller batches cost fewer
    # writes).
    activity: Literal["on", "off"] = "on"
    activity_flush_seconds: float | None = Field(default=None, gt=0, le=300)
    activity_buffer: int = Field(default=10_000, ge=25, le=1_000_000)
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
    # Where the cloud's header secrets (headers_secret) live: Parameter Store SecureStrings, or sealed
    # in the table under grant_kms_key_id (foldgate.store.secrets_table; the template's SecretStore).
    secret_store: Literal["ssm", "table"] = "ssm"
    # Upstream URLs on private/loopback networks: fine locally, refused in the cloud (SSRF).
    allow_private_upstreams: bool = True
    # At most one new registration per upstream server in this many seconds, when its authorization
    # server forgot foldgate's dynamically registered client (foldgate.upstream.oauth.renewal).
    upstream_reregister_seconds: float = Field(default=300.0, ge=0.0)
    exchange_issuers: list[str] = Field(
        default_factory=list,
        description="Authorization servers (issuer URLs, or token endpoint URLs) a person's inbound OAuth "
        "token may be sent to by the token_exchange and id_jag kinds besides the one that issued it "
        "(comma-separated; template parameter ExchangeIssuers). A tenant config naming any other "
        "exchange server for an inbound subject token is refused: its admin cannot collect people's tokens.",
    )
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
    # Durable tasks (issue 28): the function that runs a task's call (the cloud's TaskWorkerFunction;
    # None: calls continue in this process), the seconds a call may answer in its request before it
    # continues as a task when the tenant sets none (None: unbounded; the template sets 20 on Lambda),
    # and how long a task and its result are kept.
    task_worker_function: str | None = None
    task_sync_window_s: float | None = Field(default=None, gt=0, le=900)
    task_ttl_seconds: int = Field(default=3600, ge=60, le=7 * 86400)
    # The timeout of the functions that serve agents (McpFunction, CodeFunction; template.yaml sets it
    # to theirs). Server timeouts above what it leaves for a request are reported by the indexer
    # (foldgate.config.limits); None (local): no such limit. Requests read their own deadline from the
    # Lambda context, not from here.
    serve_timeout_s: float | None = Field(default=None, gt=0, le=900)
    index_concurrency: int = 8
    # Index-time enrichment (foldgate.enrich.pipeline), per index run of one tenant: at most this many
    # provider calls and seconds (the rest continues in the next run), this many calls at once. The
    # provider and its model, token and cost caps are FOLDGATE_ENRICHMENT_* (foldgate.config.enrichment).
    enrichment_run_tools: int = Field(default=500, ge=0, le=100_000)
    enrichment_run_seconds: float = Field(default=600.0, gt=0, le=3600)
    enrichment_concurrency: int = Field(default=4, ge=1, le=64)
    # Fan-out indexing (foldgate.index.fanout): the queue the schedule function sends one message per
    # tenant to (its URL; only that function has it), how many tenants of a queue batch the
    # IndexerFunction runs at once, and the redrive policy's maxReceiveCount (the receive that fails
    # for the last time logs that the message goes to the dead-letter queue).
    index_queue_url: str | None = None
    index_batch_concurrency: int = Field(default=4, ge=1, le=10)
    index_max_receives: int = Field(default=3, ge=1, le=1000)
    catalog_cache_seconds: float = 10.0
    # The estimated bytes (MiB) one instance keeps of every tenant's catalog, views, search indexes,
    # compiled validators and config and Parameter Store reads, least recently used evicted first
    # (foldgate.model.lru). 320 fits the 1,024 MB functions: ~200 MB of process (Python, the SDKs, the
    # local embedding model) plus allocator slack over the estimates leaves ~400 MB for requests.
    cache_mb: int = Field(default=320, ge=1, le=65536)
    max_body_bytes: int = 1_048_576
    log_level: str = "INFO"
    # Traces (foldgate.telemetry): spans are recorded and exported over OTLP/HTTP (protobuf) only when an
    # endpoint is set, read by from_env from the standard OTEL_EXPORTER_OTLP_* variables (the full traces
    # URL; OTEL_EXPORTER_OTLP_ENDPOINT gets /v1/traces appended). Without one no span is recorded and
    # OpenTelemetry is never loaded; every request still gets a trace id, sent upstream in traceparent.
    otlp_endpoint: str | None = None
    otlp_headers: dict[str, str] = Field(default_factory=dict)
    otlp_timeout_s: float = Field(default=10.0, gt=0, le=60)
    # The traces' service.name (OTEL_SERVICE_NAME, else POWERTOOLS_SERVICE_NAME, else "foldgate").
    otel_service_name: str = "foldgate"
    # The share of traces foldgate starts that are recorded; a client's own sampling decision is followed.
    trace_sample_ratio: float = Field(default=1.0, ge=0.0, le=1.0)
    # A file the request stages' own times are written to (foldgate.telemetry.stages, used by
    # `foldgate bench call --breakdown`); replaces OTLP export when set. None: nothing is timed.
    stage_log: str | None = None
    # Call metrics on Lambda (CloudWatch EMF): the namespace and the service dimension, from Powertools'
    # variables (POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_SERVICE_NAME) as the template sets them.
    metrics_namespace: str = "foldgate"
    metrics_service: str = "foldgate"

    @property
    def secrets_in_ssm(self) -> bool:
        """Whether secrets come from Parameter Store (the cloud sources), not the local state folder."""
        return self.config_source in ("ssm", "table")

    @field_validator("public_hosts", "exchange_issuers", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        # The environment gives one string; the CLI and tests may give a list.
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("exchange_issuers")
    @classmethod
    def _check_exchange_issuers(cls, value: list[str]) -> list[str]:
        for url in value:
            parts = urllib.parse.urlsplit(url)
            if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
                raise ValueError(f"exchange issuer {url[:100]!r} must be an http(s) URL without query")
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
        for name, value in _otel_fields(env).items():
            fields.setdefault(name, value)
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            raise ConfigError(f"invalid environment: {format_validation(exc)}") from exc


def _otel_fields(env: dict[str, str]) -> dict[str, Any]:
    """The trace settings the OpenTelemetry specification's variables give (OTLP/HTTP traces only),
    and the metrics' namespace and service from Powertools' variables."""
    fields: dict[str, Any] = {}
    service = env.get("OTEL_SERVICE_NAME") or env.get("POWERTOOLS_SERVICE_NAME")
    if service:
        fields["otel_service_name"] = service
    if env.get("POWERTOOLS_SERVICE_NAME"):
        fields["metrics_service"] = env["POWERTOOLS_SERVICE_NAME"]
    if env.get("POWERTOOLS_METRICS_NAMESPACE"):
        fields["metrics_namespace"] = env["POWERTOOLS_METRICS_NAMESPACE"]
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return fields
    exporters = {e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")}
    if "otlp" not in exporters:
        return fields
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not endpoint and base:
        endpoint = base.rstrip("/") + "/v1/traces"
    if not endpoint:
        return fields
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    ).strip()
    if protocol and protocol != "http/protobuf":
        raise ConfigError(f"OTLP protocol {protocol!r} is not supported: foldgate exports http/protobuf")
    fields["otlp_endpoint"] = endpoint
    fields["otlp_headers"] = {
        **_otel_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", "")),
        **_otel_headers(env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "")),
    }
    timeout_ms = env.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or env.get("OTEL_EXPORTER_OTLP_TIMEOUT")
    if timeout_ms:
        try:
            fields["otlp_timeout_s"] = float(timeout_ms) / 1000  # the variables are in milliseconds
        except ValueError:
            raise ConfigError(
                f"invalid environment: OTLP timeout {timeout_ms[:40]!r} is not a number"
            ) from None
    return fields


def _otel_headers(value: str) -> dict[str, str]:
    """``key=value,key2=value2`` (values URL-encoded), as the OTLP exporter variables spell headers."""
    headers: dict[str, str] = {}
    for pair in value.split(","):
        key, sep, raw = pair.partition("=")
        if sep and key.strip():
            headers[urllib.parse.unquote(key.strip()).lower()] = urllib.parse.unquote(raw.strip())
    return headers
