"""Credentials in text coming back from upstreams: found by kind, replaced by a typed placeholder
(``[redacted:aws_access_key]``), counted; the value itself is never kept, logged or returned.

The provider formats are in :mod:`foldgate.guard.secret_rules`, the keyword-context kinds (a value
assigned to a secret-named key, in any config syntax) in :mod:`foldgate.guard.secret_assign`; this
module applies them all over spans, on the text and on its normal form
(:mod:`foldgate.guard.normal_form`: NFKC, format characters removed) when that differs, so a
credential spelled with zero-width characters or full-width letters is found and redacted whole.

Cost: each kind is gated by literals, all found in one pass over the lower-cased text
(:mod:`foldgate.guard.gates`), so text that holds no gate literal (most results) costs one lowercase
copy and that pass, linear in its length.
"""

from __future__ import annotations

from typing import Final

from foldgate.guard.gates import present_literals
from foldgate.guard.normal_form import normal_form
from foldgate.guard.secret_assign import GENERIC, NAME_GATE, PASSWORD, assigned_secrets
from foldgate.guard.secret_rules import DETECTORS, placeholder_value

__all__ = ["ASCII_LOWER", "find_secrets", "lower_aligned", "placeholder", "redact_secrets"]

# Lowercasing that keeps every offset (str.lower may lengthen a few non-ASCII characters).
ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# Kinds whose match is a structure, not a value a placeholder could stand in (the PEM's body is checked
# by its own rule).
_STRUCTURED: Final = frozenset({"private_key", "slack_webhook"})
_ORDER: Final = {kind: i for i, kind in enumerate(dict.fromkeys(d.kind for d in DETECTORS))}


def lower_aligned(text: str) -> str:
    """``text`` lowercased with every offset kept ("İ" lowercases to two characters: then only ASCII
    letters are lowered), so a position found in it is the same position in ``text``."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(ASCII_LOWER)


def placeholder(kind: str) -> str:
    """What a credential of ``kind`` is replaced with."""
    return f"[redacted:{kind}]"


def find_secrets(
    text: str,
    skip: frozenset[str] = frozenset(),
    lowered: str | None = None,
    present: frozenset[str] | None = None,
) -> list[tuple[int, int, str]]:
    """The credentials in ``text`` as ``(start, end, kind)`` spans, sorted and never overlapping (the
    earlier detector wins an overlap); kinds in ``skip`` (an operator's allowance) are not looked for.
    ``lowered`` is :func:`lower_aligned` of ``text`` and ``present`` the gate literals in it
    (:func:`~foldgate.guard.gates.present_literals`) when the caller has them already."""
    low = lowered if lowered is not None else lower_aligned(text)
    found = _spans(text, low, skip, present if present is not None else present_literals(low))
    normal = normal_form(text)
    if normal is not None:
        # Zero-width characters inside a credential, or full-width letters: found in the normal form,
        # redacted in the original (the span covers the invisible characters inside it).
        normal_low = lower_aligned(normal.text)
        found.extend(
            (*normal.span(start, end), kind)
            for start, end, kind in _spans(normal.text, normal_low, skip, present_literals(normal_low))
        )
    if not found:
        return found
    # Earlier detectors first on overlaps: the provider's name beats the generic one.
    kept: list[tuple[int, int, str]] = []
    for span in sorted(found, key=lambda s: (_ORDER.get(s[2], len(_ORDER)), s[0], -s[1])):
        if all(span[1] <= k[0] or span[0] >= k[1] for k in kept):
            kept.append(span)
    return sorted(kept)


def _spans(text: str, low: str, skip: frozenset[str], present: frozenset[str]) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    if not present:
        return found  # no gate literal at all: no detector, nor the secret-named keys, can fire
    for detector in DETECTORS:
        if detector.kind in skip or present.isdisjoint(detector.gate_lower):
            continue
        # A case-sensitive gate's literal is in the lower-cased text whenever it is in the text.
        if not detector.lower and not any(literal in text for literal in detector.gate):
            continue
        if detector.prefilter is not None and detector.prefilter.search(text) is None:
            continue
        group = "secret" if "secret" in detector.regex.groupindex else 0
        for match in detector.regex.finditer(text):
            start, end = match.span(group)
            value = text[start:end]
            if start >= end or (detector.check is not None and not detector.check(value)):
                continue
            if detector.kind not in _STRUCTURED and placeholder_value(value):
                continue
            found.append((start, end, detector.kind))
    if (GENERIC not in skip or PASSWORD not in skip) and not present.isdisjoint(NAME_GATE):
        found.extend(s for s in assigned_secrets(text, low) if s[2] not in skip)
    return found


def redact_secrets(
    text: str,
    skip: frozenset[str] = frozenset(),
    lowered: str | None = None,
    present: frozenset[str] | None = None,
) -> tuple[str, dict[str, int]]:
    """``text`` with every credential replaced by its typed placeholder, and the count per kind (the
    very same string when there is none); ``lowered`` and ``present`` as for :func:`find_secrets`."""
    spans = find_secrets(text, skip, lowered, present)
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
