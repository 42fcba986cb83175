"""RFC 9207 at the callback (``check_iss``): the ``iss`` response parameter against the issuer the
consent began with, as a plain string.

Pins: the issuer exactly as the metadata published it is accepted; a trailing-slash, case or port
variant is refused; another issuer is refused whether or not the server advertised the parameter; a
missing one is refused only where it was advertised.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.shared.auth import OAuthMetadata

from foldgate.errors import UpstreamError
from foldgate.upstream.oauth.consent import check_iss
from foldgate.upstream.oauth.discovery import Discovered

ISSUER = "https://as.example.com"


def found(advertised: bool | None, issuer: str = ISSUER) -> Discovered:
    doc: dict[str, Any] = {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
    }
    if advertised is not None:
        doc["authorization_response_iss_parameter_supported"] = advertised
    return Discovered("https://mcp.example.com/mcp", issuer, OAuthMetadata.model_validate(doc), None)


@pytest.mark.parametrize("advertised", [True, False, None])
def test_the_published_issuer_is_accepted(advertised: bool | None) -> None:
    check_iss(ISSUER, found(advertised))


@pytest.mark.parametrize(
    "variant",
    [ISSUER + "/", "HTTPS://as.example.com", "https://AS.example.com", "https://as.example.com:443"],
    ids=["trailing-slash", "scheme-case", "host-case", "default-port"],
)
def test_a_normalised_variant_is_refused(variant: str) -> None:
    with pytest.raises(UpstreamError, match="does not name the authorization server"):
        check_iss(variant, found(True))


@pytest.mark.parametrize("advertised", [True, False, None])
def test_another_issuer_is_refused_whether_or_not_advertised(advertised: bool | None) -> None:
    with pytest.raises(UpstreamError, match="possible mix-up"):
        check_iss("https://evil.example.com", found(advertised))


def test_a_missing_iss_is_refused_only_where_advertised() -> None:
    with pytest.raises(UpstreamError, match="carried none"):
        check_iss(None, found(True))
    check_iss(None, found(False))
    check_iss(None, found(None))
