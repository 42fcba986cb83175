"""The shortcut past jsonschema (foldgate.serve.quick_check): it says valid only for arguments every
draft's validator finds valid, it takes the plain schemas most tools have, and anything else (or any
doubt) goes to the full validator, which words the errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft4Validator, Draft7Validator, Draft202012Validator

from foldgate.serve.quick_check import MAX_KEYS, quick_check
from foldgate.serve.validation import ValidatorCache

TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
names = st.sampled_from(["a", "b", "c", "message", "n"])
type_spec = st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)
property_schema = st.just(True) | st.fixed_dictionaries(
    {}, optional={"type": type_spec, "description": st.text(max_size=5), "default": json_values}
)
schemas = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={
        "properties": st.dictionaries(names, property_schema, max_size=4),
        "required": st.lists(names, max_size=3),
        "additionalProperties": st.booleans(),
        "title": st.text(max_size=5),
        "$schema": st.sampled_from(
            ["http://json-schema.org/draft-04/schema#", "https://json-schema.org/draft/2020-12/schema"]
        ),
    },
)
arguments = st.dictionaries(names, json_values, max_size=4) | json_values


@settings(max_examples=400, deadline=None)
@given(schemas, arguments)
def test_valid_by_the_shortcut_is_valid_under_every_draft(schema: dict[str, Any], args: Any) -> None:
    check = quick_check(schema)
    assert check is not None  # every schema drawn here is in the subset
    if check(args):
        for cls in (Draft4Validator, Draft7Validator, Draft202012Validator):
            assert cls(schema).is_valid(args), (cls.__name__, schema, args)


def test_plain_valid_arguments_take_the_shortcut() -> None:
    schema = {
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "what to echo"},
            "n": {"type": "integer"},
        },
        "required": ["message"],
        "additionalProperties": False,
    }
    check = quick_check(schema)
    assert check is not None
    assert check({"message": "hi"})
    assert check({"message": "hi", "n": 3})
    # Each goes to the validator (invalid, or valid only under later drafts: 3.0 is an integer there).
    arg: Any
    for arg in (
        {},
        {"message": 1},
        {"message": "hi", "n": True},
        {"message": "hi", "x": 1},
        {"message": "hi", "n": 3.0},
        [],
    ):
        assert not check(arg)
    anything = quick_check({"type": "object"})
    assert anything is not None
    assert anything({f"k{i}": i for i in range(MAX_KEYS)})
    assert not anything({f"k{i}": i for i in range(MAX_KEYS + 1)})  # too many keys to look at inline


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}},
        {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"a": False}},
        {"type": "object", "properties": {"a": {"type": "strin"}}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "array"},
        {"type": "object", "required": "a"},
        ["not", "a", "schema"],
    ],
)
def test_anything_outside_the_subset_goes_to_the_validator(schema: Any) -> None:
    assert quick_check(schema) is None


async def test_the_validator_cache_answers_valid_arguments_by_the_shortcut_and_words_the_rest() -> None:
    schema = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
    cache = ValidatorCache()
    assert await cache.errors_async("k", schema, {"message": "hi"}) == []
    errors = await cache.errors_async("k", schema, {"message": 7})
    assert errors
    assert "7 is not of type 'string'" in errors[0]
    assert await cache.errors_async("k", schema, {}) == ["'message' is a required property"]
