"""Brief copies of arguments: the same JSON values to jsonschema, but objects and arrays quote only
a few members in an error message, so messages cost nothing like the arguments' size."""

from __future__ import annotations

from typing import Any

from foldgate.serve.brief import brief, brief_copy


def test_a_brief_copy_is_equal_to_the_arguments_and_keeps_their_order() -> None:
    value: Any = {"b": [1, {"c": [True, None, 1.5, "s"]}], "a": {"d": []}}
    copied = brief_copy(value)
    assert copied == value
    assert list(copied) == ["b", "a"]
    assert isinstance(copied, dict)
    assert isinstance(copied["b"], list)
    assert isinstance(copied["b"][1], dict)
    assert brief_copy("text") == "text"
    assert brief_copy(None) is None


def test_a_brief_copy_of_deep_arguments_needs_no_recursion() -> None:
    value: Any = []
    for _ in range(100_000):
        value = [value]
    copied = brief_copy(value)
    for _ in range(100_000):
        copied = copied[0]
    assert copied == []


def test_nested_values_quote_a_few_members() -> None:
    copied = brief_copy({"x": [list(range(1000))] * 3, "y": {str(i): i for i in range(1000)}})
    assert len(repr(copied)) < 200
    assert len(brief("s" * 10_000)) < 80
