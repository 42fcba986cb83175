"""Argument validation against upstream schemas: deep arguments are rejected, never waved through,
and upstream regular expressions are evaluated within a time budget, never stalling the event loop."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from foldgate.serve.validation import TOO_DEEP, ValidatorCache, unsafe_patterns
from foldgate.serve.validation_time import (
    VALIDATION_MAX_SECONDS,
    VALIDATION_SECONDS,
    too_slow,
    validation_seconds,
)

SHARED = str(Path(__file__).resolve().parents[2] / "shared")

TREE = {
    "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
    "$ref": "#/$defs/node",
}


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"child": value}
    return value


def test_a_self_referencing_schema_rejects_arguments_nested_too_deeply() -> None:
    cache = ValidatorCache()
    assert cache.errors("tree", TREE, nested(5000)) == [TOO_DEEP]
    assert cache.skipped == 0  # rejected, not skipped: the call never reaches the upstream
    assert cache.errors("tree", TREE, nested(20)) == []


def test_deep_arguments_under_an_open_schema_stay_valid() -> None:
    assert ValidatorCache().errors("open", {"type": "object"}, nested(5000)) == []


def _run_isolated(code: str) -> Any:
    # In a child process: on an engine that cannot be interrupted the test fails by timeout, not by
    # hanging the suite.
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {SHARED!r}); {code}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(proc.stdout)


def test_a_catastrophic_pattern_does_not_stall_validation() -> None:
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        "schema = {'type': 'object', 'properties': {'s': {'type': 'string', 'pattern': '^(a+)+$'}}}; "
        "t = time.monotonic(); errors = ValidatorCache().errors('k', schema, {'s': 'a' * 40 + '!'}); "
        "print(json.dumps([errors, time.monotonic() - t]))"
    )
    errors, seconds = _run_isolated(code)
    assert len(errors) == 1
    assert errors[0].startswith("at 's': ")
    assert seconds < 5


def test_a_pattern_that_exhausts_the_budget_rejects_the_value() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "(a|aa)+$"}}}
    started = time.monotonic()
    errors = ValidatorCache().errors("k", schema, {"s": "a" * 5000 + "!"})
    assert time.monotonic() - started < 5
    assert errors is not None
    assert len(errors) == 1
    assert "in time" in errors[0]


def test_the_budget_covers_the_whole_call_not_each_value() -> None:
    item = {"type": "string", "pattern": "(a|aa)+$"}
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": item}}}
    started = time.monotonic()
    errors = ValidatorCache().errors("k", schema, {"xs": ["a" * 5000 + "!"] * 200})
    assert time.monotonic() - started < 10  # 200 values x 50 ms would be 10 s: the call budget is 0.25 s
    assert errors is not None
    assert errors


def test_pattern_properties_and_additional_properties_use_the_bounded_engine() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    cache = ValidatorCache()
    assert cache.errors("k", schema, {"aaa": 1}) == []
    assert cache.errors("k", schema, {"aaa": "x"}) == ["at 'aaa': 'x' is not of type 'integer'"]
    (extra,) = cache.errors("k", schema, {"a" * 40 + "!": 1}) or []
    assert "do not match any of the regexes" in extra
    assert cache.errors("k2", {"type": "object", "additionalProperties": False}, {"x": 1}) == [
        "Additional properties are not allowed ('x' unexpected)"
    ]


def test_ordinary_patterns_validate_as_before() -> None:
    schema = {"type": "object", "properties": {"zip": {"type": "string", "pattern": r"^\d{5}$"}}}
    cache = ValidatorCache()
    assert cache.errors("k", schema, {"zip": "12345"}) == []
    assert cache.errors("k", schema, {"zip": "12a45"}) == ["at 'zip': '12a45' does not match '^\\\\d{5}$'"]


def test_unsafe_patterns_lists_the_catastrophic_ones_anywhere_in_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ok": {"type": "string", "pattern": r"^[a-z0-9]+(-[a-z0-9]+)*$"},
            "email": {"type": "string", "pattern": r"^([a-zA-Z0-9]+[._-]?)*@example\.com$"},
            "deep": {"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}},
        },
        "patternProperties": {r"^(\w+\s?)*$": {}},
    }
    found = unsafe_patterns(schema)
    assert sorted(found) == sorted([r"^([a-zA-Z0-9]+[._-]?)*@example\.com$", "^(a+)+$", r"^(\w+\s?)*$"])
    assert unsafe_patterns({"type": "object", "properties": {"p": {"pattern": "^[a-z]+$"}}}) == []
    assert unsafe_patterns("not a schema") == []


def test_unique_items_over_thousands_of_distinct_objects_is_quick_and_exact() -> None:
    # jsonschema compares every pair of objects: this 77 KB array held a gateway for about a minute.
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        "schema = {'type': 'object', 'properties': {'xs': {'type': 'array', 'uniqueItems': True}}}; "
        "xs = [{'id': i, 'v': 'ab'} for i in range(3100)] + [[i] for i in range(300)]; "
        "xs += ['1', 1, True, None]; "
        "size = len(json.dumps(xs)); cache = ValidatorCache(); cache.errors('k', schema, {}); "
        "t = time.monotonic(); ok = cache.errors('k', schema, {'xs': xs}); seconds = time.monotonic() - t; "
        "dup = cache.errors('k', schema, {'xs': xs + [{'v': 'ab', 'id': 7.0}]}); "
        "print(json.dumps([size, ok, dup, seconds]))"
    )
    size, ok, dup, seconds = _run_isolated(code)
    assert size > 77_000
    assert ok == []
    # Key order is irrelevant and 7 == 7.0: the appended object repeats item 7.
    assert dup == ["at 'xs': items 7 and 3404 are equal; the items must be unique"]
    assert seconds < 1


def test_many_invalid_items_are_reported_without_collecting_every_error() -> None:
    # 200,000 invalid items fit the 1 MiB body cap; collecting (and sorting) an error for each took
    # 10+ s and most of a gigabyte. The first errors by path are reported, as before.
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        "schema = {'type': 'object', 'properties': {'xs': {'type': 'array', 'items': {'type': 'integer'}}}}; "
        "cache = ValidatorCache(); cache.errors('k', schema, {}); "
        "t = time.monotonic(); errors = cache.errors('k', schema, {'xs': ['a'] * 200_000}); "
        "print(json.dumps([errors, time.monotonic() - t]))"
    )
    errors, seconds = _run_isolated(code)
    assert errors == [f"at 'xs/{i}': 'a' is not of type 'integer'" for i in range(5)]
    assert seconds < 2


def _recursive(node: dict[str, Any]) -> dict[str, Any]:
    return {"$defs": {"node": node}, "type": "object", "properties": {"x": {"$ref": "#/$defs/node"}}}


_ARRAY_OF_NODES = {"type": "array", "items": {"$ref": "#/$defs/node"}}
# Each level evaluates the rest of the arguments twice: 2^depth keyword calls for a few bytes of input.
# The innermost value: anyOf tries its second branch only when the first fails; the others always
# evaluate both (if: whether it holds, then: the same again).
EXPONENTIAL: dict[str, tuple[dict[str, Any], Any]] = {
    "anyOf": (_recursive({"anyOf": [_ARRAY_OF_NODES, {**_ARRAY_OF_NODES, "minItems": 0}]}), "leaf"),
    "oneOf": (_recursive({"oneOf": [_ARRAY_OF_NODES, {**_ARRAY_OF_NODES, "maxItems": 5}]}), []),
    "allOf": (_recursive({"allOf": [_ARRAY_OF_NODES, {**_ARRAY_OF_NODES, "minItems": 0}]}), []),
    "if/then": (_recursive({"if": _ARRAY_OF_NODES, "then": _ARRAY_OF_NODES}), []),
}


@pytest.mark.parametrize("combinator", sorted(EXPONENTIAL))
def test_exponential_work_over_a_recursive_ref_is_refused_at_the_deadline(combinator: str) -> None:
    schema, x = EXPONENTIAL[combinator]
    for _ in range(40):
        x = [x]
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        f"schema, x = json.loads({json.dumps(json.dumps([schema, x]))}); "
        "t = time.monotonic(); errors = ValidatorCache().errors('k', schema, {'x': x}); "
        "print(json.dumps([errors, time.monotonic() - t]))"
    )
    errors, seconds = _run_isolated(code)
    assert validation_seconds({"x": x}) < 1.01
    assert errors == [too_slow(validation_seconds({"x": x}))]
    assert "took longer than 1 s" in errors[0]
    assert seconds < 10  # the deadline is about 1 s; generous for a loaded machine


def test_the_deadline_grows_with_the_arguments_up_to_a_ceiling() -> None:
    # Work linear in the arguments fits whatever their size; super-linear work does not.
    assert validation_seconds({}) == VALIDATION_SECONDS
    rows = [{"id": i, "name": f"row {i}", "tags": ["a", "b"]} for i in range(6000)]
    assert validation_seconds({"rows": rows}) > VALIDATION_SECONDS + 1
    assert validation_seconds({"rows": rows * 100}) == VALIDATION_MAX_SECONDS
    record = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "tags": {"items": {"type": "string"}},
        },
        "required": ["id", "name"],
    }
    schema = {"type": "object", "properties": {"rows": {"type": "array", "items": record}}}
    assert ValidatorCache().errors("k", schema, {"rows": rows}) == []


class ThreadNotingValidators(ValidatorCache):
    """Notes the thread each validation runs on, and when one runs off the event loop's thread."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.get_running_loop()
        self.threads: list[str] = []
        self.moved = asyncio.Event()

    def _errors(self, key: str, schema: Any, arguments: Any, seconds: float) -> list[str] | None:
        on_loop = threading.get_ident() == self.loop_thread
        # Validation's own threads, not the default executor's (others' work never queues behind it).
        self.threads.append("loop" if on_loop else threading.current_thread().name.split("_")[0])
        if not on_loop:
            self.loop.call_soon_threadsafe(self.moved.set)
        return super()._errors(key, schema, arguments, seconds)

    @property
    def loop_thread(self) -> int:
        return threading.main_thread().ident or 0


