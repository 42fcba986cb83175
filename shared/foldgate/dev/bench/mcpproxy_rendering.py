"""Reproduction of how mcpproxy-go renders ``tools/list`` entries for its published token figures.

smart-mcp-proxy/mcpproxy-go publishes "full" versus "deferred" token totals for its direct tool surface
(45-tool corpus_v2: 6116 -> 4301; 527-tool LiveMCPBench snapshot: 99918 -> 65138, cl100k_base, one count
per entry, summed). To compare our own numbers with theirs on the same corpora we need their exact bytes,
so this module mimics two things precisely:

* mcp-go v0.57's ``Tool`` marshalling as driven by mcpproxy's direct surface: a fixed default
  annotations block, every other object key sorted, compact separators, non-ASCII kept raw, ``<``, ``>``,
  ``&`` (and U+2028/U+2029) escaped as Go's ``encoding/json`` does, and numbers printed the way Go prints
  a ``float64`` (JSON numbers are decoded into ``float64`` on their side, so ``5000.0`` prints ``5000``).
* mcpproxy's compact parameter signature (Spec 085 "toolsig"), appended to the description in deferred
  mode. It is ported behaviour-for-behaviour, including its unsound spots, because the goal is to
  reproduce their figures, not to be right: array items carrying an enum render as the bare element type
  (``[str]``, not lossy), ``anyOf``/``oneOf`` members are reduced to their ``type`` so an anyOf of enums
  renders ``str``, and a top-level ``anyOf``/``oneOf``/``allOf`` is never looked at.

This is an independent re-implementation from reading their behaviour; no Go code is copied.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Final, TypeAlias

__all__ = [
    "mcpproxy_signature",
    "mcpproxy_signature_lossy",
    "render_deferred_entry",
    "render_full_entry",
]

# A JSON value as Go's encoding/json hands it to mcpproxy after decoding into ``any``: every number is a
# float64 (there is no int), strings are valid UTF-8.
_GoJson: TypeAlias = "bool | float | str | list[_GoJson] | dict[str, _GoJson] | None"

# mcp-go's NewTool seeds these four hints and marshals the annotation struct in field order (not sorted);
# both corpora carry no annotations, so every entry gets exactly this block. ``title`` is omitempty.
_DEFAULT_ANNOTATIONS: Final = (
    '{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}'
)

# The deferred placeholder schema: exactly these bytes on the wire (never "{}", never with properties).
_DEFERRED_INPUT_SCHEMA: Final = '{"type":"object"}'

# Separator between server and tool in a direct-surface display name.
_NAME_SEPARATOR: Final = "__"

# Grammar limits of the signature renderer.
_MAX_INLINE_ENUM: Final = 5
_MAX_DEFAULT_RUNES: Final = 20

# Any atom (name, enum value, default literal) containing one of these, or empty, is double-quoted.
_METACHARS: Final = frozenset(' ,:|=()*~[]"')

_SCALAR_TYPESPECS: Final = frozenset({"str", "int", "num", "bool"})

# Go replaces unpaired UTF-16 surrogates (which Python's json module lets through) by U+FFFD.
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")

# Characters Go's encoding/json escapes beyond what Python's json.dumps(ensure_ascii=False) escapes.
_GO_EXTRA_ESCAPES: Final = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_GO_EXTRA_ESCAPE_RE: Final = re.compile("[<>&\u2028\u2029]")


class _NotJson(ValueError):
    """The value could not have come out of Go's JSON decoder (NaN, huge ints, non-string keys...)."""


# --------------------------------------------------------------------------------------------------------
# Go's view of a decoded JSON value
# --------------------------------------------------------------------------------------------------------


