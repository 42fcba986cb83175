"""The compact signature compiler: the brief's 16 vectors and grammar v2's inline-object vectors, our
extensions, hostile input, and soundness (recursive through inline objects)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from foldgate.model.signature import compile_signature, quote_token
from tests.helpers import parse_params, soundness_problems

S = {"type": "string"}
OBJ = "object"


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": OBJ, "properties": props, **extra}
    if required is not None:
        schema["required"] = required
    return schema


VECTORS: list[tuple[Any, str]] = [
    ({"type": "object", "properties": {}}, "()"),
    (
        obj(
            {
                "origin": S,
                "ttl": {"type": "integer", "default": 3600},
                "certificate_id": S,
                "custom_domain": S,
            },
            ["origin"],
        ),
        "(origin*:str, certificate_id:str, custom_domain:str, ttl:int=3600)",
    ),
    # Grammar v2 replaces this vector: a small object is written inline (was `account*~:obj`).
    (
        obj({"name": S, "account": {"type": "object", "properties": {"id": S}}}, ["name", "account"]),
        "(name*:str, account*:{id:str})",
    ),
    (obj({"type": {"enum": ["full", "partial"]}}, ["type"]), "(type*:enum[full|partial])"),
    (
        obj({"region": {"type": "string", "enum": [f"r{i}" for i in range(9)]}}, ["region"]),
        "(region*~:str)",
    ),
    (
        obj(
            {"tags": {"type": "array", "items": S}, "filters": {"type": "array", "items": {"type": "object"}}}
        ),
        "(filters~:[obj], tags:[str])",
    ),
    (obj({"path": S}, ["path", "token"]), "(path*:str, token*~:any)"),
    (obj({"filter:key": {"enum": ["a|b", "c"]}}, ["filter:key"]), '("filter:key"*:enum["a|b"|c])'),
    (obj({"id": {"type": ["string", "integer"]}}, ["id"]), "(id*:str|int)"),
    (obj({"note": {"type": ["string", "null"]}}), "(note:str)"),
    ('{"type": "object", "properties": ', "(~)"),
    (obj({"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}), "(a:str)"),
    (obj({"a": {"$ref": "#/$defs/X"}}, ["a"]), "(a*~:obj)"),
    (obj({"a": {"type": "array"}}), "(a~:[any])"),
    (obj({"a": {"allOf": [{"type": "string"}]}}), "(a~:any)"),
    (obj({"dry_run": {"type": "boolean", "default": False}}), "(dry_run:bool=false)"),
]


@pytest.mark.parametrize(("schema", "expected"), VECTORS, ids=[f"vector{i + 1}" for i in range(len(VECTORS))])
def test_brief_vectors(schema: Any, expected: str) -> None:
    sig = compile_signature(schema)
    assert sig.params == expected
    assert sig.lossy == ("~" in expected)


INT = {"type": "integer"}
B = {"type": "boolean"}

V2_VECTORS: list[tuple[Any, str]] = [
    (obj({"account": obj({"id": INT, "name": S}, ["id"])}, ["account"]), "(account*:{id*:int, name:str})"),
    (
        obj(
            {
                "filters": {
                    "type": "array",
                    "items": obj(
                        {
                            "field": S,
                            "op": {"type": "string", "enum": ["eq", "ne"]},
                            "value": {"type": ["string", "number"]},
                        },
                        ["field", "value"],
                    ),
                }
            }
        ),
        "(filters:[{field*:str, value*:str|num, op:enum[eq|ne]}])",
    ),
    (obj({"x": obj({f"m{i}": S for i in range(7)})}), "(x~:obj)"),
    (obj({"x": obj({"a": {"$ref": "#/$defs/A"}})}), "(x~:obj)"),
    (obj({"x": obj({"a": S}, None, anyOf=[{"required": ["a"]}])}), "(x~:any)"),
    (obj({"x": obj({"a:b": S})}), '(x:{"a:b":str})'),
    (obj({"outer": obj({"inner": obj({"k": S})})}), "(outer:{inner:{k:str}})"),
    (obj({"outer": obj({"inner": obj({"k": obj({"z": S})})})}), "(outer~:obj)"),
    (obj({"o": obj({"ttl": {"type": "integer", "default": 30}})}), "(o:{ttl:int=30})"),
    (obj({"o": obj({"a": B}, None, additionalProperties=False)}, ["o"]), "(o*:{a:bool})"),
    (obj({"o": {"properties": {"a": S}}}), "(o~:obj)"),
    (
        obj(
            {"tags": {"type": "array", "items": S}, "filters": {"type": "array", "items": {"type": "object"}}}
        ),
        "(filters~:[obj], tags:[str])",
    ),
]


@pytest.mark.parametrize(
    ("schema", "expected"), V2_VECTORS, ids=[f"v2_{i + 1}" for i in range(len(V2_VECTORS))]
)
def test_grammar_v2_vectors(schema: Any, expected: str) -> None:
    sig = compile_signature(schema)
    assert sig.params == expected
    assert sig.lossy == ("~" in expected)
    if not sig.lossy:
        assert soundness_problems(schema, sig.params) == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # `{` and `}` force quotes, in names and in enum values, so readers can split on braces.
        (obj({"o": obj({"a{b}": S})}), '(o:{"a{b}":str})'),
        (obj({"{": {"enum": ["}", "x"]}}), '("{":enum["}"|x])'),
        # Nullable members drop null like params do; string enums and consts stay enums.
        (
            obj({"o": obj({"n": {"type": ["string", "null"]}, "m": {"enum": ["a", None]}})}),
            "(o:{m:enum[a], n:str})",
        ),
        (obj({"o": obj({"k": {"const": "v"}}, ["k"])}, ["o"]), "(o*:{k*:enum[v]})"),
        # An enum of numbers inside braces: lossy (an unquoted 4 reads as text to some parsers).
        (obj({"o": obj({"kind": {"type": "number", "enum": [4, 5]}}, ["kind"])}), "(o~:obj)"),
        (obj({"o": obj({"k": {"type": "array", "items": {"enum": [1, 2]}}})}), "(o~:obj)"),
        # A required name with no property, at a nested level: the object stays lossy.
        (obj({"o": obj({"a": S}, ["a", "b"])}), "(o~:obj)"),
        (obj({"xs": {"type": "array", "items": obj({"a": S}, ["b"])}}), "(xs~:[obj])"),
        # additionalProperties never matters: the listing names every declared member.
        (obj({"o": obj({"a": S}, None, additionalProperties={"type": "integer"})}), "(o:{a:str})"),
        # min/maxProperties: inline only when both the required-only and the full object satisfy them.
        (obj({"o": obj({"a": S, "b": S}, None, minProperties=1)}), "(o~:obj)"),
        (obj({"o": obj({"a": S, "b": S}, ["a"], minProperties=1, maxProperties=2)}), "(o:{a*:str, b:str})"),
        (obj({"o": obj({"a": S, "b": S}, None, maxProperties=1)}), "(o~:obj)"),
        # A `type` list with object: null is dropped; with another type it would be a union: lossy.
        (obj({"o": {"type": ["object", "null"], "properties": {"a": S}}}), "(o:{a:str})"),
        (obj({"o": {"type": ["object", "string"], "properties": {"a": S}}}), "(o~:obj)"),
        # Under anyOf/oneOf an object is never inlined (readers match `{...}` to the param's own schema);
        # nor are the items of a nullable array.
        (obj({"o": {"anyOf": [obj({"a": S}), {"type": "null"}]}}), "(o~:obj)"),
        (obj({"xs": {"type": ["array", "null"], "items": obj({"a": S})}}), "(xs~:[obj])"),
        (obj({"o": {"anyOf": [obj({"a": S}), S]}}), "(o~:obj)"),
        # Arrays of inline objects: item constraints are value-level; an array of arrays stays lossy.
        (
            obj({"xs": {"type": "array", "items": obj({"a": S}, ["a"]), "minItems": 1, "uniqueItems": True}}),
            "(xs:[{a*:str}])",
        ),
        (obj({"xs": {"type": "array", "items": {"type": "array", "items": obj({"a": S})}}}), "(xs~:[[obj]])"),
        (obj({"xs": {"type": "array", "items": obj({"a": S}), "contains": obj({"a": S})}}), "(xs~:any)"),
        # Structural keywords at the object's own level keep it lossy.
        (obj({"o": obj({"a": S}, None, patternProperties={"^x": S})}), "(o~:any)"),
        (obj({"o": obj({"a": S}, None, unevaluatedProperties=False)}), "(o~:obj)"),
        (obj({"o": obj({"a": S}, None, propertyNames={"maxLength": 3})}), "(o~:any)"),
        (obj({"o": {"type": "object", "properties": {}}}), "(o~:obj)"),
        # Inline only pays where it makes the tool flat: otherwise the shorter v1 form is kept.
        (obj({"o": obj({"a": S}), "free": {"type": "object"}}), "(free~:obj, o~:obj)"),
    ],
)
def test_inline_objects_edges(schema: Any, expected: str) -> None:
    sig = compile_signature(schema)
    assert sig.params == expected
    if not sig.lossy:
        assert soundness_problems(schema, sig.params) == []


def test_grammar_v1_on_request() -> None:
    schema = obj({"name": S, "account": obj({"id": S})}, ["name", "account"])
    assert compile_signature(schema, inline=False).params == "(name*:str, account*~:obj)"
    assert compile_signature(schema).params == "(name*:str, account*:{id:str})"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # Arrays of short enums stay flat and sound (mcpproxy wrote [str], which lets invalid values through).
        (obj({"labels": {"type": "array", "items": {"enum": ["bug", "docs"]}}}), "(labels:[enum[bug|docs]])"),
        # anyOf of consts becomes one enum; oneOf of disjoint types a union.
        (obj({"m": {"anyOf": [{"const": "a"}, {"const": "b"}]}}), "(m:enum[a|b])"),
        (obj({"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}), "(v:str|int)"),
        # oneOf whose members overlap (integer is a number) cannot be satisfied by every value: lossy.
        (obj({"v": {"oneOf": [{"type": "number"}, {"type": "integer"}]}}), "(v~:any)"),
        (obj({"v": {"oneOf": [{"const": "a"}, {"type": "string"}]}}), "(v~:any)"),
        # A string enum value that reads as a number is quoted, so "1" and 1 stay distinct.
        (obj({"n": {"type": "string", "enum": ["1", "2"]}}), '(n:enum["1"|"2"])'),
        (obj({"n": {"type": "integer", "enum": [1, 2]}}), "(n:enum[1|2])"),
        # Values the declared type rejects are dropped; none left is lossy.
        (obj({"n": {"type": "string", "enum": ["a", 1]}}), "(n:enum[a])"),
        (obj({"n": {"type": "string", "enum": [1, 2]}}), "(n~:str)"),
        # Top-level constraints that no single param carries: a trailing bare ~.
        (obj({"a": S, "b": S}, None, anyOf=[{"required": ["a"]}, {"required": ["b"]}]), "(a:str, b:str, ~)"),
        ({"type": "string"}, "(~)"),
        ({"properties": {"a": S}, "required": ["a"]}, "(a*:str)"),
        (obj({"a": S}, ["a", "a"]), "(a*:str)"),
        (obj({"a": S}, None, additionalProperties=False), "(a:str)"),
        (obj({"d": {"type": "string", "default": "x" * 21}}), "(d:str)"),
        (obj({"d": {"type": "string", "default": "a b"}}), '(d:str="a b")'),
        (obj({"x": {"type": ["null"]}}), "(x~:any)"),
        (
            obj({"x": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}}),
            "(x:[[int]])",
        ),
    ],
)
def test_extensions_and_edges(schema: Any, expected: str) -> None:
    assert compile_signature(schema).params == expected


def test_tilde_inside_quotes_is_escaped_so_only_bare_tilde_means_lossy() -> None:
    sig = compile_signature(obj({"a~b": S}, ["a~b"]))
    assert sig.params == '("a\\u007Eb"*:str)'
    assert not sig.lossy
    assert parse_params(sig.params)[0][0] == "a~b"


@pytest.mark.parametrize(
    "text", ["", "a b", "x,y", "k:v", "a|b", "a=b", "(", ")", "*", "~", "[", "]", '"', "tab\there", "ü"]
)
def test_quote_token_round_trips(text: str) -> None:
    quoted = quote_token(text)
    if quoted.startswith('"'):
        assert json.loads(quoted) == text
        assert "~" not in quoted
    else:
        assert quoted == text == "ü"


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "array", "items": node}
    return node


HOSTILE: list[Any] = [
    None,
    42,
    "not json",
    b"\xff\xfe",
    [],
    {"type": 5},
    {"type": "object", "properties": ["a", "b"]},
    {"type": "object", "properties": {"a": 5, "b": None, "c": [1], "d": True, "e": False}},
    {"type": "object", "properties": {1: S, 2.5: {"type": "integer"}}},
    {"type": "object", "required": "a"},
    {"type": "object", "required": [1, None, "x"]},
    {"type": "object", "properties": {"a": {"$ref": "#"}}, "$defs": {"X": {"$ref": "#/$defs/X"}}},
    {"type": "object", "properties": {"a": {"type": "array", "items": [S, S]}}},
    {"type": "object", "properties": {"a": {"enum": "abc"}}},
    {"type": "object", "properties": {"a": {"enum": [{"x": 1}, [1]]}}},
    {"type": "object", "properties": {"a": {"anyOf": "x"}}},
    {"type": "object", "properties": {"a": {"oneOf": []}}},
    {"type": "object", "properties": {"a": {"type": "number", "default": float("nan")}}},
    {"type": "object", "properties": {"名前": S, "emoji 🎉": S}, "required": ["名前"]},
    {"type": "object", "properties": {"a": _deep(500)}},
]


@pytest.mark.parametrize("schema", HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_hostile_schemas_never_raise_and_stay_sound(schema: Any) -> None:
    sig = compile_signature(schema)
    assert sig.params.startswith("(")
    assert sig.params.endswith(")")
    if isinstance(schema, dict) and not sig.lossy:
        assert soundness_problems(schema, sig.params) == []


def test_recursive_python_object_is_lossy() -> None:
    node: dict[str, Any] = {"type": "object"}
    node["properties"] = {"self": node}
    sig = compile_signature(node)
    assert sig.lossy


def test_80kb_schema_compiles_quickly_and_lossy_where_it_must() -> None:
    props = {f"p{i}": {"type": "object", "properties": {"x": {"type": "string", "description": "d" * 60}}}
             for i in range(800)}  # fmt: skip
    props["free"] = {"type": "object"}
    schema = obj(props, ["p0"])
    assert len(json.dumps(schema)) > 80_000
    sig = compile_signature(schema)
    assert sig.lossy
    # One free-form object keeps the tool lossy, so the small objects keep their short v1 form too.
    assert sig.params.startswith("(p0*~:obj, free~:obj, ")


# --- property: for any schema the generator makes, a signature without ~ is sound -------------------

scalars = st.sampled_from(["string", "integer", "number", "boolean"])
literals = st.one_of(
    st.text(max_size=6), st.integers(-5, 5), st.booleans(), st.none(), st.sampled_from(["1", "true", "a b"])
)


names = st.sampled_from(["a", "b", "c", "x y", "k:v", "t~", "", "1", "{", "a}"])


def _leaf() -> st.SearchStrategy[Any]:
    return st.one_of(
        scalars.map(lambda t: {"type": t}),
        st.lists(
            st.sampled_from(["string", "integer", "number", "boolean", "null"]), min_size=1, max_size=3
        ).map(lambda ts: {"type": ts}),
        st.lists(literals, min_size=0, max_size=7).map(lambda vs: {"enum": vs}),
        st.tuples(scalars, st.lists(literals, max_size=6)).map(lambda p: {"type": p[0], "enum": p[1]}),
        literals.map(lambda v: {"const": v}),
        st.just({"type": "object"}),
        st.just({"$ref": "#/$defs/x"}),
        st.just({}),
        st.booleans(),
        st.tuples(scalars, literals).map(lambda p: {"type": p[0], "default": p[1]}),
    )


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        children.map(lambda c: {"type": "array", "items": c}),
        st.tuples(
            st.dictionaries(names, children, min_size=1, max_size=4),
            st.lists(names, max_size=3),
            st.sampled_from(
                [{}, {"additionalProperties": False}, {"minProperties": 1}, {"type": ["object", "null"]}]
            ),
        ).map(lambda p: {"type": "object", "properties": p[0], "required": p[1], **p[2]}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"anyOf": cs}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"oneOf": cs}),
        st.lists(children, min_size=1, max_size=2).map(lambda cs: {"allOf": cs}),
        children.map(lambda c: {"not": c}),
    )


prop_schemas = st.recursive(_leaf(), _extend, max_leaves=8)


@st.composite
def object_schemas(draw: st.DrawFn) -> dict[str, Any]:
    props = draw(st.dictionaries(names, prop_schemas, max_size=4))
    required = draw(st.lists(names, max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    if draw(st.integers(0, 5)) == 0:
        schema["anyOf"] = [{"required": [n]} for n in list(props)[:2]] or [{}]
    return schema


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(object_schemas())
def test_property_non_lossy_signatures_are_sound(schema: dict[str, Any]) -> None:
    sig = compile_signature(schema)
    if not sig.lossy:
        assert soundness_problems(schema, sig.params) == []


@settings(max_examples=200, deadline=None)
@given(object_schemas())
def test_property_deterministic_and_key_order_independent(schema: dict[str, Any]) -> None:
    reordered = json.loads(json.dumps(schema, sort_keys=True))
    assert compile_signature(schema) == compile_signature(reordered)


# --- property: inline objects, drawn so that many are flat, are sound at every level ---------------

flat_leaves = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": ["string", "null"]},
        {"enum": ["x", "1", "a b", "}"]},
        {"type": "integer", "enum": [1, 2]},
        {"const": "v"},
        {"type": "array", "items": {"type": "string"}},
        {"type": "string", "default": "}"},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"type": ["string", "integer"]},
    ]
)
object_extras = st.sampled_from(
    [
        {},
        {"additionalProperties": False},
        {"additionalProperties": {"type": "integer"}},
        {"minProperties": 1},
        {"maxProperties": 2},
        {"type": ["object", "null"]},
        {"patternProperties": {"^x": {"type": "string"}}},
    ]
)


def _inline_friendly(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    members = st.dictionaries(names, children, min_size=1, max_size=7)
    return st.one_of(
        st.tuples(members, st.lists(names, max_size=3), object_extras).map(
            lambda p: {"type": "object", "properties": p[0], "required": p[1], **p[2]}
        ),
        children.map(lambda c: {"type": "array", "items": c}),
    )


inline_props = st.recursive(flat_leaves, _inline_friendly, max_leaves=10)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(names, inline_props, min_size=1, max_size=3), st.lists(names, max_size=3))
def test_property_inline_objects_are_sound_at_every_level(props: dict[str, Any], required: list[str]) -> None:
    schema = {"type": "object", "properties": props, "required": required}
    sig = compile_signature(schema)
    if not sig.lossy:
        assert soundness_problems(schema, sig.params) == []
    else:
        assert sig == compile_signature(schema, inline=False)  # a lossy tool keeps its v1 form