SMALL = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}
PLAIN = {"type": "object", "properties": {"n": {"type": "integer"}}}


async def test_small_arguments_are_validated_inline_and_heavy_ones_on_a_worker_thread() -> None:
    cache = ThreadNotingValidators()
    assert await cache.errors_async("small", SMALL, {"n": 1}) == []
    assert cache.threads == ["loop"]  # no thread hop for a small call
    assert await cache.errors_async("small", SMALL, {"n": 1, "xs": list(range(5000))}) == []
    assert cache.threads == ["loop", "foldgate-validate"]  # heavy: straight to a worker thread


async def test_valid_arguments_of_a_plain_schema_need_no_validator_walk() -> None:
    cache = ThreadNotingValidators()
    assert await cache.errors_async("plain", PLAIN, {"n": 1, "xs": list(range(5000))}) == []
    assert cache.threads == []  # foldgate.serve.quick_check: one look per top-level key
    worded = await cache.errors_async("plain", PLAIN, {"n": "one"})
    assert worded == ["at 'n': 'one' is not of type 'integer'"]
    assert cache.threads == ["loop"]  # an invalid call is worded by the validator


async def test_a_slow_validation_moves_off_the_event_loop_and_other_calls_are_answered() -> None:
    cache = ThreadNotingValidators()
    schema, x = EXPONENTIAL["anyOf"]
    for _ in range(40):
        x = [x]
    hostile = asyncio.create_task(cache.errors_async("stall", schema, {"x": x}))
    moved = asyncio.create_task(cache.moved.wait())
    await asyncio.wait({hostile, moved}, return_when=asyncio.FIRST_COMPLETED)
    assert cache.threads == ["loop", "foldgate-validate"]  # tried inline, then started over off the loop
    assert await cache.errors_async("small", SMALL, {"n": "one"}) == [
        "at 'n': 'one' is not of type 'integer'"
    ]
    assert not hostile.done()  # answered while the slow one is still being validated
    assert await hostile == [too_slow(validation_seconds({"x": x}))]


