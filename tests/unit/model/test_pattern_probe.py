"""The backtracking probe: catastrophic patterns are found fast, ordinary ones are not flagged."""

from __future__ import annotations

import time

import pytest

from foldgate.model.pattern_probe import backtracks


@pytest.mark.parametrize(
    "pattern",
    [
        "^(a+)+$",  # nested quantifier
        r"^(\w+\s?)*$",  # nested quantifier over overlapping classes
        "(a|aa)+$",  # overlapping alternation
        "^(a|b|ab)*c$",  # overlap that needs a two-character filler
        r"^([a-zA-Z0-9]+[._-]?)*@example\.com$",  # the classic e-mail pattern
    ],
)
def test_catastrophic_patterns_are_found_quickly(pattern: str) -> None:
    started = time.perf_counter()
    assert backtracks.__wrapped__(pattern)
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    "pattern",
    [
        "^[a-z]+$",
        r"^\d{3}-\d{4}$",
        "^[a-z0-9]+(-[a-z0-9]+)*$",  # repeated group with a separator: one way to match
        r"^(https?://)?[\w.-]+(/[\w.-]*)*$",
        r"^(\d+\.)+\d+$",
        "(unclosed",  # not a pattern re runs
    ],
)
def test_ordinary_patterns_are_not_flagged(pattern: str) -> None:
    assert not backtracks.__wrapped__(pattern)
