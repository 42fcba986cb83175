"""A tenant's ``oauth:`` block: which authorization server it trusts and how claims become a grant.

Tenant configuration is hostile input in a multi-tenant deployment, so the issuer and any JWKS or
introspection URL must be plain ``https`` URLs (no credentials, query or fragment). Plain ``http`` is
accepted only for a loopback host, and only when the caller says loopback is allowed (local and test
mode, where private upstreams are allowed too): :func:`parse_oauth_config` takes that flag, the model
reads it from the pydantic validation context.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from foldgate.errors import ConfigError

__all__ = [
    "ALGORITHMS",
    "DEFAULT_SCOPE_PREFIX",
    "ClaimRule",
    "OAuthConfig",
    "OAuthLogin",
    "OAuthMapping",
    "is_loopback_host",
    "parse_oauth_config",
]

# The same tiers as foldgate.model.catalog.Tier, spelled here: config/ sits below model/.
Tier = Literal["read", "write", "destructive"]
DEFAULT_SCOPE_PREFIX: Final = "foldgate:"

# Asymmetric signatures only: an HMAC algorithm would let anyone holding the (public) JWKS forge tokens.
Algorithm = Literal["RS256", "ES256", "EdDSA"]
ALGORITHMS: Final[tuple[Algorithm, ...]] = ("RS256", "ES256", "EdDSA")
_MAX_URL: Final = 2048
_MAX_AUDIENCES: Final = 16


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (as a URL spells it, brackets stripped) names this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_url(value: str, what: str, info: ValidationInfo) -> str:
    """``value`` if it is an https URL (http on loopback when the context allows it); ValueError else."""
    if len(value) > _MAX_URL:
        raise ValueError(f"{what} is longer than {_MAX_URL} characters")
    try:
        parts = urlsplit(value)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise ValueError(f"{what} is not a valid URL") from exc
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{what} must not carry credentials")
    if parts.query or parts.fragment or "#" in value:
        raise ValueError(f"{what} must not have a query or fragment")
    if not host:
        raise ValueError(f"{what} has no host")
    allow_loopback = bool((info.context or {}).get("allow_loopback", False))
    if parts.scheme == "https":
        return value
    if parts.scheme == "http" and allow_loopback and is_loopback_host(host):
        return value
    if parts.scheme == "http" and is_loopback_host(host):
        raise ValueError(f"{what} on loopback is only allowed where private upstreams are allowed")
    raise ValueError(f"{what} must be an https URL")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClaimRule(_Strict):
    """When the token's ``claim`` equals or contains ``value``, also grant ``servers`` and/or ``tier``."""

    claim: str = Field(min_length=1, max_length=200, description="Claim name, e.g. groups or cognito:groups.")
    value: str = Field(min_length=1, max_length=500)
    servers: list[str] | None = Field(default=None, description="Servers this rule grants.")
    tier: Tier | None = Field(default=None, description="Tier this rule grants (the highest granted wins).")

    @field_validator("servers")
    @classmethod
    def _some_servers(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("servers, when given, must name at least one server")
        return value


class OAuthMapping(_Strict):
    """How a token's claims become a grant: the scope spelling, the audience claim and extra rules.

    Cognito, for one, puts a resource server's scopes as ``<identifier>/read`` and names the app client
    in ``client_id`` instead of ``aud``: ``scope_prefix: "https://mcp.example.com/"`` with
    ``audience_claim: client_id`` (and the allowed client ids as the config's ``audience``) fits it.
    """

    scope_prefix: str = Field(
        default=DEFAULT_SCOPE_PREFIX,
        min_length=1,
        max_length=300,
        description="Tier scopes are <prefix>read|write|destructive, server scopes <prefix>server:<name>.",
    )
    audience_claim: Literal["aud", "client_id"] = Field(
        default="aud",
        description="The claim matched against `audience`: `aud` (RFC 9068) or `client_id` (Cognito).",
    )
    rules: list[ClaimRule] = Field(default_factory=list, max_length=100)

    @field_validator("scope_prefix")
    @classmethod
    def _printable(cls, value: str) -> str:
        # A scope is a space-free run of visible ASCII (RFC 6749 section 3.3).
        if any(not ("\x21" <= c <= "\x7e") or c in '"\\' for c in value):
            raise ValueError("scope_prefix must be visible ASCII without spaces, quotes or backslashes")
        return value


class OAuthLogin(_Strict):
    """The client foldgate signs people in with at this issuer before they connect their own account
    to a ``per_user`` upstream (OpenID Connect code flow with PKCE; a public client, no secret).

    Register it at the issuer with the redirect URI ``<public URL>/oauth/signin/callback``, the
    ``authorization_code`` grant, the ``openid`` scope and ``token_endpoint_auth_method: none``.
    """

    client_id: str = Field(min_length=1, max_length=256, description="The sign-in client's id at the issuer.")

    @field_validator("client_id")
    @classmethod
    def _visible(cls, value: str) -> str:
        # It goes into a URL and is compared with the id_token's aud: visible ASCII only.
        if any(not ("\x21" <= c <= "\x7e") for c in value):
            raise ValueError("client_id must be visible ASCII without spaces")
        return value


class OAuthConfig(_Strict):
    """The tenant's trusted authorization server and how its tokens map onto foldgate's grant."""

    issuer: str = Field(description="The issuer identifier; its metadata is discovered from it.")
    audience: list[str] | None = Field(
        default=None,
        description="Accepted `aud` values (default: the gateway's public base URL); the URL of the "
        "endpoint the token is presented to is always accepted too. With mapping.audience_claim "
        "client_id: the allowed app client ids (required, and the only values accepted).",
    )
    jwks_uri: str | None = Field(default=None, description="Skip discovery and read keys here.")
    algorithms: list[Algorithm] = Field(default_factory=lambda: list(ALGORITHMS))
    leeway_seconds: int = Field(default=30, ge=0, le=300, description="Clock skew allowed on exp/nbf.")
    mapping: OAuthMapping = Field(default_factory=OAuthMapping)
    login: OAuthLogin | None = Field(
        default=None,
        description="The client people sign in with before connecting their own account to a per_user "
        "upstream (required for those connects: a person must prove they are the link's subject).",
    )

    @field_validator("mapping", mode="before")
    @classmethod
    def _rules_only(cls, value: Any) -> Any:
        # A bare list is the rules alone (the first spelling of this block); keep accepting it.
        return {"rules": value} if isinstance(value, list) else value

    @model_validator(mode="after")
    def _client_ids(self) -> OAuthConfig:
        # client_id names the app, not this resource: without an explicit allow-list any client of the
        # issuer (including one minted for another API) would pass, so the list is required.
        if self.mapping.audience_claim == "client_id" and not self.audience:
            raise ValueError("mapping.audience_claim client_id needs audience: the allowed client ids")
        return self

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str, info: ValidationInfo) -> str:
        return _check_url(value, "issuer", info)

    @field_validator("jwks_uri")
    @classmethod
    def _jwks(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _check_url(value, "jwks_uri", info)

    @field_validator("audience", mode="before")
    @classmethod
    def _audience(cls, value: Any) -> Any:
        # A single audience is the common case; accept it without the list brackets.
        value = [value] if isinstance(value, str) else value
        if isinstance(value, list):
            if not value or len(value) > _MAX_AUDIENCES:
                raise ValueError(f"audience must name 1 to {_MAX_AUDIENCES} values")
            if any(not isinstance(v, str) or not v or len(v) > _MAX_URL for v in value):
                raise ValueError("each audience must be a non-empty string")
        return value

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, value: list[Algorithm]) -> list[Algorithm]:
        if not value:
            raise ValueError("algorithms must name at least one of " + ", ".join(ALGORITHMS))
        return value


def parse_oauth_config(data: Any, *, allow_loopback: bool, source: str = "oauth") -> OAuthConfig:
    """Validate an ``oauth:`` block; ConfigError naming each bad field.

    ``allow_loopback`` admits ``http://`` issuer/JWKS URLs on this machine (local serve and tests).
    """
    try:
        return OAuthConfig.model_validate(data, context={"allow_loopback": allow_loopback})
    except ValidationError as exc:
        parts = [f"{'.'.join(str(p) for p in e['loc']) or 'oauth'}: {e['msg']}" for e in exc.errors()]
        raise ConfigError(f"invalid {source}: " + "; ".join(parts)) from exc
