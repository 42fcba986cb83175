"""McpFunction: the MCP endpoints behind API Gateway (HTTP API v2), served by FastAPI under Mangum.

Everything is built once per Lambda instance; each invocation only runs the request.
"""

from mangum import Mangum

from foldgate.config import Settings
from foldgate.wiring import build_mcp_app

# lifespan="auto": Mangum enters the app lifespan per invocation, and the app builds a fresh
# session manager each time (a manager can only be started once).
handler = Mangum(build_mcp_app(Settings.from_env()), lifespan="auto")
