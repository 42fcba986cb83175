"""The value side of the signature compiler: quoting, literals, declared types and enums.

Internal to :mod:`foldgate.model.signature` (which walks the schema); kept apart so each module stays
one responsibility. ``Lossy`` is how any part says "this subschema cannot be written soundly".
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = [
    "KNOWN_TYPES",
    "LOSSY_MARK",
    "MAX_ENUM",
    "SCALAR_TYPES",
    "STRUCTURAL",
    "Lossy",
    "base_of",
    "declared_types",
    "declared_types_safe",
    "enum_literals",
    "enum_of",
    "enum_type",
    "families",
    "has_non_text_enum",
    "literal",
    "looks_numeric",
    "matches_type",
    "member_count_fits",
    "member_enum",
    "quote_token",
]

LOSSY_MARK: Final = "~"
MAX_ENUM: Final = 5
_SPECIAL: Final = frozenset(' ,:|=()*~[]{}"\\')
SCALAR_TYPES: Final = {"string": "str", "integer": "int", "number": "num", "boolean": "bool"}
KNOWN_TYPES: Final = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
# Keywords that constrain structure in ways the grammar cannot carry: any of them makes a part lossy.
STRUCTURAL: Final = frozenset(
    {
        "$ref",
        "$dynamicRef",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "prefixItems",
        "contains",
        "unevaluatedItems",
        "propertyNames",
        "patternProperties",
    }
)


class Lossy(Exception):
    """Raised inside the walker when a whole subschema must fall back to a lossy type."""

    def __init__(self, fallback: str) -> None:
        super().__init__(fallback)
        self.fallback = fallback


def quote_token(text: str) -> str:
    """Write a name, enum value or default, quoting it when the grammar's special characters occur."""
    if text and not any(ch in _SPECIAL or ch < " " for ch in text) and text == text.strip():
        return text
    return json.dumps(text, ensure_ascii=False).replace(LOSSY_MARK, "\\u007E")


def literal(value: object) -> str | None:
    """Render a scalar literal; None when the value is not a scalar the grammar can write."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return json.dumps(value)
    if isinstance(value, str):
        # A string that reads as another JSON scalar is quoted so "1" and 1 stay distinct.
        if value in ("true", "false", "null") or looks_numeric(value):
            return json.dumps(value, ensure_ascii=False)
        return quote_token(value)
    return None


def looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def matches_type(value: object, json_type: str) -> bool:
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if json_type == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if json_type == "null":
        return value is None
    return False


def declared_types(node: dict[str, Any]) -> list[str] | None:
    """The declared ``type`` as a list, None when absent. Raises Lossy when malformed."""
    raw = node.get("type")
    if raw is None:
        return None
    types = [raw] if isinstance(raw, str) else raw
    if not isinstance(types, list) or not types:
        raise Lossy("any")
    out: list[str] = []
    for t in types:
        if not isinstance(t, str) or t not in KNOWN_TYPES:
            raise Lossy("any")
        if t not in out:
            out.append(t)
    return out


def enum_literals(values: list[object], types: list[str] | None) -> list[str]:
    """Literals of the enum values the declared type accepts; raises Lossy when one is unwritable."""
    kept: list[object] = []
    for v in values:
        if v is None:
            continue  # null members are dropped like null types: a caller never needs to send null
        if types is not None and not any(matches_type(v, t) for t in types):
            continue  # a value the declared type rejects can never be valid
        if not any(v == k and type(v) is type(k) for k in kept):
            kept.append(v)
    literals = [literal(v) for v in kept]
    if not kept or any(lit is None for lit in literals):
        raise Lossy(base_of(types, kept))
    return [lit for lit in literals if lit is not None]


def enum_of(literals: list[str], fallback: str) -> str:
    unique = list(dict.fromkeys(literals))
    if len(unique) > MAX_ENUM:
        raise Lossy(fallback)
    return "enum[" + "|".join(unique) + "]"


def enum_type(values: list[object], types: list[str] | None) -> str:
    """``enum[a|b]`` for short scalar enums compatible with the declared type, else a lossy base type."""
    return enum_of(enum_literals(values, types), base_of(types, values))


def member_enum(member: object) -> list[str] | None:
    """The literals of a plain const/enum union member, None for any other member."""
    if not isinstance(member, dict) or not ("const" in member or "enum" in member):
        return None
    if not STRUCTURAL.isdisjoint(member) or "anyOf" in member or "oneOf" in member:
        return None
    types = declared_types(member)
    values = [member["const"]] if "const" in member else member["enum"]
    if not isinstance(values, list):
        raise Lossy("any")
    return enum_literals(values, types)


def base_of(types: list[str] | None, values: list[object]) -> str:
    if types:
        names = [SCALAR_TYPES.get(t, "obj" if t == "object" else "any") for t in types if t != "null"]
        if names:
            return "|".join(dict.fromkeys(names))
    kinds = {type(v) for v in values}
    if kinds == {str}:
        return "str"
    if kinds and kinds <= {int}:
        return "int"
    return "any"


def declared_types_safe(node: dict[str, Any]) -> list[str] | None:
    try:
        return declared_types(node)
    except Lossy:
        return None


def families(member: object) -> set[str]:
    """The value kinds a union member accepts, with integer folded into number (they overlap)."""
    if not isinstance(member, dict):
        return set()
    if "const" in member or "enum" in member:
        values = [member["const"]] if "const" in member else member.get("enum")
        if not isinstance(values, list):
            return set()
        # Distinct constants never overlap with each other; tag each by its JSON text.
        return {"const:" + json.dumps(v, sort_keys=True) for v in values}
    types = declared_types_safe(member) or []
    out = {"number" if t == "integer" else t for t in types}
    return out


def has_non_text_enum(node: object, budget: int) -> bool:
    """Whether an enum or const below ``node`` has a number or boolean value.

    Inside braces an unquoted ``4`` is easily taken for text by readers of the inline form (the
    team's own checker among them), so such members keep the object lossy: when in doubt, describe.
    """
    if budget <= 0:
        return True
    if isinstance(node, list):
        return any(has_non_text_enum(v, budget - 1) for v in node)
    if not isinstance(node, dict):
        return False
    enum = node.get("enum")
    values: list[Any] = enum if isinstance(enum, list) else []
    if "const" in node:
        values = [*values, node["const"]]
    if any(v is not None and not isinstance(v, str) for v in values):
        return True
    return any(has_non_text_enum(v, budget - 1) for v in node.values() if isinstance(v, dict | list))


def member_count_fits(node: dict[str, Any], required: int, declared: int) -> bool:
    """Whether min/maxProperties accept both the required-only and the all-members object."""
    low, high = node.get("minProperties", 0), node.get("maxProperties", declared)
    for bound in (low, high):
        if isinstance(bound, bool) or not isinstance(bound, int | float):
            return False
    return bool(low <= required and high >= declared)
