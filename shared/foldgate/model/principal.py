"""Who is calling: a tenant plus what an agent token lets it see (servers) and do (tier).

Scope is applied when a view is built, before anything is serialized, so every surface (listings,
describe_tool, search, calls, read_cache) sees the same tools and an out-of-scope tool answers exactly
like a nonexistent one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from foldgate.model.catalog import IndexedTool, Tier

__all__ = ["TIER_RANK", "Principal"]

TIER_RANK: Final[dict[Tier, int]] = {"read": 0, "write": 1, "destructive": 2}


@dataclass(frozen=True, slots=True)
class Principal:
    """A caller. ``servers`` None means every server of the tenant; ``key`` identifies the scope
    (a token id, or ``*`` for unauthenticated local access) for caches and result-cache stamps."""

    tenant: str
    servers: frozenset[str] | None = None
    tier: Tier = "destructive"
    key: str = "*"
    # The end user behind the credential whatever its scope (an OAuth issuer + subject, opaque), whose
    # own upstream grants ``per_user`` servers use; None: the credential itself (``key``) is the user.
    subject: str | None = None
    # Who the caller is in the activity log when ``key`` says too little: ``oauth:<issuer>#<subject>``
    # for a person signed in at the tenant's issuer. Never a secret; not part of the scope (equality).
    label: str = field(default="", compare=False)

    @property
    def who(self) -> str:
        """The caller as the activity log names it: the label, else the key (a token id, or ``*``)."""
        return self.label or self.key

    @property
    def upstream_subject(self) -> str:
        """Whose upstream grants this caller uses on ``per_user`` servers."""
        return self.subject or self.key

    def sees(self, tool: IndexedTool, tier: Tier | None = None) -> bool:
        """Whether this caller may see (and so describe, find and call) the tool; ``tier`` is the
        tool's effective tier when the operator pinned one (else its declared or default tier)."""
        if self.servers is not None and tool.server not in self.servers:
            return False
        return TIER_RANK[tier or tool.tier] <= TIER_RANK[self.tier]

    @property
    def stamp(self) -> str:
        """Who may read results this caller leaves in the result cache."""
        return f"{self.tenant}\x1f{self.key}"
