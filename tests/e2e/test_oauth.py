"""End to end: `foldgate serve --oauth-issuer` trusting a real authorization server (oidc-provider on
loopback), reached by the official MCP SDK client's OAuth support and by hand-made (and forged) tokens.

Pins: an OAuth-only agent discovers everything from the 401 and gets in (client credentials, and
authorization code + PKCE with the consent driven over HTTP); every bad token is refused with the same
answer; the token's scopes decide the tier and servers on every surface.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)

from tests.helpers import error_of
from tests.oauth_provider import Provider, consent, oidc_provider
from tests.procs import foldgate_serve, replay

pytestmark = pytest.mark.e2e

H = {"accept": "application/json", "content-type": "application/json", "mcp-protocol-version": "2025-11-25"}
READ_TOOLS = {"crm__find_contact", "tickets__list_tickets"}
UNIFORM_401 = "invalid, expired or revoked token"


@dataclass
class Setup:
    base: str
    provider: Provider


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("oauth")
    with ExitStack() as stack:
        provider = stack.enter_context(oidc_provider(tmp))
        upstream = stack.enter_context(replay())
        config = {
            "direct_tool_response_mode": "full",
            "servers": [{"name": n, "url": upstream.urls[n]} for n in ("crm", "tickets")],
        }
        base = stack.enter_context(foldgate_serve(config, tmp, "--oauth-issuer", provider.issuer))
        yield Setup(base, provider)


class MemoryStorage:
    """Token storage for the SDK client (a fresh one per test: nothing carried over)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def list_tools(base: str, path: str, token: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return httpx2.post(base + path, json=body, headers={**H, "authorization": f"Bearer {token}"}, timeout=30)


def names(response: httpx2.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {t["name"] for t in response.json()["result"]["tools"]}


def test_anonymous_request_gets_a_challenge_pointing_at_the_endpoint_metadata(setup: Setup) -> None:
    r = httpx2.post(
        setup.base + "/mcp/call", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=H
    )
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    url = re.search(r'resource_metadata="([^"]+)"', challenge)
    assert url is not None
    assert url.group(1) == setup.base + "/.well-known/oauth-protected-resource/mcp/call"
    assert 'scope="foldgate:read"' in challenge
    doc = httpx2.get(url.group(1)).json()
    prm = ProtectedResourceMetadata.model_validate(doc)  # the SDK's own RFC 9728 model accepts it
    assert str(prm.resource) == setup.base + "/mcp/call"
    assert [str(s).rstrip("/") for s in prm.authorization_servers] == [setup.provider.issuer]
    assert prm.bearer_methods_supported == ["header"]
    root = httpx2.get(setup.base + "/.well-known/oauth-protected-resource").json()
    assert root["resource"] == setup.base
    assert httpx2.get(setup.base + "/.well-known/oauth-protected-resource/elsewhere").status_code == 404


async def test_sdk_client_credentials_discovers_obtains_a_token_and_calls_tools(setup: Setup) -> None:
    url = setup.base + "/mcp/all"
    auth = ClientCredentialsOAuthProvider(
        url, MemoryStorage(), "machine-agent", setup.provider.machine_secret, issuer=setup.provider.issuer
    )
    transport = streamable_http_client(url, http_client=create_mcp_http_client(auth=auth))
    async with Client(transport) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        # The 401 asked for the least scope (foldgate:read): read tools only, on every server.
        assert tools >= READ_TOOLS
        assert not {"crm__create_contact", "crm__delete_contact", "tickets__update_ticket"} & tools
        result = await client.call_tool("crm__find_contact", {"query": "ada"})
        assert not result.is_error
    token = auth.context.current_tokens
    assert token is not None
    claims = json.loads(base64.urlsafe_b64decode(token.access_token.split(".")[1] + "=="))
    assert claims["aud"] == url  # RFC 8707: minted for exactly this endpoint


async def _consent(authorize_url: str, redirect_uri: str) -> AuthorizationCodeResult:
    """Play the user: sign in and consent at the provider's interaction pages; the code and state."""
    answer = await consent(authorize_url, redirect_uri)
    return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))


