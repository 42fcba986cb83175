"""McpFunction: the MCP endpoints behind API Gateway (HTTP API v2), served by FastAPI under Mangum.

Agents only: the admin API and the console are AdminFunction's (functions/admin). Everything is built
once per Lambda instance; each invocation only runs the request (and prints its call metrics, see
foldgate.app.mcp_lambda).
"""

from foldgate.app.heap import settle_heap
from foldgate.app.mcp_lambda import build_mcp_handler

handler = build_mcp_handler(admin_api=False)
# What init built lives as long as the instance: out of the collector's full collections (see heap).
settle_heap()