class _SchemaHost:
    """A loopback HTTP server that serves a schema and records every request it receives."""

    def __init__(self) -> None:
        import http.server

        hits: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                body = json.dumps({"type": "string"}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.hits = hits
        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/schema.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_remote_ref_in_an_upstream_schema_is_never_fetched() -> None:
    """jsonschema's default registry urlopen()s any $ref URI (no timeout, no SSRF guard): an upstream's
    schema could make the gateway fetch cloud metadata or a URL that never answers, when a call
    reaches the ref. Refs resolve only inside the schema and the drafts' metaschemas."""
    host = _SchemaHost()
    try:
        cache = ValidatorCache()
        nested = {"type": "object", "properties": {"a": {"$ref": host.url}}}
        assert cache.errors("nested", nested, {"a": 1}) is None  # unresolvable: skipped, not fetched
        assert cache.errors("root", {"$ref": host.url}, {}) is None
        meta = {"$ref": "https://json-schema.org/draft/2020-12/schema"}  # bundled: resolves locally
        assert cache.errors("meta", meta, {"type": 5}) != []
        assert host.hits == []
    finally:
        host.close()


@pytest.mark.parametrize(
    ("arguments", "valid"),
    [
        ({"n": 10**400, "cmd": "ls"}, True),
        ({"n": 10**400 + 1, "cmd": "ls"}, False),
        ({"n": 10**400, "cmd": "rm"}, False),
        ({"n": float("nan"), "cmd": "ls"}, False),
        ({"n": float("inf"), "cmd": "ls"}, False),
        ({"n": 7.5, "cmd": "ls"}, True),
        ({"n": 7, "cmd": "ls"}, False),
    ],
)
def test_multiple_of_never_skips_the_schema_for_an_agents_number(
    arguments: dict[str, Any], valid: bool
) -> None:
    """jsonschema's multipleOf raises for a huge integer over a fractional divisor (OverflowError) and
    for NaN (ValueError), and a raising keyword skipped the whole schema: the agent's other arguments
    (here an enum) went to the upstream unchecked."""
    schema = {
        "type": "object",
        "properties": {"n": {"type": "number", "multipleOf": 2.5}, "cmd": {"enum": ["ls"]}},
    }
    cache = ValidatorCache()
    errors = cache.errors("k", schema, arguments)
    assert errors is not None
    assert cache.skipped == 0
    assert (errors == []) is valid


class CompileNotingValidators(ValidatorCache):
    """Notes the thread each schema is compiled on."""

    def __init__(self) -> None:
        super().__init__()
        self.compiled_on: list[str] = []

    def _compile(self, schema: Any) -> Any:
        on_loop = threading.get_ident() == (threading.main_thread().ident or 0)
        self.compiled_on.append("loop" if on_loop else threading.current_thread().name.split("_")[0])
        return super()._compile(schema)


async def test_an_upstream_schema_is_compiled_off_the_event_loop() -> None:
    """Compiling is outside the call's deadline, and an upstream's schema can make it take seconds (a
    big one; with unevaluatedProperties every pattern is probed on growing inputs): the first call
    to such a tool held every other caller. Compiled on a thread of its own, once per schema."""
    patterns = {f"^(q{i}+z)+$": {"type": "string"} for i in range(40)}
    schema = {"type": "object", "patternProperties": patterns, "unevaluatedProperties": False}
    cache = CompileNotingValidators()
    assert await cache.errors_async("probe", schema, {"q1z": 1}) == ["at 'q1z': 1 is not of type 'string'"]
    assert await cache.errors_async("probe", schema, {"q1z": "q1z"}) == []
    assert cache.compiled_on == ["foldgate-compile"]  # once, and not on the loop


def test_compiling_a_schema_whose_probe_is_exponential_ends_at_the_deadline() -> None:
    """jsonschema's unevaluatedProperties walks every allOf branch through every $ref: 40 levels of
    two refs each is 2^40 steps, even for the {} the compile step probes with. Unbounded, the first
    call to such a tool never finished compiling (on the event loop before, on the compile thread
    now); under the deadline the schema is skipped like any schema that breaks when used."""
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        "defs = {f'a{i}': {'allOf': [{'$ref': f'#/$defs/a{i + 1}'}] * 2} for i in range(40)}; "
        "defs['a40'] = {'properties': {'x': {}}}; "
        "schema = {'$defs': defs, 'allOf': [{'$ref': '#/$defs/a0'}], 'unevaluatedProperties': False}; "
        "cache = ValidatorCache(); t = time.monotonic(); errors = cache.errors('k', schema, {'x': 1}); "
        "print(json.dumps([errors, cache.skipped, time.monotonic() - t]))"
    )
    errors, skipped, seconds = _run_isolated(code)
    assert (errors, skipped) == (None, 1)
    assert seconds < 10


