"""The guard's one-pass literal gates (foldgate.guard.gates): the set found is exactly the set a
substring test per literal finds, overlapping and nested literals included."""

from __future__ import annotations

import random

from foldgate.guard.gates import GATE_LITERALS, LiteralScan, present_literals
from foldgate.guard.injection_cues import ADDRESS_CUES, ORDER_CUES
from foldgate.guard.secret_assign import NAME_GATE
from foldgate.guard.secret_rules import DETECTORS


def _expected(literals: frozenset[str], text: str) -> frozenset[str]:
    return frozenset(w for w in literals if w in text)


def test_every_gate_literal_is_scanned_lower_cased() -> None:
    wanted = (
        {g.lower() for d in DETECTORS for g in d.gate} | set(NAME_GATE) | set(ORDER_CUES) | set(ADDRESS_CUES)
    )
    assert wanted == GATE_LITERALS


def test_overlapping_nested_and_prefix_literals_are_all_found() -> None:
    scan = LiteralScan(["pass", "passwd", "ssws", "sw", "key", "secret_", "t_k", "abc", "bcd", "c"])
    for text in ("passwd", "passws", "secret_key", "xabcdx", "abcd", "", "nothing here"):
        assert scan.present(text) == _expected(scan.literals, text), text


def test_the_gate_scan_matches_a_substring_test_per_literal_on_built_texts() -> None:
    rng = random.Random(3803)
    words = sorted(GATE_LITERALS)
    filler = list("abcdefghijklmnopqrstuvwxyz0123456789 _-.:/=@\n\"'")
    for _ in range(2000):
        parts = []
        for _ in range(rng.randint(0, 6)):
            word = rng.choice(words)
            # Literals glued together or cut short: overlaps across a match's end are the hard case.
            cut = rng.randint(1, len(word))
            parts.append(word if rng.random() < 0.6 else word[:cut] if rng.random() < 0.5 else word[-cut:])
            parts.append("".join(rng.choice(filler) for _ in range(rng.randint(0, 3))))
        text = "".join(parts)
        assert present_literals(text) == _expected(GATE_LITERALS, text), text


def test_a_text_without_any_literal_finds_none() -> None:
    assert present_literals("0123 4567 89 ..,, zzz qqq") == frozenset()
