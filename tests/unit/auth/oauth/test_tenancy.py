"""Which tenant an OAuth token is for: the resource's default tenant, or with ``tenant_claim`` the tenant
the signed claim names, checked by THAT tenant's issuer and audience. A token from tenant A's issuer
naming tenant B is refused, and the ``x-foldgate-tenant`` header never moves an OAuth caller."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import Request

from foldgate.auth.oauth.verifier import OAuthVerifier
from foldgate.config.oauth import OAuthConfig
from foldgate.edge.access import TENANT_HEADER, Access
from foldgate.errors import AuthError
from tests.unit.auth.oauth.issuer import RESOURCE, FakeIssuer

A = FakeIssuer(issuer="https://login.example.com/tenant-a")
B = FakeIssuer(issuer="https://login.example.com/tenant-b")
ENDPOINT = RESOURCE + "/mcp/all"


async def _fetch(url: str) -> dict[str, Any] | None:
    return await (A if url.startswith(A.issuer + "/") else B).fetch(url)


def _verifier(tenant_claim: str | None) -> OAuthVerifier:
    configs = {"acme": OAuthConfig(issuer=A.issuer), "beta": OAuthConfig(issuer=B.issuer)}
    return OAuthVerifier(configs.get, base_url=RESOURCE, allow_private=False, fetch=_fetch,
                         default_tenant="acme", tenant_claim=tenant_claim)  # fmt: skip


async def test_the_claim_picks_the_tenant_whose_own_issuer_must_have_signed() -> None:
    verifier = _verifier("foldgate_tenant")
    assert (await verifier.authenticate(B.sign(foldgate_tenant="beta"), "/mcp/all")).tenant == "beta"
    assert (await verifier.authenticate(A.sign(foldgate_tenant="acme"), "/mcp/all")).tenant == "acme"
    # No claim: the resource's tenant, checked by its issuer.
    assert (await verifier.authenticate(A.sign(), "/mcp/all")).tenant == "acme"


async def test_a_token_from_tenant_a_issuer_naming_tenant_b_is_refused() -> None:
    verifier = _verifier("foldgate_tenant")
    with pytest.raises(AuthError):
        await verifier.authenticate(A.sign(foldgate_tenant="beta"), "/mcp/all")
    with pytest.raises(AuthError):  # and B's issuer cannot enter A by leaving the claim out
        await verifier.authenticate(B.sign(), "/mcp/all")
    with pytest.raises(AuthError):  # a tenant without OAuth (or unknown) accepts no token at all
        await verifier.authenticate(A.sign(foldgate_tenant="nobody"), "/mcp/all")


async def test_a_non_string_tenant_claim_is_refused_not_defaulted() -> None:
    verifier = _verifier("foldgate_tenant")
    with pytest.raises(AuthError):
        await verifier.authenticate(A.sign(foldgate_tenant=["acme"]), "/mcp/all")


async def test_without_tenant_claim_the_claim_is_ignored() -> None:
    verifier = _verifier(None)
    assert (await verifier.authenticate(A.sign(foldgate_tenant="beta"), "/mcp/all")).tenant == "acme"
    with pytest.raises(AuthError):
        await verifier.authenticate(B.sign(foldgate_tenant="beta"), "/mcp/all")


def _request(token: str, tenant_header: str) -> Request:
    headers = [
        (b"authorization", f"Bearer {token}".encode()),
        (TENANT_HEADER.encode(), tenant_header.encode()),
    ]
    return Request({"type": "http", "method": "POST", "path": "/mcp/all", "headers": headers,
                    "client": ("203.0.113.9", 1234)})  # fmt: skip


@pytest.mark.parametrize("tenant_claim", [None, "foldgate_tenant"])
async def test_the_tenant_header_never_changes_an_oauth_callers_tenant(tenant_claim: str | None) -> None:
    access = Access(default_tenant="acme", allow_tenant_header=True, oauth=_verifier(tenant_claim))
    principal = await access.resolve(_request(A.sign(), "beta"), "/mcp/all")
    assert principal.tenant == "acme"
    with pytest.raises(AuthError):  # beta's own token, sent with a header naming beta, is still not beta
        await access.resolve(_request(B.sign(), "beta"), "/mcp/all")
