"""Tenant configuration (one pydantic model for SSM JSON and local files) and process settings.

This is the only module that reads the environment.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from foldgate.errors import ConfigError

__all__ = [
    "ResponseMode",
    "RoutingMode",
    "ServerConfig",
    "Settings",
    "TenantConfig",
    "ToolLoading",
    "ToolOverride",
    "load_tenant_config",
    "parse_tenant_config",
]

ResponseMode = Literal["full", "deferred", "auto"]
RoutingMode = Literal["retrieve_tools", "direct", "code_execution"]
ToolLoading = Literal["eager", "deferred", "auto"]

# Published tool names are `server__tool`; clients commonly cap names at 64 characters of
# [A-Za-z0-9_-], so a server name keeps to that alphabet and leaves room for the tool part.
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$")
MAX_SERVER_NAME = 24


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolOverride(_Strict):
    """Per-tool settings inside a server's ``tools`` map."""

    defer_loading: bool | None = Field(
        default=None, description="Pin this tool deferred (true) or full (false); wins over every rule."
    )
    enabled: bool = Field(default=True, description="False hides the tool from every surface.")


class ServerConfig(_Strict):
    """One upstream MCP server of a tenant."""

    name: str = Field(description="Published prefix: tools appear as `<name>__<tool>`.")
    url: str | None = Field(default=None, description="Streamable HTTP endpoint of the upstream.")
    transport: Literal["streamable_http", "stdio"] = "streamable_http"
    command: list[str] | None = Field(default=None, description="stdio only (local mode): argv to spawn.")
    env: dict[str, str] = Field(default_factory=dict, description="stdio only: extra environment.")
    headers: dict[str, str] = Field(
        default_factory=dict, description="Literal headers (local files; prefer headers_secret in the cloud)."
    )
    headers_secret: str | None = Field(
        default=None,
        description="Name of a SecureString parameter holding a JSON object of headers (auth tokens).",
    )
    enabled: bool = True
    quarantined: bool = Field(default=False, description="Hide every tool of this server from agents.")
    trusted: bool = Field(default=True, description="Trusted servers auto-approve their first tool baseline.")
    tool_loading: ToolLoading = "auto"
    tools: dict[str, ToolOverride] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0, le=900)
    max_concurrency: int = Field(
        default=16, ge=1, le=256, description="Calls in flight to this upstream at once (per instance)."
    )
    queue_timeout_s: float = Field(
        default=5.0, gt=0, le=60, description="Wait for a free slot before failing with upstream_busy."
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not SERVER_NAME_RE.match(value) or len(value) > MAX_SERVER_NAME:
            raise ValueError(
                f"server name {value!r} must be 1-{MAX_SERVER_NAME} characters of letters, digits, '-' "
                "and single '_', starting with a letter or digit, so that published `server__tool` names "
                "stay valid MCP tool names"
            )
        return value

    @model_validator(mode="after")
    def _check_transport(self) -> ServerConfig:
        if self.transport == "streamable_http":
            if not self.url or not re.match(r"^https?://", self.url):
                raise ValueError(f"server {self.name!r}: streamable_http needs an http(s) url")
        elif not self.command:
            raise ValueError(f"server {self.name!r}: stdio needs a command")
        return self


class CodeExecutionConfig(_Strict):
    """The code-execution surface of a tenant: one JavaScript run orchestrating many tool calls."""

    enabled: bool = Field(default=True, description="False: the code tool is listed nowhere and refused.")
    timeout_ms: int = Field(default=10_000, ge=100, le=25_000, description="Ceiling on a run's wall time.")
    max_calls: int = Field(default=50, ge=1, le=1000, description="Tool calls per run.")
    concurrency: int = Field(default=8, ge=1, le=32, description="Tool calls in flight at once.")
    max_result_bytes: int = Field(default=100_000, ge=1_000, le=5_000_000)
    catalog_chars: int = Field(
        default=8_000,
        ge=0,
        le=100_000,
        description="Size cap of the tool catalog in the code tool's description.",
    )


class TenantConfig(_Strict):
    """Everything one tenant configures. Serialization settings apply on the next request."""

    routing_mode: RoutingMode = "retrieve_tools"
    direct_tool_response_mode: ResponseMode = "auto"
    defer_schema_chars: int = Field(
        default=0, ge=0, description="In auto mode, defer any tool whose schema is longer (0 = off)."
    )
    defer_threshold: int = Field(
        default=20, ge=0, description="In auto mode, defer servers that have more tools than this."
    )
    listing_token_budget: int | None = Field(
        default=None,
        gt=0,
        description="In auto mode, defer the biggest savers first until the listing fits this many tokens.",
    )
    tools_limit: int = Field(default=10, ge=1, le=100)
    tool_response_limit: int = Field(default=50_000, ge=1_000)
    instructions: str | None = None
    code_execution: CodeExecutionConfig = Field(default_factory=CodeExecutionConfig)
    servers: list[ServerConfig] = Field(default_factory=list)

    @field_validator("routing_mode", mode="before")
    @classmethod
    def _check_routing(cls, value: Any) -> Any:
        if value not in ("retrieve_tools", "direct", "code_execution"):
            raise ValueError(
                f"routing_mode {value!r} is not a routing mode (retrieve_tools, direct, code_execution); "
                "to defer schemas use routing_mode 'direct' with direct_tool_response_mode "
                "'deferred' or 'auto'"
            )
        return value

    @model_validator(mode="after")
    def _unique_servers(self) -> TenantConfig:
        seen: set[str] = set()
        for server in self.servers:
            if server.name in seen:
                raise ValueError(f"server name {server.name!r} is used twice")
            seen.add(server.name)
        return self

    def server(self, name: str) -> ServerConfig | None:
        """The server config by name, None if absent."""
        return next((s for s in self.servers if s.name == name), None)


def _format_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "config"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def parse_tenant_config(data: Any, *, source: str = "config") -> TenantConfig:
    """Validate a decoded config document; raises ConfigError naming each bad field."""
    try:
        return TenantConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid tenant config in {source}: {_format_validation(exc)}") from exc


def load_tenant_config(path: str | Path) -> TenantConfig:
    """Load a tenant config file (YAML or JSON)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from exc
    try:
        if p.suffix in (".yaml", ".yml"):
            import yaml  # lazily: only local config files are YAML

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # yaml and json raise different trees; both are a bad file
        raise ConfigError(f"cannot parse config {p}: {exc}") from exc
    return parse_tenant_config(data, source=str(p))


class Settings(_Strict):
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
    # Upstream URLs on private/loopback networks: fine locally, refused in the cloud (SSRF).
    allow_private_upstreams: bool = True
    # Semantic search: "local" (the int8 MiniLM built by `make model`), "bedrock" (Titan v2) or "none".
    embedding_provider: Literal["local", "bedrock", "none"] = "local"
    model_dir: str | None = None
    bedrock_dimensions: int = 512
    hybrid_weight: float = Field(default=0.6, ge=0.0, le=1.0)
    # Whether this process runs agent code (/mcp/code). The cloud serves it from its own function.
    serve_code: bool = True
    indexer_function: str | None = None
    index_concurrency: int = 8
    catalog_cache_seconds: float = 10.0
    max_body_bytes: int = 1_048_576
    log_level: str = "INFO"

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
            raise ConfigError(f"invalid environment: {_format_validation(exc)}") from exc
