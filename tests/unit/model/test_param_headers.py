"""SEP-2243 custom headers: which arguments a schema mirrors in Mcp-Param-* headers is read once (only
valid declarations on a pure ``properties`` chain; an invalid one voids them all, as clients drop such
a tool), a request's headers are compared with its arguments (missing, mismatched, malformed Base64 and
duplicated headers refused; literals without the full ``=?base64?...?=`` wrapper taken as they are),
and the headers a call to an upstream carries round-trip through that comparison."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.model.catalog import IndexedTool
from foldgate.model.param_headers import (
    HeaderParam,
    decode,
    encode,
    header_params,
    param_header_mismatch,
    param_headers,
    params_from_doc,
    params_to_doc,
)
from foldgate.model.tool import tool_from_wire

REGION = {"type": "string", "x-mcp-header": "Region"}
SCHEMA = {
    "type": "object",
    "properties": {
        "region": REGION,
        "query": {"type": "string"},
        "opts": {"type": "object", "properties": {"limit": {"type": "integer", "x-mcp-header": "Limit"}}},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
    },
}
PARAMS = header_params(SCHEMA)


def _headers(**sent: str | list[str]) -> Any:
    lowered = {k.lower().replace("_", "-"): v if isinstance(v, list) else [v] for k, v in sent.items()}
    return lambda name: lowered.get(name, [])


def test_declarations_on_the_properties_chain_are_read_with_their_paths_and_types() -> None:
    expected = (
        HeaderParam(("dry",), "Dry", "boolean"),
        HeaderParam(("opts", "limit"), "Limit", "integer"),
        HeaderParam(("region",), "Region", "string"),
    )
    assert header_params(SCHEMA) == expected
    assert params_from_doc(params_to_doc(PARAMS)) == PARAMS


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string"}}},
        "not a schema",
        # Invalid anywhere voids every declaration (a conforming client drops the tool, sends none).
        {"properties": {"a": REGION, "b": {"type": "string", "x-mcp-header": "region"}}},  # duplicate
        {"properties": {"a": REGION, "b": {"type": "string", "x-mcp-header": "Bad Name"}}},  # not a token
        {"properties": {"a": REGION, "b": {"type": "object", "x-mcp-header": "B"}}},  # not a scalar
        {"properties": {"a": REGION, "b": {"type": "string", "x-mcp-header": 7}}},
        {
            "properties": {"a": REGION},
            "anyOf": [{"properties": {"c": {"type": "string", "x-mcp-header": "C"}}}],
        },
        {"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}},
        {"type": "string", "x-mcp-header": "Root"},
    ],
)
def test_schemas_without_valid_declarations_declare_nothing(schema: Any) -> None:
    assert header_params(schema) == ()


def test_a_hostile_schema_is_walked_boundedly() -> None:
    deep: dict[str, Any] = {"type": "string", "x-mcp-header": "Deep"}
    for _ in range(30_000):
        deep = {"properties": {"x": deep}}
    assert header_params(deep) == ()  # too large to read: nothing declared (fail open)


@pytest.mark.parametrize(
    ("arguments", "sent"),
    [
        ({"region": "Hello"}, {"Mcp-Param-Region": "Hello"}),
        ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVsbG8=?="}),
        ({"region": "Hello"}, {"mcp-param-region": "  Hello\t"}),  # names any case, values trimmed
        ({"region": "SGVsbG8="}, {"Mcp-Param-Region": "SGVsbG8="}),  # no wrapper: a literal
        ({"region": "=?base64?SGVsbG8="}, {"Mcp-Param-Region": "=?base64?SGVsbG8="}),  # no suffix: literal
        ({"region": "naïve"}, {"Mcp-Param-Region": encode("naïve")}),
        ({"opts": {"limit": 42}}, {"Mcp-Param-Limit": "42.0"}),  # one number, two spellings
        ({"dry": False}, {"Mcp-Param-Dry": "false"}),
        ({"query": "x"}, {}),  # no declared argument, no header
        ({"region": None}, {}),  # null counts as absent
    ],
)
def test_headers_that_mirror_the_arguments_pass(arguments: dict[str, Any], sent: dict[str, str]) -> None:
    assert param_header_mismatch(PARAMS, arguments, _headers(**sent)) is None


@pytest.mark.parametrize(
    ("arguments", "sent", "why"),
    [
        ({"region": "Hello"}, {}, "Mcp-Param-Region is missing"),
        ({"region": "Hello"}, {"Mcp-Param-Region": "World"}, "does not match the 'region'"),
        ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVsbG8?="}, "padded Base64"),  # padding
        ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, "padded Base64"),  # alphabet
        ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?SGVsbG9=?="}, "padded Base64"),  # not canonical
        ({"region": "Hello"}, {"Mcp-Param-Region": "=?base64?/w==?="}, "padded Base64"),  # not UTF-8
        ({}, {"Mcp-Param-Region": "Hello"}, "argument is absent"),
        ({"region": "Hello"}, {"Mcp-Param-Region": ["Hello", "Hello"]}, "more than once"),
        ({"opts": {"limit": 42}}, {"Mcp-Param-Limit": "43"}, "does not match the 'opts.limit'"),
        ({"opts": {"limit": 42}}, {"Mcp-Param-Limit": "4.2e1"}, "does not match"),
        ({"dry": True}, {"Mcp-Param-Dry": "True"}, "does not match"),
        ({"region": {"not": "scalar"}}, {"Mcp-Param-Region": "x"}, "does not match"),
    ],
)
def test_headers_that_disagree_with_the_arguments_are_named(
    arguments: dict[str, Any], sent: dict[str, Any], why: str
) -> None:
    mismatch = param_header_mismatch(PARAMS, arguments, _headers(**sent))
    assert mismatch is not None
    assert why in mismatch, mismatch


@pytest.mark.parametrize("value", ["plain", "naïve", " padded ", "=?base64?SGk=?=", "line\nbreak", ""])
def test_the_headers_sent_upstream_pass_the_check_they_are_made_for(value: str) -> None:
    arguments = {"region": value, "opts": {"limit": 7}, "dry": True, "query": "q"}
    sent = param_headers(PARAMS, arguments)
    assert set(sent) == {"Mcp-Param-Region", "Mcp-Param-Limit", "Mcp-Param-Dry"}
    assert all(v.isascii() and v.isprintable() for v in sent.values())
    assert decode(sent["Mcp-Param-Region"]) == value
    assert param_header_mismatch(PARAMS, arguments, _headers(**sent)) is None
    assert param_headers(PARAMS, {"region": None, "opts": "x"}) == {}


def test_the_catalog_keeps_header_params_and_reads_them_for_versions_written_before() -> None:
    tool = tool_from_wire("srv", {"name": "t", "inputSchema": SCHEMA})
    indexed = IndexedTool("t", tool, "", False, "", "", 0, 0, header_params=PARAMS)
    doc = indexed.to_doc()
    assert IndexedTool.from_doc(doc).header_params == PARAMS
    doc.pop("headers")  # an older version's document: read from the schema as it loads
    assert IndexedTool.from_doc(doc).header_params == PARAMS
