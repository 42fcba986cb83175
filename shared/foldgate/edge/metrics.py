"""``GET /metrics``: the local gateway's call metrics in Prometheus' text format.

Behind the operator credential, checked as on ``/api/v1`` (same check, same limit on wrong
credentials): per-tenant and per-server call counts say who uses what, which agents must not read.
An agent token is not an operator credential and gets the 401 an anonymous caller gets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from foldgate.edge.admin import operator_router

if TYPE_CHECKING:
    from foldgate.edge.console.login_limit import LoginLimit

__all__ = ["metrics_router"]


def metrics_router(
    render: Callable[[], tuple[bytes, str]] | None,
    *,
    operator_secret: bytes | None,
    operator_limit: LoginLimit | None = None,
    unavailable: str = "metrics are not available",
) -> APIRouter:
    """The ``/metrics`` route serving ``render()`` (the exposition text and its content type).

    Without ``render`` (the metrics extra is not installed) it answers 501 with ``unavailable``, the
    one line saying what to install.
    """
    router = operator_router(operator_secret, operator_limit)

    @router.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        if render is None:
            raise HTTPException(501, unavailable)
        body, content_type = render()
        return Response(body, headers={"content-type": content_type, "cache-control": "no-store"})

    return router
