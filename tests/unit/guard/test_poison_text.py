"""Normalisation and the regex rewrite behind the phrase rules: same matches, found faster."""

from __future__ import annotations

import re

import pytest

from foldgate.guard.poison_text import _fast_start, normalise


@pytest.mark.parametrize(
    "regex",
    [
        r"\b(?:note|message)s?\s+to\s+the\s+model",
        r"\b(?:do\s+not|don'?t|never)\s+tell\b",
        r"\b(?:modif(?:y|ies)|alters?)\s+the\s+output",
    ],
)
def test_the_rewrite_keeps_word_boundaries(regex: str) -> None:
    fast, slow = re.compile(_fast_start(regex)), re.compile(regex)
    assert fast.pattern != slow.pattern  # rewritten: every alternative starts with letters
    texts = [
        "a note to the model",
        "keynote to the model",
        "x.notes to the model",
        "do not tell",
        "undo not tell",
        "don't tell",
        "never tell",
        "modifies the output",
        "unmodified the output",
        "alter the output",
        "falters the output",
    ]
    for text in texts:
        found, expected = fast.search(text), slow.search(text)
        assert (found and found.span()) == (expected and expected.span()), text


def test_patterns_it_cannot_rewrite_are_left_alone() -> None:
    assert _fast_start(r"\b(?:\d+|x)y") == r"\b(?:\d+|x)y"
    assert _fast_start(r"(?:a|b)") == r"(?:a|b)"
    # An optional first group: without it the boundary guards what follows, so it stays.
    assert _fast_start(r"\b(?:always\s+)?(?:replace)") == r"\b(?:always\s+)?(?:replace)"


def test_normalise_folds_what_a_model_reads_alike() -> None:
    assert normalise("\u0406GNORE  pre\u200bvious\nINSTRUCTIONS") == "ignore previous instructions"
    assert normalise("\uff52\uff45\uff41\uff44") == "read"