def test_a_deep_chain_around_a_big_object_is_reported_without_quoting_every_level() -> None:
    """jsonschema quotes each level's whole subtree in its anyOf and type errors (and anyOf keeps
    them all): 60 levels around a 100,000-member object took ~6 s and ~190 MB to report, work
    quadratic in the arguments that no keyword boundary stops between an anyOf's levels."""
    import tracemalloc

    chain = {
        "$defs": {"n": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/n"}}]}},
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/n"}},
    }
    x: Any = {str(i): i for i in range(100_000)}
    for _ in range(60):
        x = [x]
    cache = ValidatorCache()
    cache.get("chain", chain)
    tracemalloc.start()
    try:
        errors = cache.errors("chain", chain, {"x": x})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert errors is not None
    assert len(errors) == 1
    assert errors[0].startswith("at 'x': ")
    assert "is not valid under any of the given schemas" in errors[0]
    assert peak < 40_000_000  # the brief copy (~10 MB); quoting every level kept ~190 MB


@pytest.mark.parametrize(
    "draft", ["https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-04/schema#"]
)
@pytest.mark.parametrize(
    "bound", [{"minimum": 0}, {"maximum": 10}, {"exclusiveMinimum": 0}, {"exclusiveMaximum": 10}]
)
def test_nan_fails_every_bound(draft: str, bound: dict[str, Any]) -> None:
    """Python's JSON parsers read NaN, and NaN < 0 and NaN > 10 are both false: an amount bounded to
    [0, 10] took NaN."""
    if draft.startswith("http://") and "exclusive" in next(iter(bound)):
        key = next(iter(bound))
        bound = {key.replace("exclusiveM", "m"): bound[key], key: True}  # draft 4's boolean form
    schema = {"$schema": draft, "type": "object", "properties": {"n": {"type": "number", **bound}}}
    cache = ValidatorCache()
    (error,) = cache.errors("k", schema, {"n": float("nan")}) or [""]
    assert error.startswith("at 'n': ")
    assert cache.errors("k", schema, {"n": 5}) == []
    assert cache.skipped == 0


def test_probing_an_upstreams_many_patterns_ends_within_the_deadline() -> None:
    """With unevaluatedProperties every pattern is probed for catastrophic backtracking, milliseconds
    each: 3,000 patterns held the compile (on the event loop before) for half a minute. Patterns not
    probed within the validation deadline count as unsafe, and the schema is skipped."""
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        "patterns = {f'^(q{i}+z)+$': {'type': 'string'} for i in range(3000)}; "
        "schema = {'type': 'object', 'patternProperties': patterns, 'unevaluatedProperties': False}; "
        "cache = ValidatorCache(); t = time.monotonic(); errors = cache.errors('k', schema, {'q1z': 1}); "
        "print(json.dumps([errors, cache.skipped, time.monotonic() - t]))"
    )
    errors, skipped, seconds = _run_isolated(code)
    assert (errors, skipped) == (None, 1)
    assert seconds < 10


DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


def test_a_subschema_naming_its_draft_is_still_validated_within_bounds() -> None:
    """jsonschema picks the validator of every subschema by its $schema: a subschema naming a draft got
    the stock validator of that draft, and below it patterns ran on ``re`` (^(a+)+$ against 40 a's
    backtracks for hours, on the event loop for a small call) with no deadline at all."""
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        f"sub = {{'$schema': {DRAFT_2020!r}, 'type': 'string', 'pattern': '^(a+)+$'}}; "
        "schema = {'type': 'object', 'properties': {'s': sub}}; "
        "t = time.monotonic(); errors = ValidatorCache().errors('k', schema, {'s': 'a' * 40 + '!'}); "
        "print(json.dumps([errors, time.monotonic() - t]))"
    )
    errors, seconds = _run_isolated(code)
    assert len(errors) == 1
    assert errors[0].startswith("at 's': ")
    assert seconds < 5


def test_exponential_work_below_a_subschema_naming_its_draft_is_refused_at_the_deadline() -> None:
    schema, x = EXPONENTIAL["anyOf"]
    schema = {**schema, "$defs": {"node": {**schema["$defs"]["node"], "$schema": DRAFT_2020}}}
    for _ in range(40):
        x = [x]
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        f"schema, x = json.loads({json.dumps(json.dumps([schema, x]))}); "
        "t = time.monotonic(); errors = ValidatorCache().errors('k', schema, {'x': x}); "
        "print(json.dumps([errors, time.monotonic() - t]))"
    )
    errors, seconds = _run_isolated(code)
    assert errors == [too_slow(validation_seconds({"x": x}))]
    assert seconds < 10


def test_the_metaschema_check_of_a_huge_schema_ends_at_the_deadline() -> None:
    """Compiling checks the schema against its draft's metaschema; for an upstream's 2 MB schema that
    took ~25 s unbounded (the metaschema's own subschemas name their draft, so the check ran on the
    stock validator). Now it stops at the validation deadline and the schema is skipped."""
    code = (
        "import json, time; from foldgate.serve.validation import ValidatorCache; "
        "n = 60000; props = {f'p{i}': {'type': 'string'} for i in range(n)}; "
        "schema = {'type': 'object', 'properties': props, 'enum': [{'x': i} for i in range(n)]}; "
        "cache = ValidatorCache(); t = time.monotonic(); cache.get('k', schema); "
        "print(json.dumps([cache.skipped, time.monotonic() - t]))"
    )
    skipped, seconds = _run_isolated(code)
    assert skipped == 1
    assert seconds < 20  # the deadline for a schema this heavy is the 10 s ceiling
