"""foldgate as an OAuth 2.1 client of upstream MCP servers (the MCP authorization spec).

One responsibility per module: ``identity`` (for whom a request goes upstream), ``fetch`` (a small JSON
document through the SSRF guard, also used by the inbound verifier in ``foldgate.auth``), ``http``
(guarded requests to authorization servers), ``discovery`` (RFC 9728 then RFC 8414 / OIDC), ``registration``
(pre-registered, Client ID Metadata Document, RFC 7591), ``tokens`` (the token and revocation
endpoints), ``consent`` (authorization code + PKCE across stateless instances), ``provider`` (the
Authorization header per tenant, server and subject, refresh and step-up), ``connect_links`` (the
signed links and browser binding by which one end user connects their own account).

It lives under ``upstream/`` because it reuses the MCP SDK's client-auth pieces (discovery URL order,
scope selection, PKCE, the RFC 8414/9728 models), and the SDK may only be imported by ``edge`` and
``upstream``.
"""
