"""The catalog model: stable content hashes and derived sizes."""

from __future__ import annotations

import json

from foldgate.dev.corpus import load_catalog
from foldgate.model.tool import Tool, tool_from_wire


def _tool(**kw: object) -> Tool:
    base: dict[str, object] = {
        "name": "create_issue",
        "description": "Create an issue.",
        "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
        "annotations": {"readOnlyHint": False},
    }
    base.update(kw)
    return tool_from_wire("github", base)


def test_hash_ignores_key_order_but_not_content() -> None:
    a = _tool()
    b = _tool(
        inputSchema={"required": ["title"], "properties": {"title": {"type": "string"}}, "type": "object"}
    )
    assert a.content_hash == b.content_hash
    assert _tool(description="Create an issue!").content_hash != a.content_hash
    assert _tool(annotations={"readOnlyHint": True}).content_hash != a.content_hash
    assert _tool(outputSchema={"type": "object"}).content_hash != a.content_hash
    assert tool_from_wire("gitlab", _tool().to_wire()).content_hash != a.content_hash


def test_schema_chars_is_compact_json_length() -> None:
    t = _tool()
    assert t.schema_chars == len(json.dumps(t.input_schema, separators=(",", ":")))
    assert 0 < t.token_estimate < t.schema_chars


def test_missing_fields_are_not_invented() -> None:
    t = tool_from_wire("s", {"name": "ping"})
    assert t.annotations is None
    assert t.meta is None
    assert t.output_schema is None
    assert t.to_wire() == {"name": "ping", "description": "", "inputSchema": {"type": "object"}}


def test_schema_as_json_text_is_parsed_and_broken_text_is_kept() -> None:
    assert tool_from_wire("s", {"name": "a", "inputSchema": '{"type":"object"}'}).input_schema == {
        "type": "object"
    }
    broken = tool_from_wire("s", {"name": "a", "inputSchema": '{"type":'})
    assert broken.signature.params == "(~)"


def test_load_catalog_reads_jsonl_and_mcpproxy_shapes(tmp_path: object) -> None:
    from pathlib import Path

    d = Path(str(tmp_path))
    (d / "tools.jsonl").write_text(
        json.dumps({"server": "a", "name": "x", "description": "d", "inputSchema": {"type": "object"}}) + "\n"
    )
    (d / "corpus.json").write_text(
        json.dumps({"tools": [{"server": "b", "tool": "y", "description": "", "schema": {"type": "object"}}]})
    )
    assert [t.key for t in load_catalog(d)] == ["a:x"]
    assert [t.key for t in load_catalog(d / "corpus.json")] == ["b:y"]
