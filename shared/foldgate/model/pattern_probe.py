"""Does a schema ``pattern`` backtrack catastrophically? A structural filter, then a bounded probe.

Python's ``re`` (like most engines upstreams validate with) backtracks: ``^(a+)+$`` against
``"a" * 40 + "!"`` runs for hours, and cannot be interrupted. The gateway evaluates patterns with a
time budget (:mod:`foldgate.serve.validation`); this module answers the indexer's question, so an operator
can be told which upstream schemas hold such a pattern.

1. Structure: only a repetition whose body can match the same text in more than one way (it holds
   another unbounded repetition, or an alternation) can blow up exponentially. Most patterns stop here.
2. Probe: for those, ``re`` runs on growing inputs built from the pattern's own characters (its
   literal prefix, then one character repeated, then a character that fails the match), two characters
   longer each time. Exponential growth shows as a steady multiplication of the time per step; the
   probe stops at the first slow step (milliseconds), so it never runs long itself.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterator

# The parser behind re.compile: the same reading of the pattern that re will run.
from re import _constants as c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any, Final

__all__ = ["MAX_PATTERN", "backtracks", "patterns_of", "schema_items", "unsafe_patterns"]

MAX_PATTERN: Final = 2000  # characters: longer patterns are not evaluated (nor reported as safe)

_SLOW_S: Final = 0.008  # one probe this slow is worth a look
_GROWTH: Final = 2.2  # time multiplied by at least this per two characters: exponential
_LENGTHS: Final = range(6, 41, 2)
_FILLERS: Final = "a0 _-.@/x"
_ENDINGS: Final = ("\x00", "!", "\n")
_REPEATS: Final = (c.MAX_REPEAT, c.MIN_REPEAT)


def _unbounded(hi: Any) -> bool:
    return bool(hi is c.MAXREPEAT or (isinstance(hi, int) and hi > 16))


def _children(op: Any, av: Any) -> list[Any]:
    """The sub-patterns of one parsed node (a list of node lists)."""
    if op in _REPEATS:
        return [av[2]]
    if op is c.SUBPATTERN:
        return [av[-1]]
    if op is c.BRANCH:
        return list(av[1])
    if op in (c.ASSERT, c.ASSERT_NOT):
        return [av[1]]
    return []


def _ambiguous(nodes: Any) -> bool:
    """The body can match one text in several ways: an inner unbounded repeat or an alternation."""
    for op, av in nodes:
        if op is c.BRANCH or (op in _REPEATS and _unbounded(av[1])):
            return True
        if any(_ambiguous(child) for child in _children(op, av)):
            return True
    return False


def _suspect(nodes: Any) -> bool:
    for op, av in nodes:
        if op in _REPEATS and _unbounded(av[1]) and _ambiguous(av[2]):
            return True
        if any(_suspect(child) for child in _children(op, av)):
            return True
    return False


def _fillers(nodes: Any, out: list[str]) -> None:
    """Characters the pattern itself can match: the probe's building blocks."""
    for op, av in nodes:
        if op is c.LITERAL and chr(av) not in out:
            out.append(chr(av))
        elif op is c.IN:
            for item_op, item in av:
                if item_op is c.RANGE:
                    out.append(chr(item[0]))
                elif item_op is c.LITERAL:
                    out.append(chr(item))
        for child in _children(op, av):
            _fillers(child, out)


def _prefix(nodes: Any) -> str:
    text = ""
    for op, av in nodes:
        if op is c.AT:
            continue
        if op is not c.LITERAL:
            break
        text += chr(av)
    return text


def _seconds(compiled: re.Pattern[str], text: str, runs: int = 1) -> float:
    # CPU time of this thread, not wall time: on a loaded machine a match preempted midway would look
    # slow (or a confirming step fast) for reasons that have nothing to do with the pattern.
    best = float("inf")
    for _ in range(runs):
        started = time.thread_time()
        compiled.search(text)
        best = min(best, time.thread_time() - started)
    return best


def _grows(compiled: re.Pattern[str], prefix: str, filler: str, ending: str) -> bool:
    for n in _LENGTHS:
        if _seconds(compiled, prefix + filler * n + ending) > _SLOW_S:
            # Confirm on fresh timings, best of two (a scheduling hiccup is not a trend): two more
            # characters must multiply the time, as they do at every step of an exponential.
            before = _seconds(compiled, prefix + filler * (n - 2) + ending, runs=2)
            now = _seconds(compiled, prefix + filler * n + ending, runs=2)
            return now > _SLOW_S / 2 and now >= _GROWTH * before
    return False


@functools.lru_cache(maxsize=2048)
def backtracks(pattern: str) -> bool:
    """True when ``re`` slows down exponentially on inputs built for this pattern."""
    try:
        nodes = sre_parse.parse(pattern)
        compiled = re.compile(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return False  # not a pattern ``re`` runs: nothing for it to stall on
    if not _suspect(nodes):
        return False
    chars: list[str] = []
    _fillers(nodes, chars)
    chars += [f for f in _FILLERS if f not in chars]
    # Single characters, then pairs of the pattern's own (``(a|b|ab)*`` needs "ab" repeated).
    fillers = chars[:16] + [a + b for a in chars[:4] for b in chars[:4] if a != b]
    prefix = _prefix(nodes)
    return any(_grows(compiled, prefix, f, e) for f in fillers for e in _ENDINGS)


def schema_items(schema: Any) -> Iterator[tuple[str, Any]]:
    """Every (keyword, value) pair of every schema object inside, without recursion (schemas nest)."""
    stack, seen = [schema], 0
    while stack and seen < 100_000:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            for key, value in node.items():
                yield str(key), value
                if isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, dict | list))


def patterns_of(schema: Any) -> list[str]:
    """Every distinct ``pattern`` and ``patternProperties`` key in the schema, in order."""
    found: list[str] = []
    for key, value in schema_items(schema):
        if key == "pattern" and isinstance(value, str):
            found.append(value)
        elif key == "patternProperties" and isinstance(value, dict):
            found.extend(str(k) for k in value)
    return list(dict.fromkeys(found))


def unsafe_patterns(schema: Any) -> list[str]:
    """The schema's patterns that backtrack catastrophically (or are too long to evaluate), in order.

    For the indexer to report: validation here is bounded either way, but an upstream checking the same
    pattern with a backtracking engine can stall on one crafted value (see foldgate.model.pattern_probe).
    """
    return [p for p in patterns_of(schema) if len(p) > MAX_PATTERN or backtracks(p)]
