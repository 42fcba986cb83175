"""McpFunction: the MCP endpoints behind API Gateway (HTTP API v2), served by FastAPI under Mangum.

Everything is built once per Lambda instance; each invocation only runs the request.
"""

from mangum import Mangum

from foldgate.app.wiring import build_mcp_app
from foldgate.config.settings import Settings

# No lifespan: the app starts a stateless SDK session manager per MCP request that needs one.
handler = Mangum(build_mcp_app(Settings.from_env()), lifespan="off")
