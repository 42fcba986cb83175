"""Compile a JSON Schema into a compact, sound call signature.

Grammar (see docs/concepts.md, "Signatures"): ``(param, param, ...)`` where a param is
``name[*][~]:type[=default]``. ``*`` marks a required param, ``~`` a part the signature cannot
express faithfully ("describe before calling"). A signature without a bare ``~`` is sound: an
argument object built from it alone validates structurally against the real schema.

The compiler never raises: anything hostile, unknown or unresolvable degrades to a lossy signature.
Two extensions over the brief's grammar keep more tools flat without giving up soundness:
``[enum[a|b]]`` for arrays of short enums, and enums/unions written from ``anyOf``/``oneOf`` of
consts or disjoint scalar types. A trailing bare ``~`` element (``(a:str, ~)``) marks constraints on
the object as a whole (top-level ``anyOf``, ``not``, ``if``...) that no single param carries.

Grammar v2 writes small objects inline (``account*:{id*:int, name:str}``, ``files:[{path*:str}]``):
only where the object's whole shape is expressible (see ``_inline_object``), and only where that
turns the tool's signature flat — a signature that stays lossy anyway keeps the shorter v1 form.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from foldgate.model.signature_values import (
    LOSSY_MARK,
    SCALAR_TYPES,
    STRUCTURAL,
    Lossy,
    declared_types,
    declared_types_safe,
    enum_of,
    enum_type,
    families,
    has_non_text_enum,
    literal,
    member_count_fits,
    member_enum,
    quote_token,
)

__all__ = [
    "LOSSY_MARK",
    "MAX_INLINE_LEVELS",
    "MAX_INLINE_MEMBERS",
    "Signature",
    "compile_signature",
    "quote_token",
]

MAX_DEFAULT_CHARS: Final = 20
# Nesting deeper than this is not worth a flat rendering; it also bounds recursion on hostile input.
MAX_DEPTH: Final = 6
# Grammar v2: an inline object names at most this many members, and inline objects nest at most this deep.
MAX_INLINE_MEMBERS: Final = 6
MAX_INLINE_LEVELS: Final = 2

# Keywords at an object's own level that keep it from being written inline (the rest are STRUCTURAL).
_INLINE_BLOCKERS: Final = frozenset({"anyOf", "oneOf", "unevaluatedProperties", "enum", "const"})
# Top-level keywords that constrain the argument object as a whole.
_TOP_STRUCTURAL: Final = STRUCTURAL | {"anyOf", "oneOf", "enum", "const", "unevaluatedProperties"}


@dataclass(frozen=True, slots=True)
class Signature:
    """A compiled signature: the parenthesised parameter list and whether it is lossy."""

    params: str
    lossy: bool

    def for_tool(self, tool_name: str) -> str:
        """The signature as an agent reads it: the bare tool name followed by the parameter list."""
        return tool_name + self.params


UNPARSEABLE: Final = Signature("(~)", True)


def _join_union(members: list[str]) -> str:
    unique = list(dict.fromkeys(members))
    if not unique:
        raise Lossy("any")
    if len(unique) > 1 and any(m.startswith(("{", "[{")) for m in unique):
        raise Lossy("obj")  # an inline object is only ever a whole type, never one of a union's members
    return "|".join(unique)


def _type_of(node: object, depth: int, inline: int = 0, slot: bool = True) -> str:
    """Render the grammar type of one subschema, raising Lossy when it cannot be written soundly.

    ``inline`` is how many levels of inline objects may still open here; ``slot`` says the type is a
    param's or member's own (array items of a slot may be inline objects, deeper arrays' items not).
    """
    if depth > MAX_DEPTH:
        raise Lossy("any")
    if node is True or (isinstance(node, dict) and not node):
        raise Lossy("any")
    if not isinstance(node, dict):
        raise Lossy("any")  # False (never valid) and malformed values alike
    if "$ref" in node or "$dynamicRef" in node:
        raise Lossy("obj")
    if not STRUCTURAL.isdisjoint(node):
        raise Lossy("any")
    types = declared_types(node)
    if "const" in node:
        return enum_type([node["const"]], types)
    if "enum" in node:
        enum = node["enum"]
        if not isinstance(enum, list):
            raise Lossy("any")
        return enum_type(enum, types)
    has_union = "anyOf" in node or "oneOf" in node
    if has_union:
        if types is not None or ("anyOf" in node and "oneOf" in node):
            raise Lossy("any")  # a union intersected with a type or another union: not expressible
        return _union_of(node, depth, slot)
    if types is None:
        if "properties" in node or "required" in node or "additionalProperties" in node:
            raise Lossy("obj")  # an implied object
        if "items" in node:
            raise Lossy("any")  # an implied array: `items` alone does not force an array
        raise Lossy("any")
    members = [_type_member(node, t, depth, inline, slot) for t in types if t != "null"]
    if not members:
        raise Lossy("any")  # only null is accepted: nothing the grammar can offer
    return _join_union(members)


def _type_member(node: dict[str, Any], json_type: str, depth: int, inline: int, slot: bool) -> str:
    scalar = SCALAR_TYPES.get(json_type)
    if scalar is not None:
        return scalar
    if json_type == "array":
        if "items" not in node:
            raise Lossy("[any]")
        items = node["items"]
        try:
            # Only a slot's own plain array may hold inline objects: `[{...}]`, never `[[{...}]]` nor
            # the items of a nullable or multi-typed array.
            plain = slot and node.get("type") in ("array", ["array"])
            inner = _type_of(items, depth + 1, inline if plain else 0, slot=False)
        except Lossy as exc:
            raise Lossy(f"[{exc.fallback}]") from None
        return f"[{inner}]"
    return _inline_object(node, depth, inline)


def _inline_object(node: dict[str, Any], depth: int, inline: int) -> str:
    """``{member, ...}`` for an object the grammar can say in full; raises Lossy("obj") otherwise.

    The members are the object's declared properties, rendered and ordered like params; every one must
    be flat, every required name declared, and nothing at the object's level may constrain it further.
    """
    if inline <= 0 or not _INLINE_BLOCKERS.isdisjoint(node):
        raise Lossy("obj")
    props = node.get("properties")
    required = node.get("required", [])
    if not isinstance(props, dict) or not 0 < len(props) <= MAX_INLINE_MEMBERS:
        raise Lossy("obj")  # no properties (a free-form object) or too many to be worth inlining
    if not isinstance(required, list) or any(not isinstance(k, str) for k in props):
        raise Lossy("obj")
    if any(not isinstance(r, str) or r not in props for r in required):
        raise Lossy("obj")  # a required name with no property: its type is unknown
    names = list(dict.fromkeys(required))
    if not member_count_fits(node, len(names), len(props)):
        raise Lossy("obj")
    names += sorted(n for n in props if n not in set(required))
    members: list[str] = []
    for name in names:
        is_required = name in required
        if has_non_text_enum(props[name], MAX_DEPTH):
            raise Lossy("obj")
        try:
            typ = _type_of(props[name], depth + 1, inline - 1)
        except Lossy:
            raise Lossy("obj") from None
        members.append(
            _with_default(f"{quote_token(name)}{'*' if is_required else ''}:{typ}", props[name], is_required)
        )
    return "{" + ", ".join(members) + "}"


def _union_of(node: dict[str, Any], depth: int, slot: bool) -> str:
    """Render ``anyOf``/``oneOf`` members as a union; oneOf only when members cannot overlap."""
    key = "anyOf" if "anyOf" in node else "oneOf"
    members = node[key]
    if not isinstance(members, list) or not members:
        raise Lossy("any")
    rendered: list[str] = []
    kinds_of: list[set[str]] = []
    literals: list[str] = []
    enum_at = -1
    for member in members:
        if isinstance(member, dict) and declared_types_safe(member) == ["null"] and len(member) <= 3:
            continue  # {"type":"null"} (maybe with a description) is an optional marker
        kinds_of.append(families(member))
        try:
            consts = member_enum(member)
            if consts is not None:
                # Consts and enums across members merge into one enum (anyOf-of-consts style).
                if enum_at < 0:
                    enum_at = len(rendered)
                    rendered.append("")
                literals.extend(consts)
                continue
            # An object under anyOf/oneOf is never inlined: readers match `{...}` to the param's own schema.
            rendered.append(_type_of(member, depth + 1, 0, slot))
        except Lossy as exc:
            raise Lossy(exc.fallback if exc.fallback != "[any]" else "any") from None
    if enum_at >= 0:
        rendered[enum_at] = enum_of(literals, "any")
    if key == "oneOf":
        # oneOf fails when a value matches two members; only disjoint kinds keep it satisfiable.
        # Constants and types are never mixed here: a const may match a type member too.
        seen: set[str] = set()
        kinds = {"const" if f.startswith("const:") else "type" for fam in kinds_of for f in fam}
        if len(kinds) > 1:
            raise Lossy("any")
        for fam in kinds_of:
            if not fam or fam & seen:
                raise Lossy("any")
            seen |= fam
    if not rendered:
        raise Lossy("any")
    return _join_union(rendered)


def _param(name: str, schema: object, required: bool, in_props: bool, inline: int) -> tuple[str, bool]:
    """Render one param; returns its text and whether it is lossy."""
    mark = "*" if required else ""
    if not in_props:
        return f"{quote_token(name)}{mark}~:any", True
    try:
        typ, lossy = _type_of(schema, 0, inline), False
    except Lossy as exc:
        typ, lossy = exc.fallback, True
    text = f"{quote_token(name)}{mark}{LOSSY_MARK if lossy else ''}:{typ}"
    return _with_default(text, schema, required), lossy


def _with_default(text: str, schema: object, required: bool) -> str:
    """Append ``=default`` for an optional param or member with a short scalar default."""
    if not required and isinstance(schema, dict) and "default" in schema:
        lit = literal(schema["default"])
        raw = schema["default"]
        if lit is not None and len(str(raw) if not isinstance(raw, bool) else lit) <= MAX_DEFAULT_CHARS:
            text += f"={lit}"
    return text


def _load(schema: object) -> object:
    if isinstance(schema, str | bytes):
        try:
            return json.loads(schema)
        except (ValueError, UnicodeDecodeError):
            return None
    return schema


def compile_signature(schema: object, *, inline: bool = True) -> Signature:
    """Compile an input schema (a dict, or JSON text) into a Signature. Never raises.

    With ``inline`` (grammar v2) objects are written inline where that makes the whole signature flat;
    a signature that stays lossy keeps its v1 form, so inlining only ever spends tokens where it saves
    the agent a describe round trip. ``inline=False`` is grammar v1 exactly.
    """
    try:
        loaded = _load(schema)
        v1 = _compile(loaded, 0)
        if not inline or not v1.lossy:
            return v1
        v2 = _compile(loaded, MAX_INLINE_LEVELS)
        return v1 if v2.lossy else v2
    except RecursionError:
        return UNPARSEABLE
    except Exception:  # hostile input must never break indexing; the lossy form is the safe answer
        return UNPARSEABLE


def _compile(schema: object, inline: int) -> Signature:
    if not isinstance(schema, dict):
        return UNPARSEABLE
    try:
        types = declared_types(schema)
    except Lossy:
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
        text, part_lossy = _param(name, names.get(name), True, name in names, inline)
        parts.append(text)
        lossy |= part_lossy
    required_set = set(required)
    for name in sorted(n for n in names if n not in required_set):
        text, part_lossy = _param(name, names[name], False, True, inline)
        parts.append(text)
        lossy |= part_lossy
    if whole_lossy:
        parts.append(LOSSY_MARK)
    return Signature("(" + ", ".join(parts) + ")", lossy)
