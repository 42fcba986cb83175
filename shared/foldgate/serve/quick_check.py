"""A shortcut past jsonschema for valid arguments of a plain tool schema.

Most tools take an object of a few typed properties (``{"type": "object", "properties": {"message":
{"type": "string"}}, "required": ["message"]}``), and most calls send valid arguments. jsonschema's
bounded walk over them cost ~0.1 ms of every proxied call (``foldgate bench call --breakdown``). For a
schema made only of the keywords below, :func:`quick_check` compiles a check that answers True only
when the arguments are valid under every JSON Schema draft; anything else, and every False, goes to the
full validator, which finds the errors and words them. The check is never the one to refuse.

The subset: an object schema with ``type``, ``properties``, ``required``, ``additionalProperties``
(a boolean) and annotations; each property's schema only ``type`` (one name or a list) and annotations,
or ``true``. Types are matched exactly as JSON decodes them (``integer`` is an ``int`` and never a
``bool``; a float with no fraction, valid in later drafts, goes to the validator).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["MAX_KEYS", "Check", "quick_check"]

Check = Callable[[Any], bool]

MAX_KEYS: Final = 256
_ANNOTATIONS: Final = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
)
_OBJECT_KEYS: Final = _ANNOTATIONS | {"$schema", "type", "properties", "required", "additionalProperties"}
_PROPERTY_KEYS: Final = _ANNOTATIONS | {"type"}
# JSON type name -> the exact Python types json.loads makes for it.
_TYPES: Final[Mapping[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}


def _anything(_: Any) -> bool:
    return True


def _type_check(spec: Any) -> Check | None:
    names = [spec] if isinstance(spec, str) else spec
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        return None
    allowed = frozenset(t for n in names for t in _TYPES[n])

    def check(value: Any) -> bool:
        return type(value) in allowed  # exact: a bool is no integer, a subclass goes to the validator

    return check


def _property_check(schema: Any) -> Check | None:
    if schema is True:
        return _anything
    if not isinstance(schema, dict) or not set(schema) <= _PROPERTY_KEYS:
        return None
    return _type_check(schema["type"]) if "type" in schema else _anything


def quick_check(schema: Any) -> Check | None:
    """A check that is True only for arguments valid under ``schema``; None when the schema is
    outside the subset (see the module doc)."""
    if not isinstance(schema, dict) or not set(schema) <= _OBJECT_KEYS:
        return None
    if schema.get("type", "object") != "object":
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(extra, bool):
        return None
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    checks: dict[str, Check] = {}
    for name, sub in properties.items():
        check = _property_check(sub)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(dict.fromkeys(required))

    def valid(arguments: Any) -> bool:
        # Values are only type-checked (never walked); a huge object goes to the validator, which
        # takes heavy arguments off the event loop.
        if type(arguments) is not dict or len(arguments) > MAX_KEYS:
            return False
        for name in needed:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None:
                if not extra:
                    return False
            elif not check(value):
                return False
        return True

    return valid
