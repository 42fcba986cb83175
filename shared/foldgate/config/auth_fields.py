"""What every upstream ``auth:`` kind shares: the strict model base, secret parameter names, scope
lists (checked once, here) and the DPoP option. One definition, so the kinds cannot drift apart."""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = ["SECRET_NAME", "DPoPOption", "Scopes", "StrictModel"]

# SSM parameter names (and the local secret names that mirror them).
SECRET_NAME: Final = r"^[A-Za-z0-9_.\-/]{1,1011}$"
# A scope token is visible ASCII without spaces, quotes or backslashes (RFC 6749 section 3.3).
_SCOPE: Final = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,200}$")


class StrictModel(BaseModel):
    """Unknown keys refused, instances immutable: every block of a tenant's ``auth:``."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_scopes(value: list[str]) -> list[str]:
    for scope in value:
        if not _SCOPE.match(scope):
            raise ValueError(f"scope {scope[:40]!r} must be visible ASCII without spaces or quotes")
    return value


Scopes = Annotated[list[str], AfterValidator(_check_scopes)]
"""A list of OAuth scope tokens, each checked against RFC 6749 section 3.3."""


class DPoPOption(StrictModel):
    """What every OAuth kind shares: sender-constrained tokens (RFC 9449 DPoP) on request."""

    dpop: bool = Field(
        default=False,
        description="Ask for DPoP-bound tokens (RFC 9449): every token request and every request to the "
        "upstream carries a proof signed with the tenant's DPoP key (ES256, made once, stored sealed "
        "with the grants), and a token the authorization server issues as DPoP is sent with the DPoP "
        "scheme. Server nonces are honoured.",
    )
