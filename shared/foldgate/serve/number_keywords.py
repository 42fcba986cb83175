"""jsonschema's number keywords, made safe for an agent's numbers.

Python's JSON parsers (``json.loads`` on the plain path, pydantic on the SDK's) read ``NaN``,
``Infinity`` and integers of up to 4,300 digits, none of which jsonschema's number keywords expect:

* ``multipleOf`` raised OverflowError for a 400-digit integer over a fractional divisor and ValueError
  for NaN, and a raising keyword skipped the whole schema (the agent's other arguments went to the
  upstream unchecked). Here an integer too large for a float is decided exactly, and NaN or an
  infinity is a multiple of nothing.
* ``minimum``, ``maximum``, ``exclusiveMinimum`` and ``exclusiveMaximum`` compare with ``<`` and ``>``,
  which are false for NaN, so NaN passed every bound. Here NaN fails a bound (an infinity already
  fails the bound on its side).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any, Final

__all__ = ["BOUNDS", "bounded_by_numbers", "multiple_of"]

BOUNDS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")

Keyword = Callable[[Any, Any, Any, Any], Any]


def multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's multipleOf, without its exceptions (see the module doc)."""
    # jsonschema loads with the first validator compiled, not at init.
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "number"):
        return
    if isinstance(instance, float) and not math.isfinite(instance):
        failed = True
    elif isinstance(divisor, float):
        try:
            quotient = instance / divisor
            failed = int(quotient) != quotient
        except OverflowError:
            failed = (Fraction(instance) / Fraction(divisor)).denominator != 1
    else:
        failed = bool(instance % divisor)
    if failed:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


def _not_nan(keyword: Keyword) -> Keyword:
    """``keyword`` (a bound), failing NaN instead of letting it pass every comparison."""

    def check(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        # jsonschema loads with the first validator compiled, not at init.
        from jsonschema.exceptions import ValidationError

        if isinstance(instance, float) and math.isnan(instance):
            yield ValidationError("NaN is not a number JSON can carry; send a number within the bounds")
            return
        yield from keyword(validator, value, instance, schema) or ()

    return check


def bounded_by_numbers(keywords: dict[str, Keyword]) -> dict[str, Keyword]:
    """A draft's keyword table with the number keywords above in place of jsonschema's own."""
    out = dict(keywords)
    if "multipleOf" in out:
        out["multipleOf"] = multiple_of
    for name in BOUNDS:
        if name in out:
            out[name] = _not_nan(out[name])
    return out
