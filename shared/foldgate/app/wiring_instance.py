"""The serving instance's figures (cache, quota leasing, dropped activity), wired from its parts.

:func:`instance_reader` reads them for :mod:`foldgate.telemetry.instance`: the Lambda handler prints
them as EMF, the local gateway's ``/metrics`` exposes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from foldgate.serve.activity_recorder import recorder_stats
from foldgate.serve.gateway import Gateway
from foldgate.telemetry.instance import Figures, read_figures

__all__ = ["instance_reader"]


def instance_reader(gateway: Gateway, quotas: Any, metrics: Any = None) -> Callable[[], Figures]:
    """A reader of this instance's figures: ``gateway``'s cache, ``quotas`` (the access layer's
    :class:`foldgate.edge.quota.Quotas`, or None) and the activity recorders of the process; and the
    call metrics' drops when ``metrics`` counts them (``dropped``)."""

    def read() -> Figures:
        stats = getattr(quotas, "stats", None)
        dropped = getattr(metrics, "dropped", 0)
        return read_figures(
            gateway.memory_stats(),
            stats() if callable(stats) else None,
            dataclasses.asdict(recorder_stats()),
            dropped if isinstance(dropped, int) else 0,
        )

    return read
