"""Compile a JSON Schema into a compact, sound call signature.

Grammar (see README, "Compact signatures"): ``(param, param, ...)`` where a param is
``name[*][~]:type[=default]``. ``*`` marks a required param, ``~`` a part the signature cannot
express faithfully ("describe before calling"). A signature without a bare ``~`` is sound: an
argument object built from it alone validates structurally against the real schema.

The compiler never raises: anything hostile, unknown or unresolvable degrades to a lossy signature.
Two extensions over the brief's grammar keep more tools flat without giving up soundness:
``[enum[a|b]]`` for arrays of short enums, and enums/unions written from ``anyOf``/``oneOf`` of
consts or disjoint scalar types. A trailing bare ``~`` element (``(a:str, ~)``) marks constraints on
the object as a whole (top-level ``anyOf``, ``not``, ``if``...) that no single param carries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["LOSSY_MARK", "Signature", "compile_signature", "quote_token"]

LOSSY_MARK: Final = "~"
MAX_ENUM: Final = 5
MAX_DEFAULT_CHARS: Final = 20
# Nesting deeper than this is not worth a flat rendering; it also bounds recursion on hostile input.
MAX_DEPTH: Final = 6

_SPECIAL: Final = frozenset(' ,:|=()*~[]"\\')
_SCALAR_TYPES: Final = {"string": "str", "integer": "int", "number": "num", "boolean": "bool"}
_KNOWN_TYPES: Final = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
# Keywords that constrain structure in ways the grammar cannot carry: any of them makes a part lossy.
_STRUCTURAL: Final = frozenset(
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
# Top-level keywords that constrain the argument object as a whole.
_TOP_STRUCTURAL: Final = _STRUCTURAL | {"anyOf", "oneOf", "enum", "const", "unevaluatedProperties"}


@dataclass(frozen=True, slots=True)
class Signature:
    """A compiled signature: the parenthesised parameter list and whether it is lossy."""

    params: str
    lossy: bool

    def for_tool(self, tool_name: str) -> str:
        """The signature as an agent reads it: the bare tool name followed by the parameter list."""
        return tool_name + self.params


UNPARSEABLE: Final = Signature("(~)", True)


class _Lossy(Exception):
    """Raised inside the walker when a whole subschema must fall back to a lossy type."""

    def __init__(self, fallback: str) -> None:
        super().__init__(fallback)
        self.fallback = fallback


def quote_token(text: str) -> str:
    """Write a name, enum value or default, quoting it when the grammar's special characters occur."""
    if text and not any(ch in _SPECIAL or ch < " " for ch in text) and text == text.strip():
        return text
    return json.dumps(text, ensure_ascii=False).replace(LOSSY_MARK, "\\u007E")


def _literal(value: object) -> str | None:
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
        if value in ("true", "false", "null") or _looks_numeric(value):
            return json.dumps(value, ensure_ascii=False)
        return quote_token(value)
    return None


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _matches_type(value: object, json_type: str) -> bool:
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


def _declared_types(node: dict[str, Any]) -> list[str] | None:
    """The declared ``type`` as a list, None when absent. Raises _Lossy when malformed."""
    raw = node.get("type")
    if raw is None:
        return None
    types = [raw] if isinstance(raw, str) else raw
    if not isinstance(types, list) or not types:
        raise _Lossy("any")
    out: list[str] = []
    for t in types:
        if not isinstance(t, str) or t not in _KNOWN_TYPES:
            raise _Lossy("any")
        if t not in out:
            out.append(t)
    return out


def _join_union(members: list[str]) -> str:
    unique = list(dict.fromkeys(members))
    if not unique:
        raise _Lossy("any")
    return "|".join(unique)


def _enum_literals(values: list[object], types: list[str] | None) -> list[str]:
    """Literals of the enum values the declared type accepts; raises _Lossy when one is unwritable."""
    kept: list[object] = []
    for v in values:
        if v is None:
            continue  # null members are dropped like null types: a caller never needs to send null
        if types is not None and not any(_matches_type(v, t) for t in types):
            continue  # a value the declared type rejects can never be valid
        if not any(v == k and type(v) is type(k) for k in kept):
            kept.append(v)
    literals = [_literal(v) for v in kept]
    if not kept or any(lit is None for lit in literals):
        raise _Lossy(_base_of(types, kept))
    return [lit for lit in literals if lit is not None]


