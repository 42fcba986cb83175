"""Tenant configuration: one pydantic model for SSM JSON and local files, validated strictly."""

from __future__ import annotations

import hashlib
import json
import re
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from foldgate.config.oauth import OAuthConfig
from foldgate.config.upstream_auth import StaticAuth, UpstreamAuth
from foldgate.errors import ConfigError
from foldgate.model.address_rule import literal_host_refusal
from foldgate.model.naming import MAX_SERVER_NAME, RESERVED_NAMES, SERVER_NAME_RE, is_valid_name

__all__ = [
    "ActivityConfig",
    "ArgumentsPolicy",
    "GuardConfig",
    "InjectionPolicy",
    "ProtocolSetting",
    "PublishMode",
    "RequestLimits",
    "ResponseMode",
    "RoutingMode",
    "SecretsPolicy",
    "ServerConfig",
    "ServerGuard",
    "TaskMode",
    "TenantConfig",
    "ToolLoading",
    "ToolOverride",
    "load_tenant_config",
    "parse_tenant_config",
    "read_config_document",
]

ResponseMode = Literal["full", "deferred", "auto"]
RoutingMode = Literal["retrieve_tools", "direct", "code_execution"]
ToolLoading = Literal["eager", "deferred", "auto"]
ArgumentsPolicy = Literal["none", "hashed", "redacted"]
PublishMode = Literal["prefixed", "bare"]
SecretsPolicy = Literal["redact", "block", "off"]
InjectionPolicy = Literal["mark", "spotlight", "block", "off"]
# When a call becomes a durable task (for clients that take tasks): auto = when the tool declares task
# support or the call is still running when the sync window ends; always = from the start; never = not
# at all (the call answers within the request, however long it takes).
TaskMode = Literal["auto", "always", "never"]
# The MCP protocol spoken to an upstream: auto (negotiated, see foldgate.upstream.client) or one pinned
# version (the handshake-era ones, then the stateless 2026-07-28). A unit test keeps these equal to the
# versions the upstream session speaks.
ProtocolSetting = Literal["auto", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolOverride(Strict):
    """Per-tool settings inside a server's ``tools`` map."""

    defer_loading: bool | None = Field(
        default=None, description="Pin this tool deferred (true) or full (false); wins over every rule."
    )
    enabled: bool = Field(default=True, description="False hides the tool from every surface.")
    tier: Literal["read", "write", "destructive"] | None = Field(
        default=None,
        description="Pin the tool's permission tier, overriding its annotations and the spec's defaults.",
    )
    task: TaskMode | None = Field(
        default=None, description="When this tool's calls become tasks (default: the server's setting)."
    )


class ServerConfig(Strict):
    """One upstream MCP server of a tenant."""

    name: str = Field(description="Published prefix: tools appear as `<name>__<tool>`.")
    publish: PublishMode = Field(
        default="prefixed",
        description="prefixed: tools and prompts as `<name>__<tool>`, resources as "
        "`foldgate://<name>/...`; bare: they keep their upstream names and URIs where nothing else in "
        "the tenant claims them (a colliding one falls back to prefixed).",
    )
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
    auth: UpstreamAuth = Field(
        default_factory=StaticAuth,
        description="How foldgate authenticates to the upstream: static (headers), oauth, "
        "client_credentials, per_user or workload_jwt.",
    )
    enabled: bool = True
    quarantined: bool = Field(default=False, description="Hide every tool of this server from agents.")
    trusted: bool = Field(default=True, description="Trusted servers auto-approve their first tool baseline.")
    tool_loading: ToolLoading = "auto"
    protocol: ProtocolSetting = Field(
        default="auto",
        description="MCP version spoken to this upstream: auto (its newest, except that a call from a "
        "2025-era client that takes sampling, elicitation or roots on its stream is sent at a 2025 "
        "version when the upstream accepts one) or one pinned version.",
    )
    tools: dict[str, ToolOverride] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0, le=900)
    max_concurrency: int = Field(
        default=16, ge=1, le=256, description="Calls in flight to this upstream at once (per instance)."
    )
    queue_timeout_s: float = Field(
        default=5.0, gt=0, le=60, description="Wait for a free slot before failing with upstream_busy."
    )
    task: TaskMode = Field(
        default="auto",
        description="When calls become durable tasks: auto (the tool declares it, or the sync window "
        "passes), always (from the start) or never.",
    )
    sync_window_s: float | None = Field(
        default=None,
        gt=0,
        le=900,
        description="Seconds a call may answer in its request (default: the tenant's).",
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

    @field_validator("url")
    @classmethod
    def _check_url_host(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Refused at save by the connect-time rule (model/address_rule.py), so a metadata or
        # link-local URL is never saved only to fail when called. Loopback and private literals
        # only where the saver says allow_private_upstreams is off (context "allow_private").
        if value is None:
            return value
        private = bool((info.context or {}).get("allow_private", True))
        why = literal_host_refusal(value, allow_private=private)
        if why is None:
            return value
        if not private and literal_host_refusal(value, allow_private=True) is None:
            raise ValueError(f"url refused: {why} (allow_private_upstreams is off here)")
        raise ValueError(f"url refused: {why}, which an upstream may never be")

    @model_validator(mode="after")
    def _check_transport(self) -> ServerConfig:
        if self.transport == "streamable_http":
            if not self.url or not re.match(r"^https?://", self.url):
                raise ValueError(f"server {self.name!r}: streamable_http needs an http(s) url")
        elif not self.command:
            raise ValueError(f"server {self.name!r}: stdio needs a command")
        if self.auth.kind != "static":
            if self.transport != "streamable_http":
                raise ValueError(f"server {self.name!r}: auth {self.auth.kind!r} needs streamable_http")
            if any(h.lower() == "authorization" for h in self.headers):
                # Two credentials for one request: which one the upstream honours is anyone's guess.
                raise ValueError(f"server {self.name!r}: auth {self.auth.kind!r} sets Authorization itself")
        return self


class CodeExecutionConfig(Strict):
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


class ActivityConfig(Strict):
    """What the activity log keeps of this tenant's calls, and for how long."""

    arguments: ArgumentsPolicy = Field(
        default="none",
        description="Call arguments in events: none (absent), hashed (a keyed digest, equal arguments "
        "give equal digests) or redacted (keys and shapes, no values, credential-like members dropped).",
    )
    retention_days: int = Field(
        default=7, ge=1, le=365, strict=True, description="Days an event is kept (DynamoDB TTL / purge)."
    )


# A guard allowance's key: a published `server__name` (a tool, or a prompt by its published name), or
# `server__*` for everything the server returns (its resources too). Rule ids are what findings name.
_ALLOW_KEY_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*__(?:\*|[^\s]{1,128})$")
_RULE_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class ServerGuard(Strict):
    """One server's guard policy, each side falling back to the tenant's when unset."""

    secrets: SecretsPolicy | None = None
    injection: InjectionPolicy | None = None

    @field_validator("secrets", "injection", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare `off` as false: the operator wrote the policy "off", not a boolean.
        return "off" if value is False else value


class GuardConfig(Strict):
    """What the result guard does with what comes back from upstreams (tool results, resource reads,
    prompts) before the agent sees it."""

    secrets: SecretsPolicy = Field(
        default="redact",
        description="Credentials in results: redact (a typed placeholder such as [redacted:aws_access_key]), "
        "block (the result becomes a tool error naming the kinds) or off.",
    )
    injection: InjectionPolicy = Field(
        default="mark",
        description="Text in results that addresses the model with instructions: mark (wrapped in a note "
        "saying which tool it came from and that it is data, not instructions), spotlight (every text result "
        "delivered inside that note, detected or not: for untrusted or web-reading servers), block (a tool "
        "error naming the rule) or off.",
    )
    servers: dict[str, ServerGuard] = Field(
        default_factory=dict,
        description="Per server name: a policy that replaces the tenant's for what that server returns "
        "(e.g. `{web: {injection: spotlight}}`).",
    )
    allow: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Known false positives the operator released: `server__tool` (or `server__*` for "
        "everything the server returns) -> the rule ids findings name (e.g. generic_secret, "
        "instruction-override) that are not applied to its results.",
    )

    @field_validator("secrets", "injection", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare `off` as false: the operator wrote the policy "off", not a boolean.
        return "off" if value is False else value

    @field_validator("allow")
    @classmethod
    def _check_allow(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for key, rules in value.items():
            if not _ALLOW_KEY_RE.match(key):
                raise ValueError(f"guard.allow key {key!r} must be `server__tool` or `server__*`")
            for rule in rules:
                if not _RULE_ID_RE.match(rule):
                    raise ValueError(f"guard.allow[{key!r}]: {rule!r} is not a rule id")
        return value

    def policy(self, server: str) -> tuple[str, str]:
        """The (secrets, injection) policy for what ``server`` returns."""
        own = self.servers.get(server)
        if own is None:
            return self.secrets, self.injection
        return own.secrets or self.secrets, own.injection or self.injection

    def allowed(self, server: str, name: str) -> frozenset[str]:
        """The rule ids released for what ``server``'s ``name`` (tool, prompt or resource) returns."""
        if not self.allow:
            return frozenset()
        return frozenset((*self.allow.get(f"{server}__{name}", ()), *self.allow.get(f"{server}__*", ())))


class RequestLimits(Strict):
    """Request quotas that hold across every serving instance (edge/quota.py); unset = unlimited beyond
    the per-instance rate limit. Whole numbers only: a quota given as "100" or 1.5 is refused, not read."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    requests_per_minute: int | None = Field(
        default=None, ge=1, le=1_000_000, description="Requests per minute for the whole tenant."
    )
    per_token_requests_per_minute: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Requests per minute for each agent token (or OAuth credential) of the tenant.",
    )


class TenantConfig(Strict):
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
    # retrieve_tools' default page: 50 hits (ten signed, the tail one line each) with the listing stay
    # under 3,000 tokens at p95 on every tuning task set (`foldgate bench context`, see the README).
    tools_limit: int = Field(default=50, ge=1, le=100)
    tool_response_limit: int = Field(default=50_000, ge=1_000)
    instructions: str | None = None
    code_execution: CodeExecutionConfig = Field(default_factory=CodeExecutionConfig)
    servers: list[ServerConfig] = Field(default_factory=list)
    oauth: OAuthConfig | None = Field(
        default=None, description="The authorization server whose access tokens this tenant accepts."
    )
    activity: ActivityConfig = Field(default_factory=ActivityConfig)
    limits: RequestLimits = Field(
        default_factory=RequestLimits, description="Request quotas across instances (none: unlimited)."
    )
    guard: GuardConfig = Field(
        default_factory=GuardConfig,
        description="The result guard: secrets redacted, injections marked by default (see GuardConfig).",
    )
    sync_window_s: float | None = Field(
        default=None,
        gt=0,
        le=900,
        description="Seconds a call may answer in its request before it continues as a task (default: "
        "the deployment's, 20 s on Lambda, unbounded locally).",
    )

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
        _check_bare_names(self.servers)
        return self

    @cached_property
    def bare_servers(self) -> frozenset[str]:
        """The servers published ``bare`` (their names kept where nothing collides)."""
        return frozenset(s.name for s in self.servers if s.publish == "bare")

    @cached_property
    def fingerprint(self) -> str:
        """A hash of the whole config: caches derived from a config key on it, never on the object's
        identity (an id can be reused by a new object once the old one is gone)."""
        return hashlib.sha256(self.model_dump_json().encode("utf-8")).hexdigest()

    def server(self, name: str) -> ServerConfig | None:
        """The server config by name, None if absent."""
        return next((s for s in self.servers if s.name == name), None)


def _check_bare_names(servers: list[ServerConfig]) -> None:
    """Refuse what the config itself shows a bare server's tool names collide with: the names it
    configures (``tools:`` overrides, declared per_user tools) must be valid MCP tool names, none of
    foldgate's meta-tools, and claimed by no other server; the error names both claimants. Names only
    an upstream's listing shows are checked by the indexer, which publishes a colliding one prefixed."""
    prefixed = {s.name for s in servers if s.publish != "bare"}
    owner: dict[str, str] = {}
    for server in servers:
        if server.publish != "bare":
            continue
        declared = [t.name for t in getattr(server.auth, "tools", None) or ()]
        for tool in dict.fromkeys([*server.tools, *declared]):
            where = f"server {server.name!r} (publish: bare) tool {tool!r}"
            if not is_valid_name(tool):
                raise ValueError(f"{where} is not a valid MCP tool name ([A-Za-z0-9_-], 1-64 characters)")
            if tool in RESERVED_NAMES:
                raise ValueError(f"{where} collides with foldgate's own tool {tool!r}")
            if tool in owner:
                raise ValueError(f"{where} collides with tool {tool!r} of bare server {owner[tool]!r}")
            prefix, sep, rest = tool.partition("__")
            if sep and prefix in prefixed and rest:
                raise ValueError(
                    f"{where} collides with tool {rest!r} of server {prefix!r}, published as {tool!r}"
                )
            owner[tool] = server.name


def format_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "config"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def parse_tenant_config(
    data: Any, *, source: str = "config", allow_loopback: bool = True, allow_private: bool = True
) -> TenantConfig:
    """Validate a decoded config document; raises ConfigError naming each bad field.

    ``allow_loopback`` admits an ``http://`` loopback ``oauth.issuer`` (local files and tests); the
    cloud source passes False, and the verifier re-checks against the process's own policy.
    ``allow_private`` False (a save where ``allow_private_upstreams`` is off) refuses server URLs whose
    host is a loopback or private address literal; metadata and link-local hosts are refused always.
    """
    context = {"allow_loopback": allow_loopback, "allow_private": allow_private}
    try:
        return TenantConfig.model_validate(data, context=context)
    except ValidationError as exc:
        raise ConfigError(f"invalid tenant config in {source}: {format_validation(exc)}") from exc


def read_config_document(path: str | Path) -> Any:
    """A tenant config file's document (YAML or JSON), not yet validated; ConfigError naming the file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from exc
    try:
        if p.suffix in (".yaml", ".yml"):
            import yaml  # lazily: only local config files are YAML

            return yaml.safe_load(text)
        return json.loads(text)
    except Exception as exc:  # yaml and json raise different trees; both are a bad file
        raise ConfigError(f"cannot parse config {p}: {exc}") from exc


def load_tenant_config(path: str | Path) -> TenantConfig:
    """Load a tenant config file (YAML or JSON)."""
    return parse_tenant_config(read_config_document(path), source=str(Path(path)))
