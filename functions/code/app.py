"""CodeFunction: the code-execution surface (/mcp/code) in a function of its own.

Agent code runs in a sandboxed worker process here, never next to the indexer's or the admin API's
role: this function may read the catalog and tenant config and call upstreams, nothing else.
"""

from mangum import Mangum

from foldgate.app.wiring import build_mcp_app
from foldgate.config.settings import Settings

handler = Mangum(build_mcp_app(Settings.from_env(), admin_api=False), lifespan="off")