def _enum_of(literals: list[str], fallback: str) -> str:
    unique = list(dict.fromkeys(literals))
    if len(unique) > MAX_ENUM:
        raise _Lossy(fallback)
    return "enum[" + "|".join(unique) + "]"


def _enum_type(values: list[object], types: list[str] | None) -> str:
    """``enum[a|b]`` for short scalar enums compatible with the declared type, else a lossy base type."""
    return _enum_of(_enum_literals(values, types), _base_of(types, values))


def _member_enum(member: object) -> list[str] | None:
    """The literals of a plain const/enum union member, None for any other member."""
    if not isinstance(member, dict) or not ("const" in member or "enum" in member):
        return None
    if not _STRUCTURAL.isdisjoint(member) or "anyOf" in member or "oneOf" in member:
        return None
    types = _declared_types(member)
    values = [member["const"]] if "const" in member else member["enum"]
    if not isinstance(values, list):
        raise _Lossy("any")
    return _enum_literals(values, types)


def _base_of(types: list[str] | None, values: list[object]) -> str:
    if types:
        names = [_SCALAR_TYPES.get(t, "obj" if t == "object" else "any") for t in types if t != "null"]
        if names:
            return "|".join(dict.fromkeys(names))
    kinds = {type(v) for v in values}
    if kinds == {str}:
        return "str"
    if kinds and kinds <= {int}:
        return "int"
    return "any"


def _type_of(node: object, depth: int) -> str:
    """Render the grammar type of one subschema, raising _Lossy when it cannot be written soundly."""
    if depth > MAX_DEPTH:
        raise _Lossy("any")
    if node is True or (isinstance(node, dict) and not node):
        raise _Lossy("any")
    if not isinstance(node, dict):
        raise _Lossy("any")  # False (never valid) and malformed values alike
    if "$ref" in node or "$dynamicRef" in node:
        raise _Lossy("obj")
    if not _STRUCTURAL.isdisjoint(node):
        raise _Lossy("any")
    types = _declared_types(node)
    if "const" in node:
        return _enum_type([node["const"]], types)
    if "enum" in node:
        enum = node["enum"]
        if not isinstance(enum, list):
            raise _Lossy("any")
        return _enum_type(enum, types)
    has_union = "anyOf" in node or "oneOf" in node
    if has_union:
        if types is not None or ("anyOf" in node and "oneOf" in node):
            raise _Lossy("any")  # a union intersected with a type or another union: not expressible
        return _union_of(node, depth)
    if types is None:
        if "properties" in node or "required" in node or "additionalProperties" in node:
            raise _Lossy("obj")  # an implied object
        if "items" in node:
            raise _Lossy("any")  # an implied array: `items` alone does not force an array
        raise _Lossy("any")
    members = [_type_member(node, t, depth) for t in types if t != "null"]
    if not members:
        raise _Lossy("any")  # only null is accepted: nothing the grammar can offer
    return _join_union(members)


def _type_member(node: dict[str, Any], json_type: str, depth: int) -> str:
    scalar = _SCALAR_TYPES.get(json_type)
    if scalar is not None:
        return scalar
    if json_type == "array":
        if "items" not in node:
            raise _Lossy("[any]")
        items = node["items"]
        try:
            inner = _type_of(items, depth + 1)
        except _Lossy as exc:
            raise _Lossy(f"[{exc.fallback}]") from None
        return f"[{inner}]"
    raise _Lossy("obj")  # objects: the grammar never flattens nested properties


def _union_of(node: dict[str, Any], depth: int) -> str:
    """Render ``anyOf``/``oneOf`` members as a union; oneOf only when members cannot overlap."""
    key = "anyOf" if "anyOf" in node else "oneOf"
    members = node[key]
    if not isinstance(members, list) or not members:
        raise _Lossy("any")
    rendered: list[str] = []
    families: list[set[str]] = []
    literals: list[str] = []
    enum_at = -1
    for member in members:
        if isinstance(member, dict) and _declared_types_safe(member) == ["null"] and len(member) <= 3:
            continue  # {"type":"null"} (maybe with a description) is an optional marker
        families.append(_families(member))
        try:
            consts = _member_enum(member)
            if consts is not None:
                # Consts and enums across members merge into one enum (anyOf-of-consts style).
                if enum_at < 0:
                    enum_at = len(rendered)
                    rendered.append("")
                literals.extend(consts)
                continue
            rendered.append(_type_of(member, depth + 1))
        except _Lossy as exc:
            raise _Lossy(exc.fallback if exc.fallback != "[any]" else "any") from None
    if enum_at >= 0:
        rendered[enum_at] = _enum_of(literals, "any")
    if key == "oneOf":
        # oneOf fails when a value matches two members; only disjoint kinds keep it satisfiable.
        # Constants and types are never mixed here: a const may match a type member too.
        seen: set[str] = set()
        kinds = {"const" if f.startswith("const:") else "type" for fam in families for f in fam}
        if len(kinds) > 1:
            raise _Lossy("any")
        for fam in families:
            if not fam or fam & seen:
                raise _Lossy("any")
            seen |= fam
    if not rendered:
        raise _Lossy("any")
    return _join_union(rendered)


