"""Argument validation against the stored upstream schema, with validators compiled once per hash.

Fail-open: a schema that cannot be compiled is skipped (and counted), never blocks a call. Two things
are not left to chance, because the schema comes from an upstream and the arguments from an agent:

- nesting: a self-referencing schema walks arguments as deep as they go, until Python's recursion limit;
  arguments that deep are rejected as invalid (never waved through, never a crash);
- regular expressions: ``pattern``, ``patternProperties`` and ``additionalProperties`` (which matches
  property names against ``patternProperties``) are evaluated by the ``regex`` engine with a time budget
  per value and per call, not by ``re``, which cannot be interrupted and holds the event loop for as
  long as a catastrophic pattern backtracks. A value that exhausts the budget is rejected. A schema
  whose patterns could only be evaluated by jsonschema's own ``re`` calls (``unevaluatedProperties``
  together with a pattern :func:`unsafe_patterns` flags) is skipped like an uncompilable one;
- time: every keyword of every draft checks the call's deadline before it runs
  (:mod:`foldgate.serve.validation_time`), in every subschema, also one whose ``$schema`` names a
  draft (jsonschema would switch to that draft's stock validator there), so no combination of
  keywords (``anyOf``/``oneOf`` over a recursive ``$ref``, ``if``/``then``, ``contains``,
  ``unevaluated*``, ...) can hold validation longer;
  arguments not checked in time are refused, never waved through. ``uniqueItems`` is n·log n
  (:mod:`foldgate.serve.unique`), not jsonschema's pairwise comparison;
- error messages: heavy arguments are validated as a :func:`~foldgate.serve.brief.brief_copy`, whose
  objects and arrays quote a few members in a message, not their whole subtree at every level;
- references: ``$ref`` resolves only inside the schema and the drafts' own metaschemas. jsonschema's
  default registry fetches any other URI with ``urlopen`` (no timeout, no SSRF guard) when a call
  reaches it; here such a reference is unresolvable and the schema is skipped like an uncompilable one;
- numbers: ``multipleOf`` never raises on an agent's number and NaN fails every bound
  (:mod:`foldgate.serve.number_keywords`);
- the event loop: :meth:`ValidatorCache.errors_async` validates small arguments inline for a few
  milliseconds at most and everything else on a worker thread, so other callers are answered meanwhile.
  Heavy schemas are never validated inline (one keyword over them runs whole between two deadline
  checks). A schema is compiled on a thread of its own, never on the loop, each step of compiling
  under a deadline too (the metaschema check, the pattern probe ``unevaluatedProperties`` needs, a
  first validation of ``{}``): past it the schema is skipped.

:func:`unsafe_patterns` lists a schema's patterns that backtrack catastrophically, for the indexer to
report: an upstream validating with a backtracking engine stalls on them too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import itertools
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import regex

from foldgate.model.lru import MemoryBudget
from foldgate.model.pattern_probe import MAX_PATTERN, backtracks, patterns_of, schema_items, unsafe_patterns
from foldgate.serve.brief import brief_copy
from foldgate.serve.number_keywords import bounded_by_numbers
from foldgate.serve.quick_check import Check, quick_check
from foldgate.serve.unique import duplicate_pair
from foldgate.serve.validation_time import (
    INLINE_SCHEMA_WEIGHT,
    INLINE_SECONDS,
    INLINE_WEIGHT,
    VALIDATION_SECONDS,
    Expired,
    timed,
    too_slow,
    until,
    validation_seconds,
    weight,
)

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["TOO_DEEP", "ValidatorCache", "format_error", "unsafe_patterns", "validator_bytes"]

_WORKERS: Final = 2  # threads validating heavy or slow arguments
_MAX_ERRORS: Final = 50  # errors collected before the first five (by path) are reported
TOO_DEEP: Final = "the arguments nest too deeply to be validated against the tool's schema; flatten them"
_VALUE_BUDGET_S: Final = 0.05  # one pattern against one value
_CALL_BUDGET_S: Final = 0.25  # every pattern evaluation of one call together
_deadline: contextvars.ContextVar[float] = contextvars.ContextVar("foldgate_pattern_deadline", default=0.0)


class _PatternTimeout(Exception):
    """A pattern could not be evaluated within the budget."""


def format_error(error: Any) -> str:
    """One readable line for a jsonschema error: where, then what."""
    path = "/".join(str(p) for p in error.absolute_path)
    where = f"at '{path}': " if path else ""
    message = str(error.message)
    if len(message) > 300:
        message = message[:297] + "..."
    return where + message


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> regex.Pattern[str] | None:
    if len(pattern) > MAX_PATTERN:
        return None
    try:
        return regex.compile(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError):
        return None


def _search(pattern: str, text: str) -> bool:
    """``re.search`` semantics within the call's remaining budget; raises _PatternTimeout past it."""
    compiled = _compiled(pattern)
    if compiled is None:
        raise _PatternTimeout(pattern)
    now = time.monotonic()
    deadline, stop = _deadline.get(), until.get()
    left = min(_VALUE_BUDGET_S, deadline - now) if deadline else _VALUE_BUDGET_S
    # Which budget runs out first decides: the whole validation's refuses the call (or, inline, moves
    # it off the event loop); the patterns' rejects this value.
    expires = bool(stop) and stop - now <= left
    left = min(left, stop - now) if expires else left
    try:
        if left > 0:
            return compiled.search(text, timeout=left) is not None
    except TimeoutError:
        pass
    if expires:
        raise Expired
    raise _PatternTimeout(pattern)


