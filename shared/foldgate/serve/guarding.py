"""The result guard on the serving path: every answer an upstream gives (a tool result on any surface,
a ``resources/read``, a ``prompts/get``) passes here before anything else sees it — the agent, the
result pager's ``read_cache`` store, a code run — guarded per the tenant's ``guard`` policy
(:mod:`foldgate.guard.result`), with the findings' counts by rule on the request's activity event.

Structured content is guarded field by field and must still fit the tool's ``outputSchema``: where a
placeholder or a mark breaks a constrained field (a ``pattern``, an ``enum``, a length: the schema is
validated; a ``format``, which validators treat as an annotation but some clients assert: any changed
string under one), the answer is withheld as a ``result_blocked`` tool error naming the field, never
served with the credential nor with content the client would reject.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

from foldgate.config.tenant import TenantConfig
from foldgate.errors import FoldgateError, ResultBlockedError, UpstreamConsentError
from foldgate.guard.result import (
    GuardPolicy,
    TextGuard,
    guard_call_result,
    guard_prompt_result,
    guard_read_result,
    guard_value,
    has_guarded_text,
)
from foldgate.serve.recording import current
from foldgate.serve.results import error_result
from foldgate.upstream.relay import WITHHELD, Screen

if TYPE_CHECKING:
    from foldgate.guard.scorer import TextScorer
    from foldgate.model.catalog import IndexedTool
    from foldgate.serve.validation import ValidatorCache

__all__ = [
    "formatted_change",
    "guard_completion",
    "guard_error",
    "guard_for",
    "guard_prompt",
    "guard_resource",
    "guard_tool_result",
    "relay_screen",
]

# Stands in for the gateway's own connect link while a consent error's message is guarded.
_LINK_MARK: Final = "[the connect link]"


def guard_for(config: TenantConfig, server: str, name: str, source: str) -> TextGuard | None:
    """The guard for one answer of ``server``'s ``name``, None when the tenant turned both sides off."""
    settings = config.guard
    secrets, injection = settings.policy(server)
    if secrets == "off" and injection == "off":
        return None
    return TextGuard(
        GuardPolicy(secrets, injection, settings.allowed(server, name)), source, _result_scorer()
    )


@functools.cache
def _result_scorer() -> TextScorer | None:
    """The result guard's scorer (an import statement on every guarded answer cost more than this)."""
    # The learned scorer's module loads on the first guarded answer (it answers None until trained).
    from foldgate.guard.scorer import load_result_scorer

    return load_result_scorer()


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
    (then True). A result with no text the guard reads (:func:`has_guarded_text`) is not walked."""
    if not has_guarded_text(result):
        return result, False
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
    original = result.get("structuredContent")
    if reason is None and schema is not None and structured is not original:
        # A format is an annotation to jsonschema but asserted by some clients: checked here, by path.
        formatted = formatted_change(original, structured, schema)
        # Output schemas are compiled like input ones, under a key of their own.
        errors = [f"{formatted}: a placeholder breaks its format"] if formatted is not None else []
        errors = (
            errors
            or await validators.errors_async(f"{tool.tool.content_hash}:output", schema, structured)
            or []
        )
        if errors:
            reason = (
                f"the result of {tool.published} was withheld by the gateway's guard: its guarded "
                f"structured content no longer fits the tool's output schema ({'; '.join(errors)})"
            )
    if reason is not None:
        return error_result(ResultBlockedError(reason), tool=tool.published, rules=sorted(guard.counts)), True
    return guarded, False


def formatted_change(before: Any, after: Any, schema: Any, path: str = "$", depth: int = 0) -> str | None:
    """The path of a string the guard changed where the schema gives it a ``format`` (followed through
    ``properties``, ``additionalProperties`` and ``items``; only changed branches are walked), else None."""
    if before is after or not isinstance(schema, dict) or depth > 64:
        return None
    if isinstance(after, str):
        return path if "format" in schema else None
    if isinstance(after, dict) and isinstance(before, dict):
        properties = schema.get("properties")
        for key, value in after.items():
            node = properties.get(key) if isinstance(properties, dict) else None
            node = node if node is not None else schema.get("additionalProperties")
            found = formatted_change(before.get(key), value, node, f"{path}.{key}", depth + 1)
            if found is not None:
                return found
    if isinstance(after, list) and isinstance(before, list):
        for i, (old, new) in enumerate(zip(before, after, strict=False)):
            found = formatted_change(old, new, schema.get("items"), f"{path}[{i}]", depth + 1)
            if found is not None:
                return found
    return None


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


def _screened(config: TenantConfig, server: str, name: str, source: str, value: Any) -> Any:
    guard = guard_for(config, server, name, source)
    if guard is None:
        return value
    renamed = [0]
    try:
        guarded = guard_value(value, guard, renamed)
    except RecursionError:
        return WITHHELD
    guard.renamed_keys += renamed[0]
    _record(guard)
    return WITHHELD if guard.blocked() is not None else guarded


def relay_screen(config: TenantConfig) -> Screen:
    """The guard over what an upstream sends *during* a call (progress messages, logs, requests for
    input: :mod:`foldgate.upstream.relay`), per the tenant's policy for that server: redacted and
    marked like a result; WITHHELD where a block policy fired or a key would change."""

    def screen(server: str, value: Any) -> Any:
        return _screened(config, server, "*", f"the server {server}", value)

    return screen


def guard_completion(config: TenantConfig, server: str, result: dict[str, Any]) -> dict[str, Any] | None:
    """A ``completion/complete`` result guarded (its values are text an upstream chose); None when
    the guard withholds it (the caller completes to nothing)."""
    guarded = _screened(config, server, "*", f"a completion of the server {server}", result)
    return None if guarded is WITHHELD else guarded


def guard_error(config: TenantConfig, server: str, name: str, exc: FoldgateError) -> None:
    """An upstream call's error guarded in place before it is logged, recorded or answered: its
    message quotes what the upstream said (a JSON-RPC error's text, a task's failure), so a credential
    in it is redacted, and under a block policy the whole message is replaced."""
    guard = guard_for(config, server, name, f"an error of {server}")
    if guard is None:
        return
    # A consent error carries the caller's own connect link, signed by the gateway (its `sig` reads
    # like a signed URL's credential): the link is the gateway's words, so only the rest is guarded.
    link = exc.details.get("connect_url") if isinstance(exc, UpstreamConsentError) else None
    own = link if isinstance(link, str) and link and link in exc.message else None
    text = exc.message.replace(own, _LINK_MARK) if own is not None else exc.message
    guarded = guard(text)
    _record(guard)
    if guard.blocked() is not None:
        guarded = f"{server}: {name} failed; its error message was withheld by the gateway's guard"
    if own is not None:
        guarded = exc.message if guarded == text else guarded.replace(_LINK_MARK, own)
    if guarded is not exc.message:
        exc.message = guarded
        exc.args = (guarded, *exc.args[1:])
