"""AdminFunction: the admin API (/api/v1) and the operator console (/console) behind API Gateway (HTTP
API v2), served by FastAPI under Mangum. Its role alone writes tenant configs, approvals, agent tokens
and console sign-outs; no agent request reaches it.

Everything is built once per Lambda instance (the console's pages on their first request).
"""

from foldgate.app.admin_lambda import build_admin_handler

handler = build_admin_handler()
