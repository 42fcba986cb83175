"""``bench call --versus``'s report: each side against direct, the two head to head (which side is
which named), and both throughput ratios."""

from __future__ import annotations

from foldgate.dev.bench.call_versus import format_versus


def _row(first: float, second: float) -> dict[str, float]:
    return {
        "direct_p50_ms": first, "direct_p95_ms": first * 2, "proxied_p50_ms": second,
        "proxied_p95_ms": second * 2, "p50_overhead_ms": second - first,
        "p95_overhead_ms": 2 * (second - first),
    }  # fmt: skip


def test_the_report_names_both_sides_and_their_ratios() -> None:
    report = {
        "other": "../main/shared",
        "calls": 100,
        "latency": {"other": _row(1.0, 3.0), "this": _row(1.0, 2.0), "other_vs_this": _row(3.0, 2.0)},
        "callers": 16,
        "calls_per_s": {"direct": 100.0, "other": 70.0, "this": 90.0},
        "ratio_other": 0.7,
        "ratio_this": 0.9,
        "cpu_ms_per_call": {
            "direct": {"upstream": 1.5, "client": 2.0},
            "other": {"gateway": 2.4, "upstream": 1.2, "client": 1.6},
            "this": {"gateway": 1.6, "upstream": None, "client": 1.5},
        },
    }
    text = format_versus(report)
    assert "this - other: -1.00 / -2.00" in text
    assert "other - direct: +2.00 / +4.00" in text
    assert "other 70.0 (0.7x direct), this 90.0 (0.9x direct)" in text
    assert "other: gateway 2.4, upstream 1.2, client 1.6 CPU ms per call" in text
    assert "this: gateway 1.6, upstream -, client 1.5 CPU ms per call" in text
