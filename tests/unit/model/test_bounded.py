"""model/bounded.py: the one bound on upstream-supplied text; a text over it is cut at a character
boundary and says how many bytes were cut."""

from __future__ import annotations

from foldgate.model.bounded import MESSAGE_BYTES, bounded


def test_a_short_text_is_kept_whole() -> None:
    assert bounded("tool failed: no such row") == "tool failed: no such row"
    assert bounded("x" * MESSAGE_BYTES) == "x" * MESSAGE_BYTES


def test_a_long_text_is_cut_and_says_how_much() -> None:
    said = bounded("e" * 5_243_087)
    assert said == "e" * MESSAGE_BYTES + "… (5242087 bytes cut)"


def test_the_cut_never_splits_a_character_nor_raises_on_a_surrogate() -> None:
    said = bounded("é" * 10, limit=5)  # 2 bytes each: 2 kept, the third (cut in two) dropped whole
    assert said == "éé… (16 bytes cut)"
    assert bounded("\ud800" * 10, limit=7).startswith("\ud800\ud800…")
