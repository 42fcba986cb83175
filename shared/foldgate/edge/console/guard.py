"""The console's Guard page: what the result guard found in answers and what the poisoning scan found
in held descriptions, per tool and rule, with how to release a false positive on each side (the same
document as ``GET /api/v1/guard/findings``, :mod:`foldgate.serve.guard_findings`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from foldgate.errors import FoldgateError, StoreError
from foldgate.serve.gateway import Gateway
from foldgate.serve.guard_findings import guard_findings
from foldgate.store.activity.base import ActivityStore

__all__ = ["WINDOWS", "guard_view"]

log = logging.getLogger(__name__)

WINDOWS: Final = ("1h", "24h", "7d")


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M") if at else ""


def guard_view(
    gateway: Gateway, activity: ActivityStore | None, tenant: str, params: Mapping[str, str]
) -> dict[str, Any]:
    """The page's model: the findings document (results ``available`` False without a log), the
    window asked for (``24h`` unless one of :data:`WINDOWS`), and ``error`` when a read failed."""
    window = params.get("window", "24h")
    window = window if window in WINDOWS else "24h"
    view = gateway.view(tenant)
    try:
        doc = guard_findings(tenant, view.config, view.catalog, activity, window)
    except StoreError as exc:
        log.warning("guard findings read failed: %s", exc.message)
        doc = guard_findings(tenant, view.config, view.catalog, None, window)
        doc["error"] = "the activity store is unavailable; result findings are not shown"
    except FoldgateError as exc:
        return {"window": window, "windows": WINDOWS, "error": exc.message, "results": {}, "descriptions": []}
    for row in doc["results"].get("findings", []):
        row["last"] = _when(row["last_at"])
    return {**doc, "windows": WINDOWS}
