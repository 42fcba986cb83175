"""foldgate's upstream OAuth client as a conformance-suite client: ``python foldgate_oauth_client.py URL``.

The suite (``conformance client --command ... --scenario auth/...``) starts an MCP server with its own
authorization server and runs this command with the server's URL last. This connects the way a
foldgate operator's connect does: discovery, registration, the code flow with PKCE (the suite's
authorization endpoint approves at once and redirects with the code, which is read from the redirect
instead of a browser following it), the code exchange, then ``tools/list`` and one ``tools/call``
through foldgate's upstream client with the grant (connecting again once when the call needs consent:
the upstream moved to another authorization server). Exit status 0 when all of that worked.
``--dpop`` configures the server with ``dpop: true`` (RFC 9449 sender-constrained tokens).

Scenarios that hand the client a context (``MCP_CONFORMANCE_CONTEXT``, JSON) configure a machine kind
instead of the code flow: ``auth/wif-jwt-bearer`` gives a workload JWT (``valid_jwt``) and a
``client_id``, which become a ``workload_jwt`` server whose assertion is that JWT in a file, as a
platform mounts one (no consent: the JWT-bearer grant at the first request).
Scenarios whose context (``MCP_CONFORMANCE_CONTEXT``) hands over an enterprise IdP and a pre-signed ID
token (``auth/enterprise-managed-authorization``) run the ``id_jag`` kind instead: no consent, the ID
token handed over as-is from a secret, the IdP and the upstream's client pre-registered.

Run with ``PYTHONPATH=<worktree>/shared:<worktree>`` (the suite passes its environment on).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from tests.upstream_oauth import REDIRECT, grant_store, oauth_context

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamAuthorizationError, UpstreamConsentError
from foldgate.model.caller import SHARED_SUBJECT, calling_as
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.oauth.consent import finish_consent, start_consent
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.provider import TokenProvider

TENANT = "conformance"


async def consent_once(ctx: OAuthContext, server: ServerConfig) -> None:
    """The operator's connect: authorize (the suite approves at once), then the callback."""
    authorize = await start_consent(ctx, TENANT, server, SHARED_SUBJECT)
    async with httpx2.AsyncClient(timeout=10) as browser:
        answer = await browser.get(authorize, follow_redirects=False)
    location = answer.headers.get("location", "")
    if answer.status_code not in (302, 303) or not location.startswith(REDIRECT):
        raise SystemExit(f"the authorization endpoint did not redirect back (HTTP {answer.status_code})")
    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    await finish_consent(ctx, query["state"], query["code"], query.get("iss"), lambda t, n: server)


async def connect_and_call(url: str, tmp: Path, *, dpop: bool = False) -> None:
    """Connect to the OAuth upstream at ``url`` as foldgate does, then list its tools and call one.

    A request answered "needs consent" (the upstream moved to another authorization server) is what an
    operator sees in the status page: they connect again, once, and the call is made again.
    """
    auth = {"kind": "oauth", "dpop": True} if dpop else {"kind": "oauth"}
    server = parse_tenant_config({"servers": [{"name": "conformance", "url": url, "auth": auth}]}).servers[0]
    with grant_store(tmp) as store:
        ctx = oauth_context(store)
        await consent_once(ctx, server)
        client = UpstreamClient(allow_private=True, auth=TokenProvider(ctx))
        try:
            with calling_as(TENANT):
                try:
                    await list_and_call(client, server)
                except UpstreamConsentError as exc:
                    print("needs consent:", exc.message)
                    await consent_once(ctx, server)
                    await list_and_call(client, server)
        finally:
            await client.aclose()


async def list_and_call(client: UpstreamClient, server: ServerConfig) -> None:
    """``tools/list``, then a call of the first tool."""
    listing = await client.list_tools(server)
    names = [t["name"] for t in listing.tools]
    print("tools:", names)
    result = await client.call_tool(server, names[0], {})
    print("call:", result.get("isError", False))


async def workload_call(url: str, tmp: Path, context: dict[str, Any]) -> None:
    """``auth/wif-jwt-bearer``: a ``workload_jwt`` server with the suite's valid JWT in a file; list
    and call (the grant is made at the first request, and never retried if refused).

    ``FOLDGATE_WIF_REFUSAL`` (the refusal tests) picks what the suite's authorization server refuses:
    ``wrong_audience`` or ``expired`` (its other JWTs), or a scope it refuses (``wif.rejected``,
    ``wif.trigger-unauthorized``). Then every request must end in ``upstream_needs_authorization``
    naming the refusal, the first and the second (which must send no token request at all)."""
    refusal = os.environ.get("FOLDGATE_WIF_REFUSAL", "")
    jwt = tmp / "workload.jwt"
    jwt.write_text(context.get(f"{refusal}_jwt") or context["valid_jwt"], encoding="utf-8")
    auth: dict[str, Any] = {"kind": "workload_jwt", "assertion": {"source": "file", "path": str(jwt)}}
    if context.get("client_id"):
        auth["client_id"] = context["client_id"]
    if refusal.startswith("wif."):
        auth["scopes"] = [refusal]
    server = parse_tenant_config({"servers": [{"name": "conformance", "url": url, "auth": auth}]}).servers[0]
    with grant_store(tmp) as store:
        client = UpstreamClient(allow_private=True, auth=TokenProvider(oauth_context(store)))
        try:
            with calling_as(TENANT):
                if not refusal:
                    await list_and_call(client, server)
                    return
                for attempt in ("first", "second"):
                    try:
                        await client.list_tools(server)
                    except UpstreamAuthorizationError as exc:
                        print(f"{attempt}: {exc.code}: {exc.message}")
                    else:
                        raise SystemExit(f"the {attempt} request was not refused")
        finally:
            await client.aclose()


async def id_jag_call(url: str, tmp: Path, context: dict[str, str]) -> None:
    """SEP-990 through the ``id_jag`` kind: the suite's ID token (a secret here) exchanged at its IdP
    for an ID-JAG, that at the upstream's authorization server for an access token; then list, call."""
    auth = {
        "kind": "id_jag",
        "idp": {"token_url": context["idp_token_endpoint"], "client_id": context["idp_client_id"]},
        "subject_token": {"secret": "idp-id-token"},
        "client_id": context["client_id"],
        "client_secret_secret": "xaa-secret",
    }
    secrets = {"idp-id-token": context["idp_id_token"], "xaa-secret": context["client_secret"]}
    server = parse_tenant_config({"servers": [{"name": "conformance", "url": url, "auth": auth}]}).servers[0]
    with grant_store(tmp) as store:
        client = UpstreamClient(allow_private=True, auth=TokenProvider(oauth_context(store, secrets)))
        try:
            with calling_as(TENANT):
                await list_and_call(client, server)
        finally:
            await client.aclose()


def main() -> None:
    """Entry point: the server URL is the last argument."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="foldgate-oauth-client-") as tmp:
        if context.get("name") == "auth/wif-jwt-bearer":
            asyncio.run(workload_call(sys.argv[-1], Path(tmp), context))
        elif "idp_id_token" in context:
            asyncio.run(id_jag_call(sys.argv[-1], Path(tmp), context))
        else:
            asyncio.run(connect_and_call(sys.argv[-1], Path(tmp), dpop="--dpop" in sys.argv[1:-1]))


if __name__ == "__main__":
    main()
