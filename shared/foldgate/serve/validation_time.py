"""How long validating one call's arguments may take, and the check every keyword makes against it.

An agent controls the arguments and an upstream the schema: together they can ask jsonschema for work
exponential in a few bytes (``anyOf`` over a recursive ``$ref`` tries every branch at every level).
Every keyword function is wrapped by :func:`timed`, which checks the call's deadline before the keyword
runs, so validation stops within one keyword's own work of the deadline, whatever the keywords are.

The deadline is a second plus time in proportion to the arguments' :func:`weight`, so work linear in
the arguments always fits (jsonschema takes ~15 µs per value on a loaded core; the allowance is 3x
that) and super-linear work does not; it never exceeds ``VALIDATION_MAX_SECONDS``.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any, Final

__all__ = [
    "INLINE_SCHEMA_WEIGHT",
    "INLINE_SECONDS",
    "INLINE_WEIGHT",
    "VALIDATION_MAX_SECONDS",
    "VALIDATION_SECONDS",
    "VALIDATION_SECONDS_PER_WEIGHT",
    "Expired",
    "timed",
    "too_slow",
    "until",
    "validation_seconds",
    "weight",
]

VALIDATION_SECONDS: Final = 1.0
VALIDATION_SECONDS_PER_WEIGHT: Final = 50e-6
VALIDATION_MAX_SECONDS: Final = 10.0
INLINE_SECONDS: Final = 0.01  # on the event loop; longer, and validation starts over on a worker thread
INLINE_WEIGHT: Final = 256  # heavier arguments skip the inline attempt
INLINE_SCHEMA_WEIGHT: Final = 4096  # so do all arguments of a heavier schema

# When the validation of the current call must stop (monotonic seconds); 0 outside a call's validation.
until: contextvars.ContextVar[float] = contextvars.ContextVar("foldgate_validation_deadline", default=0.0)


class Expired(Exception):
    """The call's validation deadline passed."""


def too_slow(seconds: float) -> str:
    """The refusal when validation did not finish within ``seconds``."""
    return (
        f"validating the arguments against the tool's schema took longer than {seconds:.3g} s, so the "
        "call was refused; send smaller or simpler arguments (fewer items, shorter values), or split "
        "the work over several calls"
    )


def timed(keyword: Any) -> Any:
    """A jsonschema keyword function that first checks the call's validation deadline."""

    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        stop = until.get()  # runs for every keyword of every call: kept to two lookups
        if stop and time.monotonic() > stop:
            raise Expired
        return keyword(validator, value, instance, schema)

    checked.__name__ = getattr(keyword, "__name__", "keyword")
    return checked


def weight(arguments: Any, limit: int) -> int:
    """The arguments' weight: members and items, plus string characters / 64. Counting stops past
    ``limit`` (the answer is then ``limit + 1``), so asking whether arguments are light is cheap
    whatever their size."""
    stack, total = [arguments], 0
    while stack and total <= limit:
        value = stack.pop()
        if isinstance(value, dict):
            total += len(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            total += len(value)
            stack.extend(value)
        elif isinstance(value, str):
            total += len(value) >> 6
    return min(total, limit + 1)


def validation_seconds(arguments: Any) -> float:
    """How long validating these arguments may take (see the module docstring)."""
    most = int((VALIDATION_MAX_SECONDS - VALIDATION_SECONDS) / VALIDATION_SECONDS_PER_WEIGHT)
    seconds = VALIDATION_SECONDS + weight(arguments, most) * VALIDATION_SECONDS_PER_WEIGHT
    return min(VALIDATION_MAX_SECONDS, seconds)
