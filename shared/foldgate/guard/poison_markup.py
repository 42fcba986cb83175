"""Poisoning rules about what a description shows (or hides) when rendered, and what it claims: active
or invisible markup, and a title or description announcing new powers over the user's data.

A client that renders a description as Markdown or HTML runs a ``<script>``, loads an ``<iframe>`` or
an image's ``onerror`` handler, and hides an HTML comment or a ``display:none`` block from the human
while the model reads every word of it. A *mention* of the markup ("``<script>`` tags are removed from
the output") is documentation, not markup. A tool that "now also reads your private keys" announces,
after it was approved, powers its name never asked for (the rug pull told in the open).
"""

from __future__ import annotations

from typing import Final

from foldgate.guard.poison_text import Pattern
from foldgate.guard.poison_text import pattern as _p

__all__ = ["MARKUP_RULES"]

_DATA: Final = (
    r"(?:your|the\s+user'?s?|all|any|every|private|personal)\s+(?:\w+\s+){0,3}?(?:keys?|files?|emails?|inbox|"
    r"messages?|contacts?|passwords?|credentials?|cookies|history|camera|microphone|screen|clipboard|"
    r"location|documents?|drive|disk|vault|wallet|photos?|keystrokes|accounts?|data)\b"
)

MARKUP_RULES: Final[dict[str, tuple[Pattern, ...]]] = {
    "active-markup": (
        # A script element with content or a source; "<script> tags" names the element.
        _p(r"<\s*script\b[^>]{0,200}>(?!\s*(?:tags?|elements?|blocks?)\b)", "<"),
        _p(r"<\s*(?:iframe|object|embed)\b[^>]{0,200}\bsrc\s*=", "<"),
        _p(r"<[a-z][^>]{0,200}\bon(?:error|load|click|mouseover|focus)\s*=", "on"),
        _p(r"\bjavascript:\s*[\w$.]+\s*\(", "javascript:"),
        # Text a rendered view hides: an HTML comment with words in it, CSS that hides an element.
        _p(r"<!--\s*[^\s-][^>]{2,}", "<!--"),
        _p(
            r"<[a-z][^>]{0,120}(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d])|"
            r"opacity\s*:\s*0(?![.\d])|\bhidden\b)[^>]{0,80}>",
            "<",
        ),
    ),
    "capability-claim": (
        _p(
            r"\bnow\s+(?:also\s+|additionally\s+|even\s+)?(?:reads?|access(?:es)?|monitors?|records?|uploads?|"
            r"syncs?|collects?|shares?|scans?|can\s+(?:read|access|see|control|send)|has\s+(?:full\s+)?access\s+to|"
            r"with\s+(?:full\s+)?access\s+to)\s+" + _DATA,
            "now",
        ),
    ),
}
