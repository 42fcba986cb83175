"""Listing entries: the deferred shape of the brief, nothing invented, fragments that join to JSON."""

from __future__ import annotations

import json

from foldgate.model.jsonutil import compact
from foldgate.model.listing import (
    SIGNATURE_LEGEND,
    deferred_entry,
    fragments_for,
    full_entry,
    instructions_text,
    join_fragments,
)
from foldgate.model.signature import compile_signature
from foldgate.model.tool import tool_from_wire

ISSUE = tool_from_wire(
    "github",
    {
        "name": "create_issue",
        "title": "Create issue",
        "description": "Create a new issue in a repository.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "owner": {"type": "string"},
                "repo": {"type": "string"},
                "title": {"type": "string"},
                "labels": {"type": "array", "items": {"type": "string"}},
                "milestone": {"type": "object"},
            },
            "required": ["owner", "repo", "title"],
            "$schema": "https://json-schema.org/draft/2020-12/schema",
        },
        "outputSchema": {"type": "object", "properties": {"url": {"type": "string"}}},
        "annotations": {"destructiveHint": False, "title": "Create issue"},
        "_meta": {"ui": {"visibility": ["model"]}},
    },
)


def test_deferred_entry_matches_the_brief() -> None:
    entry = deferred_entry(ISSUE, "github__create_issue", ISSUE.signature)
    assert entry["description"] == (
        "[github] Create a new issue in a repository.\n"
        "create_issue(owner*:str, repo*:str, title*:str, labels:[str], milestone~:obj)"
    )
    assert entry["inputSchema"] == {"type": "object"}
    assert "outputSchema" not in entry


def test_name_title_annotations_and_meta_are_byte_identical_between_forms() -> None:
    full = full_entry(ISSUE, "github__create_issue")
    deferred = deferred_entry(ISSUE, "github__create_issue", ISSUE.signature)
    for key in ("name", "title", "annotations", "_meta"):
        assert compact(full[key]) == compact(deferred[key])


def test_full_entry_passes_the_upstream_schema_through() -> None:
    full = full_entry(ISSUE, "github__create_issue")
    assert full["inputSchema"] is ISSUE.input_schema
    assert full["outputSchema"] == ISSUE.output_schema
    assert full["description"] == "[github] Create a new issue in a repository."


def test_no_annotations_are_invented() -> None:
    bare = tool_from_wire("s", {"name": "ping", "description": "Ping."})
    for entry in (full_entry(bare, "s__ping"), deferred_entry(bare, "s__ping", bare.signature)):
        assert set(entry) == {"name", "description", "inputSchema"}


def test_uncompiled_signature_is_listed_without_suffix() -> None:
    assert deferred_entry(ISSUE, "x", None)["description"] == "[github] Create a new issue in a repository."


def test_fragments_join_into_a_valid_listing() -> None:
    frags = [fragments_for(ISSUE, "github__create_issue")] * 2
    listing = json.loads(join_fragments(f.pick(i == 0) for i, f in enumerate(frags)))
    assert listing[0]["inputSchema"] == {"type": "object"}
    assert listing[1]["inputSchema"] == ISSUE.input_schema
    assert json.loads(join_fragments([])) == []


def test_instructions_carry_operator_text_or_default_then_legend() -> None:
    assert instructions_text("Use the CRM tools.").startswith("Use the CRM tools.\n\n")
    default = instructions_text(None)
    assert "server__tool" in default
    assert "describe_tool" in default
    assert default.endswith(SIGNATURE_LEGEND)


def test_the_legend_explains_inline_objects_as_the_compiler_writes_them() -> None:
    member = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "k": {"type": "string"}},
        "required": ["k"],
    }
    schema = {"type": "object", "properties": {"o": member, "os": {"type": "array", "items": member}}}
    assert compile_signature(schema).params == "(o:{k*:str, n:int}, os:[{k*:str, n:int}])"
    assert "{k*:str, n:int} an object with these members" in SIGNATURE_LEGEND
    assert "[{...}] an array of them" in SIGNATURE_LEGEND
