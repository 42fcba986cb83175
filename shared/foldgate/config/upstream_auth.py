"""How foldgate authenticates to one upstream server: the ``auth:`` block of a server config.

A discriminated union on ``kind``:

* ``static`` (the default): the server's ``headers`` / ``headers_secret``, unchanged;
* ``oauth``: one connection the whole tenant shares, made once by an operator (authorization code +
  PKCE at the upstream's authorization server, found by discovery);
* ``client_credentials``: machine to machine, a client secret or a private key (``private_key_jwt``)
  read from a secret parameter, never written in the config;
* ``per_user``: like ``oauth`` but each end user (the inbound principal's subject) connects their own
  account; listing uses the shared connection when there is one, else the declared ``tools``;
* ``token_exchange``: RFC 8693 on-behalf-of at an authorization server the upstream trusts, the subject
  token the calling person's inbound token (or one from a configured source);
* ``id_jag``: Enterprise-Managed Authorization (SEP-990): the enterprise IdP exchanges the person's
  identity for an ID-JAG, the upstream's authorization server that for an access token (RFC 7523);
* ``workload_jwt``: machine to machine by the JWT-bearer grant (RFC 7523) with a workload assertion
  from AWS STS (the function's own role), a file, a command or a secret (see
  :mod:`foldgate.config.workload_auth`).

Every URL here is hostile input: https only, except ``http`` on loopback where the config source
allows loopback (local files and tests; the cloud source does not).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from foldgate.config.auth_fields import SECRET_NAME as _SECRET_NAME
from foldgate.config.auth_fields import DPoPOption, Scopes
from foldgate.config.auth_fields import StrictModel as _Strict
from foldgate.config.declared_tools import MAX_DECLARED_TOOLS, DeclaredTool, check_declared
from foldgate.config.oauth import _check_url
from foldgate.config.token_source import TokenSource, TokenType
from foldgate.config.workload_assertion import SecretAssertion
from foldgate.config.workload_auth import WorkloadJwtAuth

__all__ = [
    "ClientCredentialsAuth",
    "CodeFlowAuth",
    "DPoPOption",
    "ExchangeClient",
    "IdJagAuth",
    "OAuthAuth",
    "PerUserAuth",
    "StaticAuth",
    "TokenExchangeAuth",
    "UpstreamAuth",
    "WorkloadJwtAuth",
    "auth_secrets",
    "per_person",
    "with_secrets",
]


class StaticAuth(_Strict):
    """Today's behaviour: the server's ``headers`` and ``headers_secret``, nothing else."""

    kind: Literal["static"] = "static"


class CodeFlowAuth(DPoPOption):
    """What the authorization-code kinds share: scopes and how foldgate registers as a client."""

    scopes: Scopes | None = Field(
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
    scopes: Scopes | None = Field(default=None, max_length=50)
    resource: str | None = Field(default=None, description="RFC 8707 resource (default: the server URL).")
    audience: str | None = Field(default=None, max_length=500, description="An `audience` form field.")

    @field_validator("token_url", "issuer", "resource")
    @classmethod
    def _check_urls(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _check_url(value, str(info.field_name), info)

    @model_validator(mode="after")
    def _exactly_one_of_each(self) -> ClientCredentialsAuth:
        if (self.token_url is None) == (self.issuer is None):
            raise ValueError("client_credentials needs exactly one of token_url and issuer")
        if (self.client_secret_secret is None) == (self.private_key_secret is None):
            raise ValueError(
                "client_credentials needs exactly one of client_secret_secret and private_key_secret"
            )
        return self


class ExchangeClient(_Strict):
    """An authorization server foldgate exchanges tokens at, and how it authenticates there: a client
    secret (``client_secret_basic``), a private key (``private_key_jwt``), or neither (``client_id`` in
    the form, a public client)."""

    token_url: str | None = Field(default=None, description="The token endpoint (or give issuer).")
    issuer: str | None = Field(default=None, description="Find the token endpoint by discovery.")
    client_id: str | None = Field(
        default=None, min_length=1, max_length=500, description="foldgate's client id there."
    )
    client_secret_secret: str | None = Field(
        default=None, pattern=_SECRET_NAME, description="Secret parameter holding the client secret."
    )
    private_key_secret: str | None = Field(
        default=None, pattern=_SECRET_NAME, description="Secret parameter holding a PEM private key."
    )

    @field_validator("token_url", "issuer")
    @classmethod
    def _check_urls(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _check_url(value, str(info.field_name), info)

    @model_validator(mode="after")
    def _check_client(self) -> ExchangeClient:
        if (self.token_url is None) == (self.issuer is None):
            raise ValueError("needs exactly one of token_url and issuer")
        if self.client_secret_secret and self.private_key_secret:
            raise ValueError("give at most one of client_secret_secret and private_key_secret")
        if (self.client_secret_secret or self.private_key_secret) and not self.client_id:
            raise ValueError("a client secret or private key needs a client_id")
        return self


def _inbound_tools(
    subject: TokenSource, listing: TokenSource | None, tools: list[DeclaredTool] | None
) -> list[DeclaredTool] | None:
    if listing is not None and listing.inbound:
        raise ValueError("listing_subject_token cannot be inbound: the indexer has no inbound identity")
    if tools is not None and not subject.inbound:
        raise ValueError("tools are declared only for an inbound subject_token (else the indexer lists)")
    return check_declared(tools)


class TokenExchangeAuth(ExchangeClient, DPoPOption):
    """RFC 8693 on-behalf-of: the calling person's token (or one from a source) exchanged at an
    authorization server the upstream trusts for an access token to the upstream."""

    kind: Literal["token_exchange"] = "token_exchange"
    subject_token: TokenSource = Field(
        default_factory=lambda: TokenSource(inbound=True),
        description="The subject token (default: the calling person's inbound token).",
    )
    actor_token: TokenSource | None = Field(
        default=None, description="An actor token (RFC 8693 delegation): foldgate acting for the person."
    )
    audience: str | None = Field(default=None, max_length=500, description="An `audience` form field.")
    resource: str | None = Field(
        default=None,
        description="RFC 8707 resource (default: the resource the upstream's protected resource "
        "metadata names, else the server URL).",
    )
    scopes: Scopes | None = Field(default=None, max_length=50, description="Scopes to ask for.")
    requested_token_type: TokenType = Field(default="access_token", description="The token type to ask for.")
    listing_subject_token: TokenSource | None = Field(
        default=None,
        description="With an inbound subject: a subject token the indexer lists tools with.",
    )
    tools: list[DeclaredTool] | None = Field(
        default=None,
        max_length=MAX_DECLARED_TOOLS,
        description="With an inbound subject and no listing_subject_token: the tools to publish.",
    )

    @field_validator("resource")
    @classmethod
    def _check_resource(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _check_url(value, "resource", info)

    @model_validator(mode="after")
    def _check_tokens(self) -> TokenExchangeAuth:
        if self.actor_token is not None and self.actor_token.inbound:
            raise ValueError("actor_token cannot be inbound: the actor is foldgate, not the caller")
        _inbound_tools(self.subject_token, self.listing_subject_token, self.tools)
        return self


class IdJagAuth(DPoPOption):
    """Enterprise-Managed Authorization (SEP-990): the enterprise IdP exchanges the person's identity
    for an ID-JAG (RFC 8693), which the upstream's authorization server, found by discovery, exchanges
    for an access token (RFC 7523 JWT bearer, ``client_secret_basic``). No dynamic registration."""

    kind: Literal["id_jag"] = "id_jag"
    idp: ExchangeClient = Field(description="The enterprise IdP: its token endpoint and foldgate's client.")
    subject_token: TokenSource = Field(
        default_factory=lambda: TokenSource(inbound=True),
        description="The identity the IdP exchanges (default: the calling person's inbound token; "
        "type id_token unless given).",
    )
    client_id: str = Field(
        min_length=1,
        max_length=500,
        description="foldgate's client at the upstream's authorization server (the ID-JAG's client_id).",
    )
    client_secret_secret: str = Field(
        pattern=_SECRET_NAME, description="Secret parameter holding that client's secret."
    )
    issuer: str | None = Field(
        default=None,
        description="Pin the upstream's authorization server: the ID-JAG and secret go only there.",
    )
    audience: str | None = Field(
        default=None, max_length=500, description="The ID-JAG audience (default: the upstream AS issuer)."
    )
    resource: str | None = Field(
        default=None, description="The ID-JAG resource (default: exactly the upstream's PRM resource)."
    )
    scopes: Scopes | None = Field(default=None, max_length=50, description="Scopes to ask for.")
    listing_subject_token: TokenSource | None = Field(
        default=None,
        description="With an inbound subject: a subject token the indexer lists tools with.",
    )
    tools: list[DeclaredTool] | None = Field(
        default=None,
        max_length=MAX_DECLARED_TOOLS,
        description="With an inbound subject and no listing_subject_token: the tools to publish.",
    )

    @field_validator("issuer", "resource")
    @classmethod
    def _check_urls(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _check_url(value, str(info.field_name), info)

    @model_validator(mode="after")
    def _check_tokens(self) -> IdJagAuth:
        _inbound_tools(self.subject_token, self.listing_subject_token, self.tools)
        return self


def per_person(auth: object) -> bool:
    """Whether ``auth`` gives each calling person their own credential (their subject's), not one
    per tenant: ``per_user``, and the exchange kinds whose subject token is the inbound identity."""
    if isinstance(auth, PerUserAuth):
        return True
    return isinstance(auth, TokenExchangeAuth | IdJagAuth) and auth.subject_token.inbound


_CLIENT_SECRETS = ("client_secret_secret", "private_key_secret")
_TOKEN_SOURCES = ("subject_token", "actor_token", "listing_subject_token")
_Auth = TypeVar("_Auth", bound=BaseModel)


def auth_secrets(auth: BaseModel) -> dict[str, str]:
    """Every secret name an ``auth:`` block refers to, by its path below ``auth``
    (``client_secret_secret``, ``idp.private_key_secret``, ``subject_token.secret``,
    ``assertion.name``, ...)."""
    found: dict[str, str] = {}
    blocks: list[tuple[str, Any]] = [("", auth), ("idp.", getattr(auth, "idp", None))]
    for prefix, block in blocks:
        for name in _CLIENT_SECRETS:
            value = getattr(block, name, None)
            if isinstance(value, str) and value:
                found[prefix + name] = value
    for name in _TOKEN_SOURCES:
        source = getattr(auth, name, None)
        if isinstance(source, TokenSource) and source.secret:
            found[f"{name}.secret"] = source.secret
    # workload_jwt: an assertion kept in a secret parameter.
    assertion = getattr(auth, "assertion", None)
    if isinstance(assertion, SecretAssertion):
        found["assertion.name"] = assertion.name
    return found


def with_secrets(auth: _Auth, resolve: Callable[[str, str], str]) -> _Auth:
    """``auth`` with every secret name ``resolve(path, name)`` gives (see :func:`auth_secrets`)."""
    names = auth_secrets(auth)
    if not names:
        return auth
    update: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for path, name in names.items():
        head, _, field = path.partition(".")
        if field:
            nested.setdefault(head, {})[field] = resolve(path, name)
        else:
            update[head] = resolve(path, name)
    for head, fields in nested.items():
        update[head] = getattr(auth, head).model_copy(update=fields)
    return auth.model_copy(update=update)


UpstreamAuth = Annotated[
    StaticAuth
    | OAuthAuth
    | PerUserAuth
    | ClientCredentialsAuth
    | TokenExchangeAuth
    | IdJagAuth
    | WorkloadJwtAuth,
    Field(discriminator="kind"),
]
