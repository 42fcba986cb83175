"""What a tenant config asks of the cloud path that it cannot honour: reported as findings, never refused.

A request served by the MCP or code function must answer before the function's timeout and API
Gateway's 30 s integration limit, less the margin the answer needs (:mod:`foldgate.model.deadline`).
A server ``timeout_s`` (or a code run's ``timeout_ms``) set above that is cut at the request's deadline
instead: the operator learns so from the indexer's report rather than from agents' timeouts. Locally
(no function timeout) nothing is reported. Only values the operator set are judged: the defaults are
the product's, and a call simply gets whatever the request has left.
"""

from __future__ import annotations

from foldgate.config.tenant import TenantConfig
from foldgate.model.deadline import ANSWER_MARGIN_S, API_GATEWAY_LIMIT_S, answer_ceiling

__all__ = ["deadline_findings"]


def deadline_findings(config: TenantConfig, serve_timeout_s: float | None) -> list[str]:
    """One sentence per configured wait the serving functions cannot honour (empty locally)."""
    ceiling = answer_ceiling(serve_timeout_s)
    if ceiling is None or serve_timeout_s is None:
        return []
    why = (
        f"the most a request can wait on the cloud path is {ceiling:g}s (the function's "
        f"{serve_timeout_s:g}s timeout and API Gateway's {API_GATEWAY_LIMIT_S:g}s limit, whichever is "
        f"lower, less {ANSWER_MARGIN_S:g}s to answer)"
    )
    findings = [
        f"server {server.name!r}: timeout_s {server.timeout_s:g} is above what the cloud path can honour: "
        f"{why}; its calls end as upstream_timeout at the request's deadline instead"
        for server in config.servers
        if server.enabled and "timeout_s" in server.model_fields_set and server.timeout_s > ceiling
    ]
    code = config.code_execution
    if code.enabled and "timeout_ms" in code.model_fields_set and code.timeout_ms > ceiling * 1000:
        findings.append(
            f"code_execution: timeout_ms {code.timeout_ms} is above what the cloud path can honour: {why}; "
            "runs are stopped at the request's deadline instead"
        )
    return findings