async def test_sdk_authorization_code_with_pkce_reaches_the_tools(setup: Setup) -> None:
    url = setup.base + "/mcp/all"
    redirect_uri = "http://127.0.0.1:1/callback"  # never dialed: the browser stops at the redirect
    result: dict[str, AuthorizationCodeResult] = {}

    async def redirect_handler(authorize_url: str) -> None:
        assert "code_challenge=" in authorize_url
        assert "code_challenge_method=S256" in authorize_url
        result["code"] = await _consent(authorize_url, redirect_uri)

    async def callback_handler() -> AuthorizationCodeResult:
        return result["code"]

    metadata = OAuthClientMetadata(
        client_name="foldgate-test-user-agent",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    auth = OAuthClientProvider(url, metadata, MemoryStorage(), redirect_handler, callback_handler)
    transport = streamable_http_client(url, http_client=create_mcp_http_client(auth=auth))
    async with Client(transport) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools >= READ_TOOLS
        assert not (await client.call_tool("tickets__list_tickets", {})).is_error


def _tampered(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["scope"] = "foldgate:destructive"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def _bad_tokens(setup: Setup) -> dict[str, str]:
    p, aud = setup.provider, setup.base + "/mcp/all"
    good = p.machine_token(aud, "foldgate:read")
    stranger = ec.generate_private_key(ec.SECP256R1())
    return {
        "wrong audience": p.machine_token("https://other.example/mcp", "foldgate:read"),
        "expired": p.sign(p.claims(aud, iat=1_700_000_000, exp=1_700_000_300)),
        "wrong issuer": p.sign(p.claims(aud, iss="http://127.0.0.1:1")),
        "unknown kid": p.sign(p.claims(aud), kid="rotated-" + secrets.token_hex(4), key=stranger),
        "alg none": p.alg_none(p.claims(aud)),
        "hs256 with the public key": p.hs256_with_public_key(p.claims(aud)),
        "tampered signature": _tampered(good),
        "not yet valid": p.sign(p.claims(aud, nbf=2_000_000_000)),
        "garbage": "not-a-jwt",
    }


def test_every_bad_token_gets_the_same_401_and_no_detail(setup: Setup) -> None:
    answers = {}
    for case, token in _bad_tokens(setup).items():
        r = list_tools(setup.base, "/mcp/all", token)
        assert r.status_code == 401, case
        assert 'error="invalid_token"' in r.headers["www-authenticate"], case
        answers[case] = (r.json(), r.headers["www-authenticate"])
    assert len({json.dumps(a, sort_keys=True) for a in answers.values()}) == 1, answers
    body = next(iter(answers.values()))[0]
    assert body["error"]["message"] == UNIFORM_401


def test_a_token_without_any_tier_scope_gets_403_naming_the_scope(setup: Setup) -> None:
    token = setup.provider.machine_token(setup.base + "/mcp/all", "foldgate:server:crm")
    r = list_tools(setup.base, "/mcp/all", token)
    assert r.status_code == 403
    challenge = r.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="foldgate:read"' in challenge
    assert "resource_metadata=" in challenge


def test_a_token_for_one_endpoint_is_refused_at_another(setup: Setup) -> None:
    token = setup.provider.machine_token(setup.base + "/mcp/all", "foldgate:read")
    assert list_tools(setup.base, "/mcp/all", token).status_code == 200
    assert list_tools(setup.base, "/mcp/call", token).status_code == 401
    # Minted for the gateway itself (the default audience): good on every endpoint.
    everywhere = setup.provider.machine_token(setup.base, "foldgate:read")
    for path in ("/mcp", "/mcp/all", "/mcp/call"):
        assert list_tools(setup.base, path, everywhere).status_code == 200, path


def test_scopes_decide_tier_and_servers(setup: Setup) -> None:
    p, base = setup.provider, setup.base
    read = names(list_tools(base, "/mcp/all", p.machine_token(base, "foldgate:read")))
    assert read >= READ_TOOLS
    assert "crm__create_contact" not in read
    write_tickets = names(
        list_tools(base, "/mcp/all", p.machine_token(base, "foldgate:write foldgate:server:tickets"))
    )
    assert "tickets__list_tickets" in write_tickets
    # readOnlyHint false without destructiveHint: destructive by the MCP spec's default, not write.
    assert "tickets__update_ticket" not in write_tickets
    assert not any(n.startswith("crm__") for n in write_tickets)
    # Several tier scopes: the highest wins.
    everything = names(
        list_tools(base, "/mcp/all", p.machine_token(base, "foldgate:read foldgate:destructive"))
    )
    assert {"crm__delete_contact", "crm__create_contact"} <= everything


def _call(base: str, path: str, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    r = httpx2.post(base + path, json=body, headers={**H, "authorization": f"Bearer {token}"}, timeout=30)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    return result


def test_a_read_token_cannot_call_destructive_tools_on_the_call_surface(setup: Setup) -> None:
    p, base = setup.provider, setup.base
    args = {"name": "crm__delete_contact", "arguments": {"id": 1}}
    read = p.machine_token(base, "foldgate:read")
    refused = _call(base, "/mcp/call", read, "call_tool_destructive", args)["result"]
    # Out of scope answers exactly like a tool that does not exist.
    assert refused["isError"]
    assert error_of(refused)["error_type"] == "not_found"
    destructive = p.machine_token(base, "foldgate:destructive foldgate:server:crm")
    allowed = _call(base, "/mcp/call", destructive, "call_tool_destructive", args)["result"]
    assert not allowed["isError"]
    assert allowed["structuredContent"] == {"server": "crm", "tool": "delete_contact", "arguments": {"id": 1}}
    # A server scope limits calls too: the same destructive tier, scoped to tickets only.
    tickets = p.machine_token(base, "foldgate:destructive foldgate:server:tickets")
    elsewhere = _call(base, "/mcp/call", tickets, "call_tool_destructive", args)["result"]
    assert elsewhere["isError"]
    assert error_of(elsewhere)["error_type"] == "not_found"
