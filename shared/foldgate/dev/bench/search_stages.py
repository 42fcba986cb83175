"""``foldgate bench search --breakdown``: where a search's time goes, stage by stage, on the served stack.

After the timed run, every query is searched once more with the stages' entry points wrapped in a
clock (the served objects themselves, so nothing is re-implemented here):

- ``encode``: the provider's ``encode`` (tokenise + one onnxruntime run); for a multi-need request
  the needs are encoded two at a time on the encode pool, so this is the sum over needs, partly in
  parallel with the calling thread;
- ``lexical``: BM25F scoring (``score_vector`` and the lexical-only searches: a multi-need request's
  whole text, a need answered lexically);
- ``dense screen``: the int8 screen of every tool vector (one call per request);
- ``dense exact``: the exact cosines of the tools that can rank, in order (once per need);
- ``rest``: the request's time on the calling thread outside those stages: splitting, fusion,
  pages, the multi-need merge, and waiting for the encode pool.

Each stage is summed per query; p50 / p95 are over queries (the wrappers add ~1 µs a call).
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["STAGES", "format_breakdown", "run_breakdown"]

STAGES = ("encode", "lexical", "dense screen", "dense exact", "rest")


class _Clock:
    """Per-query stage totals; knows which time was spent on the calling thread."""

    def __init__(self) -> None:
        self.caller = threading.get_ident()
        self.spent: dict[str, float] = {}
        self.on_caller = 0.0
        self._lock = threading.Lock()
        # Stages open on each thread: a stage entered again inside itself is counted once.
        self.open = threading.local()

    def add(self, stage: str, seconds: float) -> None:
        with self._lock:
            self.spent[stage] = self.spent.get(stage, 0.0) + seconds
            if threading.get_ident() == self.caller:
                self.on_caller += seconds

    def reset(self) -> None:
        self.spent = {}
        self.on_caller = 0.0


@contextmanager
def _wrapped(clock: _Clock, targets: Sequence[tuple[Any, str, str]]) -> Iterator[None]:
    """Time ``obj.method`` into ``stage`` for each target (an instance attribute, removed after)."""
    patched: list[tuple[Any, str]] = []
    for obj, method, stage in targets:
        original = getattr(obj, method)

        def timed(*args: Any, _original: Any = original, _stage: str = stage, **kwargs: Any) -> Any:
            inside: set[str] = clock.open.__dict__.setdefault("stages", set())
            if _stage in inside:
                return _original(*args, **kwargs)
            inside.add(_stage)
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                clock.add(_stage, time.perf_counter() - started)
                inside.discard(_stage)

        setattr(obj, method, timed)
        patched.append((obj, method))
    try:
        yield
    finally:
        for obj, method in patched:
            delattr(obj, method)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))] if ordered else 0.0


def run_breakdown(
    search: Callable[..., Any],
    texts: Sequence[str],
    *,
    limit: int,
    provider: Any = None,
    lexical: Any = None,
    cosines: Any = None,
) -> dict[str, dict[str, float]]:
    """Search each text once with the stages timed; per stage p50 / p95 / mean ms over the texts."""
    clock = _Clock()
    targets: list[tuple[Any, str, str]] = []
    if provider is not None:
        targets.append((provider, "encode", "encode"))
    if lexical is not None:
        targets += [(lexical, "score_vector", "lexical"), (lexical, "search", "lexical")]
    if cosines is not None:
        targets += [(cosines, "screen", "dense screen"), (cosines, "best", "dense exact")]
    per_stage: dict[str, list[float]] = {stage: [] for stage in (*STAGES, "total")}
    with _wrapped(clock, targets):
        for text in texts:
            clock.reset()
            started = time.perf_counter()
            search(text, limit=limit)
            total = time.perf_counter() - started
            for stage in STAGES[:-1]:
                per_stage[stage].append(clock.spent.get(stage, 0.0) * 1000)
            per_stage["rest"].append(max(0.0, total - clock.on_caller) * 1000)
            per_stage["total"].append(total * 1000)
    return {
        stage: {
            "p50_ms": round(statistics.median(values), 3) if values else 0.0,
            "p95_ms": round(_percentile(values, 0.95), 3),
            "mean_ms": round(statistics.fmean(values), 3) if values else 0.0,
        }
        for stage, values in per_stage.items()
    }


def format_breakdown(breakdown: dict[str, dict[str, float]]) -> str:
    """One line per stage: p50 / p95 / mean in ms."""
    lines = ["stage breakdown (per query, ms): p50 / p95 / mean"]
    for stage, row in breakdown.items():
        lines.append(f"  {stage:<13} {row['p50_ms']:8.3f} {row['p95_ms']:8.3f} {row['mean_ms']:8.3f}")
    return "\n".join(lines)
