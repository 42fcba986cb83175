"""Inbound OAuth 2.1: foldgate as an MCP protected resource trusting one authorization server per tenant.

:class:`~foldgate.auth.oauth.verifier.OAuthVerifier` is what the HTTP edge calls; the modules below it
validate JWT access tokens (:mod:`.validator`, keys from :mod:`.jwks`), publish and read metadata
(:mod:`.metadata`), turn claims into the grant ``fgt_`` tokens also produce (:mod:`.grant`), hold the
tenant's ``oauth:`` block (:mod:`.config`) and serve the HTTP side (:mod:`.edge`).

This package imports nothing on its own: the edge loads :mod:`.edge` at start-up in every deployment,
and PyJWT/cryptography (the validator) should load only where a tenant configures OAuth.
"""
