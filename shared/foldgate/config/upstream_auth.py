"""How foldgate authenticates to one upstream server: the ``auth:`` block of a server config.

A discriminated union on ``kind``:

* ``static`` (the default): the server's ``headers`` / ``headers_secret``, unchanged;
* ``oauth``: one connection the whole tenant shares, made once by an operator (authorization code +
  PKCE at the upstream's authorization server, found by discovery);
* ``client_credentials``: machine to machine, a client secret or a private key (``private_key_jwt``)
  read from a secret parameter, never written in the config;
* ``per_user``: like ``oauth`` but each end user (the inbound principal's subject) connects their own
  account; listing uses the shared connection when there is one, else the declared ``tools``.

Every URL here is hostile input: https only, except ``http`` on loopback where the config source
allows loopback (local files and tests; the cloud source does not).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from foldgate.config.declared_tools import MAX_DECLARED_TOOLS, DeclaredTool, check_declared
from foldgate.config.oauth import _check_url

__all__ = [
    "ClientCredentialsAuth",
    "CodeFlowAuth",
    "DPoPOption",
    "OAuthAuth",
    "PerUserAuth",
    "StaticAuth",
    "UpstreamAuth",
]

# A scope token is visible ASCII without spaces, quotes or backslashes (RFC 6749 section 3.3).
_SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,200}$")
# SSM parameter names (and the local secret names that mirror them).
_SECRET_NAME = r"^[A-Za-z0-9_.\-/]{1,1011}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _scopes(value: list[str]) -> list[str]:
    for scope in value:
        if not _SCOPE.match(scope):
            raise ValueError(f"scope {scope[:40]!r} must be visible ASCII without spaces or quotes")
    return value


class DPoPOption(_Strict):
    """What every OAuth kind shares: sender-constrained tokens (RFC 9449 DPoP) on request."""

    dpop: bool = Field(
        default=False,
        description="Ask for DPoP-bound tokens (RFC 9449): every token request and every request to the "
        "upstream carries a proof signed with the tenant's DPoP key (ES256, made once, stored sealed "
        "with the grants), and a token the authorization server issues as DPoP is sent with the DPoP "
        "scheme. Server nonces are honoured.",
    )


class StaticAuth(_Strict):
    """Today's behaviour: the server's ``headers`` and ``headers_secret``, nothing else."""

    kind: Literal["static"] = "static"


class CodeFlowAuth(DPoPOption):
    """What the authorization-code kinds share: scopes and how foldgate registers as a client."""

    scopes: list[str] | None = Field(
        default=None, max_length=50, description="Scopes to ask for (default: what the upstream names)."
    )
    registration: Literal["auto", "preregistered", "cimd", "dcr"] = Field(
        default="auto",
        description="auto: pre-registered client if configured, else a Client ID Metadata Document "
        "where the authorization server supports it, else Dynamic Client Registration.",
    )
    client_id: str | None = Field(default=None, min_length=1, max_length=500)
    client_secret_secret: str | None = Field(
        default=None, pattern=_SECRET_NAME, description="Secret parameter holding the client secret."
    )
    # The upstream names its authorization server, so without this a pre-registered client's id and
    # secret go wherever the upstream points; with it they are only ever sent to this issuer.
    issuer: str | None = Field(
        default=None,
        description="The authorization server the pre-registered client belongs to: its id and secret "
        "are only ever sent there (recommended with client_secret_secret).",
    )

    @field_validator("scopes")
    @classmethod
    def _check_scopes(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _scopes(value)

    @field_validator("issuer")
    @classmethod
    def _check_issuer(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _check_url(value, "issuer", info)

    @model_validator(mode="after")
    def _check_registration(self) -> CodeFlowAuth:
        if self.registration == "preregistered" and not self.client_id:
            raise ValueError("registration 'preregistered' needs a client_id")
        if self.client_secret_secret and not self.client_id:
            raise ValueError("client_secret_secret needs a client_id")
        if self.issuer and not self.client_id:
            raise ValueError("issuer pins a pre-registered client: it needs a client_id")
        return self


class OAuthAuth(CodeFlowAuth):
    """A shared OAuth connection: an operator connects once, every agent of the tenant uses it."""

    kind: Literal["oauth"] = "oauth"


class PerUserAuth(CodeFlowAuth):
    """Each end user connects their own upstream account (the grant of the inbound principal's
    subject); the indexer lists tools with the shared connection an operator made, or, while there is
    none, publishes the declared ``tools`` (see :mod:`foldgate.config.declared_tools`)."""

    kind: Literal["per_user"] = "per_user"
    tools: list[DeclaredTool] | None = Field(
        default=None,
        max_length=MAX_DECLARED_TOOLS,
        description="Tools to publish while no shared connection can list the real ones.",
    )

    @field_validator("tools")
    @classmethod
    def _check_tools(cls, value: list[DeclaredTool] | None) -> list[DeclaredTool] | None:
        return check_declared(value)


class ClientCredentialsAuth(DPoPOption):
    """Machine to machine (RFC 6749 section 4.4): no person involved, credentials from a secret."""

    kind: Literal["client_credentials"] = "client_credentials"
    token_url: str | None = Field(default=None, description="The token endpoint (or give issuer).")
    issuer: str | None = Field(default=None, description="Find the token endpoint by discovery.")
    client_id: str = Field(min_length=1, max_length=500)
    client_secret_secret: str | None = Field(default=None, pattern=_SECRET_NAME)
    private_key_secret: str | None = Field(
        default=None, pattern=_SECRET_NAME, description="Secret parameter holding a PEM private key."
    )
    scopes: list[str] | None = Field(default=None, max_length=50)
    resource: str | None = Field(default=None, description="RFC 8707 resource (default: the server URL).")
    audience: str | None = Field(default=None, max_length=500, description="An `audience` form field.")

    @field_validator("token_url", "issuer", "resource")
    @classmethod
    def _check_urls(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _check_url(value, str(info.field_name), info)

    @field_validator("scopes")
    @classmethod
    def _check_scopes(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _scopes(value)

    @model_validator(mode="after")
    def _exactly_one_of_each(self) -> ClientCredentialsAuth:
        if (self.token_url is None) == (self.issuer is None):
            raise ValueError("client_credentials needs exactly one of token_url and issuer")
        if (self.client_secret_secret is None) == (self.private_key_secret is None):
            raise ValueError(
                "client_credentials needs exactly one of client_secret_secret and private_key_secret"
            )
        return self


UpstreamAuth = Annotated[
    StaticAuth | OAuthAuth | PerUserAuth | ClientCredentialsAuth, Field(discriminator="kind")
]
