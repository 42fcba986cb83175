"""``uniqueItems`` in n·log n: every item mapped to a canonical, totally ordered key, then sorted.

jsonschema compares every pair of items when they are objects, or of mixed types, that cannot be
sorted: a 77 KB array of small objects held the event loop for about a minute, and the request body
cap allowed hours. Here each item becomes a key whose Python equality is JSON Schema's equality (the
semantics of ``jsonschema._utils.equal``): ``1 == 1.0``, ``true != 1``, object key order irrelevant,
arrays and objects compared member by member. Keys of different JSON types never compare their
payloads (a type tag comes first), so sorting never raises, and sorting never hashes (integers' hashes
are predictable, so a hash set could be flooded with colliding numbers).

jsonschema's own sort shortcut misses duplicates that sort apart from each other (``[[1], [true], [1]]``
passes there); this check finds them.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Final

__all__ = ["duplicate_pair"]

# Type tags: the first element of every key, so keys of different JSON types compare on the tag alone.
_NULL: Final = 0
_BOOL: Final = 1
_NUMBER: Final = 2
_NAN: Final = 3
_STRING: Final = 4
_ARRAY: Final = 5
_OBJECT: Final = 6
_OTHER: Final = 7


def _key(value: Any) -> tuple[Any, ...]:
    """A key equal to another exactly when the two values are equal in JSON Schema."""
    if value is None:
        return (_NULL,)
    if value is True or value is False:
        return (_BOOL, value)
    if isinstance(value, float) and math.isnan(value):
        # NaN equals only itself (jsonschema compares identity first); it cannot be sorted by value.
        return (_NAN, id(value))
    if isinstance(value, int | float):
        return (_NUMBER, value)
    if isinstance(value, str):
        return (_STRING, value)
    if isinstance(value, list | tuple):
        return (_ARRAY, tuple(_key(item) for item in value))
    if isinstance(value, dict):
        # Sorted by name (names are unique within an object), so member order does not matter.
        members = sorted(((str(name), _key(item)) for name, item in value.items()), key=_first)
        return (_OBJECT, tuple(members))
    # Not a JSON value (arguments are decoded JSON): equal only to itself.
    return (_OTHER, id(value))


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]


def duplicate_pair(items: list[Any]) -> tuple[int, int] | None:
    """The indexes (lower first) of two equal items, None when all items are distinct."""
    keys = [_key(item) for item in items]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    for left, right in itertools.pairwise(order):
        if keys[left] == keys[right]:
            return min(left, right), max(left, right)
    return None
