"""uniqueItems in n·log n: the duplicates found are exactly those of JSON Schema's equality as jsonschema
defines it (``1 == 1.0``, ``true != 1``, object member order irrelevant, arrays and objects member by
member), on generated arrays full of near-duplicates."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema._utils import equal

from foldgate.serve.unique import duplicate_pair

# Few distinct scalars, so generated arrays are full of equal and nearly equal items.
SCALARS = st.sampled_from([None, True, False, 0, 1, 0.0, 1.0, 2, 2.5, "", "1", "a", "true"])
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=8,
)


def pairwise_duplicate(items: list[Any]) -> bool:
    """The definition: some two items are equal under jsonschema's ``equal``."""
    return any(equal(a, b) for a, b in itertools.combinations(items, 2))


@settings(max_examples=400, deadline=None)
@given(st.lists(VALUES, max_size=12))
def test_duplicates_are_exactly_those_of_jsonschemas_equality(items: list[Any]) -> None:
    pair = duplicate_pair(items)
    assert (pair is not None) == pairwise_duplicate(items)
    if pair is not None:
        first, second = pair
        assert first < second
        assert equal(items[first], items[second])


def test_the_equality_rules_of_json_schema() -> None:
    assert duplicate_pair([1, 1.0]) == (0, 1)
    assert duplicate_pair([True, 1]) is None
    assert duplicate_pair([False, 0, 0.0]) == (1, 2)
    assert duplicate_pair([{"a": 1, "b": [2]}, {"b": [2.0], "a": 1}]) == (0, 1)
    assert duplicate_pair([{"a": 1}, {"a": True}, {"a": 1, "b": None}]) is None
    assert duplicate_pair([[1, [True]], [1, [1]]]) is None
    assert duplicate_pair(["1", 1, None, [], {}]) is None
    assert duplicate_pair([]) is None


def test_duplicates_that_sort_apart_are_found() -> None:
    # jsonschema's sort shortcut compares neighbours only and passes this array; [1] repeats.
    assert duplicate_pair([[1], [True], [1]]) == (0, 2)


def test_nan_equals_only_itself() -> None:
    nan = float("nan")
    assert duplicate_pair([nan, float("nan")]) is None
    assert duplicate_pair([nan, 1, nan]) == (0, 2)
