"""What the admin API's OpenAPI document says each route can answer besides its success.

The document is what clients are generated from, so every status a route really gives is declared
with its body: the operator check's 401/429/503 on every route, 400 for a body that is not JSON, 404
for an unknown tenant or server, the routes' own 409/502/503. ``tests/e2e/test_openapi_schemathesis.py``
runs schemathesis with every check against the running API to keep the document and the API in step.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, Field

__all__ = [
    "BAD_BODY",
    "CURSOR_PATTERN",
    "HOOK_RESPONSES",
    "OPERATOR_RESPONSES",
    "UNAVAILABLE",
    "UNKNOWN_TENANT",
    "WHEN_PATTERN",
    "ErrorBody",
    "HookErrorBody",
    "responses",
]


class ErrorBody(BaseModel):
    """An admin API error: one sentence saying what was wrong and, where there is one, the fix."""

    detail: str = Field(description="What was refused and why.")


class HookError(BaseModel):
    """A webhook refusal's code and message."""

    code: str = Field(description="unauthorized, too_large or rate_limited.")
    message: str


class HookErrorBody(BaseModel):
    """A webhook refusal (the same 401 for every signature problem: it tells a prober nothing)."""

    error: HookError


def _error(description: str, model: type[BaseModel] = ErrorBody, **extra: Any) -> dict[str, Any]:
    return {"model": model, "description": description, **extra}


_RETRY_AFTER: Final = {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}}

# Every /api/v1 route: the operator check runs before anything else (foldgate.edge.admin._operator).
OPERATOR_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    401: _error(
        "No operator credential, or a wrong one (Authorization: Bearer <operator key>)",
        headers={"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}},
    ),
    429: _error("Too many wrong operator credentials from this client", headers=_RETRY_AFTER),
    503: _error("No operator credential is configured, or a part the route needs is unavailable"),
}
BAD_BODY: Final = 400, _error("The body is not JSON")
UNKNOWN_TENANT: Final = 404, _error("Unknown tenant")
UNAVAILABLE: Final = 503, _error("A part the route needs is unavailable")

HOOK_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    401: _error("The signature or timestamp is not accepted", HookErrorBody),
    413: _error("The body is over 64 KiB", HookErrorBody),
    429: _error("Too many webhook calls", HookErrorBody, headers=_RETRY_AFTER),
}

# A listing's cursor: URL-safe base64 without padding (foldgate.store.activity.codec.encode_cursor).
CURSOR_PATTERN: Final = r"^[A-Za-z0-9_-]*$"

# A time bound (since, until): epoch seconds, or an ISO 8601 date or date-time from 1980 on (the times
# foldgate.edge.admin_activity.parse_time accepts are a superset; the server checks this pattern first,
# so the document and the API accept exactly the same texts). Calendar days only: no 02-30, and 02-29
# in leap years only.
_EPOCH = r"[0-9]{1,10}(\.[0-9]{1,9})?"
_YEAR = r"(19[89][0-9]|2[0-9]{3})"
_LEAP = r"(198[048]|199[26]|2[0-9]([02468][48]|[2468]0|[13579][26])|2[048]00)"
_MONTH_DAY = (
    r"((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))"
)
_OFFSET = r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?"
_TIME = rf"[T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{{1,9}})?)?{_OFFSET}"
WHEN_PATTERN: Final = rf"^({_EPOCH}|({_YEAR}-{_MONTH_DAY}|{_LEAP}-02-29)({_TIME})?)$"


def responses(*pairs: tuple[int, dict[str, Any]], **described: str) -> dict[int | str, dict[str, Any]]:
    """A route's ``responses=``: the given (status, response) pairs, then statuses given as
    ``s404="what it means"`` with the error body."""
    out: dict[int | str, dict[str, Any]] = dict(pairs)
    for key, description in described.items():
        out[int(key.removeprefix("s"))] = _error(description)
    return out
