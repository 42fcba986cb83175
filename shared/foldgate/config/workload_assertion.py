"""Where a ``workload_jwt`` server's assertion comes from: the ``assertion:`` block, by ``source``.

* ``aws_sts``: STS ``GetWebIdentityToken`` for the function's own IAM role (IAM outbound identity
  federation): a JWT signed by the account's STS issuer, no secret anywhere. Always a regional STS
  endpoint (the action is not on the global one).
* ``file``: a file a platform keeps fresh (a Kubernetes projected service-account token, a SPIFFE
  JWT-SVID written by an agent); re-read when it changes.
* ``command``: a program that prints the JWT (a CLI of the platform's identity agent).
* ``secret``: a secret parameter holding a JWT (rotated by someone else).

``file`` and ``command`` read the gateway's own disk and run its programs, so they are refused in a
config from the cloud source (a tenant config is hostile input there); they are for a local gateway
configured by its own operator.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, ValidationInfo, model_validator

from foldgate.config.auth_fields import SECRET_NAME, StrictModel

__all__ = [
    "AwsStsAssertion",
    "CommandAssertion",
    "FileAssertion",
    "SecretAssertion",
    "WorkloadAssertion",
]

_REGION = r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$"


def _local_only(model: BaseModel, info: ValidationInfo, what: str) -> None:
    # The cloud source validates with allow_loopback False: the same line as "a config the gateway's
    # own operator wrote on this machine" (foldgate.config.cloud refuses these sources again).
    if (info.context or {}).get("allow_loopback", True) is False:
        raise ValueError(f"assertion source {what!r} is only allowed in a local config (a file's)")


class AwsStsAssertion(StrictModel):
    """STS ``GetWebIdentityToken`` for the role foldgate runs as."""

    source: Literal["aws_sts"] = "aws_sts"
    audience: str = Field(
        min_length=1,
        max_length=1000,
        description="The JWT's `aud`: what the upstream's authorization server expects (often its "
        "issuer or token endpoint). The stack's WorkloadTokenAudience parameter must allow it.",
    )
    signing_algorithm: Literal["RS256", "ES384"] = Field(
        default="RS256", description="How STS signs the JWT: RS256 or ES384."
    )
    duration_seconds: int = Field(
        default=300,
        ge=60,
        le=3600,
        description="The JWT's lifetime (60-3600 s); the stack's WorkloadTokenMaxSeconds caps it.",
    )
    region: str | None = Field(
        default=None,
        pattern=_REGION,
        description="The regional STS endpoint to ask (default: the function's own region).",
    )


class FileAssertion(StrictModel):
    """A JWT in a file, re-read when its modification time or size changes (local configs only)."""

    source: Literal["file"] = "file"
    path: str = Field(min_length=1, max_length=4096, description="The file holding the JWT.")

    @model_validator(mode="after")
    def _check_local(self, info: ValidationInfo) -> FileAssertion:
        _local_only(self, info, "file")
        return self


class CommandAssertion(StrictModel):
    """A program that prints the JWT on standard output (local configs only); run without a shell."""

    source: Literal["command"] = "command"
    argv: list[str] = Field(
        min_length=1, max_length=50, description="The program and its arguments (no shell)."
    )
    timeout_s: float = Field(default=10.0, gt=0, le=60, description="Killed after this many seconds.")
    max_bytes: int = Field(
        default=16384, ge=256, le=65536, description="Output beyond this many bytes is refused."
    )

    @model_validator(mode="after")
    def _check_local(self, info: ValidationInfo) -> CommandAssertion:
        if any(not arg or "\x00" in arg or len(arg) > 4096 for arg in self.argv):
            raise ValueError("command arguments must be non-empty, without NUL, at most 4096 characters")
        _local_only(self, info, "command")
        return self


class SecretAssertion(StrictModel):
    """A JWT kept in a secret parameter (someone else rotates it)."""

    source: Literal["secret"] = "secret"
    name: str = Field(pattern=SECRET_NAME, description="The secret parameter holding the JWT.")


WorkloadAssertion = Annotated[
    AwsStsAssertion | FileAssertion | CommandAssertion | SecretAssertion, Field(discriminator="source")
]
