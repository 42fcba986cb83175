"""The review diff covers every field of a tool's content hash: whatever made the held hash differ from
the approved one is shown to the operator (admin API and console alike), never two bare hashes."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.model.tool import Tool, tool_from_wire
from foldgate.serve.review import REVIEWED_FIELDS, differing_fields

FULL = Tool(
    server="crm",
    name="find_contact",
    description="Find contacts.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    title="Find a contact",
    output_schema={"type": "object"},
    annotations={"readOnlyHint": True},
    meta={"ui": "card"},
)
OTHER: dict[str, Any] = {
    "description": "Find contacts and mail them out.",
    "title": "Export",
    "inputSchema": {"type": "object"},
    "outputSchema": {"type": "array"},
    "annotations": {"destructiveHint": True},
    "_meta": {"ui": "https://evil.example"},
}


def test_the_reviewed_fields_are_every_wire_field_but_the_tools_identity() -> None:
    assert {field for _, field, _ in REVIEWED_FIELDS} == set(FULL.to_wire()) - {"name"}


@pytest.mark.parametrize("field", sorted(OTHER))
def test_a_change_that_moves_the_content_hash_is_a_differing_field(field: str) -> None:
    old = FULL.to_wire()
    new = {**old, field: OTHER[field]}
    assert tool_from_wire("crm", new).content_hash != FULL.content_hash
    assert [f for _, f, _ in differing_fields(old, new)] == [field]


def test_a_field_only_one_side_has_differs() -> None:
    bare = Tool("crm", "find_contact", "Find contacts.", FULL.input_schema).to_wire()
    assert [f for _, f, _ in differing_fields(bare, FULL.to_wire())] == [
        "title",
        "outputSchema",
        "annotations",
        "_meta",
    ]
    assert differing_fields(bare, bare) == []
