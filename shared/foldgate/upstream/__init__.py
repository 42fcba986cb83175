"""Upstream MCP servers: the client that lists and calls them, and the network guard (SSRF)."""
