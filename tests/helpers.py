"""Test helpers: read a compact signature back and build the call an agent would build from it.

An independent reader of the grammar (v2: inline objects ``{a*:str}`` and ``[{...}]`` included), so
the compiler's output is checked by code that does not share its walker.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

VALUE_KEYWORDS = {
    "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "contentEncoding", "contentMediaType",
}  # fmt: skip
NAME_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}


def split_top(text: str, sep: str) -> list[str]:
    """Split on sep outside double quotes, brackets and braces."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quoted, i = 0, False, 0
    while i < len(text):
        c = text[i]
        if quoted:
            cur.append(c)
            if c == "\\":
                cur.append(text[i + 1])
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
            cur.append(c)
        elif c in "[({":
            depth += 1
            cur.append(c)
        elif c in "])}":
            depth -= 1
            cur.append(c)
        elif depth == 0 and text.startswith(sep, i):
            parts.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _head(raw: str) -> tuple[str, str]:
    if raw.startswith('"'):
        end = 1
        while raw[end] != '"':
            end += 2 if raw[end] == "\\" else 1
        colon = raw.index(":", end)
    else:
        colon = raw.index(":")
    return raw[:colon], raw[colon + 1 :]


def parse_params(params: str) -> list[tuple[str, bool, bool, str]]:
    """(name, required, lossy, type) per param of a bare parameter list."""
    assert params.startswith("("), params
    assert params.endswith(")"), params
    return parse_members(params[1:-1])


def parse_members(inner: str) -> list[tuple[str, bool, bool, str]]:
    """(name, required, lossy, type) per param of a parameter list's or an inline object's inside."""
    if not inner:
        return []
    out = []
    for raw in split_top(inner, ", "):
        if raw == "~":
            continue
        head, rest = _head(raw)
        lossy = head.endswith("~")
        head = head.removesuffix("~")
        required = head.endswith("*")
        head = head.removesuffix("*")
        name = json.loads(head) if head.startswith('"') else head
        typ = split_top(rest, "=")[0]
        out.append((name, required, lossy, typ))
    return out


def literal(tok: str) -> Any:
    """A literal as an agent reads it: quoted → string, else JSON scalar when it parses, else string."""
    if tok.startswith('"'):
        return json.loads(tok)
    try:
        return json.loads(tok)
    except ValueError:
        return tok


def example_value(typ: str) -> Any:
    """The value an agent reading only the type would send."""
    if typ.startswith("enum[") and typ.endswith("]") and len(split_top(typ, "|")) == 1:
        return literal(split_top(typ[5:-1], "|")[0])
    members = split_top(typ, "|")
    if len(members) > 1:
        return example_value(members[0])
    if typ.startswith("{"):
        return {name: example_value(t) for name, req, _, t in parse_members(typ[1:-1]) if req}
    if typ.startswith("["):
        return [example_value(typ[1:-1])]
    return {"str": "x", "int": 1, "num": 1.5, "bool": True}[typ]


def full_example(typ: str) -> Any:
    """Like example_value, but an inline object carries every member, not only the required ones."""
    if typ.startswith("{"):
        return {name: full_example(t) for name, _, _, t in parse_members(typ[1:-1])}
    if typ.startswith("[{"):
        return [full_example(typ[1:-1])]
    return example_value(typ)


def strip_value_keywords(node: Any) -> Any:
    """Drop value-level keywords (the signature does not carry them), keeping property names."""
    if isinstance(node, dict):
        return {
            k: ({n: strip_value_keywords(s) for n, s in v.items()} if k in NAME_MAPS and isinstance(v, dict)
                else strip_value_keywords(v))
            for k, v in node.items()
            if k not in VALUE_KEYWORDS
        }  # fmt: skip
    if isinstance(node, list):
        return [strip_value_keywords(v) for v in node]
    return node


def soundness_problems(schema: Any, params: str) -> list[str]:
    """Why a non-lossy signature would mislead an agent (empty when it is sound)."""
    return _object_problems(strip_value_keywords(schema), parse_params(params), "")


def _object_problems(schema: Any, parsed: list[tuple[str, bool, bool, str]], where: str) -> list[str]:
    """Checks one object level (the arguments or an inline object), then each inline member's own."""
    validator = Draft202012Validator(schema)
    props = schema.get("properties") or {}
    required = [r for r in dict.fromkeys(schema.get("required") or []) if isinstance(r, str)]
    problems = []
    if {p[0] for p in parsed} != set(props) | set(required):
        problems.append(f"{where}listed names differ from the schema")
    if [p[0] for p in parsed if p[1]] != required:
        problems.append(f"{where}required marks differ from the schema")
    req_args = {name: example_value(typ) for name, req, _, typ in parsed if req}
    all_args = {name: full_example(typ) for name, _, _, typ in parsed}
    for label, args in (("required-only", req_args), ("all-params", all_args)):
        if not validator.is_valid(args):
            problems.append(
                f"{where}{label} call {args!r} invalid: {next(validator.iter_errors(args)).message}"
            )
    for name in req_args:
        if validator.is_valid({k: v for k, v in req_args.items() if k != name}):
            problems.append(f"{where}dropping required {name} still validates")
    for name, _, _, typ in parsed:
        sub = props.get(name)
        if typ.startswith("{"):
            if not isinstance(sub, dict):
                problems.append(f"{where}{name}: inline object without an object schema")
            else:
                problems += _object_problems(sub, parse_members(typ[1:-1]), f"{where}{name}.")
        elif typ.startswith("[{"):
            if not isinstance(sub, dict) or not isinstance(sub.get("items"), dict):
                problems.append(f"{where}{name}: inline array of objects without object items")
            else:
                problems += _object_problems(sub["items"], parse_members(typ[2:-2]), f"{where}{name}[].")
    return problems


def error_of(result: dict[str, Any]) -> dict[str, Any]:
    """The error object of a gateway-made error result, checking it is client-safe: ``isError`` with
    the object as JSON text only, never as ``structuredContent`` (which clients validate against the
    tool's output schema)."""
    assert result.get("isError") is True, result
    assert "structuredContent" not in result, result
    [content] = result["content"]
    body: dict[str, Any] = json.loads(content["text"])
    return body
