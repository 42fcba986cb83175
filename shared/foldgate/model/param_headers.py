"""SEP-2243 custom headers: a tool argument whose schema property carries ``x-mcp-header: <Name>`` is
mirrored by a 2026-07-28 client in an ``Mcp-Param-<Name>`` HTTP header, so proxies can route on it
without reading the body.

Which arguments map to which header is read from a tool's input schema once, at index time
(:func:`header_params`, kept on the catalog's ``IndexedTool``); the request path only compares the
request's headers with its arguments (:func:`param_header_mismatch`) and builds the headers a call
to an upstream carries (:func:`param_headers`), never walking a schema.

A declaration counts only where a client honours it: on a property reached from the root through
``properties`` alone, naming an RFC 9110 token, on a string, integer, number or boolean property,
unique (case-insensitively) in the schema. A schema with any other ``x-mcp-header`` is invalid as a
whole (conforming clients drop such a tool and send no headers): nothing of it is checked.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, NamedTuple

__all__ = [
    "HeaderParam",
    "header_params",
    "param_header_mismatch",
    "param_headers",
    "params_from_doc",
    "params_to_doc",
]

X_MCP_HEADER: Final = "x-mcp-header"
PREFIX: Final = "Mcp-Param-"
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TYPES: Final = frozenset({"string", "integer", "number", "boolean"})
_SENTINEL: Final = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)
_SAFE: Final = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
# Schema keywords whose values are subschemas (JSON Schema 2020-12 and draft-07): a declaration below
# one of them is off the pure ``properties`` chain.
_ONE: Final = frozenset({
    "additionalProperties", "items", "contains", "not", "if", "then", "else", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties", "additionalItems",
})  # fmt: skip
_MANY: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_NAMED: Final = frozenset({"$defs", "definitions", "patternProperties", "dependentSchemas", "dependencies"})
# A hostile schema is walked this far, no further (then it declares nothing: fail open, as the SDK).
_MAX_NODES: Final = 20_000
_MAX_PARAMS: Final = 64
_MAX_HEADER_CHARS: Final = 8_192
_DECIMAL: Final = re.compile(r"-?[0-9]{1,400}(\.[0-9]{1,400})?")


class HeaderParam(NamedTuple):
    """One argument mirrored in a header: its path of property names, the header's name suffix, and
    the property's declared type."""

    path: tuple[str, ...]
    name: str
    type: str


def _positions(schema: Any) -> Iterator[tuple[tuple[str, ...] | None, dict[str, Any]]]:
    """Every subschema with its ``properties`` path from the root (None once off that chain)."""
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), schema)]
    seen = 0
    while stack:
        path, node = stack.pop()
        seen += 1
        if seen > _MAX_NODES:
            raise ValueError("schema too large")
        if not isinstance(node, dict):
            continue
        yield path, node
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                stack.extend(((*path, k) if path is not None else None, v) for k, v in value.items())
            elif key in _MANY and isinstance(value, list):
                stack.extend((None, v) for v in value)
            elif key in _ONE:
                stack.append((None, value))
            elif key in _NAMED and isinstance(value, dict):
                stack.extend((None, v) for v in value.values())


def header_params(schema: Any) -> tuple[HeaderParam, ...]:
    """The arguments of a tool with this input schema that clients mirror in ``Mcp-Param-*`` headers
    (see the module doc); empty when it declares none or declares any invalidly."""
    found: list[HeaderParam] = []
    names: set[str] = set()
    try:
        for path, node in _positions(schema):
            if X_MCP_HEADER not in node:
                continue
            name, kind = node[X_MCP_HEADER], node.get("type")
            if (
                not path
                or not isinstance(name, str)
                or not _TOKEN.fullmatch(name)
                or name.lower() in names
                or not isinstance(kind, str)
                or kind not in _TYPES
                or len(found) >= _MAX_PARAMS
            ):
                return ()
            names.add(name.lower())
            found.append(HeaderParam(path, name, kind))
    except ValueError:
        return ()
    return tuple(sorted(found))