def _too_slow(pattern: str) -> str:
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    return f"the value could not be checked against the pattern {shown!r} in time; send a simpler value"


def _maybe_unsafe(patterns: list[str]) -> bool:
    """Whether a pattern may backtrack catastrophically (:func:`backtracks`), deciding within
    ``VALIDATION_SECONDS``: probing takes milliseconds per pattern, so an upstream's thousand patterns
    would hold the compile thread (and every other schema's first call) for seconds; patterns not
    probed in time count as unsafe."""
    stop = time.monotonic() + VALIDATION_SECONDS
    for pattern in patterns:
        if len(pattern) > MAX_PATTERN or backtracks(pattern) or time.monotonic() > stop:
            return True
    return False


def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
    # jsonschema loads with the first validator compiled, not at init.
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "string"):
        return
    try:
        if not _search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")
    except _PatternTimeout:
        yield ValidationError(_too_slow(patrn))


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    # jsonschema loads with the first validator compiled, not at init.
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            try:
                hit = _search(pattern, key)
            except _PatternTimeout:
                yield ValidationError(_too_slow(pattern))
                return
            if hit:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, ap: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's additionalProperties, with property names matched by the bounded engine."""
    # jsonschema loads with the first validator compiled, not at init.
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras: list[str] = []
    for name in instance:
        if name in properties:
            continue
        try:
            if any(_search(p, name) for p in patterns):
                continue
        except _PatternTimeout as exc:
            yield ValidationError(_too_slow(str(exc)))
            return
        extras.append(name)
    if validator.is_type(ap, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], ap, path=extra)
    elif not ap and extras:
        names = ", ".join(repr(e) for e in sorted(extras))
        if patterns:
            yield ValidationError(
                f"{names} do not match any of the regexes: {', '.join(map(repr, sorted(patterns)))}"
            )
        else:
            yield ValidationError(f"Additional properties are not allowed ({names} unexpected)")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's uniqueItems in n·log n (its own compares every pair of objects)."""
    # jsonschema loads with the first validator compiled, not at init.
    from jsonschema.exceptions import ValidationError

    if not unique or not validator.is_type(instance, "array"):
        return
    pair = duplicate_pair(instance)
    if pair is not None:
        yield ValidationError(f"items {pair[0]} and {pair[1]} are equal; the items must be unique")


_BOUNDED: dict[Any, Any] = {}


_BOUNDED_LOCK = threading.Lock()
_BOUNDED_CLASSES: set[Any] = set()  # the classes _bounded made (read without the lock: membership only)


def _bounded(cls: Any) -> Any:
    """The validator class with pattern keywords evaluated by the bounded engine, uniqueItems in
    n·log n, and every keyword checking the call's validation deadline; the validators it evolves
    for subschemas are bounded too (see :func:`_evolving_bounded`)."""
    # jsonschema loads with the first validator compiled, not at init.
    from jsonschema import validators

    with _BOUNDED_LOCK:
        if cls in _BOUNDED_CLASSES:
            return cls
        if cls in _BOUNDED:
            return _BOUNDED[cls]
        keywords = dict(cls.VALIDATORS)
        keywords.update(pattern=_pattern, patternProperties=_pattern_properties)
        keywords["additionalProperties"] = _additional_properties
        if "uniqueItems" in keywords:
            keywords["uniqueItems"] = _unique_items
        keywords = bounded_by_numbers(keywords)
        checked = {name: timed(fn) for name, fn in keywords.items()}
        bounded = validators.extend(cls, checked)  # type: ignore[no-untyped-call]
        bounded.evolve = _evolving_bounded(bounded.evolve)
        _BOUNDED[cls] = bounded
        _BOUNDED_CLASSES.add(bounded)
        return bounded


