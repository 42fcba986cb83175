"""Inbound OAuth 2.1: foldgate as an MCP protected resource trusting one authorization server per tenant.

:class:`OAuthVerifier` is what the HTTP edge calls; the modules below it validate JWT access tokens
(:mod:`.validator`, keys from :mod:`.jwks`), publish and read metadata (:mod:`.metadata`), turn claims
into the grant ``fgt_`` tokens also produce (:mod:`.grant`), and hold the tenant's ``oauth:`` block
(:mod:`.config`). Importing this package does not import the MCP SDK or an HTTP client.
"""

from foldgate.auth.oauth.config import ClaimRule, OAuthConfig, parse_oauth_config
from foldgate.auth.oauth.verifier import OAuthVerifier

__all__ = ["ClaimRule", "OAuthConfig", "OAuthVerifier", "parse_oauth_config"]
