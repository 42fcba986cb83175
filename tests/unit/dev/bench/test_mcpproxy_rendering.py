"""Tests for the mcpproxy-go tools/list reproduction used to check our benchmark against their figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldgate.dev.bench.mcpproxy_rendering import (
    mcpproxy_signature,
    mcpproxy_signature_lossy,
    render_deferred_entry,
    render_full_entry,
)

# tests/unit/bench/<this file> -> parents[3] is the repo root; the corpora live in ../shared beside it.
_SHARED = Path(__file__).resolve().parents[4] / ".." / "shared"
_MCPPROXY = _SHARED / "corpora" / "mcpproxy"

_ANNOTATIONS = '{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}'


# ---------------------------------------------------------------------------------------------------------
# Hand-written rendering cases
# ---------------------------------------------------------------------------------------------------------


def test_full_entry_key_order_and_schema_reduction() -> None:
    schema = {
        "type": "object",
        "$schema": "http://json-schema.org/draft-07/schema#",
        "additionalProperties": False,
        "$defs": {"X": {"type": "string"}},
        "properties": {"b": {"type": "string", "title": "B"}, "a": {"type": "integer"}},
    }
    assert render_full_entry("srv", "do_it", "Does it.", schema) == (
        '{"annotations":' + _ANNOTATIONS + ',"description":"[srv] Does it.",'
        '"inputSchema":{"properties":{"a":{"type":"integer"},"b":{"title":"B","type":"string"}},'
        '"required":[],"type":"object"},"name":"srv__do_it"}'
    )


def test_full_entry_keeps_required_duplicates_and_forces_object_type() -> None:
    schema = {"type": "string", "required": ["x", 3, "x"]}
    entry = json.loads(render_full_entry("s", "t", "", schema))
    assert entry["inputSchema"] == {"properties": {}, "required": ["x", "x"], "type": "object"}
    assert entry["description"] == "[s] "


def test_full_entry_escaping_like_go() -> None:
    text = render_full_entry("s", "t", "a <b> & c\n\t\u00e9\u2028\x01\x7f", None)
    assert '"[s] a \\u003cb\\u003e \\u0026 c\\n\\t\u00e9\\u2028\\u0001\x7f"' in text
    assert text.endswith(',"inputSchema":{"properties":{},"required":[],"type":"object"},"name":"s__t"}')


def test_numbers_printed_like_go_float64() -> None:
    schema = {
        "properties": {
            "n": {"default": 5000.0, "maximum": 1e21, "minimum": -0.5, "multipleOf": 1e-7, "x": 2**64}
        }
    }
    text = render_full_entry("s", "t", "d", schema)
    assert (
        '{"n":{"default":5000,"maximum":1e+21,"minimum":-0.5,"multipleOf":1e-7,"x":18446744073709552000}}'
    ) in text


def test_deferred_entry_exact_text() -> None:
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "depth": {"type": "integer", "default": 2.0}},
        "required": ["path"],
    }
    assert render_deferred_entry("fs", "tree", "Show <tree>.", schema) == (
        '{"annotations":' + _ANNOTATIONS + ',"description":"[fs] Show \\u003ctree\\u003e.\\n'
        'tree(path*:str, depth:int=2)","inputSchema":{"type":"object"},"name":"fs__tree"}'
    )


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (None, "()"),
        ({"type": "object", "properties": {}}, "()"),
        ([1, 2], "(~)"),
        ({"type": "string"}, "(~)"),
        ({"properties": {"x": {"type": "number"}}, "default": float("nan")}, "(~)"),
        # Required first in declared order (deduplicated), optionals sorted; a missing required is kept.
        (
            {
                "properties": {"b": {"type": "string"}, "a": {"type": "integer"}, "c": {"type": "boolean"}},
                "required": ["c", "ghost", "c"],
            },
            "(c*:bool, ghost*~:any, a:int, b:str)",
        ),
        # Defaults: optional scalars only, <= 20 runes, quoted on metacharacters, null literal kept.
        (
            {
                "properties": {
                    "sep": {"type": "string", "default": "=|"},
                    "long": {"type": "string", "default": "x" * 21},
                    "cur": {"type": "string", "default": None},
                    "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
                    "req": {"type": "string", "default": "auto"},
                },
                "required": ["req"],
            },
            '(req*:str, cur:str=null, long:str, sep:str="=|", tags:[str])',
        ),
        # Enums: <= 5 inlined with quoted atoms; longer collapse to the base type, keeping a default.
        (
            {
                "properties": {
                    "k:v": {"enum": ["a|b", "c", 1.0, True]},
                    "fmt": {"type": "string", "enum": list("abcdef"), "default": "a"},
                }
            },
            '(fmt~:str=a, "k:v":enum["a|b"|c|1|true])',
        ),
        # Known unsound spots reproduced on purpose: array of enum -> [str], anyOf of enums -> str,
        # and a top-level anyOf is never consulted.
        (
            {
                "anyOf": [{"required": ["mode"]}],
                "properties": {
                    "modes": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
                    "mode": {"anyOf": [{"type": "string", "enum": ["x", "y"]}, {"type": "null"}]},
                },
            },
            "(mode:str, modes:[str])",
        ),
        # Collapses: objects, arrays of objects/unknown, $ref, unions containing obj, oneOf with $ref.
        (
            {
                "properties": {
                    "o": {"type": "object"},
                    "ao": {"type": "array", "items": {"type": "object"}},
                    "an": {"type": "array"},
                    "r": {"$ref": "#/$defs/R"},
                    "u": {"type": ["string", "integer", "null"]},
                    "uo": {"type": ["object", "string"]},
                    "one": {"oneOf": [{"$ref": "#/x"}, {"type": "string"}]},
                }
            },
            "(an~:[any], ao~:[obj], o~:obj, one~:obj, r~:obj, u:str|int, uo~:obj|str)",
        ),
    ],
)
def test_signature_grammar(schema: object, expected: str) -> None:
    assert mcpproxy_signature(schema) == expected
    assert mcpproxy_signature_lossy(schema) == ("~" in expected)


# ---------------------------------------------------------------------------------------------------------
# Published figures on the reference corpora
# ---------------------------------------------------------------------------------------------------------


def _load_tools(relative: str) -> list[dict[str, Any]]:
    path = _MCPPROXY / relative
    if not path.is_file():
        pytest.skip(f"mcpproxy reference corpus not found at {path} (needs ../shared beside the checkout)")
    tools: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["tools"]
    return tools


def _totals(tools: list[dict[str, Any]], schema_key: str) -> tuple[int, int, int]:
    quicktok = pytest.importorskip("quicktok", reason="quicktok-v1 (dev extra) provides cl100k_base offline")
    enc = quicktok.get_encoding("cl100k_base")
    full = deferred = non_lossy = 0
    for tool in tools:
        args = (tool["server"], tool["tool"], tool["description"], tool.get(schema_key))
        full += len(enc.encode(render_full_entry(*args)))
        deferred += len(enc.encode(render_deferred_entry(*args)))
        non_lossy += "~" not in mcpproxy_signature(tool.get(schema_key))
    return full, deferred, non_lossy


@pytest.mark.corpus
def test_corpus_v2_matches_published_figures() -> None:
    tools = _load_tools("corpus_v2.tools.json")
    assert len(tools) == 45
    assert _totals(tools, "schema") == (6116, 4301, 39)


@pytest.mark.corpus
def test_livemcptool_snapshot_matches_published_figures() -> None:
    tools = _load_tools("livemcptool_snapshot/tools.json")
    assert len(tools) == 527
    assert _totals(tools, "inputSchema") == (99918, 65138, 428)
