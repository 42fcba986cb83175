"""By when the running request must have its answer: on Lambda, the invocation's deadline less a margin.

A Lambda that runs out of time is killed and API Gateway answers the agent 503 (or 504 at its own
30 s integration limit), losing the tool error the agent could act on. The edge reads the invocation's
remaining time once per request (:func:`request_deadline`) and sets it here; the upstream client
bounds every upstream request by whatever is left (:func:`time_left`), so a slow upstream ends as an
``upstream_timeout`` tool error while there is still time to send it. A context variable for the same
reason as :mod:`foldgate.model.caller`: the bound crosses layers that know nothing of Lambda, and
asyncio copies it into every task the request starts. Nothing set (local serve) means no deadline.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Final

from foldgate.model.scoped import scoped

__all__ = [
    "ANSWER_MARGIN_S",
    "API_GATEWAY_LIMIT_S",
    "answer_ceiling",
    "answering_by",
    "request_deadline",
    "time_left",
]

# API Gateway HTTP API's integration timeout (the maximum; it cannot be raised): no answer comes later.
API_GATEWAY_LIMIT_S: Final = 30.0
# Kept back from the deadline for what follows an upstream timeout: cancelling the request and freeing
# its session (immediate; a close is shielded and bounded elsewhere), a code run's abort grace (0.5 s),
# serialising the error (ms), Mangum's response and API Gateway's hop (tens of ms), and API Gateway's
# clock starting before the Lambda's on a cold start (the init phase, ~1 s here with lazy imports).
ANSWER_MARGIN_S: Final = 2.0

_DEADLINE: ContextVar[float | None] = ContextVar("foldgate_answer_deadline", default=None)


def answer_ceiling(function_timeout_s: float | None) -> float | None:
    """The longest an upstream call can be given on the cloud path: the function's timeout and API
    Gateway's limit, whichever is lower, less the margin (None: no function limit, i.e. local)."""
    if function_timeout_s is None:
        return None
    return max(0.0, min(function_timeout_s, API_GATEWAY_LIMIT_S) - ANSWER_MARGIN_S)


def request_deadline(
    remaining_ms: float, *, now: float | None = None, margin_s: float = ANSWER_MARGIN_S
) -> float:
    """The ``time.monotonic()`` instant by which upstream work must end, for a request that starts
    ``now`` with ``remaining_ms`` of its invocation left: the sooner of the invocation's end and API
    Gateway's limit, less ``margin_s``."""
    start = time.monotonic() if now is None else now
    return start + min(max(0.0, remaining_ms) / 1000, API_GATEWAY_LIMIT_S) - margin_s


def time_left(now: float | None = None) -> float | None:
    """Seconds left for upstream work in the running request (0 when already past), None without one."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return None
    return max(0.0, deadline - (time.monotonic() if now is None else now))


def answering_by(deadline: float | None) -> scoped[float | None]:
    """Within the block, upstream work ends by ``deadline`` (a ``time.monotonic()`` instant); None
    leaves the block without a deadline."""
    return scoped(_DEADLINE, deadline)
