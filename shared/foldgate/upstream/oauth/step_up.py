"""Step-up: what a 403 ``insufficient_scope`` from an upstream means for the grant it refused.

The challenge names the scope the request needed (RFC 6750 3.1; the MCP spec's step-up). Compared with
the scope the grant holds:

* **Held.** Every scope named is held already: the upstream refused the tool for its own reasons (a
  tool-level policy, a resource the person may not touch). That is an authorization failure of the
  tool, answered to the agent as such; reconnecting would grant the same scope and change nothing.
* **Missing.** The grant gets a pending step-up (``UpstreamGrant.step_up``: held plus named) and stays
  ``connected``: tools the held scope allows keep working for everyone; the tool that needs more
  answers consent-needed, and the next consent asks for the union.
* **Bounded.** A consent that did not bring the scope (the authorization server does not grant it)
  would otherwise ask for it again forever: identical step-ups (same grant, same wanted scope) are
  marked at most ``STEP_UP_LIMIT`` times per instance, then the tool answers a plain error naming the
  scope. Repeated refusals while a step-up is pending are not counted (nothing changed).

The challenge is hostile input: only RFC 6749 scope tokens are kept, bounded in count and length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from foldgate.store.grants.base import UpstreamGrant

__all__ = ["MAX_TRACKED", "STEP_UP_LIMIT", "StepUps", "Verdict", "scope_tokens"]

STEP_UP_LIMIT: Final = 3
MAX_TRACKED: Final = 4096  # step-up counts one instance keeps (grant and wanted scope)
_MAX_TOKENS: Final = 32
# RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), at most 128 characters here.
_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,128}")


def scope_tokens(scope: str | None) -> list[str]:
    """The well-formed scope tokens of ``scope``, in order, without repeats (anything else dropped)."""
    seen: list[str] = []
    for token in (scope or "").split(" ")[: _MAX_TOKENS * 4]:
        if _TOKEN.fullmatch(token) and token not in seen:
            seen.append(token)
            if len(seen) == _MAX_TOKENS:
                break
    return seen


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do about one ``insufficient_scope`` refusal (see the module doc).

    ``kind``: ``held`` (a tool error), ``step_up`` (mark ``wanted`` on the grant, then consent-needed),
    ``pending`` (already marked: consent-needed), ``exhausted`` (the bound is reached: a plain error).
    ``named``: the scope tokens the challenge named; ``missing``: those the grant does not hold.
    """

    kind: Literal["held", "step_up", "pending", "exhausted"]
    named: tuple[str, ...]
    missing: tuple[str, ...] = ()
    wanted: str | None = None


class StepUps:
    """Judges refusals and counts identical step-ups per grant (one per process)."""

    def __init__(self, limit: int = STEP_UP_LIMIT) -> None:
        self.limit = limit
        # (tenant, server, subject, wanted scope) -> step-ups marked for it by this instance.
        self._marked: dict[tuple[str, str, str, str], int] = {}

    def judge(self, grant: UpstreamGrant, named_scope: str | None) -> Verdict:
        """The verdict for ``grant`` refused with ``insufficient_scope`` naming ``named_scope``."""
        named = tuple(scope_tokens(named_scope))
        held = scope_tokens(grant.scope)
        missing = tuple(t for t in named if t not in held)
        if not missing:
            # Nothing named, or nothing more than is held: asking a person again cannot help.
            return Verdict("held", named)
        wanted = " ".join([*held, *missing])
        if grant.step_up == wanted:
            return Verdict("pending", named, missing, wanted)
        key = (grant.tenant, grant.server, grant.subject, wanted)
        count = self._marked.get(key, 0)
        if count >= self.limit:
            return Verdict("exhausted", named, missing, wanted)
        if key not in self._marked and len(self._marked) >= MAX_TRACKED:
            # An upstream naming a new scope on every refusal must not grow this without end: the
            # oldest counts go first (a forgotten count only allows a few more consents to be asked).
            del self._marked[next(iter(self._marked))]
        self._marked[key] = count + 1
        return Verdict("step_up", named, missing, wanted)
