"""An offset-mapped normal form of a text for the credential detectors: NFKC (full-width letters, U+FF21 on,
read as ASCII) with format characters (zero-width spaces and joiners, soft hyphens, bidi controls, the BOM)
removed, and for every character of the normal form the offset of the character of the original it
came from, so a span found in the normal form is redacted in the original (W3-04: a credential spelled
with a zero-width character inside, or in full-width letters, is still a credential).

Cost: an ASCII text has no other form (one ``isascii`` test). Otherwise only the runs of non-ASCII
characters are normalised one character at a time; ASCII runs are copied whole.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["NormalForm", "normal_form"]

_NON_ASCII: Final = re.compile(r"[^\x00-\x7f]+")
# Punctuation credentials are written with (full-width forms of these are read as ASCII).
_ASCII_PUNCT: Final = frozenset("-_./+=:@~!#$%&*")
# Characters that render as nothing: Unicode's format characters (category Cf), variation selectors
# and the Hangul fillers (invisible letters).
_INVISIBLE: Final = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u08e2\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
# What can change a credential's reading: invisible characters and the compatibility forms of ASCII
# letters and digits (full-width, mathematical, circled and parenthesised, super- and subscripts).
_SUSPECT: Final = re.compile(
    _INVISIBLE.pattern[:-1]
    + "\u00aa\u00b2\u00b3\u00b9\u00ba\u2070-\u209f\u2100-\u215f\u2460-\u24ff\u3200-\u33ff"
    "\ufb00-\ufb06\uff01-\uff5e\U0001d400-\U0001d7ff\U0001f100-\U0001f1ff]"
)


class NormalForm:
    """``text``: the normal form; ``origin[i]``: the offset in the original of ``text[i]``;
    ``length``: the original's length (where a span ending at the normal form's end ends)."""

    __slots__ = ("length", "origin", "text")

    def __init__(self, text: str, origin: list[int], length: int) -> None:
        self.text = text
        self.origin = origin
        self.length = length

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original's span of the normal form's ``[start, end)``: from the first character's origin
        to just past the last one's (so format characters inside the span are covered by it, those
        around it are not)."""
        if end <= start:
            at = self.origin[start] if start < len(self.origin) else self.length
            return at, at
        # Through the last character's original (whole, when NFKC expanded it: "ﬁ" -> "fi").
        return self.origin[start], self.origin[end - 1] + 1


def _char(char: str) -> str:
    """What the detectors read for one non-ASCII character: nothing for an invisible one, the ASCII
    letters or digits of a compatibility form (full-width, mathematical, circled), else itself (an
    ellipsis or a no-break space changes no credential, and leaving them keeps most texts as they are)."""
    if _INVISIBLE.match(char) or unicodedata.category(char) == "Cf":
        return ""
    normal = unicodedata.normalize("NFKC", char)
    return normal if (normal.isascii() and normal.isalnum()) or normal in _ASCII_PUNCT else char


def normal_form(text: str) -> NormalForm | None:
    """The normal form of ``text`` with its offset map, None when it is ``text`` itself (then the
    detectors have already seen it)."""
    if text.isascii() or _SUSPECT.search(text) is None:
        return None
    parts: list[str] = []
    origin: list[int] = []
    last = 0
    changed = False
    for run in _NON_ASCII.finditer(text):
        start, end = run.span()
        if unicodedata.is_normalized("NFKC", run.group()) and not _INVISIBLE.search(run.group()):
            continue  # a run of ordinary letters (accents, CJK, emoji) stays as it is, copied below
        if start > last:
            parts.append(text[last:start])
            origin.extend(range(last, start))
        for offset in range(start, end):
            char = text[offset]
            normal = _char(char)
            if normal != char:
                changed = True
            parts.append(normal)
            origin.extend([offset] * len(normal))
        last = end
    if not changed:
        return None
    parts.append(text[last:])
    origin.extend(range(last, len(text)))
    return NormalForm("".join(parts), origin, len(text))
