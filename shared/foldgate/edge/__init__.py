"""The edge: the ASGI app, MCP endpoints and their fast path, the SDK server glue, access (tokens,
rate limits) and the admin API. The only place that maps errors to HTTP and JSON-RPC."""
