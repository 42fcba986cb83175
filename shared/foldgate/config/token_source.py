"""Where a token that foldgate hands over as it is comes from: the ``subject_token`` and ``actor_token``
blocks of the token-exchange auth kinds (``id_jag``, ``token_exchange``).

Exactly one of:

* ``inbound: true``: the calling person's own inbound OAuth access token, which foldgate's inbound
  OAuth has verified for this request (subject tokens only);
* ``secret``: a secret parameter holding the token (the value is never in the config);
* ``file``: a file re-read on every exchange (a token a sidecar keeps fresh); local configs only;
* ``command``: a program run without a shell whose standard output is the token; local configs only.

A tenant config from the cloud source is hostile input to the gateway host: it may name secrets of its
own tenant, never a path or a program on the machine (``file`` and ``command`` are refused there).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, ValidationInfo, model_validator

from foldgate.config.auth_fields import SECRET_NAME, StrictModel

__all__ = ["TOKEN_TYPE_URNS", "TokenSource", "TokenType"]

TokenType = Literal["access_token", "id_token", "jwt", "refresh_token", "saml1", "saml2"]

# RFC 8693 section 3: the token type identifiers.
TOKEN_TYPE_URNS: Final[dict[str, str]] = {
    "access_token": "urn:ietf:params:oauth:token-type:access_token",
    "id_token": "urn:ietf:params:oauth:token-type:id_token",
    "jwt": "urn:ietf:params:oauth:token-type:jwt",
    "refresh_token": "urn:ietf:params:oauth:token-type:refresh_token",
    "saml1": "urn:ietf:params:oauth:token-type:saml1",
    "saml2": "urn:ietf:params:oauth:token-type:saml2",
}


class TokenSource(StrictModel):
    """One token handed over as it is: the inbound identity, a secret, a file or a command."""

    inbound: bool = Field(
        default=False,
        description="The calling person's inbound OAuth access token (verified by foldgate's inbound "
        "OAuth for this request): each person is exchanged as themselves.",
    )
    secret: str | None = Field(
        default=None, pattern=SECRET_NAME, description="Secret parameter holding the token."
    )
    file: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="A file holding the token, read at each exchange (local configs only).",
    )
    command: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=32,
        description="A program and its arguments (no shell) printing the token (local configs only).",
    )
    type: TokenType | None = Field(
        default=None,
        description="The token's RFC 8693 type (default: access_token for the inbound token, which "
        "foldgate's inbound OAuth verified as one; id_token for an id_jag subject from a source; "
        "access_token otherwise).",
    )

    @model_validator(mode="after")
    def _exactly_one(self, info: ValidationInfo) -> TokenSource:
        given = [self.inbound, self.secret is not None, self.file is not None, self.command is not None]
        if sum(given) != 1:
            raise ValueError("a token source needs exactly one of inbound, secret, file and command")
        local = bool((info.context or {}).get("allow_loopback", False))
        if (self.file is not None or self.command is not None) and not local:
            raise ValueError("file and command token sources are only allowed in local configs")
        if self.command is not None and any(not part or len(part) > 4096 for part in self.command):
            raise ValueError("command parts must be non-empty and at most 4096 characters")
        return self

    def type_urn(self, default: TokenType) -> str:
        """The ``*_token_type`` value to send for this token."""
        return TOKEN_TYPE_URNS[self.type or default]
