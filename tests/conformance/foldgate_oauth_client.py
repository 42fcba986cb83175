"""foldgate's upstream OAuth client as a conformance-suite client: ``python foldgate_oauth_client.py URL``.

The suite (``conformance client --command ... --scenario auth/...``) starts an MCP server with its own
authorization server and runs this command with the server's URL last. This connects the way a
foldgate operator's connect does: discovery, registration, the code flow with PKCE (the suite's
authorization endpoint approves at once and redirects with the code, which is read from the redirect
instead of a browser following it), the code exchange, then ``tools/list`` and one ``tools/call``
through foldgate's upstream client with the grant (connecting again once when the call needs consent:
the upstream moved to another authorization server). Exit status 0 when all of that worked.
``--dpop`` configures the server with ``dpop: true`` (RFC 9449 sender-constrained tokens).

Run with ``PYTHONPATH=<worktree>/shared:<worktree>`` (the suite passes its environment on).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
from tests.upstream_oauth import REDIRECT, grant_store, oauth_context

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamConsentError
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


def main() -> None:
    """Entry point: the server URL is the last argument."""
    with tempfile.TemporaryDirectory(prefix="foldgate-oauth-client-") as tmp:
        asyncio.run(connect_and_call(sys.argv[-1], Path(tmp), dpop="--dpop" in sys.argv[1:-1]))


if __name__ == "__main__":
    main()