def params_to_doc(params: tuple[HeaderParam, ...]) -> list[list[Any]]:
    """The stored form: ``[[path...], name, type]`` per argument."""
    return [[list(p.path), p.name, p.type] for p in params]


def params_from_doc(doc: Any) -> tuple[HeaderParam, ...]:
    """Inverse of :func:`params_to_doc` (anything malformed declares nothing)."""
    out: list[HeaderParam] = []
    for row in doc if isinstance(doc, list) else ():
        if isinstance(row, list) and len(row) == 3 and isinstance(row[0], list):
            out.append(HeaderParam(tuple(str(p) for p in row[0]), str(row[1]), str(row[2])))
    return tuple(out)


def _value(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = arguments
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _rendered(value: Any) -> str | None:
    """An argument as its header carries it (before encoding); None for what no header can carry."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        try:
            return str(value)
        except ValueError:  # an int beyond the interpreter's digit limit
            return None
    return None


def encode(value: str) -> str:
    """A header value for ``value``: as it is when it is visible ASCII without surrounding spaces (and
    does not look encoded), else ``=?base64?...?=`` of its UTF-8."""
    if _SAFE.fullmatch(value) and not _SENTINEL.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def decode(value: str) -> str | None:
    """A header value as the argument it mirrors: literal unless wrapped in ``=?base64?...?=``, whose
    content must be canonical, padded Base64 of UTF-8 (None otherwise: it matches nothing)."""
    wrapped = _SENTINEL.fullmatch(value)
    if wrapped is None:
        return value
    payload = wrapped.group(1)
    try:
        raw = base64.b64decode(payload, validate=True)
        if base64.b64encode(raw).decode("ascii") != payload:
            return None
        return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _matches(kind: str, value: Any, rendered: str, sent: str) -> bool:
    if sent == rendered:
        return True
    if kind in ("integer", "number") and not isinstance(value, bool) and isinstance(value, int | float):
        # 42 and 42.0 are one number (a client may render either): compared exactly, as decimals.
        if _DECIMAL.fullmatch(sent) is None:
            return False
        # Only a number sent in another spelling gets here: the module stays off the common path.
        from decimal import Decimal

        try:
            return Decimal(sent) == Decimal(rendered)
        except ArithmeticError:
            return False
    return False


def param_header_mismatch(
    params: tuple[HeaderParam, ...], arguments: Any, header: Callable[[str], list[str]]
) -> str | None:
    """Why a ``tools/call``'s ``Mcp-Param-*`` headers disagree with its arguments, or None when they
    agree. ``header`` gives every value of a (lower-case) header name. An argument that is present
    needs its header, equal after decoding; an absent (or null) one must have none."""
    args = arguments if isinstance(arguments, Mapping) else {}
    for param in params:
        header_name = f"{PREFIX}{param.name}"
        sent = header(header_name.lower())
        value = _value(args, param.path)
        argument = ".".join(param.path)
        if len(sent) > 1:
            return f"{header_name} is sent more than once"
        rendered = _rendered(value) if value is not None else None
        if not sent:
            if rendered is not None:
                return f"{header_name} is missing but the {argument!r} argument is present"
            continue
        raw = sent[0].strip(" \t")
        if value is None:
            return f"{header_name} is present but the {argument!r} argument is absent"
        decoded = decode(raw) if len(raw) <= _MAX_HEADER_CHARS else None
        if decoded is None:
            return f"{header_name} is not valid: a =?base64?...?= value must be padded Base64 of UTF-8"
        if rendered is None or not _matches(param.type, value, rendered, decoded):
            return f"{header_name} does not match the {argument!r} argument"
    return None


def param_headers(params: tuple[HeaderParam, ...], arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers a call with these arguments carries (an absent, null or
    non-scalar argument: no header)."""
    headers: dict[str, str] = {}
    for param in params:
        value = _value(arguments, param.path)
        rendered = _rendered(value) if value is not None else None
        if rendered is not None:
            headers[f"{PREFIX}{param.name}"] = encode(rendered)
    return headers
