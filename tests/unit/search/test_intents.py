"""Splitting a request into needs: where it cuts, where it must not, and that nothing is lost."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foldgate.search.intents import MAX_CHARS, MAX_INTENTS, split_intents


@pytest.mark.parametrize(
    ("query", "needs"),
    [
        (
            "Find the cheapest flight to Lisbon, add it to my calendar and email the itinerary",
            ["Find the cheapest flight to Lisbon", "add it to my calendar", "email the itinerary"],
        ),
        (
            "Search for news about Brazil, and then write the summary to notes.md",
            ["Search for news about Brazil", "write the summary to notes.md"],
        ),
        (
            "First list the open issues. Next, close the stale ones. Finally, post a digest to Slack.",
            ["list the open issues", "close the stale ones", "post a digest to Slack"],
        ),
        (
            "What is the share price of Visa? After that read the file ./data/report.csv",
            ["What is the share price of Visa?", "read the file ./data/report.csv"],
        ),
        (
            "Fetch the page at https://a.example.com/x.html; save it as page.md",
            ["Fetch the page at https://a.example.com/x.html", "save it as page.md"],
        ),
        ("1. create a branch\n2. open a pull request", ["create a branch", "open a pull request"]),
    ],
)
def test_splits_at_clauses_connectives_and_verbs(query: str, needs: list[str]) -> None:
    assert split_intents(query) == needs


@pytest.mark.parametrize(
    "query",
    [
        "search for cats and dogs",  # "and" before a noun joins objects, not needs
        "read the file notes.txt from the repository",  # a dot inside a file name is no sentence end
        "Set the user agent to Mozilla/5.0 (X11; Linux x86_64; rv:45.0) Gecko/20100101",  # ";" in brackets
        "list issues",
        "weather in Paris, France",
    ],
)
def test_single_needs_stay_whole(query: str) -> None:
    assert split_intents(query) == [query]


def test_short_pieces_are_glued_to_a_neighbour_not_dropped() -> None:
    # "then do it" has one content word beyond the connective: not a need of its own.
    assert split_intents("Open the settings page, then save") == ["Open the settings page, then save"]


def test_hostile_input_is_bounded() -> None:
    many = ". ".join(f"create item number {i}" for i in range(500))
    needs = split_intents(many)
    assert len(needs) == MAX_INTENTS
    assert sum(len(n) for n in needs) <= MAX_CHARS
    assert split_intents("") == []
    assert split_intents("   ") == []
    assert split_intents(None) == []
    assert split_intents(42) == []


@given(st.text(max_size=300))
def test_every_word_of_the_request_survives_splitting(text: str) -> None:
    joined = " ".join(split_intents(text))
    for word in ("".join(ch for ch in w if ch.isalnum()) for w in text[:MAX_CHARS].split()):
        if len(word) > 2 and word.lower() not in {"then", "next", "also", "first", "firstly", "and"}:
            assert word in "".join(ch for ch in joined if ch.isalnum())


def test_long_runs_of_whitespace_split_quickly_and_alike() -> None:
    # The connective patterns backtrack over a run of whitespace once per character: a query of 2,000
    # spaces and a connective held the search for ~0.7 s. Runs are one character to the splitter.
    started = time.perf_counter()
    assert split_intents("a" + " " * 2040 + "x, and") == ["a" + " " * 2040 + "x, and"]
    assert time.perf_counter() - started < 0.25  # ~1 ms; 0.7 s before
    assert split_intents("Create a contact  \n\n  then   send an   email") == [
        "Create a contact",
        "send an email",
    ]
