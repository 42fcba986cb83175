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

from foldgate.guard.gates import present_literals
from foldgate.guard.injection import Passage, find_injections, mark_passages
from foldgate.guard.secrets import lower_aligned, redact_secrets

if TYPE_CHECKING:
    from foldgate.guard.scorer import TextScorer

__all__ = [
    "UNGUARDED_ITEM_FIELDS",
    "GuardPolicy",
    "TextGuard",
    "guard_call_result",
    "guard_prompt_result",
    "guard_read_result",
    "guard_value",
    "has_guarded_text",
    "spotlight",
]

# Content item fields that are not text an upstream chose freely: the item's type and MIME type (short
# labels the client dispatches on) and base64 binaries (an image's ``data``, a resource's ``blob``).
# Every other string field is guarded: text, name, uri, title, description, and what nests (the
# annotations, ``_meta``, icons).
UNGUARDED_ITEM_FIELDS: Final = frozenset({"type", "mimeType", "data", "blob"})
# Where an answer nests further items: an embedded resource.
_NESTED: Final = "resource"
# A CallToolResult's top-level keys the guard never changes; any other key may carry guarded text.
_UNGUARDED_KEYS: Final = frozenset({"content", "isError", "resultType"})


@dataclass(frozen=True, slots=True)
class GuardPolicy:
    """What to do on each side: ``secrets`` redact | block | off, ``injection`` mark | spotlight |
    block | off (spotlight: marks like ``mark``, and every text item of the answer is delivered inside
    the provenance note, see :func:`spotlight`); ``allowed`` holds the rule ids an operator released."""

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
    # Object keys of structured content the guard would have changed (never the keys themselves).
    renamed_keys: int = 0

    def __call__(self, text: str) -> str:
        """The text redacted and marked per the policy (the same object when nothing fired)."""
        policy = self.policy
        # One lowercase copy and one pass for every gate literal, for both sides (made again only when
        # a redaction changed the text).
        lowered = lower_aligned(text)
        literals = present_literals(lowered)
        if policy.secrets != "off":
            redacted, counts = redact_secrets(text, policy.allowed, lowered, literals)
            for kind, count in counts.items():
                self.secrets[kind] = self.secrets.get(kind, 0) + count
            if redacted is not text:
                text, lowered = redacted, lower_aligned(redacted)
                literals = present_literals(lowered)
        if policy.injection != "off":
            passages = find_injections(text, self.scorer, policy.allowed, lowered, literals)
            for passage in passages:
                for rule in passage.rules:
                    self.injection[rule] = self.injection.get(rule, 0) + 1
            if passages and policy.injection in ("mark", "spotlight"):
                text = mark_passages(text, passages, self.source)
        return text

    @property
    def counts(self) -> dict[str, int]:
        """Every finding by rule id (secret kinds and injection rules never share an id)."""
        return {**self.secrets, **self.injection}

    def blocked(self) -> str | None:
        """Why the answer is refused under a ``block`` policy, None when it may be served."""
        reasons = []
        if self.renamed_keys:
            reasons.append(
                f"{self.renamed_keys} key(s) of its structured content held what the guard rewrites "
                "(renaming a key would break the result's shape)"
            )
        if self.policy.secrets == "block" and self.secrets:
            reasons.append(f"it carried credentials ({', '.join(sorted(self.secrets))})")
        if self.policy.injection == "block" and self.injection:
            reasons.append(
                f"it held text addressing the model with instructions ({', '.join(sorted(self.injection))})"
            )
        if not reasons:
            return None
        return f"the result of {self.source} was withheld by the gateway's guard: {' and '.join(reasons)}"


