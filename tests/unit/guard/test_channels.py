"""The guard's inventory of wire fields matches the ``mcp`` SDK's types exactly (a field the protocol
adds fails here until it is decided how it is guarded), and every field it calls guarded is: a canary
planted in it, in any content item, a resource read, a prompt or a completion, never survives."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types
import pytest

from foldgate.dev.guard_samples import fake_credential
from foldgate.guard.channels import WIRE_FIELDS
from foldgate.guard.result import (
    GuardPolicy,
    TextGuard,
    guard_call_result,
    guard_prompt_result,
    guard_read_result,
    guard_value,
)

CANARY, _ = fake_credential("aws_access_key", 3601)


def _fields(name: str) -> set[str]:
    model = getattr(types, name)
    return {field.alias or key for key, field in model.model_fields.items()}


@pytest.mark.parametrize("name", sorted(WIRE_FIELDS))
def test_the_inventory_names_every_field_of_the_sdks_type(name: str) -> None:
    assert _fields(name) == set(WIRE_FIELDS[name]), f"{name}: decide how the new field is guarded"


def test_every_content_item_type_of_a_call_result_is_in_the_inventory() -> None:
    union = types.CallToolResult.model_fields["content"].annotation
    items = {t.__name__ for t in union.__args__[0].__args__}  # type: ignore[union-attr]
    assert items <= set(WIRE_FIELDS)


def _guard() -> TextGuard:
    return TextGuard(GuardPolicy(), "the tool t__x")


ITEMS = ("TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource")


@pytest.mark.parametrize("name", ITEMS)
def test_a_canary_in_any_guarded_field_of_a_content_item_is_redacted(name: str) -> None:
    item: dict[str, Any] = {"type": "x"}
    for field, how in WIRE_FIELDS[name].items():
        if how != "guarded":
            continue
        if field == "resource":
            item[field] = {"uri": f"file:///{CANARY}", "text": CANARY, "_meta": {"k": CANARY}}
        elif field in ("annotations", "_meta"):
            item[field] = {"note": CANARY}
        elif field == "icons":
            item[field] = [{"src": f"https://x/{CANARY}.png"}]
        else:
            item[field] = f"see {CANARY}"
    for method, result in (
        (guard_call_result, {"content": [item], "_meta": {"k": CANARY}}),
        (guard_read_result, {"contents": [item], "_meta": {"k": CANARY}}),
        (guard_prompt_result, {"description": CANARY, "messages": [{"role": "user", "content": item}]}),
    ):
        guarded = method(result, _guard())
        assert CANARY not in json.dumps(guarded), (name, method.__name__)


def test_a_meta_key_that_would_change_drops_the_meta_and_a_structured_key_withholds() -> None:
    guard = _guard()
    result = {"content": [], "_meta": {CANARY: 1}, "structuredContent": {"ok": 1}}
    guarded = guard_call_result(result, guard)
    assert "_meta" not in guarded
    assert guard.blocked() is None
    keyed = guard_call_result({"content": [], "structuredContent": {CANARY: 1}}, guard)
    assert CANARY in json.dumps(keyed)  # kept as it is: the answer is withheld instead
    reason = guard.blocked()
    assert reason is not None
    assert "key" in reason
    assert CANARY not in reason


def test_a_completions_values_are_guarded() -> None:
    guarded = guard_value({"completion": {"values": [f"{CANARY}", "main"]}}, _guard())
    assert guarded == {"completion": {"values": ["[redacted:aws_access_key]", "main"]}}
