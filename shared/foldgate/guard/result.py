"""The result guard on the wire shapes upstreams answer with: a CallToolResult (text, embedded
resources, structured content field by field), a ``resources/read`` result and a ``prompts/get``
result. Credentials are redacted, then passages addressing the model are marked, per the tenant's
policy; what fired is counted by rule (never a value).

Pure: no I/O and no configuration of its own. The serving side (:mod:`foldgate.serve.guarding`) builds
a :class:`TextGuard` from the tenant's config per answer, applies it, checks structured content
against the tool's output schema and records the counts. An answer with nothing to guard is returned
as the very same object (no copy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from foldgate.guard.injection import find_injections, mark_passages
from foldgate.guard.secrets import lower_aligned, redact_secrets

if TYPE_CHECKING:
    from foldgate.guard.scorer import TextScorer

__all__ = ["GuardPolicy", "TextGuard", "guard_call_result", "guard_prompt_result", "guard_read_result"]

# Content item fields that carry text for the model (a blob is binary, a URI is an address).
_TEXT_FIELDS: Final = ("text", "description", "title")


@dataclass(frozen=True, slots=True)
class GuardPolicy:
    """What to do on each side: ``secrets`` redact | block | off, ``injection`` mark | block | off;
    ``allowed`` holds the rule ids an operator released for this source."""

    secrets: str = "redact"
    injection: str = "mark"
    allowed: frozenset[str] = frozenset()

    @property
    def off(self) -> bool:
        """Nothing to do at all."""
        return self.secrets == "off" and self.injection == "off"


@dataclass
class TextGuard:
    """Guards texts of one answer from ``source`` (e.g. ``tool github__get_file``), counting findings
    per rule in ``secrets`` and ``injection`` across every text it is handed."""

    policy: GuardPolicy
    source: str
    scorer: TextScorer | None = None
    secrets: dict[str, int] = field(default_factory=dict)
    injection: dict[str, int] = field(default_factory=dict)

    def __call__(self, text: str) -> str:
        """The text redacted and marked per the policy (the same object when nothing fired)."""
        policy = self.policy
        # One lowercase copy for both sides (made again only when a redaction changed the text).
        lowered = lower_aligned(text)
        if policy.secrets != "off":
            redacted, counts = redact_secrets(text, policy.allowed, lowered)
            for kind, count in counts.items():
                self.secrets[kind] = self.secrets.get(kind, 0) + count
            if redacted is not text:
                text, lowered = redacted, lower_aligned(redacted)
        if policy.injection != "off":
            passages = find_injections(text, self.scorer, policy.allowed, lowered)
            for passage in passages:
                for rule in passage.rules:
                    self.injection[rule] = self.injection.get(rule, 0) + 1
            if passages and policy.injection == "mark":
                text = mark_passages(text, passages, self.source)
        return text

    @property
    def counts(self) -> dict[str, int]:
        """Every finding by rule id (secret kinds and injection rules never share an id)."""
        return {**self.secrets, **self.injection}

    def blocked(self) -> str | None:
        """Why the answer is refused under a ``block`` policy, None when it may be served."""
        reasons = []
        if self.policy.secrets == "block" and self.secrets:
            reasons.append(f"it carried credentials ({', '.join(sorted(self.secrets))})")
        if self.policy.injection == "block" and self.injection:
            reasons.append(
                f"it held text addressing the model with instructions ({', '.join(sorted(self.injection))})"
            )
        if not reasons:
            return None
        return f"the result of {self.source} was withheld by the gateway's guard: {' and '.join(reasons)}"


def guard_value(value: Any, guard: Callable[[str], str]) -> Any:
    """A JSON value with every string guarded, keys kept; the same object when nothing changed, so a
    string stays a string, a number a number, and the shape is the shape the tool returned."""
    if isinstance(value, str):
        return guard(value)
    if isinstance(value, dict):
        changed = {k: guard_value(v, guard) for k, v in value.items()}
        return value if all(changed[k] is value[k] for k in value) else changed
    if isinstance(value, list):
        items = [guard_value(v, guard) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _content_item(item: Any, guard: Callable[[str], str]) -> Any:
    if not isinstance(item, dict):
        return item
    out = item
    for name in _TEXT_FIELDS:
        text = item.get(name)
        if isinstance(text, str):
            guarded = guard(text)
            if guarded is not text:
                out = {**out, name: guarded}
    resource = item.get("resource")
    if isinstance(resource, dict):
        guarded_resource = _content_item(resource, guard)
        if guarded_resource is not resource:
            out = {**out, "resource": guarded_resource}
    return out


def _items(items: Any, guard: Callable[[str], str]) -> Any:
    if not isinstance(items, list):
        return items
    guarded = [_content_item(i, guard) for i in items]
    return items if all(a is b for a, b in zip(guarded, items, strict=True)) else guarded


def guard_call_result(result: dict[str, Any], guard: TextGuard) -> dict[str, Any]:
    """A CallToolResult with its content items and structured content guarded."""
    out = result
    content = _items(result.get("content"), guard)
    if content is not result.get("content"):
        out = {**out, "content": content}
    if "structuredContent" in result:
        structured = guard_value(result["structuredContent"], guard)
        if structured is not result["structuredContent"]:
            out = {**out, "structuredContent": structured}
    return out


def guard_read_result(result: dict[str, Any], guard: TextGuard) -> dict[str, Any]:
    """A ``resources/read`` result with the text of every content guarded (blobs are binary)."""
    contents = _items(result.get("contents"), guard)
    return result if contents is result.get("contents") else {**result, "contents": contents}


def guard_prompt_result(result: dict[str, Any], guard: TextGuard) -> dict[str, Any]:
    """A ``prompts/get`` result with its description and every message's content guarded."""
    out = result
    description = result.get("description")
    if isinstance(description, str):
        guarded = guard(description)
        if guarded is not description:
            out = {**out, "description": guarded}
    messages = result.get("messages")
    if isinstance(messages, list):
        changed = []
        for message in messages:
            if isinstance(message, dict) and "content" in message:
                content = _content_item(message["content"], guard)
                changed.append(message if content is message["content"] else {**message, "content": content})
            else:
                changed.append(message)
        if any(a is not b for a, b in zip(changed, messages, strict=True)):
            out = {**out, "messages": changed}
    return out
