"""The guards' findings in the operator's REST API: ``GET /api/v1/guard/findings`` — for one tenant,
what the result guard found in answers (per server, tool and rule over 1h, 24h or 7d, from the
activity log's counts) and what the poisoning scan found in held tool descriptions, with how an
operator releases a false positive on each side (:mod:`foldgate.serve.guard_findings`).

The route joins the admin router, so the operator credential is checked first, as on every
``/api/v1`` route.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query

from foldgate.edge.admin_docs import UNKNOWN_TENANT, responses
from foldgate.errors import StoreError
from foldgate.serve.guard_findings import guard_findings
from foldgate.store.activity.base import ActivityStore

__all__ = ["add_guard_routes"]

log = logging.getLogger(__name__)


def add_guard_routes(router: APIRouter, store: ActivityStore | None, view_of: Callable[[str], Any]) -> None:
    """Add the findings route; ``view_of`` answers a tenant's view (404/503 HTTP errors itself)."""

    @router.get(
        "/guard/findings",
        summary="What the result guard and the poisoning scan found per tool and rule, and how to release it",
        responses=responses(UNKNOWN_TENANT),
    )
    def findings(
        tenant: Annotated[str, Query(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")],
        window: Literal["1h", "24h", "7d"] = "24h",
    ) -> dict[str, Any]:
        view = view_of(tenant)
        try:
            return guard_findings(tenant, view.config, view.catalog, store, window)
        except StoreError as exc:
            log.warning("guard findings read failed: %s", exc.message)
            raise HTTPException(503, "the activity store is unavailable") from None