def _declared_types_safe(node: dict[str, Any]) -> list[str] | None:
    try:
        return _declared_types(node)
    except _Lossy:
        return None


def _families(member: object) -> set[str]:
    """The value kinds a union member accepts, with integer folded into number (they overlap)."""
    if not isinstance(member, dict):
        return set()
    if "const" in member or "enum" in member:
        values = [member["const"]] if "const" in member else member.get("enum")
        if not isinstance(values, list):
            return set()
        # Distinct constants never overlap with each other; tag each by its JSON text.
        return {"const:" + json.dumps(v, sort_keys=True) for v in values}
    types = _declared_types_safe(member) or []
    out = {"number" if t == "integer" else t for t in types}
    return out


def _param(name: str, schema: object, required: bool, in_props: bool) -> tuple[str, bool]:
    """Render one param; returns its text and whether it is lossy."""
    mark = "*" if required else ""
    if not in_props:
        return f"{quote_token(name)}{mark}~:any", True
    try:
        typ, lossy = _type_of(schema, 0), False
    except _Lossy as exc:
        typ, lossy = exc.fallback, True
    text = f"{quote_token(name)}{mark}{LOSSY_MARK if lossy else ''}:{typ}"
    if not required and isinstance(schema, dict) and "default" in schema:
        lit = _literal(schema["default"])
        raw = schema["default"]
        if lit is not None and len(str(raw) if not isinstance(raw, bool) else lit) <= MAX_DEFAULT_CHARS:
            text += f"={lit}"
    return text, lossy


def _load(schema: object) -> object:
    if isinstance(schema, str | bytes):
        try:
            return json.loads(schema)
        except (ValueError, UnicodeDecodeError):
            return None
    return schema


def compile_signature(schema: object) -> Signature:
    """Compile an input schema (a dict, or JSON text) into a Signature. Never raises."""
    try:
        return _compile(_load(schema))
    except RecursionError:
        return UNPARSEABLE
    except Exception:  # hostile input must never break indexing; the lossy form is the safe answer
        return UNPARSEABLE


def _compile(schema: object) -> Signature:
    if not isinstance(schema, dict):
        return UNPARSEABLE
    try:
        types = _declared_types(schema)
    except _Lossy:
        return UNPARSEABLE
    if types is not None and "object" not in types:
        return UNPARSEABLE
    props = schema.get("properties")
    req_raw = schema.get("required")
    props = {} if props is None else props
    req_raw = [] if req_raw is None else req_raw
    if not isinstance(props, dict) or not isinstance(req_raw, list):
        return UNPARSEABLE
    # `additionalProperties: false` is fine: the signature lists every declared property.
    # Non-string keys (only possible from Python, never from JSON) cannot be named faithfully.
    whole_lossy = (
        not _TOP_STRUCTURAL.isdisjoint(schema)
        or any(not isinstance(r, str) for r in req_raw)
        or any(not isinstance(k, str) for k in props)
    )
    names = {str(k): v for k, v in props.items()}
    required = [r for r in dict.fromkeys(req_raw) if isinstance(r, str)]
    parts: list[str] = []
    lossy = whole_lossy
    for name in required:
        text, part_lossy = _param(name, names.get(name), True, name in names)
        parts.append(text)
        lossy |= part_lossy
    required_set = set(required)
    for name in sorted(n for n in names if n not in required_set):
        text, part_lossy = _param(name, names[name], False, True)
        parts.append(text)
        lossy |= part_lossy
    if whole_lossy:
        parts.append(LOSSY_MARK)
    return Signature("(" + ", ".join(parts) + ")", lossy)
