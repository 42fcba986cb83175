"""Credentials in text coming back from upstreams: found by kind, replaced by a typed placeholder
(``[redacted:aws_access_key]``), counted; the value itself is never kept, logged or returned.

The provider formats are in :mod:`foldgate.guard.secret_rules`; this module adds the generic kind
(a random-looking value assigned to a secret-named key: ``password=...``, ``"api_key": "..."``,
``AWS_SECRET_ACCESS_KEY=...``) and applies them all in one pass over spans.

Cost: each kind is gated by literal substring tests, so text that holds no gate literal (most results)
costs one lowercase copy and a few dozen substring searches, linear in its length.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from foldgate.guard.secret_rules import DETECTORS, looks_random

__all__ = ["ASCII_LOWER", "find_secrets", "lower_aligned", "placeholder", "redact_secrets"]

# Where a secret-named key may be: one of these in the lowercased text opens the generic search.
_NAME_GATE: Final = ("pass", "pwd", "secret", "token", "key", "credential")
# A secret-named key: the whole key (lowercased) ends in one of these.
_NAME: Final = re.compile(
    r"(?:secret(?:[_-]?(?:access[_-]?)?key)?|passwords?|passwd|passphrase|pwd|tokens?|api[_-]?keys?|"
    r"access[_-]?keys?|private[_-]?keys?|auth[_-]?keys?|signing[_-]?keys?|encryption[_-]?keys?|"
    r"master[_-]?keys?|credentials?)$"
)
_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
# A key naming one of these is a pagination or sync handle, not a credential.
_NOT_SECRET_NAME: Final = re.compile(r"page|cursor|next|continuation|sync|resume|count|max|limit|usage")
# The assignment after the key and its value (quoted, quoted inside a JSON string, or bare; a value
# ends at a quote, space, separator or a URL query's `&`; a nested object or list is not a value).
_ASSIGN: Final = re.compile(
    r"\\?[\"']?\s*(?::=|=>|:|=)\s*(?:\\?[\"'])?(?P<value>[^\s\"'`,;&<>\[\]{}()\\]{8,512})(?![^\s\"'`,;&<>\[\]{}()\\])"
)
GENERIC: Final = "generic_secret"
# Lowercasing that keeps every offset (str.lower may lengthen a few non-ASCII characters).
ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def lower_aligned(text: str) -> str:
    """``text`` lowercased with every offset kept ("İ" lowercases to two characters: then only ASCII
    letters are lowered), so a position found in it is the same position in ``text``."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(ASCII_LOWER)


def placeholder(kind: str) -> str:
    """What a credential of ``kind`` is replaced with."""
    return f"[redacted:{kind}]"


def _generic(text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    seen: set[int] = set()
    for literal in _NAME_GATE:
        at = lowered.find(literal)
        while at >= 0:
            # The key around the literal: it must end in a secret's name ("token_type" does not).
            end = at + len(literal)
            while end < len(text) and text[end] in _NAME_CHARS:
                end += 1
            start = at
            while start > 0 and at - start < 48 and text[start - 1] in _NAME_CHARS:
                start -= 1
            at = lowered.find(literal, end)
            if end in seen:
                continue
            seen.add(end)
            key = lowered[start:end].rstrip(".-_")
            if not _NAME.search(key) or _NOT_SECRET_NAME.search(key):
                continue
            assigned = _ASSIGN.match(text, end)
            if assigned is not None and looks_random(assigned.group("value"), min_length=8):
                yield assigned.start("value"), assigned.end("value"), GENERIC


def find_secrets(
    text: str, skip: frozenset[str] = frozenset(), lowered: str | None = None
) -> list[tuple[int, int, str]]:
    """The credentials in ``text`` as ``(start, end, kind)`` spans, sorted and never overlapping (the
    earlier detector wins an overlap); kinds in ``skip`` (an operator's allowance) are not looked for.
    ``lowered`` is :func:`lower_aligned` of ``text`` when the caller has it already."""
    low = lowered if lowered is not None else lower_aligned(text)
    found: list[tuple[int, int, str]] = []
    for detector in DETECTORS:
        if detector.kind in skip:
            continue
        haystack = low if detector.lower else text
        if not any(literal in haystack for literal in detector.gate):
            continue
        if detector.prefilter is not None and detector.prefilter.search(text) is None:
            continue
        for match in detector.regex.finditer(text):
            group = "secret" if "secret" in detector.regex.groupindex else 0
            start, end = match.span(group)
            if start < end and (detector.check is None or detector.check(text[start:end])):
                found.append((start, end, detector.kind))
    if GENERIC not in skip and any(literal in low for literal in _NAME_GATE):
        found.extend(_generic(text, low))
    if not found:
        return found
    # Earlier detectors first on overlaps: the provider's name beats the generic one.
    order = {kind: i for i, kind in enumerate(d.kind for d in DETECTORS)}
    kept: list[tuple[int, int, str]] = []
    for span in sorted(found, key=lambda s: (order.get(s[2], len(order)), s[0])):
        if all(span[1] <= k[0] or span[0] >= k[1] for k in kept):
            kept.append(span)
    return sorted(kept)


def redact_secrets(
    text: str, skip: frozenset[str] = frozenset(), lowered: str | None = None
) -> tuple[str, dict[str, int]]:
    """``text`` with every credential replaced by its typed placeholder, and the count per kind (the
    very same string when there is none)."""
    spans = find_secrets(text, skip, lowered)
    if not spans:
        return text, {}
    counts: dict[str, int] = {}
    parts: list[str] = []
    last = 0
    for start, end, kind in spans:
        parts.append(text[last:start])
        parts.append(placeholder(kind))
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    parts.append(text[last:])
    return "".join(parts), counts