def guard_value(
    value: Any, guard: Callable[[str], str], renamed: list[int] | None = None, _keys: set[str] | None = None
) -> Any:
    """A JSON value with every string guarded, keys included; the same object when nothing changed, so
    a string stays a string, a number a number, and the shape is the shape the tool returned. A key the
    guard would change is kept as it is and counted in ``renamed`` (the caller withholds or drops)."""
    if isinstance(value, str):
        return guard(value)
    if isinstance(value, dict):
        # Keys repeat across the records of a listing: each distinct clean key is guarded once.
        clean = _keys if _keys is not None else set()
        changed = {}
        for key, item in value.items():
            if renamed is not None and isinstance(key, str) and key not in clean:
                if guard(key) is key:
                    clean.add(key)
                else:
                    renamed[0] += 1
            changed[key] = guard_value(item, guard, renamed, clean)
        return value if all(changed[k] is value[k] for k in value) else changed
    if isinstance(value, list):
        keys = _keys if _keys is not None else set()
        items = [guard_value(v, guard, renamed, keys) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def spotlight(text: str, source: str) -> str:
    """``text`` inside the provenance note naming ``source`` (what ``mark`` puts around a detected
    passage, around the whole text): the model is told it is data from that tool, not instructions."""
    return mark_passages(text, [Passage(0, len(text), ())], source)


def _meta(meta: Any, guard: Callable[[str], str]) -> Any:
    """``_meta`` guarded like structured content; when a key would change, it is dropped (None): it
    has no schema to keep, and an upstream's metadata is nothing the agent needs."""
    renamed = [0]
    guarded = guard_value(meta, guard, renamed)
    return None if renamed[0] else guarded


def _content_item(item: Any, guard: Callable[[str], str], envelope: str | None = None) -> Any:
    """One content item (or resource contents) with every string field guarded (see
    :data:`UNGUARDED_ITEM_FIELDS`); ``envelope``: the source a spotlit text is delivered from."""
    if not isinstance(item, dict):
        return item
    out = item
    for name, value in item.items():
        if name in UNGUARDED_ITEM_FIELDS:
            continue
        if name == _NESTED and isinstance(value, dict):
            guarded: Any = _content_item(value, guard, envelope)
        elif name == "_meta":
            guarded = _meta(value, guard)
            if guarded is None:
                out = {k: v for k, v in out.items() if k != "_meta"}
                continue
        else:
            guarded = guard_value(value, guard)
        if guarded is not value:
            out = {**out, name: guarded}
    text = out.get("text")
    if envelope is not None and isinstance(text, str) and text:
        out = {**out, "text": spotlight(text, envelope)}
    return out


def _envelope(guard: Callable[[str], str]) -> str | None:
    if isinstance(guard, TextGuard) and guard.policy.injection == "spotlight":
        return guard.source
    return None


def _items(items: Any, guard: Callable[[str], str]) -> Any:
    if not isinstance(items, list):
        return items
    envelope = _envelope(guard)
    guarded = [_content_item(i, guard, envelope) for i in items]
    return items if all(a is b for a, b in zip(guarded, items, strict=True)) else guarded


def _result_meta(result: dict[str, Any], out: dict[str, Any], guard: Callable[[str], str]) -> dict[str, Any]:
    if "_meta" not in result:
        return out
    meta = _meta(result["_meta"], guard)
    if meta is None:
        return {k: v for k, v in out.items() if k != "_meta"}
    return out if meta is result["_meta"] else {**out, "_meta": meta}


def guard_call_result(result: dict[str, Any], guard: TextGuard) -> dict[str, Any]:
    """A CallToolResult with its content items and structured content guarded."""
    out = result
    content = _items(result.get("content"), guard)
    if content is not result.get("content"):
        out = {**out, "content": content}
    if "structuredContent" in result:
        renamed = [0]
        structured = guard_value(result["structuredContent"], guard, renamed)
        if isinstance(guard, TextGuard):
            guard.renamed_keys += renamed[0]
        if structured is not result["structuredContent"]:
            out = {**out, "structuredContent": structured}
    if "inputRequests" in result:
        # A 2026-07-28 upstream's requests for input (elicitation messages, sampling prompts): relayed
        # to the client or kept on its task, so guarded like structured content (keys included).
        renamed = [0]
        requests = guard_value(result["inputRequests"], guard, renamed)
        if isinstance(guard, TextGuard):
            guard.renamed_keys += renamed[0]
        if requests is not result["inputRequests"]:
            out = {**out, "inputRequests": requests}
    return _result_meta(result, out, guard)


def guard_read_result(result: dict[str, Any], guard: TextGuard) -> dict[str, Any]:
    """A ``resources/read`` result with the text of every content guarded (blobs are binary)."""
    contents = _items(result.get("contents"), guard)
    out = result if contents is result.get("contents") else {**result, "contents": contents}
    return _result_meta(result, out, guard)


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
                content = _content_item(message["content"], guard, _envelope(guard))
                changed.append(message if content is message["content"] else {**message, "content": content})
            else:
                changed.append(message)
        if any(a is not b for a, b in zip(changed, messages, strict=True)):
            out = {**out, "messages": changed}
    return _result_meta(result, out, guard)


def _item_has_text(item: Any) -> bool:
    if not isinstance(item, dict):
        return False  # not a content item: the guard passes it through untouched
    for key, value in item.items():
        if isinstance(value, str) and key in UNGUARDED_ITEM_FIELDS:
            continue
        if isinstance(value, dict | list | str):
            return True  # text, or a nested resource or list the guard (now or later) may read
    return False


def has_guarded_text(result: dict[str, Any]) -> bool:
    """Whether the guard could change anything in ``result``: False only for a CallToolResult whose
    content items carry no string, object or list outside their kind and binary data (an
    image, an audio clip, a blob), with no ``structuredContent`` and no ``_meta`` (or empty ones) and
    no other key. Conservative by construction: whatever it cannot rule out is guarded."""
    for key, value in result.items():
        if key in _UNGUARDED_KEYS:
            continue
        if key in ("structuredContent", "_meta") and (value is None or value == {}):
            continue
        return True
    content = result.get("content")
    if not isinstance(content, list):
        return content is not None
    return any(_item_has_text(item) for item in content)
