"""Arguments whose objects and arrays quote themselves briefly, for validating them.

jsonschema puts ``repr(instance)`` in nearly every error message (``type``, ``enum``, ``anyOf``,
``not``, ...), and ``anyOf``/``oneOf`` keep every branch's errors. Over a recursive ``$ref`` each level
of an agent's arguments fails with a message quoting that level's whole subtree: 60 levels around a
1 MB object took 5.7 s and 190 MB on main, quadratic in the arguments, and between the levels of an
``anyOf`` chain no keyword boundary lets the deadline stop it. Validated as a :func:`brief_copy`, every
nested object and array quotes a few members (the reported message is cut at 300 characters anyway),
so messages cost time and memory independent of the arguments' size; jsonschema sees the same values
(the copies are ``dict`` and ``list`` subclasses).
"""

from __future__ import annotations

import reprlib
from typing import Any, Final

__all__ = ["brief", "brief_copy"]


class _BriefDict(dict[Any, Any]):
    __slots__ = ()

    def __repr__(self) -> str:
        return _REPR.repr(self)


class _BriefList(list[Any]):
    __slots__ = ()

    def __repr__(self) -> str:
        return _REPR.repr(self)


class _Repr(reprlib.Repr):
    # reprlib dispatches on the type's name: the copies are quoted as the dict and list they copy.
    repr__BriefDict = reprlib.Repr.repr_dict
    repr__BriefList = reprlib.Repr.repr_list


_REPR: Final = _Repr()
_REPR.maxlevel = 3
_REPR.maxdict = _REPR.maxlist = 4
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlong = 40


def brief(value: Any) -> str:
    """``repr(value)`` cut to a few members and characters."""
    return _REPR.repr(value)


def _empty(value: dict[Any, Any] | list[Any]) -> _BriefDict | _BriefList:
    return _BriefDict() if isinstance(value, dict) else _BriefList()


def brief_copy(value: Any) -> Any:
    """``value`` (decoded JSON) with every object and array copied into one that quotes itself
    briefly; scalars are shared. Iterative: nesting depth costs no recursion."""
    if not isinstance(value, dict | list):
        return value
    root = _empty(value)
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, dict | list):
                item_copy = _empty(item)
                stack.append((item, item_copy))
                item = item_copy
            if isinstance(target, dict):
                target[key] = item
            else:
                target.append(item)
    return root