def _scrub(text: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", text)


def _to_go_json(value: object) -> _GoJson:
    """Convert a Python JSON value into what Go's ``json.Unmarshal`` into ``any`` would have produced."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError as exc:  # Go rejects a number outside float64 range.
            raise _NotJson("number out of float64 range") from exc
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson("non-finite number")
        return value
    if isinstance(value, str):
        return _scrub(value)
    if isinstance(value, list | tuple):
        return [_to_go_json(item) for item in value]
    if isinstance(value, dict):
        out: dict[str, _GoJson] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _NotJson("non-string object key")
            out[_scrub(key)] = _to_go_json(item)
        return out
    raise _NotJson(f"not a JSON value: {type(value).__name__}")


def _shortest_decimal(number: float) -> tuple[bool, str, int]:
    """Shortest round-trip digits of a float64, as ``(negative, digits, exponent)``: value = digits * 10**exp.

    Python's ``repr`` and Go's ``strconv`` (precision -1) both pick the shortest digit string that reads
    back to the same float64, so the digits agree; only the layout differs and is done by the callers.
    """
    sign, digit_tuple, exponent = Decimal(repr(number)).normalize().as_tuple()
    assert isinstance(exponent, int)  # finite by construction
    return bool(sign), "".join(str(d) for d in digit_tuple), exponent


def _format_fixed(number: float) -> str:
    """Go ``strconv.FormatFloat(f, 'f', -1, 64)``: shortest digits, never an exponent (``-0`` kept)."""
    negative, digits, exponent = _shortest_decimal(number)
    if exponent >= 0:
        text = digits + "0" * exponent
    else:
        point = len(digits) + exponent
        text = digits[:point] + "." + digits[point:] if point > 0 else "0." + "0" * -point + digits
    return "-" + text if negative else text


def _format_json_number(number: float) -> str:
    """Go ``encoding/json`` float64 output: fixed notation in [1e-6, 1e21), otherwise ``1e+21``/``1e-7``."""
    magnitude = abs(number)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        return _format_fixed(number)
    negative, digits, exponent = _shortest_decimal(number)
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    power = exponent + len(digits) - 1
    # strconv pads the exponent to two digits; encoding/json then strips the pad of negative ones.
    suffix = f"e+{power:02d}" if power >= 0 else f"e-{-power}"
    return ("-" if negative else "") + mantissa + suffix


def _encode_string(text: str) -> str:
    # Python already escapes '"', '\\' and control characters exactly like Go >= 1.22 (\b \f \n \r \t,
    # others as lowercase \u00XX); Go additionally escapes the HTML-sensitive characters and U+2028/9.
    encoded = json.dumps(_scrub(text), ensure_ascii=False)
    return _GO_EXTRA_ESCAPE_RE.sub(lambda m: _GO_EXTRA_ESCAPES[m.group(0)], encoded)


def _encode(value: _GoJson) -> str:
    """Compact JSON as Go's ``json.Marshal`` writes a decoded ``any``: map keys sorted byte-wise."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _format_json_number(value)
    if isinstance(value, str):
        return _encode_string(value)
    if isinstance(value, list):
        return "[" + ",".join(_encode(item) for item in value) + "]"
    # Code-point order equals Go's UTF-8 byte order once lone surrogates are gone.
    return "{" + ",".join(_encode_string(key) + ":" + _encode(value[key]) for key in sorted(value)) + "}"


# --------------------------------------------------------------------------------------------------------
# Compact signature (mcpproxy Spec 085 grammar)
# --------------------------------------------------------------------------------------------------------


def _quote_atom(atom: str) -> str:
    if atom and not any(ch in _METACHARS for ch in atom):
        return atom
    return '"' + atom.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _scalar_literal(value: _GoJson) -> str | None:
    """Text of a scalar for enum values and defaults; ``None`` for arrays and objects."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return _format_fixed(value)
    return None


def _union_member(type_name: str) -> tuple[str, bool]:
    """A non-null member of a type union or anyOf/oneOf: (basetype, makes-it-lossy)."""
    scalar = {"string": "str", "integer": "int", "number": "num", "boolean": "bool"}.get(type_name)
    if scalar is not None:
        return scalar, False
    if type_name == "object":
        return "obj", True
    return "any", True  # arrays and unknown names are not representable as union members


def _array_typespec(prop: dict[str, _GoJson]) -> str:
    # Only items.type is read: enum/format/nesting on the items is ignored (hence "[str]" for enums).
    items = prop.get("items")
    if not isinstance(items, dict):
        return "[any]"
    item_type = items.get("type")
    mapped = {
        "string": "[str]",
        "integer": "[int]",
        "number": "[num]",
        "boolean": "[bool]",
        "object": "[obj]",
    }
    return mapped.get(item_type, "[any]") if isinstance(item_type, str) else "[any]"


def _declared_type(prop: dict[str, _GoJson]) -> str | None:
    """Typespec from the ``type`` keyword (a string or a list of strings); ``None`` when unusable."""
    declared = prop.get("type")
    if isinstance(declared, str):
        single = {
            "string": "str",
            "integer": "int",
            "number": "num",
            "boolean": "bool",
            "object": "obj",
        }.get(declared)
        if single is not None:
            return single
        return _array_typespec(prop) if declared == "array" else "any"
    if isinstance(declared, list):
        members: list[str] = []
        for member in declared:
            if not isinstance(member, str) or member == "null":
                continue  # nullable is treated as omittable
            mapped, _ = _union_member(member)
            if mapped not in members:
                members.append(mapped)
        return "|".join(members) if members else "any"
    return None


def _subschema_union(subschemas: list[_GoJson]) -> tuple[str, bool]:
    """anyOf/oneOf: each member reduced to its ``type`` string alone (its enum etc. are ignored)."""
    members: list[str] = []
    lossy = False
    for sub in subschemas:
        if not isinstance(sub, dict):
            return "obj", True
        sub_type = sub.get("type")
        if not isinstance(sub_type, str):
            return "obj", True  # $ref members, nested anyOf, ... collapse the whole parameter
        if sub_type == "null":
            continue
        mapped, member_lossy = _union_member(sub_type)
        if mapped in members:
            continue
        members.append(mapped)
        lossy = lossy or member_lossy
    if not members:
        return "any", True
    if len(members) == 1:
        return members[0], members[0] in ("obj", "any")
    return "|".join(members), lossy


def _property_type(prop: dict[str, _GoJson]) -> tuple[str, bool]:
    """(typespec, lossy) of one property schema, trying enum, type, anyOf/oneOf, then fallbacks."""
    enum = prop.get("enum")
    if isinstance(enum, list):
        literals = [_scalar_literal(value) for value in enum]
        if literals and len(literals) <= _MAX_INLINE_ENUM and all(lit is not None for lit in literals):
            return "enum[" + "|".join(_quote_atom(lit) for lit in literals if lit is not None) + "]", False
        # Too long (or composite): the values are dropped and the base type is marked lossy.
        return _declared_type(prop) or "any", True

    declared = _declared_type(prop)
    if declared is not None:
        if declared in _SCALAR_TYPESPECS:
            return declared, False
        if declared.startswith("["):
            return declared, declared in ("[obj]", "[any]")
        if "|" in declared:
            return declared, any(member in ("obj", "any") for member in declared.split("|"))
        return declared, True  # obj, any

    for key in ("anyOf", "oneOf"):
        subschemas = prop.get(key)
        if isinstance(subschemas, list):
            return _subschema_union(subschemas)

    # $ref and an untyped schema with properties both read as an (opaque) object.
    if "$ref" in prop or "properties" in prop:
        return "obj", True
    return "any", True


def _render_param(name: str, prop: _GoJson, required: bool) -> tuple[str, bool]:
    if isinstance(prop, dict):
        typespec, lossy = _property_type(prop)
        default = "" if required else _default_literal(prop, typespec)
    else:
        # A required name missing from properties (or a boolean schema) still renders: never dropped.
        typespec, lossy, default = "any", True, ""
    text = _quote_atom(name) + ("*" if required else "") + ("~" if lossy else "") + ":" + typespec
    return (text + "=" + default if default else text), lossy


def _default_literal(prop: dict[str, _GoJson], typespec: str) -> str:
    # Only bare scalars carry defaults, even when lossy (a collapsed long enum keeps its default).
    if typespec not in _SCALAR_TYPESPECS or "default" not in prop:
        return ""
    literal = _scalar_literal(prop["default"])
    if literal is None or len(literal) > _MAX_DEFAULT_RUNES:
        return ""
    return _quote_atom(literal)


def _signature(schema: object) -> tuple[str, bool]:
    """The parenthesised parameter list and mcpproxy's lossy flag."""
    try:
        tree = _to_go_json(schema)
    except _NotJson:
        return "(~)", True  # Go could not even have decoded it: the unparseable fallback.
    if tree is None:
        tree = {}  # JSON null (or no stored schema) means "no declared params", not unparseable.
    if not isinstance(tree, dict):
        return "(~)", True
    declared = tree.get("type")
    if isinstance(declared, str) and declared != "object":
        return "(~)", True

    raw_properties = tree.get("properties")
    properties = raw_properties if isinstance(raw_properties, dict) else {}
    raw_required = tree.get("required")
    required: list[str] = []
    if isinstance(raw_required, list):
        for item in raw_required:
            if isinstance(item, str) and item not in required:
                required.append(item)
    optional = sorted(name for name in properties if name not in required)

    parts: list[str] = []
    lossy = False
    # Required parameters first, in the schema's required order; then optionals sorted by name.
    for name, is_required in [(n, True) for n in required] + [(n, False) for n in optional]:
        text, param_lossy = _render_param(name, properties.get(name), is_required)
        parts.append(text)
        lossy = lossy or param_lossy
    return "(" + ", ".join(parts) + ")", lossy


def mcpproxy_signature(schema: object) -> str:
    """Return mcpproxy's compact signature of an input schema, e.g. ``(path*:str, depth:int=2)``.

    ``schema`` is the decoded JSON input schema. Grammar: ``name`` then ``*`` when required and ``~``
    when the type was collapsed, ``:typespec``, and ``=default`` for short optional scalar defaults;
    ``()`` for no parameters (or ``None``), ``(~)`` when the value is not an object schema.
    """
    return _signature(schema)[0]


def mcpproxy_signature_lossy(schema: object) -> bool:
    """Return mcpproxy's own lossy flag for ``schema`` (true iff some parameter collapsed under ``~``).

    It differs from ``"~" in mcpproxy_signature(schema)`` only when a quoted atom itself contains ``~``.
    """
    return _signature(schema)[1]


# --------------------------------------------------------------------------------------------------------
# tools/list entries
# --------------------------------------------------------------------------------------------------------


def _full_input_schema(input_schema: object) -> str:
    """The full-mode inputSchema: only ``properties`` and ``required`` survive from upstream."""
    try:
        tree = _to_go_json(input_schema)
    except _NotJson:
        tree = None  # undecodable: mcpproxy keeps NewTool's empty object schema
    properties: _GoJson = {}
    required: list[_GoJson] = []
    if isinstance(tree, dict):
        raw_properties = tree.get("properties")
        if isinstance(raw_properties, dict):
            properties = raw_properties
        raw_required = tree.get("required")
        if isinstance(raw_required, list):
            # String members only, kept in order, duplicates NOT removed (unlike the signature).
            required = [item for item in raw_required if isinstance(item, str)]
    # "type" is always "object" here, whatever upstream declared; "$defs" etc. are dropped.
    return '{"properties":' + _encode(properties) + ',"required":' + _encode(required) + ',"type":"object"}'


def _entry(display_name: str, description: str, input_schema_json: str) -> str:
    # mcp-go builds the tool as a map, so top-level keys come out sorted; description is never empty
    # here because of the "[server] " prefix.
    return (
        '{"annotations":'
        + _DEFAULT_ANNOTATIONS
        + ',"description":'
        + _encode_string(description)
        + ',"inputSchema":'
        + input_schema_json
        + ',"name":'
        + _encode_string(display_name)
        + "}"
    )


def render_full_entry(server: str, name: str, description: str, input_schema: object) -> str:
    """Return the exact JSON text of one full-mode direct ``tools/list`` entry as mcpproxy serves it.

    Name ``<server>__<tool>``, description ``[<server>] <description>``, default annotations, and an
    inputSchema reduced to ``properties``/``required``/``type`` (``required`` is ``[]`` when absent).
    """
    return _entry(
        server + _NAME_SEPARATOR + name, f"[{server}] {description}", _full_input_schema(input_schema)
    )


def render_deferred_entry(server: str, name: str, description: str, input_schema: object) -> str:
    """Return the exact JSON text of one deferred-mode direct ``tools/list`` entry as mcpproxy serves it.

    Same name and annotations as the full entry; the description gains a new line holding the bare tool
    name and its compact signature, and the input schema is the placeholder ``{"type":"object"}``.
    """
    rendered = f"[{server}] {description}\n{name}{mcpproxy_signature(input_schema)}"
    return _entry(server + _NAME_SEPARATOR + name, rendered, _DEFERRED_INPUT_SCHEMA)