def _evolving_bounded(evolve: Any) -> Any:
    """``evolve`` (how jsonschema makes the validator of every subschema it descends into), keeping
    the result bounded. jsonschema picks the class by the subschema's ``$schema``: a subschema naming
    a draft (or a ``$ref`` to a draft's metaschema) got that draft's stock validator, and everything
    below it ran unbounded: ``re`` backtracking without a budget, no deadline, pairwise uniqueItems."""

    def evolved(self: Any, **changes: Any) -> Any:
        made = evolve(self, **changes)
        cls = type(made)
        if cls in _BOUNDED_CLASSES:  # the common case: a subschema without $schema
            return made
        # attrs (jsonschema's dependency) loads with jsonschema; imported past the common case, which
        # runs for every subschema of every call's arguments.
        import attrs

        return _bounded(cls)(**{f.alias: getattr(made, f.name) for f in attrs.fields(cls) if f.init})

    return evolved


_pool: concurrent.futures.ThreadPoolExecutor | None = None
_compiler: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> concurrent.futures.ThreadPoolExecutor:
    """Validation's own threads: slow validations queue behind each other, never behind (or in front
    of) the default executor's work. More threads would not validate faster under the GIL."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(_WORKERS, thread_name_prefix="foldgate-validate")
        return _pool


def _check_schema(cls: Any, schema: Any) -> None:
    """jsonschema's ``check_schema`` (the schema against its draft's metaschema), with the bounded
    keywords and under a deadline like a call's (Expired past it): the metaschema check of an
    upstream's multi-megabyte schema took a minute."""
    # jsonschema and referencing load with the first validator compiled, not at init.
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError
    from referencing import Registry

    meta = validators.validator_for(cls.META_SCHEMA, default=cls)
    checker = _bounded(meta)(cls.META_SCHEMA, format_checker=meta.FORMAT_CHECKER, registry=Registry())
    stop = until.set(time.monotonic() + validation_seconds(schema))
    try:
        error = next(iter(checker.iter_errors(schema)), None)
    finally:
        until.reset(stop)
    if error is not None:
        raise SchemaError.create_from(error)


def _compiling() -> concurrent.futures.ThreadPoolExecutor:
    """The thread that compiles schemas: a slow compile (an upstream's doing, once per schema) holds
    neither the event loop nor the threads validating calls."""
    global _compiler
    with _pool_lock:
        if _compiler is None:
            _compiler = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="foldgate-compile")
        return _compiler


# A compiled validator holds the schema it checks (its own once the catalog is evicted) and little
# else: ~300 bytes per member, item or 64 string characters of the schema (see weight()), counted up
# to this many (past it the estimate is capped: such schemas are rare and validated off the loop).
_SIZE_WEIGHT: Final = 1_000_000
_BYTES_PER_WEIGHT: Final = 300


def validator_bytes(schema_weight: int) -> int:
    """The estimated memory of a compiled validator for a schema of this weight."""
    return _BYTES_PER_WEIGHT * schema_weight + 8192


# A cached schema: its validator (None: skipped), whether it is light enough to validate inline, and
# its shortcut for valid arguments (None: outside quick_check's subset).
_Entry = tuple["Validator | None", bool, Check | None]


