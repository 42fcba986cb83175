"""template.yaml routes foldgate's OAuth-client paths to the function that serves them: the browser's
callback, the per-user connect links (their page, its confirmation and the sign-in callback) and the
Client ID Metadata Document must reach the MCP function
(API Gateway answers 404 for a path no event lists), with the exact paths the code serves."""

from __future__ import annotations

from foldgate.dev.bench.moto import template_resource
from foldgate.edge.user_connect import SIGNIN_CALLBACK_PATH
from foldgate.upstream.oauth.connect_links import CONNECT_PATH
from foldgate.upstream.oauth.registration import CALLBACK_PATH, CIMD_PATH


def test_the_callback_and_the_cimd_document_reach_the_mcp_function() -> None:
    events = template_resource("McpFunction")["Properties"]["Events"]
    routes = {(e["Properties"]["Method"], e["Properties"]["Path"]) for e in events.values()}
    assert ("GET", CALLBACK_PATH) in routes
    assert ("GET", CIMD_PATH) in routes
    assert ("GET", CONNECT_PATH) in routes


def test_the_connect_links_confirmation_and_sign_in_callback_reach_the_mcp_function() -> None:
    events = template_resource("McpFunction")["Properties"]["Events"]
    routes = {(e["Properties"]["Method"], e["Properties"]["Path"]) for e in events.values()}
    assert ("POST", CONNECT_PATH) in routes
    assert ("GET", SIGNIN_CALLBACK_PATH) in routes
