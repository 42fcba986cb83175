"""The ``workload_jwt`` kind of a server's ``auth:`` block: workload identity by the JWT-bearer grant
(RFC 7523, SEP-1933). Its assertion sources are :mod:`foldgate.config.workload_assertion`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from foldgate.config.auth_fields import SECRET_NAME, DPoPOption, Scopes
from foldgate.config.oauth import _check_url
from foldgate.config.workload_assertion import WorkloadAssertion

__all__ = ["WorkloadJwtAuth"]


class WorkloadJwtAuth(DPoPOption):
    """Workload identity (RFC 7523 JWT bearer, SEP-1933): foldgate presents a JWT that names the
    workload (the function's IAM role through STS, or a token a platform mounts) and the upstream's
    authorization server trusts its issuer; no secret is stored when the source is ``aws_sts``."""

    kind: Literal["workload_jwt"] = "workload_jwt"
    assertion: WorkloadAssertion = Field(
        description="Where the workload JWT comes from: aws_sts, file, command or secret (by `source`)."
    )
    token_url: str | None = Field(
        default=None,
        description="The token endpoint. Without it and issuer, the authorization server the upstream's "
        "protected resource metadata names.",
    )
    issuer: str | None = Field(
        default=None, description="Find the token endpoint by discovery at this authorization server."
    )
    client_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="Sent when the authorization server wants one (with client auth `none`, only then).",
    )
    client_secret_secret: str | None = Field(
        default=None,
        pattern=SECRET_NAME,
        description="Secret parameter with a client secret, for an authorization server that "
        "authenticates the client besides the assertion (needs client_id).",
    )
    scopes: Scopes | None = Field(
        default=None,
        max_length=50,
        description="Scopes to ask for (default: what the upstream's challenge or metadata names).",
    )
    resource: str | None = Field(
        default=None,
        description="RFC 8707 resource (default: the resource in the upstream's protected resource "
        "metadata, else the server URL).",
    )
    audience: str | None = Field(
        default=None, max_length=500, description="An `audience` form field for the token request."
    )

    @field_validator("token_url", "issuer", "resource")
    @classmethod
    def _check_urls(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _check_url(value, str(info.field_name), info)

    @model_validator(mode="after")
    def _check_endpoint(self) -> WorkloadJwtAuth:
        if self.token_url is not None and self.issuer is not None:
            raise ValueError("workload_jwt takes token_url or issuer, not both")
        if self.client_secret_secret and not self.client_id:
            raise ValueError("client_secret_secret needs a client_id")
        return self
