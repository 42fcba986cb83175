"""The table of surfaces an endpoint can serve, built once per gateway."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from foldgate.serve.surfaces.base import Surface
from foldgate.serve.surfaces.call import SearchSurface
from foldgate.serve.surfaces.code import CodeSurface
from foldgate.serve.surfaces.direct import DirectSurface

if TYPE_CHECKING:
    from foldgate.code.sandbox import Sandbox

__all__ = ["ROUTED", "SURFACES", "build_surfaces"]

# Concrete surfaces; an endpoint may also serve ROUTED (POST /mcp), which follows the tenant's routing_mode.
SURFACES: Final = ("direct", "call", "code")
ROUTED: Final = "routed"


def build_surfaces(sandbox: Callable[[], Sandbox] | None) -> dict[str, Surface]:
    """Every surface by name; ``sandbox`` (a factory) is given where this process runs agent code."""
    search = SearchSurface()
    return {"direct": DirectSurface(), "call": search, "code": CodeSurface(sandbox, search)}
