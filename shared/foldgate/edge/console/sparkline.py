"""Sparklines as inline SVG, rendered on the server from a list of numbers (no script, no style attribute:
the console's CSP allows neither inline)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["sparkline_svg"]

# Room around the line so a stroke at the top or bottom is not clipped.
_PAD = 2.0


def _clean(value: float | None) -> float | None:
    """A finite, non-negative number, or None (a gap): counts, rates and latencies are never negative."""
    if value is None or not math.isfinite(value):
        return None
    return max(0.0, float(value))


def _num(x: float) -> str:
    """A coordinate, short: one decimal, no trailing ``.0``."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def sparkline_svg(
    values: Sequence[float | None],
    *,
    title: str,
    width: int = 120,
    height: int = 24,
    stroke: str = "#1f5fa8",
) -> str:
    """An SVG line of ``values`` left to right, scaled from zero (the bottom) to the largest value (the
    top); a None (or non-finite) value is a gap in the line, and a value with gaps on both sides a dot.
    ``title`` is the accessible name (escaped here: it may carry a server's name); ``stroke`` must be a
    colour the caller chose, never input."""
    cleaned = [_clean(v) for v in values]
    present = [v for v in cleaned if v is not None]
    top = max(present, default=0.0)
    inner_w, inner_h = width - 2 * _PAD, height - 2 * _PAD
    step = inner_w / (len(cleaned) - 1) if len(cleaned) > 1 else 0.0

    def point(i: int, v: float) -> tuple[str, str]:
        x = _PAD + (i * step if len(cleaned) > 1 else inner_w / 2)
        y = _PAD + inner_h - (v / top * inner_h if top > 0 else 0.0)
        return _num(x), _num(y)

    runs: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    for i, v in enumerate(cleaned):
        if v is None:
            if current:
                runs.append(current)
            current = []
        else:
            current.append(point(i, v))
    if current:
        runs.append(current)
    marks = []
    for run in runs:
        if len(run) == 1:
            x, y = run[0]
            marks.append(f'<circle cx="{x}" cy="{y}" r="1.5" fill="{stroke}"></circle>')
        else:
            points = " ".join(f"{x},{y}" for x, y in run)
            marks.append(
                f'<polyline points="{points}" fill="none" stroke="{stroke}" stroke-width="1.5" '
                'stroke-linejoin="round" stroke-linecap="round"></polyline>'
            )
    return (
        f'<svg class="spark" xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}"><title>{escape(title)}</title>'
        f'<line x1="{_num(_PAD)}" y1="{_num(height - _PAD)}" x2="{_num(width - _PAD)}" '
        f'y2="{_num(height - _PAD)}" stroke="#d9dce1" stroke-width="1"></line>'
        f"{''.join(marks)}</svg>"
    )