class ValidatorCache:
    """Compiled validators keyed by the tool's content hash, on the instance's memory budget (least
    recently used evicted first; a validator evicted is compiled again on its tool's next call)."""

    def __init__(self, memory: MemoryBudget | None = None) -> None:
        self.skipped = 0  # schemas that could not be compiled (fail-open count)
        # key -> (validator or None when skipped, whether the schema is light enough to validate inline)
        self._cache = (memory if memory is not None else MemoryBudget()).shelf("validator")

    def get(self, key: str, schema: Any) -> Validator | None:
        """The validator for a schema, None when it cannot be compiled."""
        return self._entry(key, schema)[0]

    def _entry(self, key: str, schema: Any) -> _Entry:
        found: _Entry | None = self._cache.get(key)
        if found is not None:
            return found
        # One keyword over a heavy schema (an enum of 200,000 values, as many properties) runs whole
        # between two deadline checks: such schemas are validated off the event loop only.
        heft = weight(schema, _SIZE_WEIGHT)
        validator = self._compile(schema)
        quick = quick_check(schema) if validator is not None else None
        entry = (validator, heft <= INLINE_SCHEMA_WEIGHT, quick)
        self._cache.put(key, entry, validator_bytes(heft))
        return entry

    def compiled(self, key: str) -> bool:
        """Whether the validator for ``key`` is compiled already (or known to be skipped)."""
        return self._cache.get(key) is not None

    def _inline(self, key: str) -> bool:
        entry: _Entry | None = self._cache.get(key)
        return entry is not None and entry[1]

    def _compile(self, schema: Any) -> Validator | None:
        # jsonschema is imported on the first call, not at init: listing never needs it.
        from jsonschema import Draft202012Validator, validators
        from referencing import Registry

        if not isinstance(schema, dict):
            self.skipped += 1
            return None
        try:
            cls = validators.validator_for(schema, default=Draft202012Validator)
            _check_schema(cls, schema)
            patterns = patterns_of(schema)
            if any(_compiled(p) is None for p in patterns):
                raise ValueError("a pattern the bounded engine cannot evaluate")
            if any(k == "unevaluatedProperties" for k, _ in schema_items(schema)) and _maybe_unsafe(patterns):
                raise ValueError("unevaluatedProperties would match names with an unbounded engine")
            # A registry that retrieves nothing (referencing's default retrieval refuses every URI);
            # jsonschema adds the drafts' metaschemas to it. Without one, jsonschema fetches remote refs.
            validator: Validator = _bounded(cls)(schema, registry=Registry())
            # Probe once: some malformed schemas only fail when used (e.g. unresolvable $ref). Under a
            # deadline like any call's: unevaluatedProperties over allOf/$ref chains does work
            # exponential in the schema's depth even for {} (Expired: the schema is skipped).
            stop = until.set(time.monotonic() + VALIDATION_SECONDS)
            try:
                validator.is_valid({})
            finally:
                until.reset(stop)
        except Exception:  # SchemaError, unresolvable refs, anything: the schema is skipped
            self.skipped += 1
            return None
        return validator

    def errors(self, key: str, schema: Any, arguments: Any) -> list[str] | None:
        """Validation errors for arguments (empty when valid); None when the schema is skipped.

        Validates on this thread within :func:`validation_seconds`; past them the arguments are refused
        (:func:`too_slow`), never waved through."""
        seconds = validation_seconds(arguments)
        try:
            # Heavy arguments reach here (small ones are validated inline, within milliseconds).
            return self._errors(key, schema, brief_copy(arguments), seconds)
        except Expired:
            return [too_slow(seconds)]

    async def errors_async(self, key: str, schema: Any, arguments: Any) -> list[str] | None:
        """:meth:`errors` without holding the event loop: small arguments are validated inline for at
        most ``INLINE_SECONDS``; heavy ones, and any that take longer, on a worker thread. A schema not
        compiled yet is compiled on the compile thread first."""
        loop = asyncio.get_running_loop()
        if not self.compiled(key):
            await loop.run_in_executor(_compiling(), self.get, key, schema)
        entry: _Entry | None = self._cache.get(key)
        if entry is not None and entry[2] is not None and entry[2](arguments):
            return []  # valid under a plain schema (foldgate.serve.quick_check): no walk needed
        if self._inline(key) and weight(arguments, INLINE_WEIGHT) <= INLINE_WEIGHT:
            try:
                return self._errors(key, schema, arguments, INLINE_SECONDS)
            except Expired:
                pass  # slow under this schema: start over off the loop (validation has no side effects)
        call = functools.partial(self.errors, key, schema, arguments)
        return await loop.run_in_executor(_workers(), call)

    def _errors(self, key: str, schema: Any, arguments: Any, seconds: float) -> list[str] | None:
        validator = self.get(key, schema)
        if validator is None:
            return None
        now = time.monotonic()
        stop = until.set(now + seconds)
        patterns = _deadline.set(now + _CALL_BUDGET_S)
        try:
            found = sorted(
                itertools.islice(validator.iter_errors(arguments), _MAX_ERRORS),
                key=lambda e: list(e.absolute_path),
            )
        except Expired:
            raise
        except RecursionError:
            # A self-referencing schema follows the arguments down: too deep to check is not valid.
            return [TOO_DEEP]
        except Exception:  # a pathological schema that breaks at validation time: fail open
            self.skipped += 1
            return None
        finally:
            _deadline.reset(patterns)
            until.reset(stop)
        return [format_error(e) for e in found[:5]]
