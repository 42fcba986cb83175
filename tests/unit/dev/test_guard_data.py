"""The fixed split of the injection scorer's data: by hash of a group, never by a model's answers, with
copies of one server from different marketplaces in one group; and the repository's labelled attacks
are well-formed and many-styled."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from foldgate.dev.guard_data import bucket, server_group

DATA = Path(__file__).resolve().parents[2] / "data" / "guard"


def test_marketplace_copies_of_a_server_fall_in_one_group() -> None:
    assert server_group("deepnlp/A2A Bridge_2") == server_group("smithery/A2A Bridge") == "server:a2a bridge"


def test_the_split_is_fixed_by_the_group_and_roughly_50_30_20() -> None:
    assert bucket("server:a2a bridge") == bucket("server:a2a bridge")
    shares = Counter(bucket(f"group {i}") for i in range(4000))
    assert abs(shares["train"] / 4000 - 0.50) < 0.03
    assert abs(shares["val"] / 4000 - 0.30) < 0.03
    assert abs(shares["eval"] / 4000 - 0.20) < 0.03


def test_the_labelled_attacks_come_in_many_styles_and_held_out_sets_are_apart() -> None:
    rows = [json.loads(line) for line in (DATA / "attacks.jsonl").read_text(encoding="utf-8").splitlines()]
    styles = Counter(r["style"] for r in rows)
    assert len(styles) >= 20
    assert {
        "polite",
        "roleplay",
        "hidden_markup",
        "shadowing",
        "exfiltration",
        "rugpull_title",
        "lang-zh",
    } <= set(styles)
    assert all(r["payload"] in r["text"] for r in rows)
    generated = {r["text"] for r in rows}
    for name in ("attacks_val.jsonl", "attacks_eval.jsonl"):
        held = [json.loads(line)["text"] for line in (DATA / name).read_text(encoding="utf-8").splitlines()]
        assert len(held) >= 30
        assert not generated & set(held)
