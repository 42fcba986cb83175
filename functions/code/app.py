"""CodeFunction: the code-execution surface (/mcp/code) in a function of its own.

Agent code runs in a sandboxed worker process here, never next to the indexer's or the admin API's
role: this function may read the catalog and tenant config and call upstreams, nothing else.
"""

from foldgate.app.heap import settle_heap
from foldgate.app.mcp_lambda import build_mcp_handler

handler = build_mcp_handler(admin_api=False)
# What init built lives as long as the instance: out of the collector's full collections (see heap).
settle_heap()
