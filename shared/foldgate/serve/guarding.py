"""The result guard on the serving path: every answer an upstream gives (a tool result on any surface,
a ``resources/read``, a ``prompts/get``) passes here before anything else sees it — the agent, the
result pager's ``read_cache`` store, a code run — guarded per the tenant's ``guard`` policy
(:mod:`foldgate.guard.result`), with the findings' counts by rule on the request's activity event.

Structured content is guarded field by field and must still fit the tool's ``outputSchema``: where a
placeholder or a mark breaks a constrained field (a ``pattern``, a ``format``, a length), the answer
is withheld as a ``result_blocked`` tool error naming the field, never served with the credential nor
with content the client would reject.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foldgate.config.tenant import TenantConfig
from foldgate.errors import ResultBlockedError
from foldgate.guard.result import (
    GuardPolicy,
    TextGuard,
    guard_call_result,
    guard_prompt_result,
    guard_read_result,
)
from foldgate.serve.recording import current
from foldgate.serve.results import error_result

if TYPE_CHECKING:
    from foldgate.model.catalog import IndexedTool
    from foldgate.serve.validation import ValidatorCache

__all__ = ["guard_for", "guard_prompt", "guard_resource", "guard_tool_result"]


def guard_for(config: TenantConfig, server: str, name: str, source: str) -> TextGuard | None:
    """The guard for one answer of ``server``'s ``name``, None when the tenant turned both sides off."""
    settings = config.guard
    policy = GuardPolicy(settings.secrets, settings.injection, settings.allowed(server, name))
    if policy.off:
        return None
    # The learned scorer's module loads on the first guarded answer (it answers None until trained).
    from foldgate.guard.scorer import load_scorer

    return TextGuard(policy, source, load_scorer())


def _record(guard: TextGuard) -> None:
    """The findings' counts on the running request's event (a code run's call has its own)."""
    counts = guard.counts
    observed = current()
    if counts and observed is not None:
        merged = dict(observed.guard or {})
        for rule, count in counts.items():
            merged[rule] = merged.get(rule, 0) + count
        observed.guard = merged


async def guard_tool_result(
    config: TenantConfig, tool: IndexedTool, result: dict[str, Any], validators: ValidatorCache
) -> tuple[dict[str, Any], bool]:
    """The upstream's CallToolResult as the agent may see it: guarded, or a ``result_blocked`` error
    (then True)."""
    guard = guard_for(config, tool.server, tool.tool.name, f"the tool {tool.published}")
    if guard is None:
        return result, False
    try:
        guarded = guard_call_result(result, guard)
    except RecursionError:
        # Structured content nested past what can be walked cannot be guarded: it is not served.
        deep = (
            f"the result of {tool.published} was withheld by the gateway's guard: nested too deeply to guard"
        )
        return error_result(ResultBlockedError(deep), tool=tool.published), True
    _record(guard)
    reason = guard.blocked()
    schema = tool.tool.output_schema
    structured = guarded.get("structuredContent")
    if reason is None and schema is not None and structured is not result.get("structuredContent"):
        # Output schemas are compiled like input ones, under a key of their own.
        errors = await validators.errors_async(f"{tool.tool.content_hash}:output", schema, structured)
        if errors:
            reason = (
                f"the result of {tool.published} was withheld by the gateway's guard: its guarded "
                f"structured content no longer fits the tool's output schema ({'; '.join(errors)})"
            )
    if reason is not None:
        return error_result(ResultBlockedError(reason), tool=tool.published, rules=sorted(guard.counts)), True
    return guarded, False


def guard_resource(config: TenantConfig, server: str, result: dict[str, Any]) -> dict[str, Any]:
    """A ``resources/read`` result guarded (allowances by ``server__*``); ResultBlockedError to refuse."""
    guard = guard_for(config, server, "*", f"a resource of the server {server}")
    if guard is None:
        return result
    guarded = guard_read_result(result, guard)
    _record(guard)
    reason = guard.blocked()
    if reason is not None:
        raise ResultBlockedError(reason)
    return guarded


def guard_prompt(
    config: TenantConfig, server: str, name: str, published: str, result: dict[str, Any]
) -> dict[str, Any]:
    """A ``prompts/get`` result guarded (allowances by ``server__prompt``); ResultBlockedError to refuse."""
    guard = guard_for(config, server, name, f"the prompt {published}")
    if guard is None:
        return result
    guarded = guard_prompt_result(result, guard)
    _record(guard)
    reason = guard.blocked()
    if reason is not None:
        raise ResultBlockedError(reason)
    return guarded
